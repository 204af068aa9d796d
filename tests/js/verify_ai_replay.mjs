// A run's replay read with the REAL `ai` client's own stream parsing: the SSE parser and
// chunk schema its chat transport uses (parseJsonEventStream with uiMessageChunkSchema),
// then readUIMessageStream, which builds the assistant message and throws on a chunk out
// of order (a text delta for a part never started, a tool output for an unknown call).
//
//   node verify_ai_replay.mjs <ai5|ai6|ai7> <replayUrl>
//
// Prints {errors, types, text}: parse and stream errors (empty when the client accepted
// the whole stream), the chunk types it read, and the text of the message it built.

const [clientName, url] = process.argv.slice(2);
const { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } = await import(clientName);

const errors = [];
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
      controller.enqueue(parsed.value);
    },
  }),
);
let message;
try {
  for await (const built of readUIMessageStream({ stream: chunks, onError: (e) => errors.push(String(e)) })) {
    message = built;
  }
} catch (e) {
  errors.push(`stream: ${e instanceof Error ? e.message : String(e)}`);
}
const text = (message?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
process.stdout.write(JSON.stringify({ errors, types, text }));
