"""How a step's calls share time: all at once, one at a time, or in batches.

Its own module so that the agent's options and the executor read one definition; the
executor (``execute``) says where steering is checked for each.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Strategy:
    """How a step's calls share time; see the module's table for where steering is checked."""

    kind: str = "parallel"
    """``parallel`` (all at once), ``sequential`` (one at a time) or ``batched`` (groups)."""
    size: int = 0
    """The group size of ``batched``; unused by the other kinds."""

    def __post_init__(self) -> None:
        if self.kind not in ("parallel", "sequential", "batched"):
            raise ValueError(f"unknown strategy {self.kind!r}")
        if self.kind == "batched" and self.size < 1:
            raise ValueError("batched(n) needs n >= 1")


PARALLEL = Strategy("parallel")
"""Run all of a step's calls at once (the default); steering is checked when all are done."""
SEQUENTIAL = Strategy("sequential")
"""Run calls one at a time, so a steering message can skip the ones not yet started."""


def batched(size: int) -> Strategy:
    """Run calls ``size`` at a time: bounded concurrency, steering checked between batches."""
    return Strategy("batched", size)


def as_strategy(value: str | Strategy) -> Strategy:
    """Accept a strategy's name where users pass one (``strategy="sequential"``)."""
    return value if isinstance(value, Strategy) else Strategy(value)
