// A run's replay read with the REAL @ag-ui/client 1.0, through the pipeline HttpAgent puts
// every response through: runHttpRequest -> transformHttpEventStream (SSE parsing and the
// event schemas) -> verifyEvents (the protocol's rules: one RUN_STARTED, steps, messages and
// tool calls opened once and closed before RUN_FINISHED) -> defaultApplyEvents (messages).
//
//   node verify_replay.mjs <replayUrl>
//
// Prints {error, types, messages, printed}: the first error the client raised (null when
// it accepted the whole stream), the event types it let through, the messages it built
// and anything it printed (a warning about an unknown message or call).

import {
  defaultApplyEvents,
  runHttpRequest,
  transformHttpEventStream,
  verifyEvents,
} from "agui-client-1";

const [url] = process.argv.slice(2);

const printed = [];
for (const level of ["warn", "error", "log", "info", "debug"]) {
  console[level] = (...args) => printed.push(`${level}: ${args.map(String).join(" ")}`);
}

const types = [];
let messages = [];
let error = null;
const events = transformHttpEventStream(runHttpRequest(() => fetch(url))).pipe(verifyEvents(false));
const seen = { onEvent: ({ event }) => void types.push(event.type) };
const agent = { messages: [], state: {} };
const input = { threadId: "", runId: "", messages: [], state: {}, tools: [], context: [] };
await new Promise((resolve) => {
  defaultApplyEvents(input, events, agent, [seen]).subscribe({
    next: (mutation) => {
      if (mutation.messages !== undefined) messages = mutation.messages;
    },
    error: (e) => {
      error = e instanceof Error ? e.message : String(e);
      resolve();
    },
    complete: resolve,
  });
});
process.stdout.write(JSON.stringify({ error, types, messages, printed }));
