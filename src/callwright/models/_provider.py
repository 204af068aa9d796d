"""What the SDK-backed adapters (OpenAI, Anthropic) share.

Both stream through an official SDK the same way: build the SDK client from a key and
a base URL (the arguments, else the provider's environment variables), open one
streamed request per attempt with the SDK's own retries off, feed each streamed item
to a decoder that turns it into model events, close the response however the attempt
ends, and let ``retrying`` retry what is transient before anything streamed, cut waits
when the run is cancelled, and turn the rest into one ``ErrorPart``. An adapter
supplies only what differs: the client class, the request body, its decoder and the
shapes of a tool definition and a tool choice.

The SDKs are optional extras, so nothing here or in the adapters imports them at
module level: their types are imported for the type checker only (every annotation is
a string), the client is built by importing the SDK inside ``_make_client``, and an
adapter made without its SDK installed raises an ``ImportError`` naming the extra to
install. The decoders read the SDKs' objects through those types (the streamed events
are discriminated by their ``type`` literals, as the SDKs themselves discriminate them),
so the type checker checks every field they read.

A user's file that the provider has no place for (``UnsupportedFile``, raised while the
request body is built) ends the step with an ``unsupported_file`` error that says which
file and why: a model that never saw the file must not answer as if it had.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from .._errors import CallwrightError, ConfigurationError, MissingAPIKey
from ..messages import FilePart
from ._retry import RetryPolicy, retrying
from ._settings import SETTING_NAMES, ModelSettings, unsupported
from .base import ErrorPart, Mode, ModelBase, ModelEvent, ModelRequest, ToolChoice

ClientT = TypeVar("ClientT")
ItemT = TypeVar("ItemT")
ItemT_co = TypeVar("ItemT_co", covariant=True)
ItemT_contra = TypeVar("ItemT_contra", contravariant=True)


class ResponseStream(Protocol[ItemT_co]):
    """A streamed response as both SDKs return it (their ``AsyncStream``)."""

    def __aiter__(self) -> AsyncIterator[ItemT_co]: ...

    async def close(self) -> None: ...


class StreamDecoder(Protocol[ItemT_contra]):
    """Turns one attempt's streamed SDK items into model events; made fresh per attempt."""

    def feed(self, item: ItemT_contra) -> list[ModelEvent]: ...

    def finish(self) -> list[ModelEvent]:
        """What the end of the stream means: open calls end, then the finish with usage."""
        ...


class UnsupportedFile(CallwrightError, ValueError):
    """A file on a user message that this provider's API cannot take (its type, or a URL
    where only inline data is accepted)."""


MAX_FILENAME_CHARS = 100
"""The longest file name a model is shown; a longer one keeps its start and extension."""


def shown_filename(part: FilePart) -> str | None:
    """A client's file name as the model reads it: on one line, without control or
    format characters, and bounded, so a name cannot pose as prompt text or fill it."""
    name = "".join(
        " " if unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp") else c
        for c in part.filename or ""
    )
    name = " ".join(name.split())
    if len(name) > MAX_FILENAME_CHARS:
        stem, dot, ext = name.rpartition(".")
        tail = dot + ext if stem and 0 < len(ext) <= 10 else ""
        name = name[: MAX_FILENAME_CHARS - len(tail) - 1] + "…" + tail
    return name or None


def file_text(part: FilePart) -> str:
    """An inline text file as the model reads it: its name, then its text."""
    try:
        text = part.content().decode("utf-8", errors="replace")
    except ValueError as exc:  # a part built in code with bad base64
        raise UnsupportedFile(str(exc)) from None
    return f"{shown_filename(part) or 'Attached file'}:\n{text}"


