"""Encoding cost per event: callwright's wire encoders against the reference Python
encoders, measured in the same run on the same events.

* AG-UI: ``ag-ui-protocol``'s ``EventEncoder.encode`` (pydantic ``model_dump_json``).
* AI SDK: pydantic-ai's Vercel AI chunk models and their ``encode``
  (``model_dump_json(by_alias=True, exclude_none=True)``), from the ``bench`` extra.

The reference events are the exact equivalents of our frames (each frame parsed
back into the reference package's model) and are built before timing starts, so
their construction is *not* counted: the comparison favours the references.
Ours is timed from the canonical event to the SSE bytes, everything included.
Best of 7 rounds; figures are microseconds per wire event (frame).

Run: ``python bench/encode.py`` (or ``make bench``).
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

from ag_ui.core import Event as AGUIEvent
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter

from callwright.events import (
    Event,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    ToolProgress,
)
from callwright.usage import Usage
from callwright.wire import AGUIEncoder, AISDKEncoder

ROUNDS = 7


def mixed_run(text: int = 300, args: int = 300, progress: int = 20) -> list[Event]:
    """A run as a model and a tool would produce it: mostly token deltas."""
    events: list[Event] = [RunStarted("run_1", "thread_1"), StepStarted(1, "msg_1")]
    events.append(TextStart("msg_1", "msg_1"))
    events += [TextDelta("msg_1", "word ") for _ in range(text)]
    events.append(TextEnd("msg_1"))
    events.append(ToolCallStart("call_1", "search", "msg_1"))
    events += [ToolCallArgs("call_1", '"quer') for _ in range(args)]
    events.append(ToolCallEnd("call_1", "search", {"query": "x"}))
    events += [ToolProgress("call_1", "search", f"page {i}", i / progress) for i in range(progress)]
    events.append(
        ToolCallResult(
            "call_1",
            "search",
            "output-available",
            output={"hits": [1, 2, 3]},
            content='{"hits":[1,2,3]}',
        )
    )
    events.append(StepFinished(1, "msg_1", "tool-calls", Usage(10, 5, 1)))
    events.append(RunFinished("run_1", "thread_1", "completed", "done", [], Usage(10, 5, 1)))
    return events


def only_args(n: int = 20_000) -> list[Event]:
    return [ToolCallArgs("call_1", '{"city": "Par') for _ in range(n)]


def frames(blob: bytes) -> list[dict[str, Any]]:
    out = []
    for block in blob.decode().split("\n\n"):
        if block and block != "data: [DONE]":
            out.append(json.loads(block[len("data: ") :]))
    return out


def best(fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ours(make: Callable[[], Any], events: Sequence[Event]) -> tuple[float, bytes]:
    def go() -> bytes:
        encode = make().encode
        return b"".join([encode(e) for e in events])

    blob = go()
    return best(go), blob


def theirs(encode: Callable[[Any], str], models: Sequence[Any]) -> float:
    return best(lambda: [encode(m) for m in models])


# --- reference models -------------------------------------------------------------------


AGUI_ADAPTER: TypeAdapter[Any] = TypeAdapter(AGUIEvent)


def agui_models(blob: bytes) -> list[Any]:
    return [AGUI_ADAPTER.validate_python(f) for f in frames(blob)]


def vercel_models(blob: bytes) -> list[Any]:
    from pydantic_ai.ui.vercel_ai import response_types as rt

    classes = {
        cls.model_fields["type"].default: cls
        for cls in vars(rt).values()
        if isinstance(cls, type)
        and issubclass(cls, rt.BaseChunk)
        and "type" in cls.model_fields
        and isinstance(cls.model_fields["type"].default, str)
    }
    out = []
    for payload in frames(blob):
        kind = payload["type"]
        cls = classes.get(kind) or (rt.DataChunk if kind.startswith("data-") else None)
        if cls is None:
            raise SystemExit(f"pydantic-ai has no chunk model for {kind!r}")
        out.append(cls.model_validate(payload))
    return out


# --- main ---------------------------------------------------------------------------------


def row(case: str, n: int, ours_s: float, theirs_s: float) -> tuple[str, float, float, float]:
    a, b = ours_s / n * 1e6, theirs_s / n * 1e6
    return case, a, b, a / b


def main() -> None:
    import ag_ui
    import pydantic_ai

    rows = []
    agui_encoder = EventEncoder()
    for case, events in (("mixed run", mixed_run()), ("TOOL_CALL_ARGS only", only_args())):
        t_ours, blob = ours(lambda: AGUIEncoder(protocol_1=True), events)
        models = agui_models(blob)
        rows.append(("AG-UI", *row(case, len(models), t_ours, theirs(agui_encoder.encode, models))))

    for case, events in (("mixed run", mixed_run()), ("tool-input-delta only", only_args())):
        t_ours, blob = ours(lambda: AISDKEncoder(version=6, message_id="msg_1"), events)
        models = vercel_models(blob)
        encode = lambda m: f"data: {m.encode(6)}\n\n"  # noqa: E731  (pydantic-ai's encode_event)
        rows.append(("AI SDK", *row(case, len(models), t_ours, theirs(encode, models))))

    versions = (
        f"Python {platform.python_version()}, ag-ui-protocol "
        f"{getattr(ag_ui, '__version__', _dist('ag-ui-protocol'))}, "
        f"pydantic-ai-slim {getattr(pydantic_ai, '__version__', '?')}"
    )
    print(f"Encoding cost per wire event, best of {ROUNDS} ({versions})\n")
    print("| protocol | events | callwright µs | reference µs | ratio (cw / ref) |")
    print("|---|---|---:|---:|---:|")
    for protocol, case, a, b, ratio in rows:
        print(f"| {protocol} | {case} | {a:.3f} | {b:.3f} | 1/{1 / ratio:.1f} |")
    worst = max(r[4] for r in rows)
    print(f"\nworst ratio 1/{1 / worst:.1f}; goal <= 1/3: {'met' if worst <= 1 / 3 else 'NOT met'}")


def _dist(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()
