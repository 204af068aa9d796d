"""Journal cost per step over a long run: is the last step as cheap as the first?

A 400-step run (one no-op tool call a step, a scripted model) journaled in a
SQLite file through ``start_journaled`` (the library's synchronous recorder: every
write happens inside ``Recorder.record``, so timing those calls is the journal's
whole cost). Prints the mean per-step cost of the first and the last 100 steps and
their ratio; a journal whose work is proportional to what a step added keeps the
ratio near 1. ``--state-keys N`` starts the thread with N keys of state (a step that
changes one key should not cost in proportion to the others). Run:
``python bench/journal_steps.py [--steps 400] [--state-keys 0]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from callwright import Agent, UserMessage, start_journaled, tool
from callwright.models import ModelRequest, ScriptedModel, call
from callwright.store import SQLiteJournal


@tool
async def note(i: int) -> str:
    """Do nothing much."""
    return f"noted {i}"


def make_agent(steps: int) -> Agent[Any, Any]:
    def script(request: ModelRequest) -> list[Any]:
        if request.step <= steps:
            return [call("note", f'{{"i":{request.step}}}', id=f"c{request.step}")]
        return ["done"]

    return Agent(ScriptedModel(script), tools=[note], max_steps=steps + 5)


async def one_run(steps: int, state_keys: int, folder: Path) -> dict[int, float]:
    """Seconds spent in the journal per step."""
    journal = SQLiteJournal(folder / "journal.db")
    agent = make_agent(steps)
    state = {f"k{i}": i for i in range(state_keys)} if state_keys else None
    messages = [UserMessage(id="u1", content="go")]
    run, recorder = start_journaled(journal, agent, "t1", "r1", messages, [], state=state)
    per_step: dict[int, float] = defaultdict(float)
    step = 0
    async for event in run:
        step = getattr(event, "step", step) or step
        t0 = time.perf_counter()
        recorder.record(event)
        per_step[step] += time.perf_counter() - t0
    await recorder.finish()
    journal.close()
    return per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--state-keys", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    window = max(1, args.steps // 4)
    ratios, firsts, lasts = [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            per_step = asyncio.run(one_run(args.steps, args.state_keys, Path(tmp)))
        costs = [per_step[s] for s in range(1, args.steps + 1)]
        first = statistics.mean(costs[:window])
        last = statistics.mean(costs[-window:])
        firsts.append(first)
        lasts.append(last)
        ratios.append(last / first)
    print(
        f"steps={args.steps} state_keys={args.state_keys}: journal per step "
        f"first {window} {statistics.median(firsts) * 1e6:.0f} µs, "
        f"last {window} {statistics.median(lasts) * 1e6:.0f} µs, "
        f"ratio last/first {statistics.median(ratios):.2f} (median of {args.repeats})"
    )


if __name__ == "__main__":
    main()
