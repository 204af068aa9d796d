"""Embedded model benchmark: speed with and without the constraint, time to first
event, and tool-choice accuracy on a fixed prompt set.

Run: ``.venv/bin/python bench/local_model.py`` (``--quick`` for the accuracy part only).
Greedy decoding, so the figures repeat on the same machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

from callwright.compose import solution_schema
from callwright.demo import Sandbox, demo_tools
from callwright.messages import UserMessage
from callwright.models.base import (
    ModelRequest,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
)
from callwright.models.local import LocalModel
from callwright.toolbox import Toolbox

# (prompt, expected tool or None for "answer without a tool", expected arguments)
PROMPTS: list[tuple[str, str | None, dict[str, Any]]] = [
    ("What is 17 * 23?", "calculate", {"expression": "17 * 23"}),
    ("Calculate 2 + 2", "calculate", {"expression": "2 + 2"}),
    ("Compute 100 / 4", "calculate", {"expression": "100 / 4"}),
    ("What is 3 to the power of 5? Use 3 ** 5", "calculate", {"expression": "3 ** 5"}),
    ("Calculate (7 + 8) * 2", "calculate", {"expression": "(7 + 8) * 2"}),
    ("What time is it?", "current_time", {}),
    ("What is the current time in Europe/Paris?", "current_time", {"timezone": "Europe/Paris"}),
    ("Tell me the date and time in Asia/Tokyo", "current_time", {"timezone": "Asia/Tokyo"}),
    ("What time is it in America/New_York?", "current_time", {"timezone": "America/New_York"}),
    ("List the files in the sandbox", "list_files", {}),
    ("Which files are there?", "list_files", {}),
    ("Read the file notes.txt", "read_file", {"path": "notes.txt"}),
    ("Show me what is in README.txt", "read_file", {"path": "README.txt"}),
    ("Open todo.md and read it", "read_file", {"path": "todo.md"}),
    ("Write 'hello' to the file hi.txt", "write_file", {"path": "hi.txt", "content": "hello"}),
    (
        "Save the text 'Buy milk' in shopping.txt",
        "write_file",
        {"path": "shopping.txt", "content": "Buy milk"},
    ),
    ("Count slowly to 5", "count_slowly", {"n": 5}),
    ("Count to 3 slowly", "count_slowly", {"n": 3}),
    ("Hello!", None, {}),
    ("Who are you?", None, {}),
    ("Thank you, that is all.", None, {}),
    ("Say hi to my friend Sam.", None, {}),
]


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
    request = ModelRequest([UserMessage(prompt)], mode="structured", solution_schema=schema)
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
        elif isinstance(event, ToolCallEndPart):
            pass
    parsed = []
    for call_id, parts in calls.items():
        try:
            parsed.append((names[call_id], json.loads("".join(parts))))
        except ValueError:
            parsed.append((names[call_id], None))
    return {"calls": parsed, "text": text, "first_event": first}


def correct(result: dict[str, Any], tool: str | None, expected: dict[str, Any]) -> bool:
    calls = result["calls"]
    if tool is None:
        return not calls and bool(result["text"].strip())
    if len(calls) != 1 or calls[0][0] != tool or calls[0][1] is None:
        return False
    got = normalise(calls[0][1])
    if tool == "calculate":
        return expression_equal(str(got.get("expression", "")), expected["expression"])
    return got == expected


async def accuracy(
    model: LocalModel, schema: dict[str, Any], verbose: bool
) -> tuple[int, list[float]]:
    right = 0
    firsts = []
    for prompt, tool, expected in PROMPTS:
        result = await one_step(model, schema, prompt)
        ok = correct(result, tool, expected)
        right += ok
        if result["first_event"] is not None:
            firsts.append(result["first_event"])
        if verbose:
            mark = "ok  " if ok else "MISS"
            print(f"  {mark} {prompt!r}: {result['calls'] or result['text'][:60]!r}")
    return right, firsts


STORY_PROMPT = "Write a long story about a robot who learns to paint."


def speed(model: LocalModel, constrained: bool, schema: dict[str, Any]) -> tuple[float, int]:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="accuracy only")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        toolbox = Toolbox(demo_tools(Sandbox(folder)))
        schema = solution_schema(list(toolbox.select(None)), toolbox)
        model = LocalModel()
        started = time.perf_counter()
        model.server()
        print(f"model load: {time.perf_counter() - started:.2f} s ({model.path.name})")
        if not args.quick:
            for constrained in (False, True):
                rates = [speed(model, constrained, schema) for _ in range(args.repeat)]
                best = max(r for r, _ in rates)
                label = "constrained (json_schema)" if constrained else "free"
                tokens = rates[0][1]
                detail = f"(best of {args.repeat}, {tokens} tokens)"
                print(f"decode {label}: {best:.1f} tokens/s {detail}")
        right, firsts = asyncio.run(accuracy(model, schema, not args.quiet))
        firsts.sort()
        print(f"tool-choice accuracy: {right}/{len(PROMPTS)} = {right / len(PROMPTS):.0%}")
        if firsts:
            print(
                f"time to first event: median {firsts[len(firsts) // 2] * 1000:.0f} ms, "
                f"max {firsts[-1] * 1000:.0f} ms"
            )
    sys.stdout.flush()
    os._exit(0)  # the in-process llama.cpp server thread does not need an orderly shutdown


if __name__ == "__main__":
    main()
