"""``callwright run`` in a terminal: streamed text, each tool call and its result, rich
progress bars, and the y/n approval prompt.

Kept apart from ``cli.py`` (which only parses arguments and picks the agent) because
this is the part a person watches: how a conversation looks and how the human is asked.
rich draws the bars; ``input()`` asks, so the prompt works in any terminal, including
a pseudo-terminal in tests.

Approvals follow the runtime's rule that a denial is still a result: when nobody can be
asked (no terminal and no ``--yes``) the call is denied with a reason that says why, and
the model sees that reason.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn
from rich.syntax import Syntax

from .call import Decision
from .events import (
    ApprovalRequested,
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
from .run import Agent

NO_TERMINAL = "no terminal to ask for approval"
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
                approvals, failed = await self._show(run)
                if failed:
                    return 1
                result = run.result
                if result is None or result.status != "paused" or not approvals:
                    return 0
                decisions = {a.call_id: self._decide(a) for a in approvals}
                run = self.agent.start(messages=result.messages, decisions=decisions)
        finally:
            self.bars.close()

    async def _show(self, run: Any) -> tuple[list[ApprovalRequested], bool]:
        """Print one run's events; return the approvals it paused on and whether it failed."""
        console = self.console
        in_text = False
        approvals: list[ApprovalRequested] = []
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
                    console.print(
                        f"[green]← {event.tool_name}[/green] {escape(short(event.content))}"
                    )
                else:
                    state = "denied" if event.state == "output-denied" else "error"
                    console.print(
                        f"[red]← {event.tool_name} {state}:[/red] {escape(event.error or '')}"
                    )
            elif isinstance(event, Subagent):
                self._sub_agent(event)
            elif isinstance(event, ApprovalRequested):
                approvals.append(event)
            elif isinstance(event, RunError):
                self.bars.close()
                console.print(f"[red]error ({event.code}): {escape(event.message)}[/red]")
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
