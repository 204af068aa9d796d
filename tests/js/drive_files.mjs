// Sends user messages with files through a REAL npm client and prints one JSON report.
//
//   node drive_files.mjs <client> <baseUrl> <spec.json>
//   client: agui1 (@ag-ui/client 1.0.0), agui1.1 (the same, declaring protocolVersion 1.1:
//   no 1.1 client is published; 1.0.0's schemas already read a result's content parts),
//   agui0 (@ag-ui/client 0.0.59), ai5, ai6, ai7
//   spec: {"turns": [...]}, one user message per turn, each sent once the previous run ended:
//     ai*:   {"text": "...", "files": [FileUIPart, ...]}  -> chat.sendMessage({ text, files })
//     agui*: the message's content (a string or a list of content parts) -> addMessage + runAgent
//
// The report holds what the client ended up with (messages, status, errors), the HTTP
// status of each request, and everything the client printed. tests/models/test_files_clients.py
// asserts on it and on what the model server received.

import { chatClass } from "./chat.mjs";
import { printed, sleep, waitFor as waitUntil, uid, errText, report } from "./_clients.mjs";

import { readFileSync } from "node:fs";

const [clientName, baseUrl, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));

const waitFor = (pred, ms = 20000) => waitUntil(pred, ms);

async function aisdk(mod, major) {
  const { AbstractChat, DefaultChatTransport } = mod;
  const Chat = chatClass(mod);
  const statuses = [];
  const errors = [];
  const fetch = async (url, init) => {
    const response = await globalThis.fetch(url, init);
    statuses.push(response.status);
    return response;
  };
  const chat = new Chat({
    id: `chat_${uid()}`,
    transport: new DefaultChatTransport({ api: `${baseUrl}/api/chat`, headers: { "x-ai-sdk-version": String(major) }, fetch }),
    onError: (e) => errors.push(errText(e)),
  });
  for (const turn of spec.turns) {
    try {
      await chat.sendMessage({ text: turn.text, files: turn.files });
    } catch (e) {
      errors.push(`sendMessage threw: ${errText(e)}`);
    }
    await waitFor(() => chat.status === "ready" || chat.status === "error");
    await sleep(50);
    if (chat.status === "error") break;
  }
  return {
    threadId: chat.id,
    status: chat.status,
    error: chat.error ? errText(chat.error) : null,
    messages: chat.messages,
    statuses,
    errors,
  };
}

async function agui(mod, declare = null) {
  const { HttpAgent } = mod;
  const statuses = [];
  const fetch = async (url, init) => {
    if (declare) init = { ...init, body: JSON.stringify({ ...JSON.parse(init.body), protocolVersion: declare }) };
    const response = await globalThis.fetch(url, init);
    statuses.push(response.status);
    return response;
  };
  const agent = new HttpAgent({ url: `${baseUrl}/agui`, threadId: `t_${uid()}`, fetch });
  const runs = [];
  for (const content of spec.turns) {
    agent.addMessage({ id: `u_${uid()}`, role: "user", content });
    const events = [];
    let error = null;
    let runError = null;
    const toolResults = [];
    const onEvent = ({ event }) => {
      events.push(event.type);
      if (event.type === "TOOL_CALL_RESULT") toolResults.push(event);
      if (event.type === "RUN_ERROR") runError = { message: event.message, code: event.code ?? null };
    };
    try {
      await agent.runAgent({}, { onEvent });
    } catch (e) {
      error = errText(e);
    }
    runs.push({ events, error, runError, toolResults });
    if (error) break;
  }
  return { threadId: agent.threadId, runs, messages: agent.messages, statuses };
}

await report(clientName, { agui, aisdk });
