// A tool call's card state, read from the agent's messages: the assistant message's call
// (arguments streaming in), the `activity-<toolCallId>` activity message callwright keeps
// up to date (ACTIVITY_SNAPSHOT: progress and partial output), the `tool` message with
// the result, and the interrupt waiting for an approval.

import { contentToText, type Interrupt, type Message, type ResumeEntry } from "@ag-ui/client";

/** The content of callwright's `tool-activity` activity messages. */
export type ToolActivity = {
  toolCallId: string;
  toolName: string;
  status: string;
  text?: string;
  fraction?: number;
  output?: unknown;
};

export type ToolView = {
  id: string;
  name: string;
  /** The argument text received so far (complete once `argumentsDone`). */
  args: string;
  /** The same vocabulary as the AI SDK's tool parts, so both starters share their CSS. */
  state:
    | "input-streaming"
    | "input-available"
    | "partial-output"
    | "approval-requested"
    | "approval-responded"
    | "output-available"
    | "output-error"
    | "output-denied";
  activity?: ToolActivity;
  result?: string;
  interrupt?: Interrupt;
  answer?: { approved: boolean; reason?: string };
};

type Known = {
  argumentsDone: ReadonlySet<string>;
  interrupts: Interrupt[];
  answers: Record<string, ResumeEntry>;
};

export function toolViews(messages: Message[], known: Known): Map<string, ToolView> {
  const results = new Map<string, Message & { role: "tool" }>();
  const activities = new Map<string, ToolActivity>();
  for (const m of messages) {
    if (m.role === "tool") results.set(m.toolCallId, m);
    if (m.role === "activity" && m.activityType === "tool-activity") {
      const content = m.content as ToolActivity;
      activities.set(content.toolCallId, content);
    }
  }
  const views = new Map<string, ToolView>();
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    for (const call of m.toolCalls ?? []) {
      const result = results.get(call.id);
      const activity = activities.get(call.id);
      const interrupt = known.interrupts.find((i) => i.toolCallId === call.id);
      const entry = interrupt ? known.answers[interrupt.id] : undefined;
      const answer = entry?.payload as ToolView["answer"];
      views.set(call.id, {
        id: call.id,
        name: call.function.name,
        args: call.function.arguments,
        state: stateOf(known.argumentsDone.has(call.id), result, activity, interrupt, answer),
        activity,
        result: result && contentToText(result.content),
        interrupt,
        answer,
      });
    }
  }
  return views;
}

function stateOf(
  argumentsDone: boolean,
  result: (Message & { role: "tool" }) | undefined,
  activity: ToolActivity | undefined,
  interrupt: Interrupt | undefined,
  answer: ToolView["answer"],
): ToolView["state"] {
  if (result) {
    // TOOL_CALL_RESULT has no error field: callwright says how the call ended here.
    const ended = (result.metadata as { callwright?: { state?: string } } | undefined)?.callwright?.state;
    if (ended === "output-denied") return "output-denied";
    if (ended === "output-error" || result.error) return "output-error";
    return "output-available";
  }
  if (interrupt) return answer ? "approval-responded" : "approval-requested";
  if (activity?.output !== undefined) return "partial-output";
  return argumentsDone ? "input-available" : "input-streaming";
}
