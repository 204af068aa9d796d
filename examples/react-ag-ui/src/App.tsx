// The chat: the agent hook, a message list and a composer that attaches files.

import type { ContentPart, Message } from "@ag-ui/client";
import { useRef, useState, type FormEvent } from "react";
import { ToolCard } from "./ToolCard";
import { frontEndTools } from "./frontendTools";
import { toolViews } from "./toolViews";
import { useAgent } from "./useAgent";

export function App() {
  const agent = useAgent("/agui", frontEndTools);
  const views = toolViews(agent.messages, agent);
  const [text, setText] = useState("");
  const fileInput = useRef<HTMLInputElement>(null);
  // A paused run waits for its approvals: the next run must answer them (see useAgent).
  const busy = agent.status === "running" || agent.status === "awaiting approval";

  async function submit(event: FormEvent) {
    event.preventDefault();
    const files = [...(fileInput.current?.files ?? [])];
    if (busy || (!text.trim() && files.length === 0)) return;
    // With files the content is a list of parts: the text, then one media part per file.
    const parts: ContentPart[] = [{ type: "text", text }, ...(await Promise.all(files.map(filePart)))];
    agent.send(files.length > 0 ? parts : text);
    setText("");
    if (fileInput.current) fileInput.current.value = "";
  }

  return (
    <main>
      <header>
        <h1>callwright · AG-UI starter</h1>
        <span className="status" data-status={agent.status}>{agent.status}</span>
      </header>
      <section className="log">
        {agent.messages.length === 0 && <p className="empty">Ask the agent something.</p>}
        {agent.messages.map((message) => (
          <MessageView key={message.id} message={message}>
            {message.role === "assistant" &&
              (message.toolCalls ?? []).map((call) => {
                const view = views.get(call.id);
                return view ? (
                  <ToolCard
                    key={call.id}
                    view={view}
                    frontEnd={frontEndTools.some((t) => t.name === view.name)}
                    answer={agent.answer}
                  />
                ) : null;
              })}
          </MessageView>
        ))}
        {agent.error && <p className="error">Something went wrong: {agent.error}</p>}
      </section>
      <form className="composer" onSubmit={submit}>
        <input
          aria-label="Message"
          value={text}
          onChange={(e) => setText(e.target.value)}
          placeholder="Try: deploy to staging"
        />
        <input ref={fileInput} aria-label="Attach files" type="file" multiple accept="image/*,text/plain" />
        <button type="submit" disabled={busy}>Send</button>
      </form>
    </main>
  );
}

// User and assistant messages; tool results and activity show inside the tool cards.
function MessageView({ message, children }: { message: Message; children: React.ReactNode }) {
  if (message.role !== "user" && message.role !== "assistant") return null;
  const parts: ContentPart[] =
    typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content ?? []);
  return (
    <div className={`message ${message.role}`}>
      {parts.map((part, i) => {
        if (part.type === "text") return part.text ? <p key={i}>{part.text}</p> : null;
        const name = (part.metadata as { filename?: string } | undefined)?.filename ?? part.type;
        if (part.type === "image" && part.source.type === "data") {
          const src = `data:${part.source.mimeType};base64,${part.source.value}`;
          return <img key={i} className="file" src={src} alt={name} />;
        }
        return <span key={i} className="file">📎 {name}</span>;
      })}
      {children}
    </div>
  );
}

// A file as an AG-UI 1.0 media part: base64 data, its media type, its name in metadata.
async function filePart(file: File): Promise<ContentPart> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  const source = { type: "data" as const, value: btoa(binary), mimeType: file.type || "text/plain" };
  const metadata = { filename: file.name };
  return file.type.startsWith("image/")
    ? { type: "image", source, metadata }
    : { type: "document", source, metadata };
}
