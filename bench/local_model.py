"""Embedded model benchmark: tool-choice accuracy on both halves of a fixed prompt set,
decoding speed with and without the constraint, time to first event, memory.

Run: ``.venv/bin/python bench/local_model.py`` (``--quick`` for the accuracy part only,
``--model PATH`` for another GGUF file, ``--split tuning`` while tuning). Greedy
decoding, so the figures repeat on the same machine. The set and its split are in
``bench/local_prompts.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from callwright.compose import solution_schema
from callwright.demo import INSTRUCTIONS, Sandbox, demo_tools
from callwright.messages import UserMessage
from callwright.models.base import (
    ModelRequest,
    TextPart,
    ToolCallDeltaPart,
    ToolCallStartPart,
)
from callwright.models.local import LocalModel
from callwright.toolbox import Toolbox
from local_prompts import ALL, HELD_OUT, TUNING, Case

SPLITS = {"tuning": TUNING, "held-out": HELD_OUT, "all": ALL}


def normalise(args: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in args.items():
        if key.startswith("_") or value is None:
            continue
        out[key] = " ".join(value.split()) if isinstance(value, str) else value
    return out


def expression_equal(a: str, b: str) -> bool:
    return a.replace(" ", "") == b.replace(" ", "")


async def one_step(model: LocalModel, schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    request = ModelRequest(
        [UserMessage(prompt)],
        instructions=INSTRUCTIONS,
        mode="structured",
        solution_schema=schema,
    )
    started = time.perf_counter()
    first: float | None = None
    calls: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    text = ""
    async for event in model.stream(request):
        if first is None and isinstance(event, (TextPart, ToolCallStartPart)):
            first = time.perf_counter() - started
        if isinstance(event, ToolCallStartPart):
            names[event.call_id], calls[event.call_id] = event.name, []
        elif isinstance(event, ToolCallDeltaPart):
            calls[event.call_id].append(event.delta)
        elif isinstance(event, TextPart):
            text += event.delta
    parsed = []
    for call_id, parts in calls.items():
        try:
            parsed.append((names[call_id], json.loads("".join(parts))))
        except ValueError:
            parsed.append((names[call_id], None))
    return {
        "calls": parsed,
        "text": text,
        "first_event": first,
        "total": time.perf_counter() - started,
    }


def correct(result: dict[str, Any], case: Case) -> bool:
    calls = result["calls"]
    if case.tool is None:
        return not calls and bool(result["text"].strip())
    if len(calls) != 1 or calls[0][0] != case.tool or calls[0][1] is None:
        return False
    got = normalise(calls[0][1])
    if case.tool == "calculate":
        return expression_equal(str(got.get("expression", "")), case.args["expression"])
    return got == case.args


UNASKED: list[str] = []
"""Prompts answered with a ``write_file`` call (an approval dialog) that did not ask for one."""


async def accuracy(
    model: LocalModel, schema: dict[str, Any], cases: list[Case], verbose: bool
) -> tuple[list[bool], list[float]]:
    marks = []
    firsts = []
    for case in cases:
        result = await one_step(model, schema, case.prompt)
        ok = correct(result, case)
        marks.append(ok)
        if case.tool != "write_file" and any(n == "write_file" for n, _ in result["calls"]):
            UNASKED.append(case.prompt)
        if result["first_event"] is not None:
            firsts.append(result["first_event"])
        if verbose:
            mark = "ok  " if ok else "MISS"
            shown = result["calls"] or result["text"][:60]
            print(f"  {mark} {case.prompt!r}: {shown!r}", flush=True)
    return marks, firsts


STORY_PROMPT = "Write a long story about a robot who learns to paint."


def speed(model: LocalModel, constrained: bool) -> tuple[float, int]:
    """Tokens per second of decoding for one long answer, timed by llama.cpp itself."""
    server = model.server()
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": STORY_PROMPT}],
        "max_tokens": 256,
        "temperature": 0,
        "seed": 7,
        "cache_prompt": False,
    }
    if constrained:
        body["json_schema"] = {
            "type": "object",
            "properties": {"story": {"type": "string", "maxLength": 4000}},
            "required": ["story"],
        }
    result = server.handle_chat_completions(body)
    timings = result["timings"]
    return float(timings["predicted_per_second"]), int(timings["predicted_n"])


def rss_mib() -> float:
    """This process's resident memory (Linux), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report_accuracy(label: str, cases: list[Case], marks: list[bool]) -> None:
    right = sum(marks)
    print(f"tool-choice accuracy, {label}: {right}/{len(cases)} = {right / len(cases):.0%}")
    totals: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for case, ok in zip(cases, marks, strict=True):
        key = case.tool or "no tool"
        totals[key] += 1
        hits[key] += ok
    print("  by tool: " + ", ".join(f"{k} {hits[k]}/{n}" for k, n in totals.items()))


def model_options(raw: list[str]) -> dict[str, Any]:
    """``--option key=value`` pairs for ``LocalModel`` (JSON values)."""
    options: dict[str, Any] = {}
    for item in raw:
        key, _, value = item.partition("=")
        options[key] = json.loads(value)
    return options


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="accuracy only")
    parser.add_argument("--speed", action="store_true", help="speed only")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", help="a GGUF file (default: the embedded default)")
    parser.add_argument("--split", choices=["both", *SPLITS], default="both")
    parser.add_argument("--option", action="append", default=[], help="LocalModel key=json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        toolbox = Toolbox(demo_tools(Sandbox(folder)))
        schema = solution_schema(list(toolbox.select(None)), toolbox)
        model = LocalModel(args.model, **model_options(args.option))
        before = rss_mib()
        started = time.perf_counter()
        model.server()
        loaded = time.perf_counter() - started
        print(f"model: {model.path.name} ({model.path.stat().st_size / 2**20:.0f} MiB file)")
        print(f"model load: {loaded:.2f} s, memory +{rss_mib() - before:.0f} MiB resident")
        if not args.quick:
            for constrained in (False, True):
                rates = [speed(model, constrained) for _ in range(args.repeat)]
                label = "constrained (json_schema)" if constrained else "free"
                median = statistics.median(r for r, _ in rates)
                best = max(r for r, _ in rates)
                detail = f"(median of {args.repeat}, best {best:.1f}, {rates[0][1]} tokens)"
                print(f"decode {label}: {median:.1f} tokens/s {detail}", flush=True)
        if args.speed:
            sys.stdout.flush()
            os._exit(0)
        halves = ["tuning", "held-out"] if args.split == "both" else [args.split]
        firsts: list[float] = []
        for half in halves:
            cases = SPLITS[half]
            if not args.quiet:
                print(f"{half}:")
            marks, times = asyncio.run(accuracy(model, schema, cases, not args.quiet))
            firsts += times
            report_accuracy(half, cases, marks)
        asked = sum(c.tool != "write_file" for half in halves for c in SPLITS[half])
        print(f"write_file calls not asked for: {len(UNASKED)} of {asked} prompts {UNASKED}")
        print(f"memory after the prompts: {rss_mib():.0f} MiB resident")
        if firsts:
            firsts.sort()
            print(
                f"time to first event: median {statistics.median(firsts) * 1000:.0f} ms, "
                f"max {firsts[-1] * 1000:.0f} ms"
            )
    sys.stdout.flush()
    os._exit(0)  # the in-process llama.cpp server thread does not need an orderly shutdown


if __name__ == "__main__":
    main()
