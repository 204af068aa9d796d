"""``Agent``: the configuration a user writes once, and the ways to run it.

An agent is safe to share between concurrent runs: each run reads a frozen
``RunSettings`` taken from it when the run starts, and keeps its own state.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, overload

from pydantic import TypeAdapter

from .._errors import CallwrightError, ConfigurationError
from .._run_start import RunStart
from .._strategy import Strategy, as_strategy
from ..approvals import AgentApprovalPolicy, ApprovalIds, ThreadApprovals
from ..artifacts import Artifacts
from ..call import Decision
from ..context import DepsT
from ..elicitation import InputAnswer
from ..execute import ExecutionPolicy
from ..messages import Message, as_messages
from ..models import resolve_model
from ..models._settings import NO_SETTINGS, ModelSettings
from ..models.base import Mode, Model, check_settings
from ..tool import Tool
from ..tool import tool as make_tool
from ..toolbox import Toolbox, Toolset
from . import resume
from ._types import (
    Limits,
    OutputSpec,
    OutputT,
    RunFailed,
    RunResult,
    RunSettings,
    StepInfo,
    StepPlan,
    StopCondition,
    new_id,
)
from .loop import Run

Prompt = str | Message | list[Message]
"""What a run starts from: a user's text, one message, or several."""


class EventLoopRunning(CallwrightError, RuntimeError):
    """``run_sync`` was called where an event loop already runs: await ``run`` there."""


