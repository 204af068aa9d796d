"""Model adapters and the model-string resolver."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from ._retry import RetryPolicy
    from .anthropic import AnthropicModel
    from .local import LocalModel
    from .openai import OpenAIModel

_ADAPTERS = {
    "AnthropicModel": ".anthropic",
    "LocalModel": ".local",
    "OpenAIModel": ".openai",
    "RetryPolicy": "._retry",
}


def __getattr__(name: str) -> Any:
    """The provider adapters load on first use: they import the run's modules (a cycle
    at import time) and nothing of theirs is needed until a model is made."""
    module = _ADAPTERS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)


__all__ = [
    "AnthropicModel",
    "ErrorPart",
    "FinishPart",
    "LocalModel",
    "Mode",
    "Model",
    "ModelEvent",
    "ModelRequest",
    "OpenAIModel",
    "ReasoningPart",
    "RetryPolicy",
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
