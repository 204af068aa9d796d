"""Model adapters and the model-string resolver.

Every adapter is imported here, eagerly: none of them imports its provider's package at
module level. The SDKs (``openai``, ``anthropic``, ``google-genai``, the embedded model's
``xllamacpp``) are optional extras, so an adapter module imports them for the type
checker only and at run time where it needs them: ``OpenAIModel()``, ``AnthropicModel()``
and ``GeminiModel()`` raise an ``ImportError`` naming the extra to install when their SDK
is missing, and ``LocalModel`` reports a missing binding or model file as the step's error.
"""

from __future__ import annotations

import os

from .._errors import ConfigurationError
from ._providers import PROVIDERS, named_model, openai_model
from ._retry import RetryPolicy
from ._settings import ModelSettings, ReasoningEffort
from .anthropic import AnthropicModel
from .base import (
    ErrorPart,
    FinishPart,
    Mode,
    Model,
    ModelBase,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    Usage,
)
from .gemini import GeminiModel
from .local import LocalModel
from .openai import OpenAIModel
from .openai_responses import OpenAIResponsesModel
from .scripted import ScriptedModel, call, think

__all__ = [
    "PROVIDERS",
    "AnthropicModel",
    "ErrorPart",
    "FinishPart",
    "GeminiModel",
    "LocalModel",
    "Mode",
    "Model",
    "ModelBase",
    "ModelEvent",
    "ModelRequest",
    "ModelSettings",
    "OpenAIModel",
    "OpenAIResponsesModel",
    "ReasoningEffort",
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
    """``"local"``, ``"local:/path.gguf"``, ``"openai:<model>"`` (``openai-chat:`` and
    ``openai-responses:`` pick the API), ``"anthropic:<model>"``, ``"gemini:<model>"``,
    ``"<provider>:<model>"`` for a named OpenAI-compatible provider (``PROVIDERS``:
    ``groq``, ``ollama`` ...).

    With no spec, ``CALLWRIGHT_MODEL`` decides, and the embedded local model is the default.
    """
    spec = spec or os.environ.get("CALLWRIGHT_MODEL") or "local"
    provider, _, name = spec.partition(":")
    if provider == "local":
        return LocalModel(name or None)
    if provider in ("openai", "openai-chat", "openai-responses"):
        return openai_model(provider, name)
    if provider == "anthropic":
        return AnthropicModel(name or "claude-sonnet-4-5")
    if provider == "gemini":
        return GeminiModel(name or "gemini-2.5-flash")
    if provider in PROVIDERS:
        return named_model(provider, name)
    raise ConfigurationError(
        f"unknown model {spec!r}: use 'local', 'local:/path/model.gguf', "
        "'openai:<model>', 'anthropic:<model>', 'gemini:<model>', or a model object"
    )
