// Many replays, each read by a REAL client's own stream checks, in one Node process (the
// chaos run of bench/kill_any_one.py feeds it every replay of a cycle):
//
// - "agui": @ag-ui/client 1.0's pipeline, as verify_replay.mjs reads it (runHttpRequest ->
//   transformHttpEventStream -> verifyEvents -> defaultApplyEvents);
// - "ai5" | "ai6" | "ai7": the ai package's chunk parsing and message building, as
//   verify_ai_replay.mjs reads it (parseJsonEventStream with uiMessageChunkSchema ->
//   readUIMessageStream).
//
//   echo '[{"client": "agui", "url": "http://…/runs/r1/events?after=0"}, …]' | node verify_replays.mjs
//
// Prints one JSON list, a {client, url, errors, types, text} per replay, in order: errors is
// empty when the client accepted the whole stream (anything the AG-UI client printed counts
// as an error; an ai client's onError call with the text of an `error` chunk the stream
// carried is the run's own error, put in runErrors instead), types the event or chunk types
// it let through, text the assistant's text.

import * as agui from "agui-client-1";

const clients = { ai5: await import("ai5"), ai6: await import("ai6"), ai7: await import("ai7") };

const printed = [];
for (const level of ["warn", "error", "log", "info", "debug"]) {
  console[level] = (...args) => printed.push(`${level}: ${args.map(String).join(" ")}`);
}

async function readAgui(url) {
  printed.length = 0;
  const types = [];
  const errors = [];
  let messages = [];
  const events = agui
    .transformHttpEventStream(agui.runHttpRequest(() => fetch(url)))
    .pipe(agui.verifyEvents(false));
  const seen = { onEvent: ({ event }) => void types.push(event.type) };
  const state = { messages: [], state: {} };
  const input = { threadId: "", runId: "", messages: [], state: {}, tools: [], context: [] };
  await new Promise((resolve) => {
    agui.defaultApplyEvents(input, events, state, [seen]).subscribe({
      next: (mutation) => {
        if (mutation.messages !== undefined) messages = mutation.messages;
      },
      error: (e) => {
        errors.push(e instanceof Error ? e.message : String(e));
        resolve();
      },
      complete: resolve,
    });
  });
  errors.push(...printed);
  const text = messages
    .filter((m) => m.role === "assistant" && typeof m.content === "string")
    .map((m) => m.content)
    .join("\n");
  return { errors, types, text };
}

async function readAi(name, url) {
  const { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } = clients[name];
  const errors = [];
  const runErrors = [];
  const sent = [];
  const types = [];
  const response = await fetch(url);
  const chunks = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(parsed, controller) {
        if (!parsed.success) {
          errors.push(`parse: ${parsed.error?.message ?? String(parsed.error)}`);
          return;
        }
        types.push(parsed.value.type);
        if (parsed.value.type === "error") sent.push(parsed.value.errorText);
        controller.enqueue(parsed.value);
      },
    }),
  );
  // an `error` chunk is the run's own error, which the client hands to onError: not a rejection
  const onError = (e) => {
    const message = e instanceof Error ? e.message : String(e);
    (sent.includes(message) ? runErrors : errors).push(message);
  };
  let message;
  try {
    for await (const built of readUIMessageStream({ stream: chunks, onError })) {
      message = built;
    }
  } catch (e) {
    errors.push(`stream: ${e instanceof Error ? e.message : String(e)}`);
  }
  const text = (message?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
  return { errors, runErrors, types, text };
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const { client, url } of JSON.parse(input)) {
  let read;
  try {
    read = client === "agui" ? await readAgui(url) : await readAi(client, url);
  } catch (e) {
    read = { errors: [`read: ${e instanceof Error ? e.message : String(e)}`], types: [], text: "" };
  }
  results.push({ client, url, ...read });
}
process.stdout.write(JSON.stringify(results));