class Agent(Generic[DepsT, OutputT]):
    """An agent: a model, tools, instructions, and how its runs are carried out.

    ``Agent[DepsT, OutputT]``: ``deps`` reach tools as ``ToolContext[DepsT].deps``;
    a run's ``result.output`` is an ``OutputT`` (the final text unless
    ``output_type`` names a type or a JSON schema).
    """

    def __init__(
        self,
        model: Model | str | None = None,
        tools: Toolbox | Iterable[Tool | Callable[..., Any]] = (),
        *,
        instructions: str | None = None,
        output_type: type[OutputT] | dict[str, Any] | None = None,
        deps_type: type[DepsT] | None = None,
        deps: DepsT | None = None,
        strategy: str | Strategy = "parallel",
        stop_when: StopCondition | Sequence[StopCondition] = (),
        max_steps: int | None = None,
        limits: Limits | None = None,
        prepare_step: Callable[[StepInfo], StepPlan | None] | None = None,
        on_step_finish: Callable[[StepInfo], None] | None = None,
        mode: Mode | None = None,
        cancel_grace: float = 5.0,
        max_delegate_depth: int = 3,
        name: str | None = None,
        description: str | None = None,
        toolsets: Iterable[Toolset] = (),
        approval: AgentApprovalPolicy | None = None,
        settings: ModelSettings | None = None,
        artifacts: Artifacts | None = None,
    ) -> None:
        """``max_steps`` is a shortcut for ``limits.max_steps`` and wins over it when both
        are given. ``deps_type`` only informs type checkers. ``name`` names the agent in
        traces (``invoke_agent {name}``) and logs. ``description`` says what the agent
        is for to those who call it as a tool (an MCP client of ``expose_agent``); the
        ``instructions`` are its system prompt and are never shown to them. ``toolsets``
        are sources of tools listed when a run starts (MCP servers,
        ``callwright.mcp.MCPServer``): close them with ``async with agent`` or
        ``await agent.aclose()``. ``approval`` is the agent's approval policy: it sees
        every call (front-end and MCP tools too) before the tool's own
        ``requires_approval``, which decides where it returns ``not-applicable`` (see
        ``ApprovalQuery``). ``settings`` (``ModelSettings``: temperature, max tokens,
        reasoning effort ...) go with every step of every run; a run's own override them
        field by field. A setting the model cannot take raises ``ConfigurationError`` here.
        ``artifacts`` stores results too large for the model's context and gives the model
        a preview and the built-in ``read_artifact`` tool instead (see
        ``callwright.artifacts.Artifacts``); None: results reach the model whole."""
        self.model = _resolve_model(model)
        self.model_settings = settings or NO_SETTINGS
        """The model settings of every run (``Agent(settings=...)``)."""
        check_settings(self.model, self.model_settings)
        self.toolbox = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        for toolset in toolsets:
            self.toolbox.add_toolset(toolset)
        self.instructions = instructions
        self.output_type = output_type
        self.output = _output_spec(output_type)
        self.strategy = as_strategy(strategy)
        self.stop_when = [stop_when] if callable(stop_when) else list(stop_when)
        limits = limits or Limits()
        if max_steps is not None:
            limits = dataclasses.replace(limits, max_steps=max_steps)
        self.limits = limits
        self.prepare_step = prepare_step
        self.on_step_finish = on_step_finish
        if mode is not None and mode not in self.model.modes:
            raise ConfigurationError(f"model {self.model.name} does not support {mode} mode")
        self.mode: Mode = mode or self.model.modes[0]
        self.deps = deps
        self.cancel_grace = cancel_grace
        self.max_delegate_depth = max_delegate_depth
        self.name = name
        self.description = description
        """What the agent does, for callers that see it as one tool (MCP clients);
        None: a neutral description naming the agent, never its instructions."""
        self.approval = approval
        self.artifacts = artifacts
        """Where results too large for the model's context go (None: nowhere)."""
        if artifacts is not None:
            self.toolbox.add(artifacts.tool())

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema of the structured output the model is asked for, if any."""
        return self.output.schema

    @overload
    def tool(self, func: Callable[..., Any], /) -> Tool: ...
    @overload
    def tool(self, /, **options: Any) -> Callable[[Callable[..., Any]], Tool]: ...
    def tool(
        self, func: Callable[..., Any] | None = None, /, **options: Any
    ) -> Tool | Callable[[Callable[..., Any]], Tool]:
        """Register a function as a tool of this agent (``@agent.tool`` or with options)."""

        def register(fn: Callable[..., Any]) -> Tool:
            return self.toolbox.add(make_tool(**options)(fn))

        return register(func) if func is not None else register

    async def __aenter__(self) -> Agent[DepsT, OutputT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the agent's toolsets (MCP sessions and the servers they started)."""
        await self.toolbox.aclose()

    def settings(
        self, approval_ids: ApprovalIds | None = None, model_settings: ModelSettings | None = None
    ) -> RunSettings:
        """The configuration one run reads, fixed when it starts; ``model_settings`` are
        the run's, over the agent's (a setting the model cannot take raises
        ``ConfigurationError``)."""
        merged = self.model_settings.merged(model_settings)
        if model_settings is not None:
            check_settings(self.model, merged)
        execution = ExecutionPolicy(
            self.strategy,
            self.cancel_grace,
            self.limits.tool_timeout,
            approval_ids,
            self.approval,
            None if self.artifacts is None else self.artifacts.for_run(),
            self.limits.max_tool_file_bytes,
        )
        return RunSettings(
            model=self.model,
            mode=self.mode,
            instructions=self.instructions,
            output=self.output,
            limits=self.limits,
            execution=execution,
            stop_when=tuple(self.stop_when),
            prepare_step=self.prepare_step,
            on_step_finish=self.on_step_finish,
            max_delegate_depth=self.max_delegate_depth,
            model_settings=merged,
        )

    def start(
        self,
        prompt: Prompt | None = None,
        *,
        messages: Sequence[Message] = (),
        decisions: Mapping[str, Decision | InputAnswer] | None = None,
        client_tools: Iterable[Tool] = (),
        allow_client_override: bool = False,
        state: dict[str, Any] | None = None,
        deps: DepsT | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        approval_ids: ApprovalIds | None = None,
        depth: int = 0,
        name: str | None = None,
        traceparent: str | None = None,
        thread_approvals: ThreadApprovals | None = None,
        principal: str | None = None,
        settings: ModelSettings | None = None,
        forwarded_props: Mapping[str, Any] | None = None,
    ) -> Run[DepsT, OutputT]:
        """A new run, not started yet: iterate its ``events()`` to run it.

        To resume a paused run, pass its ``messages`` and the ``decisions`` for its
        pending approvals and questions (keyed by call id: a ``Decision``, or an
        ``InputAnswer`` for a call that asked a human); a decision for a call that is
        not waiting raises ``UnknownDecision`` before anything runs. ``approval_ids``
        makes the ids of approval requests (e.g. signed ones, see
        ``callwright.store.ApprovalSigner``); by default they are random. ``depth`` and
        ``name`` (the agent's name in traces, default ``self.name``) are set by
        delegation. ``traceparent``: the W3C trace context of the segment that paused
        (``PendingCall.traceparent``), so that a resume in another process links to it
        when tracing is on. ``thread_approvals``: the tools a human allowed for the rest
        of this thread; pass the same object to each run of the thread (the run adds
        what a ``Decision.approve(remember="thread")`` allows). None: a fresh one, for
        this run only. ``principal``: whose run it is (``ToolContext.principal``); the
        server sets it from the request. ``settings``: this run's model settings, over
        the agent's field by field. ``forwarded_props``: what the front end forwarded
        for the agent's code (``ToolContext.forwarded_props``), read-only in the run.
        The keywords make a ``RunStart``, started by ``start_from``.
        """
        start = RunStart(
            messages=messages,
            prompt=() if prompt is None else as_messages(prompt),
            decisions=decisions,
            client_tools=tuple(client_tools),
            allow_client_override=allow_client_override,
            state=state,
            run_id=run_id,
            thread_id=thread_id,
            thread_approvals=thread_approvals,
            approval_ids=approval_ids,
            forwarded_props=forwarded_props,
            traceparent=traceparent,
            principal=principal,
            settings=settings,
            depth=depth,
            name=name,
        )
        return self.start_from(start, deps=deps)

    def start_from(self, start: RunStart, *, deps: DepsT | None = None) -> Run[DepsT, OutputT]:
        """A new run from ``start`` (see ``RunStart``), not started yet: iterate its
        ``events()`` to run it. ``deps`` reach the tools as ``ToolContext.deps`` (None: the
        agent's own). The one way a run begins: ``start`` builds a ``RunStart`` and comes
        here, and so do the server, the journal and the durable layer.

        A decision for a call that is not waiting raises ``UnknownDecision`` before
        anything runs; a front-end tool that clashes with a server tool raises
        ``ToolConflict`` unless ``start.allow_client_override``.
        """
        history = [*start.messages, *start.prompt]
        if start.decisions:
            resume.check_decisions(history, start.decisions)
        toolbox = self.toolbox
        if start.client_tools:
            toolbox = toolbox.with_client_tools(
                list(start.client_tools), allow_override=start.allow_client_override
            )
        return Run(
            self.settings(start.approval_ids, start.settings),
            history,
            toolbox=toolbox,
            decisions=start.decisions or {},
            state=start.state,
            deps=deps if deps is not None else self.deps,  # type: ignore[arg-type]
            run_id=start.run_id or new_id("run"),
            thread_id=start.thread_id or new_id("thread"),
            new_from=len(start.messages),
            depth=start.depth,
            agent_name=start.name or self.name,
            traceparent=start.traceparent,
            thread_approvals=start.thread_approvals,
            principal=start.principal,
            forwarded_props=start.forwarded_props,
            resumed_handles=start.resumed_handles,
        )

    def stream(
        self,
        prompt: Prompt | None = None,
        *,
        messages: Sequence[Message] = (),
        decisions: Mapping[str, Decision | InputAnswer] | None = None,
        client_tools: Iterable[Tool] = (),
        state: dict[str, Any] | None = None,
        deps: DepsT | None = None,
        thread_id: str | None = None,
        thread_approvals: ThreadApprovals | None = None,
        settings: ModelSettings | None = None,
    ) -> Run[DepsT, OutputT]:
        """A run to iterate: ``async for event in agent.stream(...)``; ``run.result`` after.

        A failed run does not raise here: its last event is a ``RunError`` and
        ``run.result.status == "error"``, with ``run.result.error`` saying why.
        """
        return self.start(
            prompt,
            messages=messages,
            decisions=decisions,
            client_tools=client_tools,
            state=state,
            deps=deps,
            thread_id=thread_id,
            thread_approvals=thread_approvals,
            settings=settings,
        )

    async def run(
        self,
        prompt: Prompt | None = None,
        *,
        messages: Sequence[Message] = (),
        decisions: Mapping[str, Decision | InputAnswer] | None = None,
        client_tools: Iterable[Tool] = (),
        state: dict[str, Any] | None = None,
        deps: DepsT | None = None,
        thread_id: str | None = None,
        thread_approvals: ThreadApprovals | None = None,
        settings: ModelSettings | None = None,
    ) -> RunResult[OutputT]:
        """Run to completion (or to a pause) and return the result.

        A run that fails (status ``error``: the model's provider failed, no API key, a
        toolset could not be listed) raises ``RunFailed``, which carries the error, the
        messages so far, the usage and the result. A paused run (``status="paused"``,
        waiting on ``pending`` approvals or front-end tools) and a stopped one (a limit)
        are returned. Cancelling the task that awaits ``run`` raises
        ``asyncio.CancelledError``, as any cancelled await does, and cancels the running
        tools with it; to end a run early and keep its result (``status="cancelled"``,
        the history so far), use ``agent.stream`` and ``Run.cancel()``, which lets the
        tools see their cancel token and wind down within ``cancel_grace``.
        """
        run = self.stream(
            prompt,
            messages=messages,
            decisions=decisions,
            client_tools=client_tools,
            state=state,
            deps=deps,
            thread_id=thread_id,
            thread_approvals=thread_approvals,
            settings=settings,
        )
        async for _ in run:
            pass
        assert run.result is not None
        if run.result.status == "error":
            raise RunFailed(run.result) from run.exception
        return run.result

    def run_sync(
        self,
        prompt: Prompt | None = None,
        *,
        messages: Sequence[Message] = (),
        decisions: Mapping[str, Decision | InputAnswer] | None = None,
        client_tools: Iterable[Tool] = (),
        state: dict[str, Any] | None = None,
        deps: DepsT | None = None,
        thread_id: str | None = None,
        thread_approvals: ThreadApprovals | None = None,
        settings: ModelSettings | None = None,
    ) -> RunResult[OutputT]:
        """``run`` for code without an event loop (scripts, the REPL).

        Raises ``RunFailed`` for a failed run, as ``run`` does. Inside a running loop it
        raises ``EventLoopRunning`` at once, before anything starts: await ``run`` there.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise EventLoopRunning(
                "run_sync cannot be called from a running event loop: await run()"
            )
        return asyncio.run(
            self.run(
                prompt,
                messages=messages,
                decisions=decisions,
                client_tools=client_tools,
                state=state,
                deps=deps,
                thread_id=thread_id,
                thread_approvals=thread_approvals,
                settings=settings,
            )
        )


def _output_spec(output_type: Any) -> OutputSpec:
    if output_type is None or output_type is str:
        return OutputSpec()
    if isinstance(output_type, dict):
        return OutputSpec(output_type)
    adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    return OutputSpec(adapter.json_schema(), adapter)


def _resolve_model(model: Model | str | None) -> Model:
    return resolve_model(model) if model is None or isinstance(model, str) else model
