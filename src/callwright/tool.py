"""Tool: the blueprint a model sees and the code (if any) that carries a call out.

A tool is made from a typed Python function (``@tool``) or from a JSON-Schema
blueprint (``Tool.from_schema``: the Acts ``_tool``/``_output``/... shape or the
plain ``{name, description, parameters}`` shape of AG-UI and OpenAI). Either way
it ends up as one ``Tool`` with a parameters schema, a validator, and an executor
or none: with none it is latent (the model fills ``_output``) or, when marked
``client``, a front end runs it.

Synchronous code never runs on the event loop: a plain function (or a sync
executor handed to ``Tool``) runs on the bounded tool threads of ``_threads``.
A blueprint's or client's JSON Schema is checked by ``_jsonschema``, which bounds
what one check can cost (linear-time patterns, a width limit) and refuses, when
the tool is made, a schema it cannot bound.
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic import ValidationError as PydanticValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import CoreSchema

from ._errors import ConfigurationError
from ._jsonschema import compile_validator
from ._threads import tool_threads
from ._tool_files import MAX_TOOL_FILE_BYTES, checked_files, split_files
from .call import InvalidArgs, ToolResult, is_meta
from .context import ToolContext

log = logging.getLogger("callwright.tool")

Executor = Callable[[Any, "ToolContext[Any] | None"], Awaitable[Any]]
Validator = Callable[[dict[str, Any]], Any]
ApprovalOutcome = Literal["not-applicable", "approved", "denied", "user-approval"]
"""What an approval policy decides for one call: it needs no approval, it is approved or
denied without asking, or a human decides (the AI SDK 7 ``toolApproval`` outcomes)."""


@dataclass(frozen=True, slots=True)
class ApprovalVerdict:
    """A policy's decision for one call, with the reason a denial gives the model.

    Build one with ``approve``, ``deny``, ``ask`` (a human decides) or ``defer`` (the next
    policy decides); ``ApprovalVerdict("denied", reason)`` spells the same with the AI SDK
    7 outcome names.
    """

    outcome: ApprovalOutcome
    """``not-applicable``, ``approved``, ``denied`` or ``user-approval``."""
    reason: str | None = None
    """Why: a denial reaches the model as ``Tool call denied: <reason>``."""

    @classmethod
    def approve(cls, reason: str | None = None) -> ApprovalVerdict:
        """Run the call without asking anyone (``approved``)."""
        return cls("approved", reason)

    @classmethod
    def deny(cls, reason: str | None = None) -> ApprovalVerdict:
        """Refuse the call without asking anyone (``denied``); the model sees the reason."""
        return cls("denied", reason)

    @classmethod
    def ask(cls, reason: str | None = None) -> ApprovalVerdict:
        """A human decides (``user-approval``); the reason is shown with the request."""
        return cls("user-approval", reason)

    @classmethod
    def defer(cls) -> ApprovalVerdict:
        """No opinion (``not-applicable``): the tool's own ``requires_approval`` decides,
        or, for the tool's own policy, the call runs without asking."""
        return cls("not-applicable")


ApprovalPolicy = bool | Callable[[dict[str, Any]], "bool | ApprovalVerdict"]
"""``True`` (ask a human every time), or a function of the arguments that returns a bool
(ask or not) or an ``ApprovalVerdict``."""
InputCallback = Callable[..., None]
Reconcile = Callable[[str, dict[str, Any]], Any]
"""``reconcile(idempotency_key, arguments) -> result | None``, sync or async."""

META_ORDER = ("_tool", "_reasoningForCall", "_instance", "_scopes", "_delegate")
TAIL_META = ("_outputPath", "_outputMethod", "_output")


def _no_validation(args: dict[str, Any]) -> Any:
    return args


