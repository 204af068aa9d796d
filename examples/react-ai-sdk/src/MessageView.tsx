// One message: its text, files and tool calls, in the order the parts arrived.

import { isToolUIPart } from "ai";
import { ToolCard } from "./ToolCard";
import type { ChatMessage, ToolProgress } from "./types";

type Props = {
  message: ChatMessage;
  respond: (approvalId: string, approved: boolean, reason?: string) => void;
};

export function MessageView({ message, respond }: Props) {
  // Progress parts are shown inside the card of the call they belong to.
  const progress = new Map<string, ToolProgress>();
  for (const part of message.parts) {
    if (part.type === "data-tool-progress") progress.set(part.data.toolCallId, part.data);
  }
  return (
    <div className={`message ${message.role}`}>
      {message.parts.map((part, i) => {
        if (part.type === "text") return <p key={i}>{part.text}</p>;
        if (part.type === "reasoning") return <p key={i} className="reasoning">{part.text}</p>;
        if (part.type === "file") {
          return part.mediaType.startsWith("image/") ? (
            <img key={i} className="file" src={part.url} alt={part.filename ?? "image"} />
          ) : (
            <span key={i} className="file">📎 {part.filename ?? part.mediaType}</span>
          );
        }
        if (isToolUIPart(part)) {
          return (
            <ToolCard
              key={part.toolCallId}
              part={part}
              progress={progress.get(part.toolCallId)}
              respond={respond}
            />
          );
        }
        return null;
      })}
    </div>
  );
}
