// A tool call's card: its arguments as they stream in, progress, partial and final
// output, and the approval form while a human must decide.

import { getToolName, type DynamicToolUIPart, type ToolUIPart } from "ai";
import { useState } from "react";
import type { ToolProgress } from "./types";

type Props = {
  part: ToolUIPart | DynamicToolUIPart;
  progress?: ToolProgress;
  respond: (approvalId: string, approved: boolean, reason?: string) => void;
};

const LABELS: Record<string, string> = {
  "input-streaming": "streaming arguments",
  "input-available": "running",
  "approval-requested": "awaiting approval",
  "approval-responded": "answered",
  "output-available": "done",
  "output-error": "error",
  "output-denied": "denied",
};

const json = (value: unknown) => JSON.stringify(value, null, 2);

export function ToolCard({ part, progress, respond }: Props) {
  const preliminary = part.state === "output-available" && part.preliminary === true;
  const state = preliminary ? "partial-output" : part.state;
  return (
    <div
      className="card"
      data-tool={getToolName(part)}
      data-tool-call-id={part.toolCallId}
      data-state={state}
    >
      <div className="head">
        <strong>{getToolName(part)}</strong>
        <span className="state">{preliminary ? "running" : LABELS[part.state]}</span>
      </div>
      <pre className="args">{part.input === undefined ? "" : json(part.input)}</pre>
      {progress && !(part.state === "output-available" && !preliminary) && (
        <div className="progress">
          {progress.fraction !== undefined && (
            <progress value={progress.fraction} max={1} />
          )}
          <span className="progress-text">{progress.text ?? progress.status}</span>
        </div>
      )}
      {part.state === "output-available" && (
        <>
          <div className="label">{preliminary ? "Partial output" : "Result"}</div>
          <pre className={preliminary ? "partial" : "result"}>{json(part.output)}</pre>
        </>
      )}
      {part.state === "output-error" && <pre className="result error">{part.errorText}</pre>}
      {part.state === "output-denied" && (
        <p className="result denied">Denied{part.approval.reason ? `: ${part.approval.reason}` : ""}</p>
      )}
      {part.state === "approval-responded" && (
        <p className="answer">
          {part.approval.approved ? "Approved" : "Denied"}
          {part.approval.reason ? `: ${part.approval.reason}` : ""}
        </p>
      )}
      {part.state === "approval-requested" && (
        <ApprovalForm onAnswer={(approved, reason) => respond(part.approval.id, approved, reason)} />
      )}
    </div>
  );
}

function ApprovalForm({ onAnswer }: { onAnswer: (approved: boolean, reason?: string) => void }) {
  const [reason, setReason] = useState("");
  const answer = (approved: boolean) => onAnswer(approved, reason.trim() || undefined);
  return (
    <div className="approval">
      <input
        aria-label="Reason"
        placeholder="Reason (optional)"
        value={reason}
        onChange={(e) => setReason(e.target.value)}
      />
      <button type="button" className="approve" onClick={() => answer(true)}>Approve</button>
      <button type="button" className="deny" onClick={() => answer(false)}>Deny</button>
    </div>
  );
}
