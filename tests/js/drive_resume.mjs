// The AI SDK's resume request with a REAL client: a chat whose stream was cut (its
// replica died) calls resumeStream() against another server and reports what it got.
//
//   node drive_resume.mjs <ai5|ai6|ai7> <baseUrl> <chatId>
//
// Prints {status, error, text, messages}: the assistant text the resumed stream built.

import { chatClass } from "./chat.mjs";

const [clientName, baseUrl, chatId] = process.argv.slice(2);
const mod = await import(clientName);
const { AbstractChat, DefaultChatTransport } = mod;

const Chat = chatClass(mod);

const errors = [];
const chat = new Chat({
  id: chatId,
  transport: new DefaultChatTransport({ api: `${baseUrl}/api/chat` }),
  onError: (e) => errors.push(e instanceof Error ? e.message : String(e)),
});
try {
  await chat.resumeStream();
} catch (e) {
  errors.push(`resumeStream threw: ${e instanceof Error ? e.message : String(e)}`);
}
const last = chat.messages[chat.messages.length - 1];
const text = last?.role === "assistant"
  ? last.parts.filter((p) => p.type === "text").map((p) => p.text).join("")
  : "";
process.stdout.write(JSON.stringify({ status: chat.status, errors, text, count: chat.messages.length }));
