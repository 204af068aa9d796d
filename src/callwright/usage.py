"""Token usage: shared by the model adapters, the events and the run, so it lives in a leaf."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Usage:
    """What a run (or one model turn) cost."""

    input_tokens: int = 0
    """Prompt tokens the provider counted."""
    output_tokens: int = 0
    """Completion tokens, reasoning included where the provider counts it there."""
    requests: int = 0
    """Model requests made."""
    cached_input_tokens: int = 0
    """The part of ``input_tokens`` the provider read from its prompt cache (billed lower)."""
    reasoning_tokens: int = 0
    """The part of ``output_tokens`` the model spent reasoning, where the provider says."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.requests += other.requests
        self.cached_input_tokens += other.cached_input_tokens
        self.reasoning_tokens += other.reasoning_tokens