@dataclass(slots=True, eq=False)
class Tool:
    """One tool. Build it with ``@tool`` or ``Tool.from_schema``; the fields are its blueprint."""

    name: str
    """What the model calls it by; unique in a toolbox (a redefinition wins)."""
    description: str = ""
    """What the tool does, for the model: from the docstring or the blueprint."""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    """The JSON Schema of the arguments, as shown to the model."""
    title: str | None = None
    """A human name for UIs (AG-UI, the playground); the model never sees it."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema of the result, when known (a pydantic return type, a blueprint's
    ``_output``); a latent tool's model fills it."""
    executor: Executor | None = None
    """The code that carries a call out; always async (a sync one is moved to a tool
    thread); None for a latent or client tool, or one an activity carries out."""
    validator: Validator = _no_validation
    """Checks complete arguments and returns what the executor receives; raises InvalidArgs."""
    activity: str | None = None
    """The name of an activity that carries calls out (the blueprint's ``_activity``)."""
    client: bool = False
    """A front end runs it: the run stops with the call pending."""
    requires_approval: ApprovalPolicy = False
    """True, or a function of the arguments returning a bool (a human approves the call
    before it runs) or an ``ApprovalVerdict`` (approved or denied without asking, too)."""
    allow_edits: bool = False
    """A human approving may change the arguments (they are validated again)."""
    timeout: float | None = None
    """Seconds a call may take; None uses the run's default (``Limits.tool_timeout``)."""
    sequential: bool = False
    """A barrier: runs alone, after earlier calls of the step finish."""
    idempotent: bool = False
    """Safe to run again after a crash: recovery may re-run it instead of failing it."""
    reconcile: Reconcile | None = None
    """Asks the external system what became of a call left in doubt by a crash:
    ``reconcile(idempotency_key, arguments)`` (sync or async) returns the call's result,
    or None when it cannot tell (the call stays in doubt). Called on resume instead of
    running the tool again."""
    on_workers: bool = False
    """Run on tool worker processes (``callwright worker``) when the server is configured
    with them: the web process only relays the call. The tool gets the worker's deps."""
    uses_context: bool = True
    """False: the executor ignores its ToolContext, so none is made."""
    meta: dict[str, Any] = field(default_factory=dict)
    """The blueprint's ``_`` meta field schemas (``_outputPath``, ``_instance``...)."""
    on_input_start: InputCallback | None = None
    """Called (on the event loop: keep it short) when the model starts a call."""
    on_input_delta: InputCallback | None = None
    """Called (on the event loop) for each piece of streamed arguments."""
    on_input_available: InputCallback | None = None
    """Called (on the event loop) when the arguments are complete and valid."""
    _meta_validator: Validator | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.executor is not None and not inspect.iscoroutinefunction(self.executor):
            self.executor = _off_the_loop(self.executor)

    def validate_meta(self, meta: dict[str, Any]) -> None:
        """Check model-chosen meta (``_outputPath``, ``_instance``...) against the blueprint."""
        if not self.meta:
            return
        if self._meta_validator is None:
            self._meta_validator = compile_validator({"type": "object", "properties": self.meta})
        self._meta_validator({k: v for k, v in meta.items() if k in self.meta})

    def needs_approval(self, arguments: dict[str, Any]) -> bool:
        return self.approval(arguments).outcome == "user-approval"

    def approval(self, arguments: dict[str, Any]) -> ApprovalVerdict:
        """What ``requires_approval`` decides for a call with these arguments."""
        policy = self.requires_approval
        verdict = policy if isinstance(policy, bool) else policy(arguments)
        if isinstance(verdict, ApprovalVerdict):
            return verdict
        return ApprovalVerdict("user-approval" if verdict else "not-applicable")

    def validate(self, arguments: dict[str, Any]) -> Any:
        """Validate once, when the arguments are complete; raises InvalidArgs."""
        return self.validator(arguments)

    def fixed_meta(self) -> dict[str, Any]:
        """Meta values the blueprint fixes with ``const``: the runtime fills them, not the model."""
        return {k: s["const"] for k, s in self.meta.items() if isinstance(s, dict) and "const" in s}

    def model_meta(self) -> dict[str, Any]:
        """Meta fields the model may choose (free or narrowed by enum/pattern)."""
        return {k: s for k, s in self.meta.items() if not (isinstance(s, dict) and "const" in s)}

    @classmethod
    def from_schema(
        cls,
        blueprint: dict[str, Any],
        *,
        name: str | None = None,
        executor: Executor | None = None,
        **options: Any,
    ) -> Tool:
        """Build a tool from an Acts blueprint or the ``{name, description, parameters}`` shape."""
        if "parameters" in blueprint and "properties" not in blueprint:
            return _from_plain(blueprint, name=name, executor=executor, **options)
        return _from_blueprint(blueprint, name=name, executor=executor, **options)


