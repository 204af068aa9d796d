"""``callwright run`` in a terminal: streamed text, each tool call and its result, rich
progress bars, the y/n approval prompt, and the form a tool's question asks for (an MCP
server's elicitation, ``TerminalForm``).

Kept apart from ``cli.py`` (which only parses arguments and picks the agent) because
this is the part a person watches: how a conversation looks and how the human is asked.
rich draws the bars; ``input()`` asks, so the prompt works in any terminal, including
a pseudo-terminal in tests.

Approvals follow the runtime's rule that a denial is still a result: when nobody can be
asked (no terminal and no ``--yes``) the call is denied with a reason that says why, and
the model sees that reason.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from typing import Any

import jsonschema_rs
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn
from rich.syntax import Syntax

from ._tool_files import label
from .call import Decision
from .elicitation import InputAction, InputAnswer
from .events import (
    ApprovalRequested,
    InputRequested,
    ReasoningDelta,
    ReasoningEnd,
    RunError,
    RunFinished,
    Subagent,
    TextDelta,
    TextEnd,
    ToolCallEnd,
    ToolCallResult,
    ToolInputError,
    ToolProgress,
)
from .run import Agent, Run

NO_TERMINAL = "no terminal to ask for approval"
NO_TERMINAL_INPUT = "no terminal to answer it"
NO_TERMINAL_REASON = (
    "The user could not be asked: callwright run had no terminal for the approval "
    "prompt and was not started with --yes."
)


def short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Bars:
    """One rich progress bar per call that reports a fraction; live only while one runs."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress: Progress | None = None
        self.tasks: dict[str, TaskID] = {}

    def report(self, event: ToolProgress) -> None:
        assert event.fraction is not None
        if self.progress is None:
            self.progress = Progress(
                TextColumn("  [cyan]{task.fields[tool]}[/cyan]"),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn("{task.description}", markup=False),
                console=self.console,
            )
            self.progress.start()
        task = self.tasks.get(event.call_id)
        if task is None:
            task = self.progress.add_task(event.text, total=1.0, tool=event.tool_name)
            self.tasks[event.call_id] = task
        self.progress.update(task, completed=event.fraction, description=event.text)

    def has(self, call_id: str) -> bool:
        return call_id in self.tasks

    def finish(self, call_id: str) -> None:
        """The call has its result: its bar stops; the display ends with the last bar."""
        task = self.tasks.pop(call_id, None)
        if task is None or self.progress is None:
            return
        self.progress.stop_task(task)
        if not self.tasks:
            self.close()

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
        self.tasks.clear()


