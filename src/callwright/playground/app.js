// The callwright playground: the page `GET /` serves. It talks AG-UI to `POST /agui`
// through the real @ag-ui/client HttpAgent and shows every step of a tool call's life:
// arguments as they stream, progress, partial outputs, approvals, results and errors,
// the shared run state, and front-end tools that run here in the browser. Each turn of
// the conversation gets a live timeline of where its time went (timeline.js).
//
// Plain DOM, no framework: the page is one conversation, a few cards and two dialogs,
// and a framework would be most of the bundle.
//
// Rebuild the committed bundle (playground.js) after editing this file:
//   cd src/callwright/playground && npm ci && npm run build
// tests/playground/test_bundle.py fails when the committed bundle is out of date.

import { HttpAgent } from "@ag-ui/client";
import { Timeline } from "./timeline.js";

const $ = (selector) => document.querySelector(selector);
const logEl = $("#log");
const input = $("#input");
const sendButton = $("#send");
const stopButton = $("#stop");
const statusEl = $("#status");
const stateEl = $("#state");
const changesEl = $("#changes");

// Ids the server will see (threads, messages) are random: a thread id is all another
// visitor would need to talk into this conversation. randomUUID needs a secure context
// (https or localhost); a page served over plain http on a LAN address falls back to
// getRandomValues, which works everywhere.
function uid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) =>
    b.toString(16).padStart(2, "0"),
  ).join("");
}

// The server's access token (`callwright serve --token`): opened as `/#token=...` (a
// fragment never reaches a server or a Referer), kept in this browser, sent as a Bearer
// header. The page asks for it when the server refuses a request with 401.
const TOKEN_KEY = "callwright-token";
const given = new URLSearchParams(location.hash.slice(1)).get("token");
if (given) {
  localStorage.setItem(TOKEN_KEY, given);
  history.replaceState(null, "", location.pathname + location.search);
}
function authHeaders() {
  const token = localStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}
