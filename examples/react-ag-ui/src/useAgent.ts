// The wiring: an @ag-ui/client HttpAgent to callwright's POST /agui, its messages in React
// state, and the loop that answers a paused run (approvals, front-end tools).

import {
  HttpAgent,
  randomUUID,
  type Interrupt,
  type Message,
  type ResumeEntry,
  type RunAgentParameters,
  type ToolMessage,
} from "@ag-ui/client";
import { useCallback, useEffect, useMemo, useState } from "react";
import type { FrontEndTool } from "./frontendTools";

export type Status = "ready" | "running" | "awaiting approval" | "error";

export type Agent = {
  messages: Message[];
  /** Tool calls whose arguments are complete (TOOL_CALL_END seen). */
  argumentsDone: ReadonlySet<string>;
  /** The approvals the paused run waits for (RUN_FINISHED outcome "interrupt"). */
  interrupts: Interrupt[];
  /** The answers given so far, by interrupt id; sent together once all are in. */
  answers: Record<string, ResumeEntry>;
  status: Status;
  error: string | null;
  send: (content: Message["content"]) => void;
  answer: (interruptId: string, approved: boolean, reason?: string) => void;
};

export function useAgent(url: string, tools: FrontEndTool[]): Agent {
  const agent = useMemo(() => new HttpAgent({ url, threadId: randomUUID() }), [url]);
  const [messages, setMessages] = useState<Message[]>([]);
  const [argumentsDone, setArgumentsDone] = useState<ReadonlySet<string>>(new Set());
  const [interrupts, setInterrupts] = useState<Interrupt[]>([]);
  const [answers, setAnswers] = useState<Record<string, ResumeEntry>>({});
  const [status, setStatus] = useState<Status>("ready");
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const { unsubscribe } = agent.subscribe({
      onMessagesChanged: ({ messages }) => setMessages([...messages]),
      onToolCallEndEvent: ({ event }) =>
        setArgumentsDone((done) => new Set(done).add(event.toolCallId)),
      onRunErrorEvent: ({ event }) => setError(event.message),
    });
    return unsubscribe;
  }, [agent]);

  const run = useCallback(
    async (params: RunAgentParameters) => {
      setStatus("running");
      setError(null);
      const definitions = tools.map(({ name, description, parameters }) => ({
        name,
        description,
        parameters,
      }));
      let next: RunAgentParameters | null = params;
      while (next) {
        let pending: string[] = [];
        try {
          await agent.runAgent(
            { tools: definitions, ...next },
            {
              onRunFinishedEvent: (finished) => {
                if (finished.outcome === "success") pending = finished.pendingToolCallIds ?? [];
              },
            },
          );
        } catch (e) {
          setError(describe(e));
          setStatus("error");
          return;
        }
        // A paused run: wait for a human to answer every interrupt (see `answer`).
        if (agent.pendingInterrupts.length > 0) {
          setInterrupts(agent.pendingInterrupts);
          setAnswers({});
          setStatus("awaiting approval");
          return;
        }
        setInterrupts([]);
        for (const id of pending) agent.addMessage(await runFrontEndTool(agent.messages, id, tools));
        next = pending.length > 0 ? {} : null;
      }
      setStatus("ready");
    },
    [agent, tools],
  );

  const send = useCallback(
    (content: Message["content"]) => {
      agent.addMessage({ id: randomUUID(), role: "user", content } as Message);
      void run({});
    },
    [agent, run],
  );

  const answer = useCallback(
    (interruptId: string, approved: boolean, reason?: string) => {
      const entry: ResumeEntry = {
        interruptId,
        status: "resolved",
        payload: reason ? { approved, reason } : { approved },
      };
      const all = { ...answers, [interruptId]: entry };
      setAnswers(all);
      if (interrupts.every((i) => all[i.id])) void run({ resume: interrupts.map((i) => all[i.id]) });
    },
    [answers, interrupts, run],
  );

  return { messages, argumentsDone, interrupts, answers, status, error, send, answer };
}

// A refused request (HTTP 4xx) carries callwright's {"error": {"message", "code"}} as the
// client's `payload`; anything else (a dropped connection) its own message.
function describe(e: unknown): string {
  const body = (e as { payload?: { error?: { message?: string; code?: string } } }).payload;
  if (body?.error?.message) return `${body.error.message} (${body.error.code})`;
  return e instanceof Error ? e.message : String(e);
}

async function runFrontEndTool(
  messages: Message[],
  toolCallId: string,
  tools: FrontEndTool[],
): Promise<ToolMessage> {
  const call = messages
    .flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []) : []))
    .find((c) => c.id === toolCallId);
  const tool = tools.find((t) => t.name === call?.function.name);
  const message = { id: randomUUID(), role: "tool" as const, toolCallId };
  try {
    if (!call || !tool) throw new Error(`this page has no tool named ${call?.function.name}`);
    const output = await tool.run(JSON.parse(call.function.arguments || "{}"));
    return { ...message, content: JSON.stringify(output) };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    return { ...message, content: error, error };
  }
}