class TerminalRun:
    """Runs one prompt to its end, pausing for approvals as often as the run asks."""

    def __init__(
        self, agent: Agent, console: Console, *, yes: bool, interactive: bool | None = None
    ) -> None:
        self.agent = agent
        self.console = console
        self.yes = yes
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self.bars = _Bars(console)

    async def __call__(self, prompt: str) -> int:
        run = self.agent.start(prompt)
        try:
            while True:
                asked, failed = await self._show(run)
                if failed:
                    return 1
                result = run.result
                if result is None or result.status != "paused" or not asked:
                    return 0
                decisions = {a.call_id: self._reply(a) for a in asked}
                run = self.agent.start(messages=result.messages, decisions=decisions)
        finally:
            self.bars.close()

    def _reply(self, asked: ApprovalRequested | InputRequested) -> Decision | InputAnswer:
        if isinstance(asked, ApprovalRequested):
            return self._decide(asked)
        return self._answer(asked)

    async def _show(self, run: Any) -> tuple[list[ApprovalRequested | InputRequested], bool]:
        """Print one run's events; return the approvals and questions it paused on, and
        whether it failed. Meanwhile Ctrl-C stops one call (see ``_stop_one``)."""
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self._stop_one, run)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            return await self._print(run)
        try:
            return await self._print(run)
        finally:
            loop.remove_signal_handler(signal.SIGINT)

    def _stop_one(self, run: Run[Any, Any]) -> None:
        """Ctrl-C while a run streams: stop its most recent running call and let the run go
        on (the model gets ``Cancelled: cancelled by the user``); with no call running,
        stop the run."""
        running = run.running_calls()
        if running and run.cancel_call(running[-1]):
            self.bars.close()
            self.console.print(
                "[yellow]stopping the most recent call "
                "(Ctrl-C again stops the next one, or the run)[/yellow]"
            )
            return
        self.bars.close()
        self.console.print("[yellow]stopping the run[/yellow]")
        run.cancel("cancelled by the user")

    async def _print(self, run: Any) -> tuple[list[ApprovalRequested | InputRequested], bool]:
        console = self.console
        in_text = False
        approvals: list[ApprovalRequested | InputRequested] = []
        async for event in run.events():
            if isinstance(event, TextDelta):
                console.print(event.delta, end="", markup=False, highlight=False)
                in_text = True
            elif isinstance(event, TextEnd):
                if in_text:
                    console.print()
                in_text = False
            elif isinstance(event, ReasoningDelta):
                console.print(event.delta, end="", style="dim", markup=False)
                in_text = True
            elif isinstance(event, ReasoningEnd):
                if in_text:
                    console.print()
                in_text = False
            elif isinstance(event, ToolCallEnd):
                console.print(f"[cyan]→ {event.tool_name}[/cyan] {escape(short(event.arguments))}")
            elif isinstance(event, ToolInputError):
                console.print(f"[red]✗ {event.tool_name}: {escape(event.error)}[/red]")
            elif isinstance(event, ToolProgress):
                if event.fraction is not None:
                    self.bars.report(event)
                else:
                    console.print(f"  [dim]{event.tool_name}: {escape(event.text)}[/dim]")
            elif isinstance(event, ToolCallResult):
                self.bars.finish(event.call_id)
                if event.state == "output-available":
                    shown = " ".join([event.content, *map(label, event.files)]).strip()
                    console.print(f"[green]← {event.tool_name}[/green] {escape(short(shown))}")
                else:
                    state = "denied" if event.state == "output-denied" else "error"
                    console.print(
                        f"[red]← {event.tool_name} {state}:[/red] {escape(event.error or '')}"
                    )
            elif isinstance(event, Subagent):
                self._sub_agent(event)
            elif isinstance(event, ApprovalRequested | InputRequested):
                approvals.append(event)
            elif isinstance(event, RunError):
                self.bars.close()
                message = " ".join(event.message.split())  # one line, however it was raised
                console.print(f"[red]error ({event.code}): {escape(message)}[/red]")
                return approvals, True
            elif isinstance(event, RunFinished) and event.status not in ("completed", "paused"):
                console.print(f"[yellow]run {event.status}: {escape(event.reason or '')}[/yellow]")
        return approvals, False

    def _sub_agent(self, event: Subagent, depth: int = 1) -> None:
        """A delegate's calls and results, indented under the call that delegated."""
        inner = event.event
        if isinstance(inner, Subagent):
            self._sub_agent(inner, depth + 1)
            return
        pad = "  " * depth + f"[dim]{escape(event.name)} ↳[/dim] "
        if isinstance(inner, ToolCallEnd):
            shown = escape(short(inner.arguments))
            self.console.print(f"{pad}[cyan]→ {inner.tool_name}[/cyan] {shown}")
        elif isinstance(inner, ToolCallResult):
            ok = inner.state == "output-available"
            shown = escape(short(inner.content) if ok else inner.error or "")
            color = "green" if ok else "red"
            self.console.print(f"{pad}[{color}]← {inner.tool_name}[/{color}] {shown}")

    def _decide(self, request: ApprovalRequested) -> Decision:
        label = escape(f"{request.tool_name} {short(request.arguments)}")
        if self.yes:
            self.console.print(f"[green]approved {label}[/green] (--yes)")
            return Decision(True)
        if not self.interactive:
            self.console.print(
                f"[yellow]denied {label}: {NO_TERMINAL}; pass --yes to approve[/yellow]"
            )
            return Decision(False, NO_TERMINAL_REASON)
        return self._ask(request)

    def _answer(self, asked: InputRequested) -> InputAnswer:
        """A tool's question (an MCP server's elicitation): a form on the terminal, or
        cancelled when there is none (``--yes`` approves calls; it cannot make answers up)."""
        if not self.interactive:
            self.console.print(
                f"[yellow]cancelled {escape(asked.tool_name)}'s question: "
                f"{NO_TERMINAL_INPUT}[/yellow] ({escape(short(asked.request.message))})"
            )
            return InputAnswer("cancel", request=asked.request)
        self.bars.close()
        return TerminalForm(self.console, self._input)(asked)

    def _ask(self, request: ApprovalRequested) -> Decision:
        console = self.console
        self.bars.close()  # a live display would redraw over the prompt
        console.print()
        console.print(f"[bold yellow]{request.tool_name}[/bold yellow] needs your approval")
        if request.reason_for_call:
            console.print(f"  [dim]reason:[/dim] {escape(request.reason_for_call)}")
        arguments = json.dumps(request.arguments, indent=2, ensure_ascii=False)
        console.print(Syntax(arguments, "json", theme="ansi_dark", background_color="default"))
        while True:
            answer = self._input("Approve? [y/n] ")
            if answer is None:
                console.print("[yellow]no answer: denied[/yellow]")
                return Decision(False, "The user gave no answer.")
            answer = answer.strip().lower()
            if answer in ("y", "yes"):
                return Decision(True)
            if answer in ("n", "no"):
                reason = (self._input("Reason for the agent (optional): ") or "").strip()
                return Decision(False, reason or "The user said no.")
            console.print("Please answer y or n.")

    def _input(self, prompt: str) -> str | None:
        try:
            return input(prompt)
        except EOFError:
            return None