function askForToken() {
  const token = prompt("This server needs its access token (callwright serve --token):");
  if (!token) return false;
  localStorage.setItem(TOKEN_KEY, token.trim());
  agent.headers = authHeaders();
  return true;
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function pretty(value) {
  if (typeof value === "string") {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

// --- front-end tools: defined here, sent with every run, executed in this page ----------

const browserTools = [
  {
    name: "confirmAction",
    description: "Ask the user to confirm a specific action before proceeding",
    parameters: {
      type: "object",
      properties: {
        action: { type: "string", description: "The action that needs user confirmation" },
        importance: {
          type: "string",
          enum: ["low", "medium", "high", "critical"],
          description: "The importance level of the action",
        },
      },
      required: ["action"],
    },
    run: async (args) => ({ confirmed: await askConfirmation(args) }),
  },
  {
    // Named and described so that even the embedded 135M model picks it only when asked
    // about the user's own time or language (a longer camelCase name drew arithmetic
    // questions to it).
    name: "user_locale",
    description: "The user's time zone, language and local time, from their browser.",
    parameters: { type: "object", properties: {} },
    run: async () => {
      const { timeZone } = Intl.DateTimeFormat().resolvedOptions();
      const locale = navigator.language;
      return { timeZone, locale, localTime: new Date().toLocaleString(locale, { timeZone }) };
    },
  },
];
const toolDefinitions = browserTools.map(({ name, description, parameters }) => ({
  name,
  description,
  parameters,
}));

for (const tool of browserTools) {
  const item = el("li");
  item.append(el("code", "", tool.name), ` — ${tool.description}`);
  $("#browser-tools").append(item);
}

// --- the conversation ----------------------------------------------------------------------

let agent = newAgent();
const cards = new Map(); // toolCallId -> card
const bubbles = new Map(); // messageId -> element
const subRuns = new Map(); // subagentRunId -> the element its events go into
let streaming = false;
let stopRequested = false;
let timeline = null; // the current turn's timeline
let runId = null; // the streaming run's id (RUN_STARTED): what a card's Stop names

function newAgent() {
  return new HttpAgent({
    url: new URL("/agui", location.href).href,
    threadId: uid(),
    headers: authHeaders(),
  });
}

function setStatus(kind, text) {
  statusEl.dataset.kind = kind;
  statusEl.textContent = text;
}

function setBusy(busy, stream = false) {
  streaming = stream;
  sendButton.disabled = busy;
  stopButton.hidden = !stream;
  sendButton.hidden = stream;
}

// The log follows new output unless the reader has scrolled up to read something.
let follow = true;
logEl.addEventListener("scroll", () => {
  follow = logEl.scrollHeight - logEl.scrollTop - logEl.clientHeight < 80;
});
function scrollDown() {
  if (follow) logEl.scrollTop = logEl.scrollHeight;
}

function append(node, container = logEl) {
  $("#empty")?.remove();
  container.append(node);
  scrollDown();
  return node;
}

function notice(kind, text, action) {
  const box = el("div", `notice ${kind}`);
  box.append(el("span", "", text));
  if (action) {
    const button = el("button", "", action.label);
    button.type = "button";
    button.addEventListener("click", () => {
      box.remove();
      action.run();
    });
    box.append(button);
  }
  return append(box);
}

function containerFor(event) {
  return (event.subagentRunId && subRuns.get(event.subagentRunId)) || logEl;
}

function bubble(id, role, event) {
  let node = bubbles.get(id);
  if (!node) {
    node = append(el("div", `msg ${role}`), containerFor(event));
    bubbles.set(id, node);
  }
  return node;
}

// A tool call's card: name, state, arguments, progress, partial output, result.
function card(id, name, event) {
  let c = cards.get(id);
  if (c) return c;
  const root = el("div", "card");
  root.dataset.toolCallId = id;
  const head = el("div", "head");
  const browser = browserTools.some((t) => t.name === name);
  head.append(
    el("span", "name", name || "tool"),
    el("span", "where", browser ? "browser tool" : "server tool"),
  );
  const state = el("span", "state");
  // Stop one call of the run and let the others go on (the run's own calls only: a
  // sub-agent's calls belong to its own run)
  const stop = el("button", "stop-call", "Stop");
  stop.type = "button";
  stop.hidden = true;
  stop.title = "Stop this call; the run goes on";
  head.append(state, stop);
  const argsLabel = el("div", "label", "Arguments");
  const args = el("pre", "args");
  const progress = el("div", "progress");
  progress.hidden = true;
  const bar = el("div", "bar");
  const fill = el("div");
  bar.append(fill);
  bar.hidden = true;
  const progressText = el("span", "progress-text");
  progress.append(bar, progressText);
  const partial = el("div", "partial");
  partial.hidden = true;
  const partialPre = el("pre", "partial-output");
  partial.append(el("div", "label", "Partial output"), partialPre);
  const result = el("div", "result");
  result.hidden = true;
  const resultLabel = el("div", "label", "Result");
  const resultPre = el("pre");
  result.append(resultLabel, resultPre);
  root.append(head, argsLabel, args, progress, partial, result);
  c = {
    id, name, root, state, args, argsText: "", progress, bar, fill, progressText,
    partial, partialPre, result, resultLabel, resultPre, browser, finished: false,
    stop, stoppable: !browser && !event?.subagentRunId,
  };
  stop.addEventListener("click", () => stopCall(c));
  cards.set(id, c);
  append(root, containerFor(event ?? {}));
  setCardState(c, "streaming", "streaming arguments");
  return c;
}

// The final activity snapshot repeats the last report: leave the text alone then.
function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

function setCardState(c, state, label) {
  c.root.dataset.state = state;
  setText(c.state, label);
  c.stop.hidden = !(state === "running" && c.stoppable && streaming && runId);
}

// POST /runs/{runId}/calls/{id}/cancel: the call's result ("Cancelled: cancelled by the
// user") then comes on the run's stream like any other.
async function stopCall(c) {
  c.stop.disabled = true;
  setText(c.state, "stopping…");
  let response = null;
  try {
    response = await fetch(
      new URL(`/runs/${encodeURIComponent(runId)}/calls/${encodeURIComponent(c.id)}/cancel`, location.href),
      { method: "POST", headers: { ...authHeaders(), "Content-Type": "application/json" }, body: "{}" },
    );
  } catch (error) {
    notice("error", `Could not stop ${c.name}: ${error.message ?? error}`);
    return;
  }
  if (response.ok || c.finished) return;
  const body = await response.json().catch(() => ({}));
  c.stop.disabled = false;
  setCardState(c, c.root.dataset.state, "running");
  notice("error", `Could not stop ${c.name}: ${body.error?.message ?? response.status}`);
}

function showResult(c, state, label, title, value) {
  c.finished = true;
  setCardState(c, state, label);
  c.result.hidden = false;
  c.result.className = `result ${state === "complete" ? "ok" : "error"}`;
  c.resultLabel.textContent = title;
  c.resultPre.textContent = pretty(value);
  if (state === "complete" && !c.bar.hidden) c.fill.style.width = "100%";
}

// A tool's files (TOOL_CALL_RESULT metadata.callwright.files, AG-UI content parts):
// images and audio shown in the card, anything else offered as a download.
function showFiles(c, files) {
  for (const part of files) {
    const source = part?.source ?? {};
    const type = source.mimeType || "";
    const name = part?.metadata?.filename || type || "file";
    let src = null;
    if (source.type === "data") src = `data:${type};base64,${source.value}`;
    else if (source.type === "url" && String(source.value).startsWith("https://")) src = source.value;
    if (!src) continue;
    let node;
    if (part.type === "image") {
      node = el("img", "tool-file");
      node.src = src;
      node.alt = name;
    } else if (part.type === "audio") {
      node = el("audio", "tool-file");
      node.controls = true;
      node.src = src;
    } else {
      node = el("a", "tool-file", name);
      node.href = src;
      node.download = name;
    }
    c.result.append(node);
  }
}

// A result too large for the model (TOOL_CALL_RESULT metadata.callwright.artifact): the
// card shows its preview and links to the whole. The download is fetched with the page's
// token, which a plain link could not send, and saved from the bytes received.
function showArtifact(c, artifact) {
  if (typeof artifact?.url !== "string" || !artifact.url.startsWith("/runs/")) return;
  const extension = artifact.mediaType === "application/json" ? "json" : "txt";
  const name = `${artifact.id ?? "artifact"}.${extension}`;
  const size = Number(artifact.size);
  const label = Number.isFinite(size) ? `Download the whole result (${size.toLocaleString("en")} bytes)` : "Download the whole result";
  const link = el("a", "artifact-link", label);
  link.href = new URL(artifact.url, location.href).href;
  link.download = name;
  link.addEventListener("click", (click) => {
    click.preventDefault();
    download(c, link.href, name);
  });
  c.result.append(link);
}

async function download(c, url, name) {
  let response;
  try {
    response = await fetch(url, { headers: authHeaders() });
  } catch (error) {
    notice("error", `Could not download ${c.name}'s result: ${error.message ?? error}`);
    return;
  }
  if (response.status === 401 && askForToken()) return download(c, url, name);
  if (!response.ok) {
    const body = await response.json().catch(() => ({}));
    notice("error", `Could not download ${c.name}'s result: ${body.error?.message ?? response.status}`);
    return;
  }
  const saved = URL.createObjectURL(await response.blob());
  const save = el("a");
  save.href = saved;
  save.download = name;
  document.body.append(save);
  save.click();
  save.remove();
  setTimeout(() => URL.revokeObjectURL(saved), 60_000);
}

function renderState(state) {
  stateEl.textContent = JSON.stringify(state ?? {}, null, 2);
}

function logChange(text) {
  const item = el("li", "", text);
  changesEl.prepend(item);
  while (changesEl.children.length > 8) changesEl.lastChild.remove();
}

// --- events ----------------------------------------------------------------------------------

function handle(event, run) {
  // a stop aborts the request, which the client reports as a run error of its own
  if (!(event.type === "RUN_ERROR" && stopRequested)) timeline?.on(event);
  switch (event.type) {
    case "RUN_STARTED":
      runId = event.runId;
      break;
    case "TEXT_MESSAGE_START":
      bubble(event.messageId, "assistant", event);
      break;
    case "TEXT_MESSAGE_CONTENT":
      bubble(event.messageId, "assistant", event).textContent += event.delta;
      break;
    case "REASONING_MESSAGE_START":
      bubble(event.messageId, "reasoning", event);
      break;
    case "REASONING_MESSAGE_CONTENT":
      bubble(event.messageId, "reasoning", event).textContent += event.delta;
      break;
    case "TOOL_CALL_START":
      card(event.toolCallId, event.toolCallName, event);
      break;
    case "TOOL_CALL_ARGS": {
      const c = card(event.toolCallId, "", event);
      c.argsText += event.delta;
      c.args.textContent = c.argsText;
      break;
    }
    case "TOOL_CALL_END": {
      const c = card(event.toolCallId, "", event);
      c.args.textContent = pretty(c.argsText || "{}");
      if (!c.finished) {
        if (c.browser) setCardState(c, "in-browser", "waiting for the browser");
        else setCardState(c, "running", "running");
      }
      break;
    }
    case "ACTIVITY_SNAPSHOT":
      if (event.activityType === "tool-activity") activity(event.content ?? {}, event);
      break;
    case "TOOL_CALL_RESULT": {
      const c = card(event.toolCallId, "", event);
      const state = event.metadata?.callwright?.state;
      if (state === "output-denied") showResult(c, "denied", "denied", "Denied", event.content);
      else if (state === "output-error") showResult(c, "error", "error", "Error", event.content);
      else showResult(c, "complete", "complete", "Result", event.content);
      showFiles(c, event.metadata?.callwright?.files ?? []);
      showArtifact(c, event.metadata?.callwright?.artifact);
      break;
    }
    case "STATE_SNAPSHOT":
      if (JSON.stringify(event.snapshot ?? {}) !== JSON.stringify(agent.state ?? {})) {
        logChange("snapshot");
      }
      break;
    case "STATE_DELTA":
      for (const op of event.delta ?? []) {
        const value = "value" in op ? ` ${JSON.stringify(op.value)}` : "";
        logChange(`${op.op} ${op.path}${value}`);
      }
      break;
    case "SUBAGENT_STARTED": {
      const parent = cards.get(event.parentToolCallId);
      const box = el("div", "sub");
      box.append(el("div", "label", `sub-agent ${event.name}`));
      // inside the delegating call's card, above the result the sub-agent will produce
      if (parent) parent.root.insertBefore(box, parent.result);
      else append(box, containerFor(event));
      subRuns.set(event.subagentRunId, box);
      break;
    }
    case "SUBAGENT_ERROR": {
      const box = subRuns.get(event.subagentRunId);
      if (box) box.append(el("div", "notice error", `sub-agent failed: ${event.message}`));
      break;
    }
    case "RUN_ERROR":
      // Stopping aborts the request; the client reports that as a run error of its own.
      if (stopRequested) break;
      run.errored = true;
      notice("error", `The run failed: ${event.message}${event.code ? ` (${event.code})` : ""}`);
      break;
    default:
      break;
  }
}

function activity(content, event) {
  if (!content.toolCallId) return;
  const c = card(content.toolCallId, content.toolName, event);
  if (!c.finished && content.status === "running") setCardState(c, "running", "running");
  if (content.text !== undefined || content.fraction !== undefined) {
    c.progress.hidden = false;
    if (typeof content.fraction === "number") {
      c.bar.hidden = false;
      const percent = Math.round(Math.max(0, Math.min(1, content.fraction)) * 100);
      c.fill.style.width = `${percent}%`;
      setText(c.progressText, `${content.text ?? ""} · ${percent}%`);
    } else {
      setText(c.progressText, content.text ?? "");
    }
  }
  if (content.output !== undefined) {
    c.partial.hidden = false;
    setText(c.partialPre, pretty(content.output));
  }
}

// Calls of this conversation still without a result: what a stop or a failure leaves behind.
function markUnfinished(state, label) {
  timeline?.stop(state);
  for (const c of cards.values()) {
    if (!c.finished && c.root.dataset.state !== "awaiting-approval") {
      c.finished = true;
      setCardState(c, state, label);
    }
  }
}

// --- runs ------------------------------------------------------------------------------------

async function runOnce(params) {
  const run = { finished: null, errored: false, failure: null, stopped: false };
  stopRequested = false;
  setBusy(true, true);
  setStatus("running", "running…");
  try {
    await agent.runAgent(
      { tools: toolDefinitions, ...params },
      {
        onEvent: ({ event }) => {
          handle(event, run);
          scrollDown();
        },
        onStateChanged: ({ state }) => renderState(state),
        onRunFinishedEvent: (finished) => {
          run.finished = finished;
        },
      },
    );
  } catch (error) {
    run.failure = error;
  }
  run.stopped = stopRequested;
  setBusy(true, false);
  return run;
}

// What to do once a run's stream ends: answer approvals or browser tools and run again,
// or stop and say why.
async function afterRun(run, params) {
  if (run.stopped) {
    markUnfinished("cancelled", "cancelled");
    notice("info", "Stopped. The server cancelled the run and its tool calls.");
    setStatus("idle", "stopped");
    return null;
  }
  if (run.errored) {
    markUnfinished("error", "run failed");
    setStatus("error", "run failed");
    return null;
  }
  if (run.failure || !run.finished) {
    const error = run.failure;
    if (error?.status === 401) {
      markUnfinished("error", "not authorised");
      notice("error", "The server needs its access token.", {
        label: "Enter token",
        run: () => askForToken() && converse(params),
      });
      setStatus("error", "access token needed");
      return null;
    }
    if (error && typeof error.status === "number") {
      const body = error.payload?.error;
      const reason = body ? `${body.message} (${body.code})` : error.message;
      notice("error", `The server refused the request: ${reason}`);
      setStatus("error", "request refused");
      return null;
    }
    const why = error ? (error.message ?? String(error)) : "the stream ended before the run finished";
    markUnfinished("error", "connection lost");
    notice("error", `Connection lost: ${why}. The run did not finish.`, {
      label: "Retry",
      run: () => converse(params),
    });
    setStatus("error", "connection lost");
    return null;
  }
  const finished = run.finished;
  if (finished.outcome === "interrupt") {
    const interrupts = finished.interrupts ?? [];
    const questions = interrupts.some((i) => i.reason === "input_required");
    setStatus("waiting", questions ? "waiting for your answer" : "waiting for your approval");
    timeline?.waitingForApproval(interrupts.map((i) => i.toolCallId));
    const resume = [];
    for (const interrupt of interrupts) {
      resume.push(await (interrupt.reason === "input_required" ? askInput(interrupt) : askApproval(interrupt)));
    }
    return { resume };
  }
  const pending = finished.pendingToolCallIds ?? [];
  if (pending.length > 0) {
    setStatus("waiting", "running browser tools");
    timeline?.waitingForBrowser();
    for (const id of pending) await runBrowserTool(id);
    return {};
  }
  if (finished.outcome === "cancelled") {
    markUnfinished("cancelled", "cancelled");
    notice("info", "The run was cancelled.");
  }
  setStatus("idle", "ready");
  return null;
}

async function converse(params) {
  let next = params;
  const turn = new Timeline((name) => browserTools.some((t) => t.name === name));
  timeline = turn;
  append(turn.root);
  try {
    while (next) {
      const run = await runOnce(next);
      next = await afterRun(run, next);
    }
  } finally {
    turn.finish();
    setBusy(false);
    input.focus();
  }
}

async function runBrowserTool(id) {
  const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((t) => t.id === id);
  const name = call?.function?.name ?? "";
  const c = card(id, name);
  const tool = browserTools.find((t) => t.name === name);
  setCardState(c, "in-browser", "in your browser");
  timeline?.browserStarted(id);
  let content;
  let error;
  try {
    if (!tool) throw new Error(`this page has no tool named ${name}`);
    const output = await tool.run(JSON.parse(call.function.arguments || "{}"));
    content = typeof output === "string" ? output : JSON.stringify(output);
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  const message = { id: uid(), role: "tool", toolCallId: id, content: error ?? content };
  if (error !== undefined) message.error = error;
  agent.addMessage(message);
  timeline?.browserEnded(id, error === undefined);
  if (error !== undefined) showResult(c, "error", "error", "Error", error);
  else showResult(c, "complete", "complete", "Result (from your browser)", content);
}

// --- dialogs ---------------------------------------------------------------------------------

function modal(dialog, setUp) {
  return new Promise((resolve) => {
    const finish = (value) => {
      dialog.close();
      resolve(value);
    };
    setUp(finish);
    dialog.showModal();
  });
}

function askApproval(interrupt) {
  const dialog = $("#approval");
  const c = cards.get(interrupt.toolCallId);
  if (c) setCardState(c, "awaiting-approval", "awaiting approval");
  dialog.querySelector(".tool").textContent = c?.name ?? "the tool";
  dialog.querySelector(".why").textContent = interrupt.message ?? "";
  dialog.querySelector(".args").textContent = c ? pretty(c.argsText || "{}") : "";
  const reasonInput = dialog.querySelector("#deny-reason");
  reasonInput.value = "";
  return modal(dialog, (finish) => {
    const answer = (approved) => {
      const reason = reasonInput.value.trim();
      const payload = approved ? { approved } : { approved, ...(reason ? { reason } : {}) };
      timeline?.answered(interrupt.toolCallId);
      if (c) {
        if (approved) setCardState(c, "running", "approved");
        else setCardState(c, "denied", "denied");
      }
      finish({ interruptId: interrupt.id, status: "resolved", payload });
    };
    dialog.querySelector(".approve").onclick = () => answer(true);
    dialog.querySelector(".deny").onclick = () => answer(false);
  });
}

// A tool's question (an MCP server's elicitation): a form made from its JSON Schema (flat,
// primitive properties: text with a format, numbers, booleans, one or many choices).
// Submit resolves the interrupt with the form; Decline and Cancel cancel it, Decline
// with {action: "decline"}.
function askInput(interrupt) {
  const schema = interrupt.responseSchema ?? {};
  const required = new Set(schema.required ?? []);
  const dialog = el("dialog", "input-request");
  dialog.append(el("h3", "", "The tool asks you"), el("p", "why", interrupt.message ?? ""));
  const form = el("form");
  const read = Object.entries(schema.properties ?? {}).map(([key, prop]) => formField(form, key, prop, required.has(key)));
  const buttons = el("div", "buttons");
  const decline = el("button", "decline", "Decline");
  const cancel = el("button", "cancel", "Cancel");
  const submit = el("button", "submit primary", "Submit");
  for (const b of [decline, cancel]) b.type = "button";
  submit.type = "submit";
  buttons.append(decline, cancel, submit);
  form.append(buttons);
  dialog.append(form);
  dialog.addEventListener("cancel", (event) => event.preventDefault());
  document.body.append(dialog);
  const c = cards.get(interrupt.toolCallId);
  if (c) setCardState(c, "awaiting-input", "waiting for your answer");
  return modal(dialog, (finish) => {
    const answer = (entry, label) => {
      timeline?.answered(interrupt.toolCallId);
      if (c) setCardState(c, "running", label);
      finish({ interruptId: interrupt.id, ...entry });
      dialog.remove();
    };
    form.onsubmit = (event) => {
      event.preventDefault();
      if (!form.reportValidity()) return;
      const payload = {};
      for (const [key, value] of read.map((f) => f())) if (value !== undefined) payload[key] = value;
      answer({ status: "resolved", payload }, "answered");
    };
    decline.onclick = () => answer({ status: "cancelled", payload: { action: "decline" } }, "declined");
    cancel.onclick = () => answer({ status: "cancelled" }, "cancelled");
  });
}

// One form field; returns a function reading [key, value] (value undefined when left empty).
function formField(form, key, prop, required) {
  const id = `field-${uid()}`;
  const label = el("label", "", `${prop.title ?? key}${required ? " *" : ""}`);
  label.htmlFor = id;
  form.append(label);
  if (prop.description) form.append(el("div", "why", prop.description));
  const choices = (list) => (list ?? []).map((o) => (typeof o === "object" ? [o.const, o.title ?? o.const] : [o, o]));
  const options = prop.enum ? choices(prop.enum).map(([v], i) => [v, prop.enumNames?.[i] ?? v]) : choices(prop.oneOf);
  const many = prop.type === "array" ? choices(prop.items?.enum ?? prop.items?.anyOf ?? prop.items?.oneOf) : [];
  let input;
  if (options.length > 0 || many.length > 0) {
    input = el("select");
    input.multiple = many.length > 0;
    for (const [value, text] of many.length > 0 ? many : options) {
      const option = el("option", "", String(text));
      option.value = String(value);
      const chosen = Array.isArray(prop.default) ? prop.default.includes(value) : prop.default === value;
      option.selected = chosen;
      input.append(option);
    }
  } else {
    input = el("input");
    if (prop.type === "boolean") {
      input.type = "checkbox";
      input.checked = prop.default === true;
    } else {
      const kinds = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" };
      input.type = prop.type === "number" || prop.type === "integer" ? "number" : (kinds[prop.format] ?? "text");
      if (prop.type === "integer") input.step = "1";
      if (prop.type === "number") input.step = "any";
      for (const bound of ["minimum", "maximum"]) if (prop[bound] !== undefined) input[bound.slice(0, 3)] = String(prop[bound]);
      if (prop.default !== undefined) input.value = String(prop.default);
    }
  }
  input.id = id;
  input.name = key;
  if (required && input.type !== "checkbox") input.required = true;
  form.append(input);
  return () => {
    if (input.type === "checkbox") return [key, input.checked];
    if (input.multiple) return [key, [...input.selectedOptions].map((o) => o.value)];
    if (input.value === "") return [key, undefined];
    if (input.type === "number") return [key, Number(input.value)];
    return [key, input.value];
  };
}

function askConfirmation(args) {
  const dialog = $("#confirm");
  dialog.querySelector(".action").textContent = args.action ?? "(no action given)";
  const badge = dialog.querySelector(".importance");
  badge.hidden = !args.importance;
  badge.textContent = args.importance ?? "";
  return modal(dialog, (finish) => {
    dialog.querySelector(".yes").onclick = () => finish(true);
    dialog.querySelector(".no").onclick = () => finish(false);
  });
}

// A dialog must be answered: Escape would leave the run waiting with no answer.
for (const dialog of document.querySelectorAll("dialog")) {
  dialog.addEventListener("cancel", (event) => event.preventDefault());
}

// --- wiring ----------------------------------------------------------------------------------

function send(text) {
  if (!text.trim() || sendButton.disabled) return;
  append(el("div", "msg user", text));
  agent.addMessage({ id: uid(), role: "user", content: text });
  input.value = "";
  converse({});
}

$("#composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send(input.value);
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    send(input.value);
  }
});
stopButton.addEventListener("click", () => {
  if (!streaming) return;
  stopRequested = true;
  setStatus("running", "stopping…");
  agent.abortRun(); // closes the request; the server cancels the run
});
$("#new-chat").addEventListener("click", () => {
  if (streaming) {
    stopRequested = true;
    agent.abortRun();
  }
  agent = newAgent();
  timeline?.finish();
  timeline = null;
  cards.clear();
  bubbles.clear();
  subRuns.clear();
  logEl.replaceChildren(el("div", "empty", "A new conversation. Ask the agent something."));
  logEl.firstChild.id = "empty";
  changesEl.replaceChildren();
  renderState({});
  setStatus("idle", "ready");
});

const examples = [
  "What is 17 * 23?",
  "Count slowly to 5",
  "Save 'Buy milk' in shopping.txt",
  "What is the current time in Europe/Paris?",
  "Ask me to confirm before deleting old files",
];
for (const text of examples) {
  const chip = el("button", "", text);
  chip.type = "button";
  chip.addEventListener("click", () => send(text));
  $("#examples").append(chip);
}

setBusy(false);
input.focus();
