import type { UIMessage } from "ai";

/** What callwright sends as a `data-tool-progress` part (id `progress-<toolCallId>`),
 * replaced in place as the tool reports. */
export type ToolProgress = {
  toolCallId: string;
  toolName: string;
  status: string;
  text?: string;
  /** 0..1, when the tool knows how far along it is. */
  fraction?: number;
};

/** The chat's messages: the AI SDK's, with callwright's one data part typed. */
export type ChatMessage = UIMessage<unknown, { "tool-progress": ToolProgress }>;