# --- a tool's question (MCP elicitation) ----------------------------------------------------

FIELD_ERRORS = {
    "boolean": "answer y or n",
    "integer": "a whole number, please",
    "number": "a number, please",
}
ACTIONS = {"a": "accept", "answer": "accept", "d": "decline", "decline": "decline",
           "c": "cancel", "cancel": "cancel"}  # fmt: skip


class TerminalForm:
    """Asks a tool's question on the terminal: accept (then each field of the requested
    schema in turn), decline or cancel, as MCP's elicitation has them.

    MCP restricts a requested schema to a flat object of strings (with a ``format``, or
    choices by ``enum``, ``enumNames`` or titled ``oneOf``), numbers, integers, booleans
    and arrays of choices, which is what is asked here. A field is typed in, read by its
    type, and checked against its own schema with jsonschema-rs (formats included:
    whoever types a bad email hears so at once); empty input takes the default, leaves an
    optional field out, and asks again for a required one. Written here because rich's
    prompts know neither choices with titles, nor lists, nor JSON Schema: they serve
    ``input()``, which is what this uses, so it works in any terminal.
    """

    def __init__(self, console: Console, ask: Callable[[str], str | None]) -> None:
        self.console = console
        self.ask = ask

    def __call__(self, asked: InputRequested) -> InputAnswer:
        request = asked.request
        console = self.console
        console.print()
        console.print(f"[bold yellow]{escape(asked.tool_name)}[/bold yellow] asks: "
                      f"{escape(request.message)}")  # fmt: skip
        if request.url is not None:
            console.print(f"  open [bold]{escape(request.url)}[/bold], then answer to go on")
        action = self._action()
        if action != "accept":
            return InputAnswer(action, request=request)
        if request.url is not None:
            return InputAnswer("accept", request=request)
        content = self._fields(request.schema)
        if content is None:
            console.print("[yellow]no answer: cancelled[/yellow]")
            return InputAnswer("cancel", request=request)
        return InputAnswer("accept", content, request=request)

    def _action(self) -> InputAction:
        while True:
            typed = self.ask("Answer, decline or cancel? [a/d/c] ")
            if typed is None:
                return "cancel"
            action = ACTIONS.get(typed.strip().lower())
            if action is not None:
                return action  # type: ignore[return-value]
            self.console.print("Please answer a, d or c.")

    def _fields(self, schema: dict[str, Any]) -> dict[str, Any] | None:
        """Each property asked in turn; None when the input ends (the human left)."""
        properties = schema.get("properties")
        required = set(schema.get("required") or ())
        content: dict[str, Any] = {}
        for name, field_schema in (properties or {}).items():
            if not isinstance(field_schema, dict):
                continue
            missing = object()
            value = self._field(name, field_schema, name in required, missing)
            if value is None:
                return None
            if value is not missing:
                content[name] = value
        return content

    def _field(self, name: str, schema: dict[str, Any], required: bool, missing: object) -> Any:
        """One field's value, ``missing`` for an optional one left empty, None at the end
        of input."""
        label, choices = _label(name, schema, required)
        description = schema.get("description")
        if isinstance(description, str) and description:
            self.console.print(f"  [dim]{escape(description)}[/dim]")
        check = _checker(schema)
        while True:
            typed = self.ask(label)
            if typed is None:
                return None
            typed = typed.strip()
            if not typed:
                if "default" in schema:
                    return schema["default"]
                if not required:
                    return missing
                self.console.print("  [red]a value is required[/red]")
                continue
            value, error = _read(typed, schema, choices)
            if error is None and check is not None:
                error = check(value)
            if error is None:
                return value
            self.console.print(f"  [red]{escape(error)}[/red]")