# --- blueprints ---------------------------------------------------------------


def _const_or_value(value: Any) -> Any:
    if isinstance(value, dict) and "const" in value:
        return value["const"]
    return value


def _from_plain(
    blueprint: dict[str, Any], *, name: str | None, executor: Executor | None, **options: Any
) -> Tool:
    tool_name = name or blueprint.get("name")
    if not tool_name or not isinstance(tool_name, str):
        raise ConfigurationError("a tool needs a name")
    params = blueprint.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise ConfigurationError(f"tool {tool_name!r}: parameters must be a JSON Schema object")
    validator = compile_validator(params)  # refuses a schema it cannot bound
    return Tool(
        name=tool_name,
        description=str(blueprint.get("description") or ""),
        parameters=params,
        title=blueprint.get("title"),
        executor=executor,
        validator=validator,
        **options,
    )


def _from_blueprint(
    blueprint: dict[str, Any], *, name: str | None, executor: Executor | None, **options: Any
) -> Tool:
    props: dict[str, Any] = dict(blueprint.get("properties") or {})
    tool_name = name or _const_or_value(props.get("_tool"))
    if not tool_name or not isinstance(tool_name, str):
        raise ConfigurationError("an Acts blueprint needs a `_tool` const or a name")
    required = [r for r in blueprint.get("required", []) if not is_meta(r)]
    params: dict[str, Any] = {
        "type": "object",
        "properties": {k: v for k, v in props.items() if not is_meta(k)},
    }
    if required:
        params["required"] = required
    for key in ("additionalProperties", "$defs", "definitions"):
        if key in blueprint:
            params[key] = blueprint[key]
    meta = {
        k: v for k, v in props.items() if is_meta(k) and k not in ("_tool", "_output", "_activity")
    }
    activity = _const_or_value(props.get("_activity", blueprint.get("_activity"))) or None
    for key in ("_outputPath", "_outputMethod", "_delegate", "_scopes", "_instance"):
        if key in blueprint and key not in meta:
            value = blueprint[key]
            meta[key] = value if isinstance(value, dict) else {"const": value}
    validator = compile_validator(params)  # refuses a schema it cannot bound
    made = Tool(
        name=tool_name,
        description=str(blueprint.get("description") or ""),
        parameters=params,
        title=blueprint.get("title"),
        output_schema=props.get("_output"),
        executor=executor,
        validator=validator,
        activity=activity if isinstance(activity, str) else None,
        meta=meta,
        **options,
    )
    if meta:  # a meta schema (an `_outputPath` pattern...) is refused now, not at the first call
        made._meta_validator = compile_validator({"type": "object", "properties": meta})
    return made


# --- typed functions ----------------------------------------------------------


