"""Model strings: which adapter ``openai:`` means per base URL, and the named providers,
each asked through the real SDK over real HTTP (its base URL pointed at a replay server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from callwright import ConfigurationError
from callwright.messages import UserMessage
from callwright.models import (
    PROVIDERS,
    OpenAIModel,
    OpenAIResponsesModel,
    TextPart,
    resolve_model,
)
from callwright.models.base import ModelRequest

# written out here, not read from the table: what the docs promise each provider is
EXPECTED = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "fireworks": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "ollama": ("http://localhost:11434/v1", ""),
    "vllm": ("http://localhost:8000/v1", ""),
    "lmstudio": ("http://localhost:1234/v1", ""),
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "CALLWRIGHT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, (_, key_env) in EXPECTED.items():
        monkeypatch.delenv(f"{name.upper()}_BASE_URL", raising=False)
        if key_env:
            monkeypatch.delenv(key_env, raising=False)


def chat_reply(replay: Any, text: str = "ok") -> None:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": "stop"}
    replay.sse([{**chunk, "choices": [choice]}])


async def ask(model: Any) -> list[Any]:
    return [e async for e in model.stream(ModelRequest([UserMessage("hi")]))]


def test_the_table_has_every_named_provider() -> None:
    assert set(PROVIDERS) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_named_provider_resolves_to_its_base_url_and_key_variable(name: str) -> None:
    base_url, key_env = EXPECTED[name]
    model = resolve_model(f"{name}:some/model-1")
    assert isinstance(model, OpenAIModel)
    assert model.name == f"{name}:some/model-1" and model.model == "some/model-1"
    assert model.base_url == base_url
    assert model.provider.key_env == key_env
    if key_env:  # a hosted provider says which variable to set
        assert key_env in (model.unconfigured() or "")
    else:  # a local server needs none
        assert model.unconfigured() is None


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_a_named_provider_sends_its_key_to_its_server(
    name: str, replay: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key_env = EXPECTED[name]
    monkeypatch.setenv(f"{name.upper()}_BASE_URL", replay.url + "/v1")
    if key_env:
        monkeypatch.setenv(key_env, f"key-of-{name}")
    chat_reply(replay)
    events = await ask(resolve_model(f"{name}:m"))
    assert [e.delta for e in events if isinstance(e, TextPart)] == ["ok"]
    sent = replay.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["json"]["model"] == "m"
    if key_env:
        assert sent["headers"]["authorization"] == f"Bearer key-of-{name}"
    # Mistral refuses stream_options; the others are asked for usage with it
    assert ("stream_options" in sent["json"]) == (name != "mistral")


def test_a_named_provider_needs_a_model_name() -> None:
    with pytest.raises(ConfigurationError, match="'groq:<model>'"):
        resolve_model("groq:")


def test_an_unknown_prefix_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown model 'nope:m'"):
        resolve_model("nope:m")


@pytest.mark.parametrize(
    ("spec", "base_url", "adapter"),
    [
        ("openai:gpt-x", None, OpenAIResponsesModel),
        ("openai:gpt-x", "https://api.openai.com/v1", OpenAIResponsesModel),
        ("openai:qwen", "http://127.0.0.1:8080/v1", OpenAIModel),
        ("openai-chat:gpt-x", None, OpenAIModel),
        ("openai-responses:qwen", "http://127.0.0.1:8080/v1", OpenAIResponsesModel),
    ],
)
def test_openai_means_responses_on_openais_api_and_chat_elsewhere(
    spec: str, base_url: str | None, adapter: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    if base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    model = resolve_model(spec)
    assert type(model) is adapter
    assert model.name == f"openai:{spec.partition(':')[2]}"


async def test_openai_responses_forced_on_another_server_asks_its_responses_endpoint(
    replay: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", replay.url + "/v1")
    replay.reply(404, {"error": {"message": "no such route"}})
    events = await ask(resolve_model("openai-responses:m"))
    assert replay.requests[0]["path"] == "/v1/responses"
    assert events[-1].code == "http_404"


def test_the_models_page_table_says_what_the_code_does() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "guides" / "models.md"
    rows = {
        cells[0].strip("`:"): cells[1:]
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("| `") and line.split("|")[1].strip().endswith(":`")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == set(PROVIDERS)
    for name, provider in PROVIDERS.items():
        base_url, key_env, quirk = rows[name]
        assert base_url == f"`{provider.default_base_url}`"
        assert key_env == (f"`{provider.key_env}`" if provider.key_env else "none")
        assert quirk.replace("`", "") == provider.quirk.replace("`", "")


async def test_a_call_sent_whole_in_one_chunk_streams_as_one_piece(
    replay: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Groq and Ollama send each call complete: id, name and all its arguments at once
    from callwright.models import ToolCallDeltaPart, ToolCallEndPart, ToolCallStartPart

    monkeypatch.setenv("GROQ_BASE_URL", replay.url + "/v1")
    monkeypatch.setenv("GROQ_API_KEY", "k")
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    whole = {
        "index": 0,
        "id": "call_w",
        "type": "function",
        "function": {"name": "calculate", "arguments": '{"expression": "1+2"}'},
    }
    replay.sse(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [whole]}}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ]
    )
    events = await ask(resolve_model("groq:m"))
    assert events[:3] == [
        ToolCallStartPart("call_w", "calculate"),
        ToolCallDeltaPart("call_w", '{"expression": "1+2"}'),
        ToolCallEndPart("call_w"),
    ]