def _label(name: str, schema: dict[str, Any], required: bool) -> tuple[str, dict[str, Any]]:
    """The prompt for a field, and its choices by what may be typed (lowercase)."""
    title = schema.get("title") if isinstance(schema.get("title"), str) else name
    choices = _choices(schema.get("items") if schema.get("type") == "array" else schema)
    parts = [str(title)]
    if required:
        parts.append("(required)")
    shown = list(dict.fromkeys(choices.values()))
    if schema.get("type") == "boolean":
        parts.append("[y/n]")
    elif choices:
        names = [_shown_choice(schema, c) for c in shown]
        joined = ", ".join(names) if schema.get("type") == "array" else "/".join(names)
        parts.append(f"[{joined}]")
    if "default" in schema:
        default = schema["default"]
        if choices and isinstance(default, list):
            parts.append(f"(default {', '.join(_shown_choice(schema, d) for d in default)})")
        elif choices:
            parts.append(f"(default {_shown_choice(schema, default)})")
        else:
            parts.append(f"(default {json.dumps(default, ensure_ascii=False)})")
    return " ".join(parts) + ": ", choices


def _choices(schema: Any) -> dict[str, Any]:
    """What may be typed for each choice (its value or its title, lowercase) -> the value."""
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    titled = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(titled, list):
        for option in titled:
            if isinstance(option, dict) and "const" in option:
                out[str(option["const"]).lower()] = option["const"]
                if isinstance(option.get("title"), str):
                    out[option["title"].lower()] = option["const"]
    values = schema.get("enum")
    if isinstance(values, list):
        names = schema.get("enumNames")
        for i, value in enumerate(values):
            out[str(value).lower()] = value
            if isinstance(names, list) and i < len(names) and isinstance(names[i], str):
                out[names[i].lower()] = value
    return out


def _shown_choice(schema: dict[str, Any], value: Any) -> str:
    """A choice as the human sees it: its title where the schema gives one."""
    inner = schema.get("items") if schema.get("type") == "array" else schema
    assert isinstance(inner, dict)
    for option in inner.get("oneOf") or inner.get("anyOf") or ():
        if isinstance(option, dict) and option.get("const") == value and option.get("title"):
            return str(option["title"])
    names, values = inner.get("enumNames"), inner.get("enum")
    if isinstance(names, list) and isinstance(values, list) and value in values:
        index = values.index(value)
        if index < len(names):
            return str(names[index])
    return str(value)


def _read(typed: str, schema: dict[str, Any], choices: dict[str, Any]) -> tuple[Any, str | None]:
    """The typed text as the field's type, or why it cannot be."""
    kind = schema.get("type")
    if kind == "boolean":
        answer = {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}
        value = answer.get(typed.lower())
        return (value, None) if value is not None else (None, FIELD_ERRORS["boolean"])
    if kind in ("integer", "number"):
        try:
            number = float(typed)
        except ValueError:
            return None, FIELD_ERRORS[str(kind)]
        if number.is_integer():
            return int(number), None
        return (number, None) if kind == "number" else (None, FIELD_ERRORS["integer"])
    if kind == "array":
        picked = [p.strip() for p in typed.split(",") if p.strip()]
        values = [choices.get(p.lower(), p) for p in picked]
        unknown = [p for p in picked if choices and p.lower() not in choices]
        if unknown:
            return None, f"choose from the list (not {', '.join(unknown)})"
        return values, None
    if choices:
        if typed.lower() not in choices:
            return None, "choose one of the list"
        return choices[typed.lower()], None
    return typed, None


def _checker(schema: dict[str, Any]) -> Callable[[Any], str | None] | None:
    """A field's own schema as a check (formats included), or None if it cannot compile."""
    try:
        validator = jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    except ValueError:
        return None

    def check(value: Any) -> str | None:
        error = next(iter(validator.iter_errors(value)), None)
        return None if error is None else error.message

    return check
