// Stops one of three parallel calls through POST /runs/{runId}/calls/{callId}/cancel while a
// REAL npm client streams the run, and prints one JSON report.
//
//   node drive_cancel.mjs <client> <baseUrl> [cancelUrl]
//   client: agui1 (@ag-ui/client 1.0.0), agui0 (@ag-ui/client 0.0.59), ai5, ai6, ai7
//   cancelUrl: where the cancel requests go (another replica of the same journal;
//   default baseUrl)
//   $OWNER_HEADERS / $OTHER_HEADERS: request headers (JSON) of the run's principal and
//   of another one
//
// The server's model calls search (runs until cancelled), lookup a (returns at once) and
// lookup b (returns once search was cancelled). Once lookup a's result is in, all three
// were started: the driver then asks to cancel lookup a (finished), an unknown call,
// search as the other principal, and search as the owner; after the run, search again.
// tests/server/test_cancel_call_http.py asserts on the report.

import { chatClass } from "./chat.mjs";
import { waitFor, uid, errText, report } from "./_clients.mjs";

const [clientName, baseUrl, cancelArg] = process.argv.slice(2);
const cancelUrl = cancelArg ?? baseUrl;
const owner = JSON.parse(process.env.OWNER_HEADERS ?? "{}");
const other = JSON.parse(process.env.OTHER_HEADERS ?? "{}");


async function cancel(runId, callId, headers) {
  const response = await fetch(`${cancelUrl}/runs/${runId}/calls/${callId}/cancel`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: "{}",
  });
  return { status: response.status, body: await response.json() };
}

// while the run streams: the refusals, then the owner's cancel
async function cancelling(runId, ids) {
  return {
    finished: await cancel(runId, ids.a, owner),
    unknown: await cancel(runId, "call_nobody_made", owner),
    otherPrincipal: await cancel(runId, ids.search, other),
    owner: await cancel(runId, ids.search, owner),
  };
}

async function aisdk(mod, major) {
  const { DefaultChatTransport } = mod;
  const Chat = chatClass(mod);
  const errors = [];
  let runId = null;
  const chat = new Chat({
    id: `chat_${uid()}`,
    transport: new DefaultChatTransport({
      api: `${baseUrl}/api/chat`,
      headers: { ...owner, "x-ai-sdk-version": String(major) },
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        runId = response.headers.get("x-callwright-run-id");
        return response;
      },
    }),
    onError: (e) => errors.push(errText(e)),
  });
  const parts = () => chat.messages.flatMap((m) => m.parts ?? []);
  const sent = chat.sendMessage({ text: "three" }).catch((e) => errors.push(`sendMessage threw: ${errText(e)}`));
  const lookupA = () => parts().find((p) => p.type === "tool-lookup" && p.input?.key === "a" && p.state === "output-available");
  const search = () => parts().find((p) => p.type === "tool-search");
  let during = null;
  if (await waitFor(() => lookupA() && search() && runId)) {
    during = await cancelling(runId, { a: lookupA().toolCallId, search: search().toolCallId });
  }
  await sent;
  await waitFor(() => chat.status === "ready" || chat.status === "error");
  const after = search() ? await cancel(runId, search().toolCallId, owner) : null;
  return {
    status: chat.status,
    error: chat.error ? errText(chat.error) : null,
    errors,
    runId,
    during,
    after,
    parts: parts().filter((p) => p.type?.startsWith("tool-")),
    text: chat.messages.filter((m) => m.role === "assistant").flatMap((m) => m.parts).filter((p) => p.type === "text").map((p) => p.text).join(""),
  };
}

async function agui(mod) {
  const { HttpAgent } = mod;
  const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId: `t_${uid()}`, headers: owner });
  agent.addMessage({ id: `u_${uid()}`, role: "user", content: "three" });
  const events = [];
  const errors = [];
  const names = {};
  let runId = null;
  let during = null;
  const onEvent = ({ event }) => {
    events.push(event);
    if (event.type === "RUN_STARTED") runId = event.runId;
    if (event.type === "TOOL_CALL_START") names[event.toolCallId] = event.toolCallName;
    if (event.type === "TOOL_CALL_RESULT" && during === null) {
      const ids = Object.keys(names);
      const search = ids.find((id) => names[id] === "search");
      const a = ids.find((id) => names[id] === "lookup");  // lookup a comes first
      if (event.toolCallId === a) during = cancelling(runId, { a, search });
    }
  };
  try {
    await agent.runAgent({}, { onEvent });
  } catch (e) {
    errors.push(errText(e));
  }
  const search = Object.keys(names).find((id) => names[id] === "search");
  return {
    errors,
    runId,
    during: during === null ? null : await during,
    after: search ? await cancel(runId, search, owner) : null,
    results: events.filter((e) => e.type === "TOOL_CALL_RESULT"),
    messages: agent.messages,
  };
}

await report(clientName, { agui, aisdk });