@dataclass(frozen=True, slots=True)
class Provider:
    """Who serves an adapter: the names a user sees and the environment it reads."""

    name: str
    """The model-string prefix (``openai:<model>``), the SDK's package and the extra."""
    label: str
    """The provider's name in messages."""
    key_env: str
    """The environment variable holding the API key."""
    base_url_env: str
    """The environment variable holding a base URL."""
    keyless_with_base_url: bool = False
    """A server at a custom base URL needs no key (local OpenAI-compatible servers)."""
    package: str = ""
    """The SDK's distribution name, when it is not ``name`` (``google-genai``; ``openai``
    for a named OpenAI-compatible provider)."""
    module: str = ""
    """The SDK's import name, when it is not ``package`` (``google.genai``)."""
    extra: str = ""
    """The callwright extra that installs the SDK, when it is not ``name``."""
    default_base_url: str | None = None
    """Where requests go when neither the argument nor ``base_url_env`` says; ``None`` is
    the SDK's own default (the provider's API)."""
    rejects: tuple[str, ...] = ()
    """Request parameters this provider refuses; the adapter leaves them out."""
    quirk: str = ""
    """What differs from the API the adapter speaks, in a sentence for the docs."""

    def require_sdk(self, adapter: str) -> None:
        """Fail at construction, not at the first step, when the SDK is not installed."""
        package = self.package or self.name
        try:
            found = importlib.util.find_spec(self.module or package) is not None
        except ModuleNotFoundError:  # a dotted name whose parent package is missing
            found = False
        if not found:
            raise ImportError(
                f"{adapter} needs the {package} package: "
                f"pip install 'callwright[{self.extra or self.name}]'"
            )


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One native tool definition, read once from the loop's provider-neutral shape."""

    name: str
    description: str
    parameters: dict[str, Any]
    """The arguments' JSON Schema (an empty object schema when the tool takes none)."""

    @classmethod
    def of(cls, native: dict[str, Any]) -> ToolDefinition:
        parameters = native.get("parameters") or {"type": "object", "properties": {}}
        return cls(native["name"], native.get("description") or "", parameters)


RoleT = TypeVar("RoleT")
PartT = TypeVar("PartT")


def add_turn(turns: list[tuple[RoleT, list[PartT]]], role: RoleT, parts: list[PartT]) -> None:
    """Append a turn, merged into the last one when it has the same role; an empty one is
    left out. The APIs that want roles to alternate (Anthropic, Gemini) get parallel tool
    results, and a user's message after them, as one turn."""
    if not parts:
        return
    if turns and turns[-1][0] == role:
        turns[-1][1].extend(parts)
    else:
        turns.append((role, parts))


