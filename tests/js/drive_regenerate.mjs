// Sends a message, then regenerates the answer, through a REAL `ai` client; prints one
// JSON report.
//
//   node drive_regenerate.mjs <client> <baseUrl> <authorization>
//   client: ai5, ai6, ai7
//
// regenerate() drops the last assistant message and sends the history up to the user's
// message again with `trigger: "regenerate-message"`: the journal must replace the answer,
// not store the question twice (tests/wire/test_run_faults.py).

import { chatClass } from "./chat.mjs";

const [clientName, baseUrl, authorization] = process.argv.slice(2);
const majors = { ai5: 5, ai6: 6, ai7: 7 };
const major = majors[clientName];
if (!major) {
  process.stderr.write(`unknown client ${clientName}\n`);
  process.exit(2);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const errText = (e) => (e instanceof Error ? e.message : String(e));

const mod = await import(clientName);
const Chat = chatClass(mod);
const bodies = [];
const statuses = [];
const errors = [];
const fetch = async (url, init) => {
  bodies.push(JSON.parse(init.body));
  const response = await globalThis.fetch(url, init);
  statuses.push(response.status);
  return response;
};
const chat = new Chat({
  id: `chat_${Math.random().toString(36).slice(2, 10)}`,
  transport: new mod.DefaultChatTransport({
    api: `${baseUrl}/api/chat`,
    headers: { "x-ai-sdk-version": String(major), authorization },
    fetch,
  }),
  onError: (e) => errors.push(errText(e)),
});
const texts = () =>
  chat.messages.map((m) => `${m.role}: ${m.parts.filter((p) => p.type === "text").map((p) => p.text).join("")}`);
const settle = async () => {
  const end = Date.now() + 20000;
  while (Date.now() < end && chat.status !== "ready" && chat.status !== "error") await sleep(20);
};
const steps = [];
try {
  await chat.sendMessage({ text: "hello" });
  await settle();
  steps.push(texts());
  await chat.regenerate();
  await settle();
  steps.push(texts());
} catch (e) {
  errors.push(errText(e));
}
const report = { threadId: chat.id, status: chat.status, steps, statuses, errors, bodies };
process.stdout.write(JSON.stringify(report), () => process.exit(0));
