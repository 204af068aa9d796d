// A timeline of each conversation turn: where the time went, drawn live from the AG-UI
// events the page already receives (no extra endpoint). One row for the server's runs
// (a turn that waits for an approval or for the browser is several runs, with the waits
// between them), one for the model's turns, one per tool call, so calls that run in
// parallel sit side by side; a delegate's model and calls are rows of their own,
// indented under the call that delegated.
//
// Times are when the page saw each event. The server does not announce when a call
// starts executing, so a call's bar starts when its arguments are complete, and never
// before the model's turn is over (calls run after the model's turn).

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function seconds(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

// Events after which the model has finished its turn (the step's calls run, or it ended).
const AFTER_MODEL = new Set([
  "ACTIVITY_SNAPSHOT",
  "TOOL_CALL_RESULT",
  "STEP_FINISHED",
  "RUN_FINISHED",
  "RUN_ERROR",
]);
const MODEL_OUTPUT = new Set([
  "TEXT_MESSAGE_START",
  "TEXT_MESSAGE_CONTENT",
  "TEXT_MESSAGE_END",
  "REASONING_MESSAGE_START",
  "REASONING_MESSAGE_CONTENT",
  "REASONING_MESSAGE_END",
  "TOOL_CALL_START",
  "TOOL_CALL_ARGS",
  "TOOL_CALL_END",
]);
// Output that completes a part: the model bar stops growing until more output comes.
const PART_ENDS = new Set(["TOOL_CALL_END", "TEXT_MESSAGE_END", "REASONING_MESSAGE_END"]);
// Time spent waiting for someone else, left out of a row's total.
const WAITS = new Set(["waiting", "awaiting-approval"]);

const LABELS = {
  run: "server run",
  done: "server run",
  waiting: "waiting",
  model: "model turn",
  streaming: "arguments streaming",
  running: "running",
  complete: "complete",
  error: "error",
  denied: "denied",
  cancelled: "cancelled",
  "awaiting-approval": "waiting for approval",
  "in-browser": "in the browser",
};

export class Timeline {
  // ``root`` is the element to put in the page; ``isBrowserTool(name)`` says which calls
  // the page runs itself.
  constructor(isBrowserTool) {
    this.isBrowserTool = isBrowserTool;
    this.t0 = performance.now();
    this.ended = null;
    this.runStart = null;
    this.rows = [];
    this.byKey = new Map();
    this.models = new Map(); // "" (the turn's own runs) or a sub-run id -> its model turn
    this.subRuns = new Map(); // sub-run id -> { name, depth, parent, tail }
    this.calls = new Map(); // toolCallId -> row
    this.root = el("details", "timeline");
    this.root.open = true;
    const summary = el("summary");
    summary.append(el("span", "tl-title", "Timeline"), (this.total = el("span", "tl-total")));
    this.grid = el("div", "tl-grid");
    this.root.append(summary, this.grid);
    this.runRow = this.row("run", "server", 0, "run");
    this.open(this.runRow, "waiting").title = "request sent, waiting for the server";
    this.timer = setInterval(() => this.render(), 100);
  }

  now() {
    return performance.now();
  }

  // A row: a label, a track of bars, the row's total. A sub-run's rows go under the call
  // that delegated (after the rows already there), the others at the end.
  row(key, label, depth, kind, scope = "", callId = null) {
    let row = this.byKey.get(key);
    if (row) return row;
    const cells = [el("div", "tl-label", label), el("div", "tl-track"), el("div", "tl-dur")];
    cells[0].style.paddingLeft = `${4 + depth * 14}px`;
    cells[0].title = label;
    cells[1].dataset.kind = kind;
    if (callId) cells[1].dataset.toolCallId = callId;
    const sub = scope ? this.subRuns.get(scope) : null;
    if (sub?.tail) sub.tail.duration.after(...cells);
    else this.grid.append(...cells);
    row = { key, kind, depth, label: cells[0], track: cells[1], duration: cells[2] };
    row.segments = [];
    row.bars = [];
    for (let s = sub; s; s = this.subRuns.get(s.parent)) s.tail = row;
    this.rows.push(row);
    this.byKey.set(key, row);
    return row;
  }

  open(row, state, start = this.now()) {
    const segment = { start, end: null, state };
    row.segments.push(segment);
    return segment;
  }

  current(row) {
    const last = row?.segments[row.segments.length - 1];
    return last && last.end === null ? last : null;
  }

  close(row, state, end = this.now()) {
    const segment = this.current(row);
    if (!segment) return null;
    segment.end = end;
    if (state) segment.state = state;
    return segment;
  }

  // --- the model -----------------------------------------------------------------------

  modelStarted(scope) {
    this.modelEnded(scope);
    const sub = this.subRuns.get(scope);
    const row = scope
      ? this.row(`model:${scope}`, `${sub?.name ?? "sub-agent"} · model`, sub?.depth ?? 1, "model", scope)
      : this.row("model", "model", 0, "model");
    const segment = this.open(row, "model");
    const model = { segment, last: segment.start, paused: false };
    segment.model = model;
    this.models.set(scope, model);
  }

  modelOutput(scope, type) {
    const model = this.models.get(scope);
    if (!model || model.segment.end !== null) return;
    model.last = this.now();
    model.paused = PART_ENDS.has(type);
  }

  modelEnded(scope) {
    const model = this.models.get(scope);
    if (model && model.segment.end === null) model.segment.end = model.last;
  }

  // --- events ----------------------------------------------------------------------------

  on(event) {
    const scope = event.subagentRunId ?? "";
    if (AFTER_MODEL.has(event.type)) this.modelEnded(scope);
    if (MODEL_OUTPUT.has(event.type)) this.modelOutput(scope, event.type);
    switch (event.type) {
      case "RUN_STARTED":
        this.close(this.runRow, "waiting");
        this.runStart = this.open(this.runRow, "run").start;
        break;
      case "RUN_FINISHED":
        this.close(this.runRow, "done");
        break;
      case "RUN_ERROR":
        this.stop("error");
        break;
      case "STEP_STARTED":
        this.modelStarted(scope);
        break;
      case "SUBAGENT_STARTED": {
        const parent = this.calls.get(event.parentToolCallId);
        this.subRuns.set(event.subagentRunId, {
          name: event.name ?? "sub-agent",
          depth: (parent?.depth ?? 0) + 1,
          parent: event.parentSubagentRunId ?? "",
          tail: parent ?? null,
        });
        break;
      }
      case "TOOL_CALL_START":
        this.callStarted(event, scope);
        break;
      case "TOOL_CALL_END": {
        const row = this.calls.get(event.toolCallId);
        if (!row) break;
        this.close(row);
        // the call runs once the model's turn is over: its bar never starts before that
        if (!row.browser) this.open(row, "running").after = this.models.get(scope);
        break;
      }
      case "ACTIVITY_SNAPSHOT": {
        const row = this.calls.get(event.content?.toolCallId);
        if (row && !this.current(row)) this.open(row, "running");
        break;
      }
      case "TOOL_CALL_RESULT":
        this.callResult(event);
        break;
      default:
        break;
    }
    this.render();
  }

  callStarted(event, scope) {
    const depth = scope ? (this.subRuns.get(scope)?.depth ?? 1) : 0;
    const name = event.toolCallName || "tool";
    const row = this.row(`call:${event.toolCallId}`, name, depth, "tool", scope, event.toolCallId);
    row.browser = !scope && this.isBrowserTool(name);
    this.calls.set(event.toolCallId, row);
    this.open(row, "streaming");
  }

  callResult(event) {
    const row = this.calls.get(event.toolCallId);
    if (!row) return;
    const state = event.metadata?.callwright?.state;
    const outcome =
      state === "output-denied" ? "denied" : state === "output-error" ? "error" : "complete";
    // a call answered in a later run (after an approval) ran from that run's start
    if (!this.current(row)) this.open(row, "running", this.runStart ?? this.now());
    this.close(row, outcome);
  }

  // The run ended asking for approvals: those calls wait for a human.
  waitingForApproval(callIds) {
    this.open(this.runRow, "waiting").title = "waiting for your approval";
    for (const id of callIds) {
      const row = this.calls.get(id);
      if (!row) continue;
      (this.current(row) ?? this.open(row, "running")).state = "awaiting-approval";
    }
    this.render();
  }

  answered(callId) {
    this.close(this.calls.get(callId));
    this.render();
  }

  // The run ended with calls for the browser: they run here, one after the other.
  waitingForBrowser() {
    this.open(this.runRow, "waiting").title = "running browser tools";
    this.render();
  }

  browserStarted(callId) {
    const row = this.calls.get(callId);
    if (row && !this.current(row)) this.open(row, "in-browser");
    this.render();
  }

  browserEnded(callId, ok) {
    this.close(this.calls.get(callId), ok ? "complete" : "error");
    this.render();
  }

  // Everything still open ends now, as ``state`` (a stop, a failure, a lost connection).
  stop(state) {
    for (const model of this.models.values()) {
      if (model.segment.end === null) model.segment.end = model.last;
    }
    for (const row of this.rows) this.close(row, state);
    this.render();
  }

  finish() {
    this.stop("cancelled");
    this.ended = this.now();
    clearInterval(this.timer);
    this.render();
  }

  // --- drawing ---------------------------------------------------------------------------

  bounds(segment, now) {
    let start = segment.start;
    const after = segment.after;
    if (after) start = Math.max(start, after.segment.end ?? after.last);
    let end = segment.end ?? now;
    if (segment.model && segment.end === null && segment.model.paused) end = segment.model.last;
    return [start, Math.max(end, start)];
  }

  render() {
    const now = this.ended ?? this.now();
    const span = Math.max(now - this.t0, 1);
    const place = (t) => Math.min(100, Math.max(0, ((t - this.t0) / span) * 100));
    for (const row of this.rows) {
      let busy = 0;
      row.segments.forEach((segment, i) => {
        let bar = row.bars[i];
        if (!bar) {
          bar = row.track.appendChild(el("div", "tl-bar"));
          row.bars.push(bar);
        }
        const [start, end] = this.bounds(segment, now);
        const left = place(start);
        bar.style.left = `${left.toFixed(2)}%`;
        bar.style.width = `${Math.max(place(end) - left, 0.4).toFixed(2)}%`;
        if (bar.dataset.state !== segment.state) bar.dataset.state = segment.state;
        const live = segment.end === null ? "true" : "false";
        if (bar.dataset.live !== live) bar.dataset.live = live;
        bar.title = `${segment.title ?? LABELS[segment.state]} · ${seconds(end - start)}`;
        if (!WAITS.has(segment.state)) busy += end - start;
      });
      const text = row.segments.length ? seconds(busy) : "";
      if (row.duration.textContent !== text) row.duration.textContent = text;
    }
    const models = this.rows.filter((r) => r.kind === "model");
    const turns = models.reduce((n, r) => n + r.segments.length, 0);
    const total = `${seconds(span)} · ${plural(turns, "model turn")} · ${plural(this.calls.size, "call")}`;
    if (this.total.textContent !== total) this.total.textContent = total;
  }
}