@overload
def tool(func: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    func: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    requires_approval: ApprovalPolicy = False,
    allow_edits: bool = False,
    timeout: float | None = None,
    sequential: bool = False,
    idempotent: bool = False,
    reconcile: Reconcile | None = None,
    on_workers: bool = False,
    on_input_start: InputCallback | None = None,
    on_input_delta: InputCallback | None = None,
    on_input_available: InputCallback | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    func: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    requires_approval: ApprovalPolicy = False,
    allow_edits: bool = False,
    timeout: float | None = None,
    sequential: bool = False,
    idempotent: bool = False,
    reconcile: Reconcile | None = None,
    on_workers: bool = False,
    on_input_start: InputCallback | None = None,
    on_input_delta: InputCallback | None = None,
    on_input_available: InputCallback | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a sync or async function (or generator) into a ``Tool``.

    Usable bare (``@tool``) or with options (``@tool(requires_approval=True)``).
    Sync functions run in a worker thread so a blocking tool never stalls the
    event loop; generators stream each yield to the UI and the last one is the
    result.
    """

    def build(fn: Callable[..., Any]) -> Tool:
        return tool_from_function(
            fn,
            name=name,
            description=description,
            title=title,
            requires_approval=requires_approval,
            allow_edits=allow_edits,
            timeout=timeout,
            sequential=sequential,
            idempotent=idempotent,
            reconcile=reconcile,
            on_workers=on_workers,
            on_input_start=on_input_start,
            on_input_delta=on_input_delta,
            on_input_available=on_input_available,
        )

    if func is not None:
        return build(func)
    return build


def tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Any,
) -> Tool:
    doc = docstring_parser.parse(inspect.getdoc(fn) or "")
    param_docs = {p.arg_name: p.description or "" for p in doc.params}
    hints = get_type_hints(fn, include_extras=True)
    signature = inspect.signature(fn)

    context_param: str | None = None
    fields: dict[str, Any] = {}
    for pname, param in signature.parameters.items():
        annotation = hints.get(pname, Any)
        if _is_context(annotation):
            context_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {fn.__name__}: *args/**kwargs cannot be described to a model")
        default = ... if param.default is param.empty else param.default
        fields[pname] = (annotation, Field(default, description=param_docs.get(pname) or None))

    tool_name = name or fn.__name__
    args_model: type[BaseModel] = create_model(
        f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    text = description if description is not None else _doc_text(doc)
    generator = inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn)
    return Tool(
        name=tool_name,
        description=text,
        uses_context=context_param is not None or generator,
        parameters=args_model.model_json_schema(schema_generator=_UntitledJsonSchema),
        output_schema=_output_schema(hints.get("return")),
        executor=_function_executor(fn, list(fields), context_param),
        validator=_model_validator(args_model),
        **options,
    )


def _doc_text(doc: docstring_parser.Docstring) -> str:
    parts = [doc.short_description or "", doc.long_description or ""]
    return "\n\n".join(p for p in parts if p).strip()


class _UntitledJsonSchema(GenerateJsonSchema):
    """Pydantic's schema without the titles it makes up from the arguments model's and the
    parameters' names: noise in every prompt, no meaning to a model. A title given
    explicitly (``Field(title=...)``) stays."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: CoreSchema, mode: JsonSchemaMode = "validation") -> JsonSchemaValue:
        generated = super().generate(schema, mode)
        generated.pop("title", None)
        return generated


def _output_schema(annotation: Any) -> dict[str, Any] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.model_json_schema()
    return None


def _model_validator(model: type[BaseModel]) -> Validator:
    validate_python = model.__pydantic_validator__.validate_python

    def validate(args: dict[str, Any]) -> Any:
        try:
            return validate_python(args).__dict__
        except PydanticValidationError as exc:
            raise InvalidArgs(_describe_pydantic_error(exc)) from None

    return validate


def _describe_pydantic_error(exc: PydanticValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{where}: {err['msg']}" if where else err["msg"])
    return "; ".join(parts)


def _function_executor(
    fn: Callable[..., Any], names: list[str], context_param: str | None
) -> Executor:
    def kwargs_for(validated: dict[str, Any], ctx: ToolContext | None) -> dict[str, Any]:
        # ``validated`` holds exactly the parameters (a fresh dict per call)
        if context_param is None:
            return validated
        return {**validated, context_param: ctx}

    if inspect.isasyncgenfunction(fn):

        async def run_async_gen(validated: Any, ctx: ToolContext | None) -> Any:
            gen: AsyncIterator[Any] = fn(**kwargs_for(validated, ctx))
            assert ctx is not None  # generators stream through it: uses_context
            return await _drain_async(gen, ctx)

        return run_async_gen

    if inspect.isgeneratorfunction(fn):

        async def run_gen(validated: Any, ctx: ToolContext | None) -> Any:
            gen: Iterator[Any] = fn(**kwargs_for(validated, ctx))
            assert ctx is not None
            return await _drain_sync(gen, ctx)

        return run_gen

    if inspect.iscoroutinefunction(fn):

        async def run_coro(validated: Any, ctx: ToolContext | None) -> Any:
            return await fn(**kwargs_for(validated, ctx))

        return run_coro

    async def run_sync(validated: Any, ctx: ToolContext | None) -> Any:
        return await tool_threads.run(fn, **kwargs_for(validated, ctx))

    return run_sync


_NOTHING = object()


async def _drain_async(gen: AsyncIterator[Any], ctx: ToolContext) -> Any:
    last: Any = None
    async for value in gen:
        last = value
        ctx.update(value)
    return last


async def _drain_sync(gen: Iterator[Any], ctx: ToolContext) -> Any:
    last: Any = None
    while True:
        value = await tool_threads.run(next, gen, _NOTHING)
        if value is _NOTHING:
            return last
        last = value
        ctx.update(value)


def _off_the_loop(executor: Callable[..., Any]) -> Executor:
    """A sync executor run on a tool thread; an awaitable it returns is awaited on the loop."""

    async def run(validated: Any, ctx: ToolContext | None) -> Any:
        value = await tool_threads.run(executor, validated, ctx)
        if inspect.isawaitable(value):
            value = await value
        return value

    return run


def as_result(value: Any, max_file_bytes: int = MAX_TOOL_FILE_BYTES) -> ToolResult:
    """Normalise what a tool returned: str, dict, pydantic model, ToolResult, anything
    JSON-able, a ``File``, or a list of text and files (a ``ToolError`` for a malformed
    file, or files over ``max_file_bytes`` together)."""
    if isinstance(value, str):  # the common result: no model to dump, no files to split
        return ToolResult(value)
    if isinstance(value, ToolResult):
        files = checked_files(value.files, max_file_bytes) if value.files else []
        if isinstance(value.content, BaseModel):
            return ToolResult(value.content.model_dump(mode="json"), value.details, files=files)
        value.files = files
        return value
    if isinstance(value, BaseModel):
        return ToolResult(value.model_dump(mode="json"))
    split = split_files(value, max_file_bytes)
    if split is not None:
        return ToolResult(split[0], files=split[1])
    return ToolResult(value)


def _is_context(annotation: Any) -> bool:
    """``ToolContext`` or a parametrised ``ToolContext[Deps]`` marks the context parameter."""
    origin = typing.get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, ToolContext)


async def reconciled(tool: Tool, key: str, arguments: dict[str, Any]) -> ToolResult | None:
    """What the tool's ``reconcile`` hook says became of a call in doubt; None when it has
    none, cannot tell, or fails (the call then stays in doubt: a hook's failure must not
    turn an unknown outcome into a false one)."""
    hook = tool.reconcile
    if hook is None:
        return None
    try:
        if inspect.iscoroutinefunction(hook):
            value = await hook(key, arguments)
        else:
            value = await tool_threads.run(hook, key, arguments)
            if inspect.isawaitable(value):
                value = await value
    except Exception:
        log.warning("tool %s: reconcile failed; the call stays in doubt", tool.name, exc_info=True)
        return None
    return None if value is None else as_result(value)
