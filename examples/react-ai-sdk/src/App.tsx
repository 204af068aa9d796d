// The chat: useChat over callwright's AI SDK endpoint, a message list and a composer.

import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  generateId,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
} from "ai";
import { useRef, useState, type FormEvent } from "react";
import { MessageView } from "./MessageView";
import type { ChatMessage } from "./types";

const transport = new DefaultChatTransport<ChatMessage>({
  api: "/api/chat",
  // callwright encodes the stream for this major version of `ai` (approvals need 6+).
  headers: { "x-ai-sdk-version": "7" },
});

// The chat id lives in the address (#chat=...): a reload resumes the answer being
// streamed (GET /api/chat/{id}/stream; the server needs a journal for that).
function chatId(): string {
  const given = new URLSearchParams(location.hash.slice(1)).get("chat");
  if (given) return given;
  const id = generateId();
  history.replaceState(null, "", `#chat=${id}`);
  return id;
}

// A refused request's body is callwright's {"error": {"message", "code"}}: show that.
function describe(error: Error): string {
  try {
    const { message, code } = JSON.parse(error.message).error;
    return `${message} (${code})`;
  } catch {
    return error.message;
  }
}

export function App() {
  const [id] = useState(chatId);
  const { messages, sendMessage, addToolApprovalResponse, status, error, stop } =
    useChat<ChatMessage>({
      id,
      transport,
      resume: true,
      // Once every approval in the last answer has a response, send them back.
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  const [text, setText] = useState("");
  const [files, setFiles] = useState<FileList | undefined>();
  const fileInput = useRef<HTMLInputElement>(null);
  const busy = status === "submitted" || status === "streaming";
  const asking = messages
    .at(-1)
    ?.parts.some((p) => isToolUIPart(p) && p.state === "approval-requested");

  function submit(event: FormEvent) {
    event.preventDefault();
    if (!text.trim() && !files?.length) return;
    // Files go as `file` parts (data: URLs); callwright hands them to the model.
    sendMessage({ text, files });
    setText("");
    setFiles(undefined);
    if (fileInput.current) fileInput.current.value = "";
  }

  return (
    <main>
      <header>
        <h1>callwright · AI SDK starter</h1>
        <span className="status" data-status={status}>
          {asking && !busy ? "awaiting approval" : status}
        </span>
      </header>
      <section className="log">
        {messages.length === 0 && <p className="empty">Ask the agent something.</p>}
        {messages.map((message) => (
          <MessageView
            key={message.id}
            message={message}
            respond={(approvalId, approved, reason) =>
              addToolApprovalResponse({ id: approvalId, approved, reason })
            }
          />
        ))}
        {error && <p className="error">Something went wrong: {describe(error)}</p>}
      </section>
      <form className="composer" onSubmit={submit}>
        <input
          aria-label="Message"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="Try: deploy to staging"
        />
        <input
          ref={fileInput}
          aria-label="Attach files"
          type="file"
          multiple
          accept="image/*,text/plain"
          onChange={(e) => setFiles(e.target.files ?? undefined)}
        />
        {busy ? (
          <button type="button" onClick={() => stop()}>Stop</button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </main>
  );
}
