// Drives a tool result that became an artifact through a REAL npm client, downloads the
// artifact from the link the client received, and prints one JSON report.
//
//   node drive_artifacts.mjs <client> <baseUrl>
//   client: agui1 (@ag-ui/client 1.0.0), agui0 (@ag-ui/client 0.0.59), ai5, ai6, ai7
//   $OWNER_HEADERS / $OTHER_HEADERS: request headers (JSON) of the run's principal and
//   of another one
//
// Two turns: "biglog" (the server's model calls big_log, then read_artifact, then
// answers), then "again" (the client sends its history back, artifact preview included).
// The report holds the client's messages, the AG-UI TOOL_CALL_RESULT events, and for the
// artifact link: the owner's download (status, length, sha256) and the other's status.
// tests/artifacts/test_artifacts_http.py asserts on it.

import { chatClass } from "./chat.mjs";
import { waitFor, uid, errText, report } from "./_clients.mjs";
import { createHash } from "node:crypto";

const [clientName, baseUrl] = process.argv.slice(2);
const owner = JSON.parse(process.env.OWNER_HEADERS ?? "{}");
const other = JSON.parse(process.env.OTHER_HEADERS ?? "{}");


async function download(url) {
  if (!url) return null;
  const mine = await fetch(`${baseUrl}${url}`, { headers: owner });
  const bytes = Buffer.from(await mine.arrayBuffer());
  const theirs = await fetch(`${baseUrl}${url}`, { headers: other });
  await theirs.arrayBuffer();
  return {
    status: mine.status,
    contentType: mine.headers.get("content-type"),
    length: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    otherStatus: theirs.status,
  };
}

async function aisdk(mod, major) {
  const { DefaultChatTransport } = mod;
  const Chat = chatClass(mod);
  const errors = [];
  const chat = new Chat({
    id: `chat_${uid()}`,
    transport: new DefaultChatTransport({
      api: `${baseUrl}/api/chat`,
      headers: { ...owner, "x-ai-sdk-version": String(major) },
    }),
    onError: (e) => errors.push(errText(e)),
  });
  for (const text of ["biglog", "again"]) {
    try {
      await chat.sendMessage({ text });
    } catch (e) {
      errors.push(`sendMessage threw: ${errText(e)}`);
    }
    await waitFor(() => chat.status === "ready" || chat.status === "error");
    if (chat.status === "error") break;
  }
  const parts = chat.messages.flatMap((m) => m.parts ?? []);
  const big = parts.find((p) => p.type === "tool-big_log");
  return {
    status: chat.status,
    error: chat.error ? errText(chat.error) : null,
    errors,
    messages: chat.messages,
    download: await download(big?.output?.artifact?.url),
  };
}

async function agui(mod) {
  const { HttpAgent } = mod;
  const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId: `t_${uid()}`, headers: owner });
  const results = [];
  const errors = [];
  for (const content of ["biglog", "again"]) {
    agent.addMessage({ id: `u_${uid()}`, role: "user", content });
    const onEvent = ({ event }) => {
      if (event.type === "TOOL_CALL_RESULT") results.push(event);
      if (event.type === "RUN_ERROR") errors.push(event.message);
    };
    try {
      await agent.runAgent({}, { onEvent });
    } catch (e) {
      errors.push(errText(e));
      break;
    }
  }
  const big = results.find((e) => e.metadata?.callwright?.artifact);
  return {
    errors,
    results,
    messages: agent.messages,
    download: await download(big?.metadata?.callwright?.artifact?.url),
  };
}

await report(clientName, { agui, aisdk });