class ProviderModel(ModelBase, ABC, Generic[ClientT, ItemT]):
    """A model served through a provider's SDK client; subclasses fill in the hooks."""

    provider: Provider
    """Who serves the model: the class's own, or a named provider passed to ``__init__``."""
    name: str
    """``provider:model``, as the model string spells it."""
    model: str
    """The provider's model name."""
    modes: tuple[Mode, ...]
    """The request modes this adapter supports, preferred first."""
    base_url: str | None
    """Where the client sends requests; ``None`` is the provider's own API."""
    retry: RetryPolicy
    timeout: float
    """Seconds the SDK waits for a response (and between streamed chunks)."""
    settings: dict[str, Any]
    """Extra request parameters sent as they are (temperature, seed ...); a run's
    ``ModelSettings`` override them."""
    setting_params: Mapping[str, str] = {}
    """``ModelSettings`` field -> the request parameter it becomes; a field not here (or
    whose parameter the provider ``rejects``) is one this adapter cannot take."""

    def __init__(
        self,
        model: str,
        *,
        modes: tuple[Mode, ...],
        api_key: str | None,
        base_url: str | None,
        retry: RetryPolicy | None,
        timeout: float,
        client: ClientT | None,
        settings: dict[str, Any],
        provider: Provider | None = None,
    ) -> None:
        if provider is not None:
            self.provider = provider
        if client is None:
            self.provider.require_sdk(type(self).__name__)
        self.model = model
        self.name = f"{self.provider.name}:{model}"
        self.modes = modes
        self.base_url = (
            base_url or os.environ.get(self.provider.base_url_env) or self.provider.default_base_url
        )
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.settings = settings
        self._api_key = api_key
        self._client = client

    # --- hooks ------------------------------------------------------------------------

    @abstractmethod
    def _make_client(self, api_key: str, base_url: str | None, timeout: float) -> ClientT:
        """The SDK client with its own retries off (``retrying`` does them)."""

    @abstractmethod
    async def _open(self, client: ClientT, request: ModelRequest) -> ResponseStream[ItemT]:
        """Send one streamed request."""

    @abstractmethod
    def _decoder(self, request: ModelRequest) -> StreamDecoder[ItemT]: ...

    @abstractmethod
    def _tool(self, definition: ToolDefinition) -> object:
        """One tool definition in the provider's shape."""

    @abstractmethod
    def _tool_choice(self, choice: ToolChoice) -> object:
        """``auto`` / ``none`` / ``required`` / a tool's name in the provider's shape."""

    # --- shared -----------------------------------------------------------------------

    def client(self) -> ClientT:
        """The SDK client, made on first use: a missing key is then an error of the step
        (an ``ErrorPart`` the UI shows), not of the code that built the agent."""
        if self._client is None:
            self._client = self._make_client(self._key(), self.base_url, self.timeout)
        return self._client

    def unconfigured(self) -> str | None:
        """A key is missing (none given, none in the environment, and no keyless server
        at a base URL); the SDK's presence is checked when the adapter is made."""
        if self._client is not None:
            return None
        try:
            self._key()
        except ValueError as exc:
            return str(exc)
        return None

    def _key(self) -> str:
        key = self._api_key or (self.provider.key_env and os.environ.get(self.provider.key_env))
        if key:
            return key
        if self.provider.keyless_with_base_url and self.base_url:
            return "not-needed"
        raise MissingAPIKey(self.provider.label, self.provider.key_env, type(self).__name__)

    def check_settings(self, settings: ModelSettings) -> None:
        taken = [
            name
            for name in SETTING_NAMES
            if name in self.setting_params
            and self.setting_params[name] not in self.provider.rejects
        ]
        unsupported(settings, taken, f"{type(self).__name__} ({self.provider.label})")

    def setting_values(self, request: ModelRequest) -> dict[str, Any]:
        """The run's settings as request parameters: the mapped fields, then ``extra``.
        ``parallel_tool_calls`` only goes with tools (APIs refuse it alone)."""
        given = request.settings.given()
        if not request.tools:
            given.pop("parallel_tool_calls", None)
        values = {self.setting_params[name]: value for name, value in given.items()}
        return values | dict(request.settings.extra)

    def tool_params(self, request: ModelRequest) -> dict[str, Any]:
        """``tools`` and ``tool_choice`` for the request body; nothing when no tool is offered."""
        if not request.tools:
            return {}
        return {
            "tools": [self._tool(ToolDefinition.of(t)) for t in request.tools],
            "tool_choice": self._tool_choice(request.tool_choice),
        }

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return retrying(lambda: self._attempt(request), request.cancel, self.retry)

    async def _attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            client = self.client()
        except MissingAPIKey as exc:  # its message already says what to do
            yield ErrorPart(str(exc), "configuration_error")
            return
        except Exception as exc:  # the SDK refuses its settings
            label = self.provider.label
            yield ErrorPart(f"cannot create the {label} client: {exc}", "configuration_error")
            return
        try:
            self.check_settings(request.settings)
            response = await self._open(client, request)
        except ConfigurationError as exc:
            yield ErrorPart(str(exc), "configuration_error")
            return
        except UnsupportedFile as exc:
            yield ErrorPart(f"{self.name}: {exc}", "unsupported_file")
            return
        decoder = self._decoder(request)
        try:
            async for item in response:
                for event in decoder.feed(item):
                    yield event
        finally:
            await response.close()
        for event in decoder.finish():
            yield event


def sdk_arguments(create: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as keyword arguments of an SDK's ``create``: the parameters it names go
    as they are, the rest (a provider's own fields, a parameter newer than the SDK) in
    ``extra_body``, which the SDK merges into the JSON it sends."""
    named = _parameters(getattr(create, "__func__", create))
    unnamed = {k: v for k, v in body.items() if k not in named}
    if not unnamed:
        return body
    known = {k: v for k, v in body.items() if k in named}
    extra_body = {**unnamed, **known.pop("extra_body", {})}
    return {**known, "extra_body": extra_body}


@functools.cache
def _parameters(create: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(create).parameters)
