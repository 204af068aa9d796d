"""The named OpenAI-compatible providers, and what a model string resolves to.

Each provider is reached through Chat Completions (``OpenAIModel``) at its base URL,
with its key variable; a local server needs no key. ``<NAME>_BASE_URL`` points a
provider elsewhere (another port, a proxy). Where a provider differs from OpenAI's
API in a way a user meets, ``quirk`` says so (the docs' table is made from it) and
``rejects`` lists the request parameters it refuses, which the adapter leaves out.
"""

from __future__ import annotations

import os

from .._errors import ConfigurationError
from ._provider import Provider
from .base import Model
from .openai import OPENAI, OpenAIModel, serves_responses
from .openai_responses import OpenAIResponsesModel


def _named(
    name: str,
    label: str,
    base_url: str,
    key_env: str = "",
    *,
    rejects: tuple[str, ...] = (),
    quirk: str = "",
) -> Provider:
    return Provider(
        name,
        label,
        key_env,
        f"{name.upper()}_BASE_URL",
        keyless_with_base_url=not key_env,
        package="openai",
        extra="openai",
        default_base_url=base_url,
        rejects=rejects,
        quirk=quirk,
    )


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        _named(
            "openrouter",
            "OpenRouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            quirk="Model names carry their vendor (openrouter:anthropic/claude-sonnet-4.5); "
            "reasoning streams as `reasoning` and is shown.",
        ),
        _named(
            "groq",
            "Groq",
            "https://api.groq.com/openai/v1",
            "GROQ_API_KEY",
            quirk="Sends each tool call's arguments whole, in one chunk, not in pieces.",
        ),
        _named(
            "mistral",
            "Mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            rejects=("stream_options",),
            quirk="Refuses `stream_options`, so it is left out (usage comes without it).",
        ),
        _named(
            "deepseek",
            "DeepSeek",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            quirk="deepseek-reasoner streams its reasoning as `reasoning_content`; it is shown.",
        ),
        _named(
            "together",
            "Together AI",
            "https://api.together.xyz/v1",
            "TOGETHER_API_KEY",
            quirk="Model names carry their organisation (together:meta-llama/...).",
        ),
        _named(
            "fireworks",
            "Fireworks AI",
            "https://api.fireworks.ai/inference/v1",
            "FIREWORKS_API_KEY",
            quirk="Model names are paths (fireworks:accounts/fireworks/models/...).",
        ),
        _named(
            "ollama",
            "Ollama",
            "http://localhost:11434/v1",
            quirk="Local; sends each tool call's arguments whole, in one chunk.",
        ),
        _named(
            "vllm",
            "vLLM",
            "http://localhost:8000/v1",
            quirk="Local; tool calls need the server started with "
            "--enable-auto-tool-choice and a --tool-call-parser.",
        ),
        _named(
            "lmstudio",
            "LM Studio",
            "http://localhost:1234/v1",
            quirk="Local; the model name is the identifier of a model LM Studio has loaded.",
        ),
    )
}
"""The named OpenAI-compatible providers by model-string prefix (``groq:<model>`` ...)."""


def openai_model(prefix: str, name: str) -> Model:
    """``openai:<model>``: the Responses API on OpenAI's own API, Chat Completions at any
    other base URL (``OPENAI_BASE_URL``); ``openai-responses:`` and ``openai-chat:`` pick
    one whatever the base URL."""
    name = name or "gpt-4o-mini"
    if prefix == "openai-responses":
        return OpenAIResponsesModel(name)
    if prefix == "openai" and serves_responses(os.environ.get(OPENAI.base_url_env)):
        return OpenAIResponsesModel(name)
    return OpenAIModel(name)


def named_model(prefix: str, name: str) -> Model:
    """``<provider>:<model>`` for a provider of ``PROVIDERS``, through Chat Completions."""
    if not name:
        raise ConfigurationError(f"'{prefix}:' names no model: use '{prefix}:<model>'")
    return OpenAIModel(name, provider=PROVIDERS[prefix])
