// What ai 7's own streamText sends a UI client when a `toolApproval` policy decides a call
// by itself, and what its model sees next. The reference for callwright's ai 7 encoder:
// tests/wire/test_approval_policy_clients.py compares the chunk shapes.
//
//   node stream_text_approvals.mjs
//
// Prints {approved: {chunks, prompts}, denied: {chunks, prompts}}: the UI message stream
// chunks of one run whose model calls delete_file once and then answers, and the prompt
// of every model request (the second one shows how the decision reached the model).

import { jsonSchema, isStepCount, streamText, tool } from "ai7";
import { MockLanguageModelV4, convertArrayToReadableStream } from "ai7/test";

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

function model(prompts) {
  return new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      prompts.push(prompt);
      const chunks =
        prompts.length === 1
          ? [
              { type: "tool-call", toolCallId: "call_1", toolName: "delete_file", input: '{"path":"/tmp/a"}' },
              { type: "finish", finishReason: { unified: "tool-calls", raw: undefined }, usage },
            ]
          : [
              { type: "text-start", id: "t1" },
              { type: "text-delta", id: "t1", delta: "Done." },
              { type: "text-end", id: "t1" },
              { type: "finish", finishReason: { unified: "stop", raw: undefined }, usage },
            ];
      return { stream: convertArrayToReadableStream(chunks) };
    },
  });
}

async function runWith(status) {
  const prompts = [];
  const result = streamText({
    model: model(prompts),
    prompt: "clean up",
    tools: {
      delete_file: tool({
        description: "Delete a file.",
        inputSchema: jsonSchema({ type: "object", properties: { path: { type: "string" } } }),
        execute: async ({ path }) => `deleted ${path}`,
      }),
    },
    toolApproval: { delete_file: () => status },
    stopWhen: isStepCount(3),
  });
  const chunks = [];
  for await (const chunk of result.toUIMessageStream()) chunks.push(chunk);
  return { chunks, prompts };
}

const out = {
  approved: await runWith({ type: "approved", reason: "temporary files are fine" }),
  denied: await runWith({ type: "denied", reason: "system files are off limits" }),
};
process.stdout.write(JSON.stringify(out));
