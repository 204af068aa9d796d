// A tool call's card: its arguments as they stream in, progress, partial and final
// output, and the approval form while a human must decide.

import { useState } from "react";
import type { ToolView } from "./toolViews";

const LABELS: Record<ToolView["state"], string> = {
  "input-streaming": "streaming arguments",
  "input-available": "running",
  "partial-output": "running",
  "approval-requested": "awaiting approval",
  "approval-responded": "answered",
  "output-available": "done",
  "output-error": "error",
  "output-denied": "denied",
};

// Arguments arrive as JSON text: show them pretty once they parse, raw until then.
function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

type Props = {
  view: ToolView;
  frontEnd: boolean;
  answer: (interruptId: string, approved: boolean, reason?: string) => void;
};

export function ToolCard({ view, frontEnd, answer }: Props) {
  const { state, activity, interrupt } = view;
  const finished = state === "output-available" || state === "output-error" || state === "output-denied";
  return (
    <div className="card" data-tool={view.name} data-tool-call-id={view.id} data-state={state}>
      <div className="head">
        <strong>{view.name}</strong>
        <span className="state">
          {frontEnd && state === "input-available" ? "in your browser" : LABELS[state]}
        </span>
      </div>
      <pre className="args">{pretty(view.args)}</pre>
      {activity && !finished && (activity.text !== undefined || activity.fraction !== undefined) && (
        <div className="progress">
          {activity.fraction !== undefined && <progress value={activity.fraction} max={1} />}
          <span className="progress-text">{activity.text ?? activity.status}</span>
        </div>
      )}
      {state === "partial-output" && (
        <>
          <div className="label">Partial output</div>
          <pre className="partial">{JSON.stringify(activity?.output, null, 2)}</pre>
        </>
      )}
      {state === "output-available" && (
        <>
          <div className="label">{frontEnd ? "Result (from your browser)" : "Result"}</div>
          <pre className="result">{pretty(view.result ?? "")}</pre>
        </>
      )}
      {state === "output-error" && <pre className="result error">{view.result}</pre>}
      {state === "output-denied" && <p className="result denied">{view.result}</p>}
      {state === "approval-responded" && view.answer && (
        <p className="answer">
          {view.answer.approved ? "Approved" : "Denied"}
          {view.answer.reason ? `: ${view.answer.reason}` : ""}
        </p>
      )}
      {state === "approval-requested" && interrupt && (
        <ApprovalForm
          message={interrupt.message}
          onAnswer={(approved, reason) => answer(interrupt.id, approved, reason)}
        />
      )}
    </div>
  );
}

type FormProps = { message?: string; onAnswer: (approved: boolean, reason?: string) => void };

function ApprovalForm({ message, onAnswer }: FormProps) {
  const [reason, setReason] = useState("");
  const answer = (approved: boolean) => onAnswer(approved, reason.trim() || undefined);
  return (
    <>
      {message && <p className="why">{message}</p>}
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
    </>
  );
}
