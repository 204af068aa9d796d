"""Model adapters and the model-string resolver."""

from __future__ import annotations

import os

from .base import (
    ErrorPart,
    FinishPart,
    Mode,
    Model,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    Usage,
)
from .scripted import ScriptedModel, call, think

__all__ = [
    "ErrorPart",
    "FinishPart",
    "Mode",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "ReasoningPart",
    "ScriptedModel",
    "TextPart",
    "ToolCallDeltaPart",
    "ToolCallEndPart",
    "ToolCallStartPart",
    "Usage",
    "call",
    "resolve_model",
    "think",
]


def resolve_model(spec: str | None) -> Model:
    """``"local"``, ``"local:/path.gguf"``, ``"openai:<model>"``, ``"anthropic:<model>"``.

    With no spec, ``CALLWRIGHT_MODEL`` decides, and the embedded local model is the default.
    """
    spec = spec or os.environ.get("CALLWRIGHT_MODEL") or "local"
    provider, _, name = spec.partition(":")
    if provider == "local":
        from .local import LocalModel

        return LocalModel(name or None)
    if provider == "openai":
        from .openai import OpenAIModel

        return OpenAIModel(name or "gpt-4o-mini")
    if provider == "anthropic":
        from .anthropic import AnthropicModel

        return AnthropicModel(name or "claude-sonnet-4-5")
    raise ValueError(
        f"unknown model {spec!r}: use 'local', 'local:/path/model.gguf', "
        "'openai:<model>', 'anthropic:<model>', or a model object"
    )
