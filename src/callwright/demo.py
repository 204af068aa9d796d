"""The demo agent behind ``make run``, ``callwright serve`` and ``callwright run``.

Real, offline server tools that show each part of a tool call's life:
arguments that stream (``write_file``), an approval (``write_file``), progress
and cancellation (``count_slowly``), errors the model sees (``calculate`` on
bad input, ``read_file`` outside the sandbox). Files live in one sandbox
folder; nothing reads or writes outside it.

``calculate`` walks the expression's ``ast`` and allows numbers, arithmetic
operators and a few math functions only: ``eval`` would run any Python.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import datetime as dt
import math
import operator
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field

from .call import InvalidArgs, ToolError
from .context import ToolContext
from .tool import Tool, tool

INSTRUCTIONS = (
    "You are callwright's demo assistant. Use the tools for arithmetic, the time, "
    "and the files in the sandbox; answer briefly."
)

# --- calculate -----------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "floor": math.floor,
    "ceil": math.ceil,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
MAX_EXPONENT = 1000  # 10**1000 is fine; 9**9**9 would hang the worker


def evaluate(expression: str) -> int | float:
    """Safe arithmetic: numbers, + - * / // % **, parentheses, a few math functions."""
    if len(expression) > 500:
        raise InvalidArgs("expression is too long (500 characters at most)")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except SyntaxError:
        raise InvalidArgs(f"not an arithmetic expression: {expression!r}") from None
    try:
        value: int | float = _eval(tree.body)
        return value
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError) as exc:
        raise ToolError(f"cannot compute: {exc}") from None


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError(f"exponent too large (at most {MAX_EXPONENT})")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(_eval(a) for a in node.args))
    raise InvalidArgs(f"not allowed in an arithmetic expression: {ast.unparse(node)!r}")


@tool
def calculate(
    expression: Annotated[str, Field(examples=["12 * (3 + 4)"])],
) -> str:
    """Calculate an arithmetic expression.

    Args:
        expression: Numbers with + - * / // % ** and parentheses; sqrt, round, abs, pi
    """
    value = evaluate(expression)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return str(value)


# --- current_time --------------------------------------------------------------------------


@tool
def current_time(
    timezone: Annotated[str | None, Field(examples=["Europe/Paris"])] = None,
) -> str:
    """Get the current date and time.

    Args:
        timezone: An IANA time zone such as Europe/Paris; UTC when left out
    """
    name = timezone or "UTC"
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        hint = "use an IANA name such as Asia/Tokyo"
        raise InvalidArgs(f"unknown time zone {name!r}: {hint}") from None
    now = dt.datetime.now(zone)
    return now.strftime(f"%Y-%m-%d %H:%M:%S ({name}, %A)")


# --- files in the sandbox ------------------------------------------------------------------

MAX_FILE_BYTES = 100_000


def default_sandbox() -> Path:
    configured = os.environ.get("CALLWRIGHT_SANDBOX")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "callwright-sandbox"


class Sandbox:
    """One folder; every path a model gives is resolved inside it or refused."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else default_sandbox()

    def ensure(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        readme = self.root / "README.txt"
        if not any(self.root.iterdir()):
            readme.write_text(
                "This is callwright's demo sandbox. The demo agent can list, read and "
                "(with your approval) write files here.\n"
            )
        return self.root.resolve()

    def resolve(self, path: str) -> Path:
        root = self.ensure()
        if not path or "\x00" in path:
            raise InvalidArgs("give a file name inside the sandbox")
        target = (root / path).resolve()
        if target != root and root not in target.parents:
            raise ToolError(f"refused: {path!r} is outside the sandbox folder")
        return target


def file_tools(sandbox: Sandbox) -> list[Tool]:
    @tool
    def list_files() -> str:
        """List the files in the sandbox folder."""
        root = sandbox.ensure()
        names = sorted(
            str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in root.rglob("*")
        )
        return "\n".join(names) if names else "(the sandbox is empty)"

    @tool
    def read_file(path: Annotated[str, Field(examples=["notes.txt"])]) -> str:
        """Read a text file from the sandbox folder.

        Args:
            path: The file name, relative to the sandbox
        """
        target = sandbox.resolve(path)
        if not target.is_file():
            raise ToolError(f"no file named {path!r} in the sandbox")
        data = target.read_bytes()[:MAX_FILE_BYTES]
        return data.decode("utf-8", errors="replace")

    @tool(requires_approval=True)
    def write_file(
        path: Annotated[str, Field(examples=["notes.txt"])],
        content: Annotated[str, Field(examples=["Buy milk"])],
    ) -> str:
        """Write a text file in the sandbox folder (asks for approval first).

        Args:
            path: The file name, relative to the sandbox
            content: The whole new text of the file
        """
        target = sandbox.resolve(path)
        if len(content.encode()) > MAX_FILE_BYTES:
            raise InvalidArgs(f"content is too long ({MAX_FILE_BYTES} bytes at most)")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return f"wrote {len(content)} characters to {path}"

    return [list_files, read_file, write_file]


# --- count_slowly --------------------------------------------------------------------------


def make_count_slowly(step_seconds: float = 1.0) -> Tool:
    @tool
    async def count_slowly(
        n: Annotated[int, Field(ge=1, le=60, examples=[5])], ctx: ToolContext
    ) -> str:
        """Count from 1 to n slowly, one number per second.

        Args:
            n: Where to stop counting (1 to 60)
        """
        for i in range(1, n + 1):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.cancelled(), step_seconds)
            ctx.raise_if_cancelled()
            ctx.progress(f"{i} of {n}", i / n)
        return f"counted to {n}"

    return count_slowly


count_slowly = make_count_slowly()


def demo_tools(sandbox: Sandbox | None = None, *, step_seconds: float = 1.0) -> list[Tool]:
    """The demo's tools, bound to a sandbox folder."""
    box = sandbox or Sandbox()
    counter = count_slowly if step_seconds == 1.0 else make_count_slowly(step_seconds)
    return [calculate, current_time, *file_tools(box), counter]


def demo_agent(
    model: Any = None,
    *,
    sandbox: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Any:
    """The demo agent on ``model`` (the embedded model by default)."""
    from .run import Agent

    options.setdefault("instructions", INSTRUCTIONS)
    options.setdefault("max_steps", 6)
    return Agent(model, demo_tools(Sandbox(sandbox)), **options)
