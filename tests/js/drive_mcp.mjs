// A run whose tools are on an MCP server (server-everything), driven by REAL npm clients:
// @ag-ui/client 1.0 and ai 7. Prints one JSON report for tests/mcp/test_e2e_clients.py.
//
//   node drive_mcp.mjs <agui1|ai7> <baseUrl>
//
// The user's message makes the model call trigger-long-running-operation (progress) and
// trigger-elicitation-request (the MCP server asks the user for a form) in one step. The
// client sees the progress, answers the question the way each protocol documents it (an
// AG-UI resume entry for the input_required interrupt; addToolOutput with {requestId,
// action, content} for the AI SDK), and the run finishes with the MCP tool's result.

import { chatClass } from "./chat.mjs";
import { printed, sleep, waitFor, uid, errText } from "./_clients.mjs";

const [clientName, baseUrl] = process.argv.slice(2);
const FORM = { name: "Ada Lovelace", check: true };

async function agui() {
  const { HttpAgent } = await import("agui-client-1");
  const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId: `t_${uid()}` });
  agent.addMessage({ id: `u_${uid()}`, role: "user", content: "mcp" });
  const runs = [];
  async function run(params = {}) {
    const events = [];
    let error = null;
    try {
      await agent.runAgent(params, { onEvent: ({ event }) => events.push(event) });
    } catch (e) {
      error = errText(e);
    }
    runs.push({ events, error });
    return events;
  }
  const first = await run();
  const finished = first.findLast((e) => e.type === "RUN_FINISHED");
  const interrupts = finished?.outcome?.interrupts ?? [];
  const resume = interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: FORM }));
  await run({ resume });
  return { runs, interrupts, messages: agent.messages };
}

async function ai7() {
  const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } = await import("ai7");
  const Chat = chatClass({ AbstractChat });
  const streams = [];
  const errors = [];
  const fetch = async (url, init) => {
    const response = await globalThis.fetch(url, init);
    if (!response.ok || !response.body) return response;
    const [mine, theirs] = response.body.tee();
    const record = { status: response.status, text: "" };
    streams.push(record);
    (async () => {
      const decoder = new TextDecoder();
      for await (const piece of mine) record.text += decoder.decode(piece, { stream: true });
    })();
    return new Response(theirs, { status: response.status, headers: response.headers });
  };
  const chat = new Chat({
    transport: new DefaultChatTransport({ api: `${baseUrl}/api/chat`, headers: { "x-ai-sdk-version": "7" }, fetch }),
    onError: (e) => errors.push(errText(e)),
    sendAutomaticallyWhen: ({ messages }) => lastAssistantMessageIsCompleteWithToolCalls({ messages }),
  });
  const settled = () => chat.status === "ready" || chat.status === "error";
  const lastText = () => {
    const last = chat.messages.at(-1);
    return last?.role === "assistant" ? last.parts.filter((p) => p.type === "text").map((p) => p.text).join("") : "";
  };
  await chat.sendMessage({ text: "mcp" });
  const question = () => chat.messages.at(-1)?.parts?.find((p) => p.type === "data-input-request");
  await waitFor(() => settled() && question());
  const asked = question();
  const beforeAnswer = structuredClone(chat.messages);
  if (asked) {
    const { toolName, toolCallId, requestId } = asked.data;
    // not awaited inside a callback: it resubmits through sendAutomaticallyWhen
    await chat.addToolOutput({ tool: toolName, toolCallId, output: { requestId, action: "accept", content: FORM } });
    await waitFor(() => lastText().startsWith("Done:") && settled());
    await sleep(50);
  }
  return { status: chat.status, error: chat.error ? errText(chat.error) : null, asked: asked ?? null, beforeAnswer, messages: chat.messages, streams, errors };
}

const drivers = { agui1: agui, ai7 };
let result;
try {
  result = await drivers[clientName]();
} catch (e) {
  result = { crashed: errText(e), stack: e?.stack ?? null };
}
process.stdout.write(JSON.stringify({ ...result, printed }));
process.exit(0);
