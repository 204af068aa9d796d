// UI message streams checked by the REAL `ai` clients: each chunk against that version's own
// uiMessageChunkSchema (the schema its chat transport parses with), then the stream through
// readUIMessageStream, which throws on a chunk out of order (a delta for a part never
// started, an output for an unknown call).
//
//   node validate_chunks.mjs <streams.json>
//
// streams.json: [{version: 5|6|7, chunks: [...], message?}, ...], message being the UI
// message a response continues (as useChat passes it). Prints one list of problems
// per stream, in order: [["chunk 3 (text-delta): ...", ...], ...]; empty lists mean accepted.

import { readFileSync } from "node:fs";

const streams = JSON.parse(readFileSync(process.argv[2], "utf8"));
const clients = {};
for (const version of new Set(streams.map((s) => s.version))) {
  clients[version] = await import(`ai${version}`);
}

// A zod union's error lists every branch; the ones that matched the chunk's type say why.
function brief(error) {
  const cause = error?.cause?.issues ?? error?.issues;
  if (!Array.isArray(cause)) return String(error?.message ?? error).slice(0, 400);
  const lines = [];
  for (const issue of cause) {
    const branches = issue.code === "invalid_union" ? issue.errors : [[issue]];
    for (const branch of branches) {
      if (branch.some((i) => i.path?.[0] === "type")) continue;
      for (const i of branch) lines.push(`${i.path?.join(".") || "(chunk)"}: ${i.message}`);
    }
  }
  return lines.length ? lines.join("; ") : "no chunk type of this client matches";
}

async function check({ version, chunks, message }) {
  const { readUIMessageStream, uiMessageChunkSchema } = clients[version];
  const schema = uiMessageChunkSchema();
  const problems = [];
  const accepted = [];
  for (const [index, chunk] of chunks.entries()) {
    const result = await schema.validate(chunk);
    if (result.success) accepted.push(result.value);
    else problems.push(`chunk ${index} (${chunk?.type}): ${brief(result.error)}`);
  }
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of accepted) controller.enqueue(chunk);
      controller.close();
    },
  });
  // an error chunk is the stream's own news, not a fault of the stream
  const sent = chunks.filter((c) => c?.type === "error").map((c) => c.errorText);
  const report = (e) => {
    const text = e instanceof Error ? e.message : String(e);
    if (!sent.some((errorText) => text.includes(errorText))) problems.push(`stream: ${text}`);
  };
  try {
    const onError = report;
    for await (const _ of readUIMessageStream({ message, stream, onError })) {
      // the message as built so far; only the errors matter here
    }
  } catch (e) {
    report(e);
  }
  return problems;
}

const out = [];
for (const stream of streams) out.push(await check(stream));
process.stdout.write(JSON.stringify(out));
