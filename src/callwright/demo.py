"""The demo agent behind ``make run``, ``callwright serve`` and ``callwright run``.

Real, offline server tools that show each part of a tool call's life:
arguments that stream (``write_file``), an approval (``write_file``), progress
and cancellation (``count_slowly``), errors the model sees (``calculate`` on
bad input, ``read_file`` outside the sandbox). Files live in one sandbox
folder; nothing reads or writes outside it.

``calculate`` walks the expression's ``ast`` and allows numbers, arithmetic
operators and a few math functions only: ``eval`` would run any Python. It bounds
what it computes *before* computing it: an ``int`` power or product runs in C
holding the GIL, so no thread or timeout can interrupt it
(``((3**1000)**1000)**40`` held the event loop 22 s). The expression's length and
nesting are capped, and each power, product and ``round`` is refused when its
result would pass ``MAX_DIGITS`` digits, estimated from the operands' sizes with
logarithms; every value therefore stays small and each step takes microseconds.

The default sandbox is private to the user: ``callwright-sandbox-<uid>`` in the
temp folder, created with mode 0o700 and used only if it is a real folder owned
by us that nobody else can enter; otherwise a fresh ``mkdtemp`` folder. Error
texts name paths as the model gave them, relative to the sandbox, never the
server's absolute paths.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import datetime as dt
import logging
import math
import operator
import os
import stat
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
_NAMES = "|".join(sorted([*_FUNCTIONS, *_CONSTANTS], key=len, reverse=True))
EXPRESSION_PATTERN = rf"^([0-9 .+\-*/%()^,]|{_NAMES})+$"
"""What an expression may hold: the shape a small model's arguments are held to (no
``\\s`` or ``\\w`` classes: llama.cpp's schema-to-grammar converter drops such patterns)."""
MAX_LENGTH = 500
"""The longest expression accepted, in characters."""
MAX_DEPTH = 250
"""The deepest nesting of operations (a sum of n terms nests n deep)."""
MAX_EXPONENT = 1000
"""The largest exponent of a power, whatever its base."""
MAX_DIGITS = 4000
"""The most digits of any value: under Python's 4,300-digit limit for printing an int."""
_MAX_BITS = int(MAX_DIGITS / math.log10(2))


def evaluate(expression: str) -> int | float:
    """Safe arithmetic: numbers, + - * / // % **, parentheses, a few math functions."""
    if len(expression) > MAX_LENGTH:
        raise InvalidArgs(f"expression is too long ({MAX_LENGTH} characters at most)")
    try:
        tree = ast.parse(expression.replace("^", "**"), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise InvalidArgs(f"not an arithmetic expression: {expression!r}") from None
    if _depth(tree.body) > MAX_DEPTH:
        raise InvalidArgs(f"expression nests too deeply ({MAX_DEPTH} levels at most)")
    try:
        value: int | float = _eval(tree.body)
        return value
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise ToolError(f"cannot compute: {exc}") from None


def _depth(root: ast.AST) -> int:
    """How deep the operations nest, counted without recursion."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        _check_size(node.op, left, right)
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
        args = [_eval(a) for a in node.args]
        if node.func.id == "round" and len(args) == 2 and isinstance(args[1], int):
            _check_digits(abs(args[1]))  # round(5, -10**6) computes 10**(10**6)
        return _FUNCTIONS[node.func.id](*args)
    raise InvalidArgs(f"not allowed in an arithmetic expression: {ast.unparse(node)!r}")


def _check_size(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse a power or product whose result would be too big, before computing it.

    Only ``int`` results grow without bound (a ``float`` overflows at once), so
    the estimate is for ints: log2 of a power is exponent x log2(base), the bits
    of a product are at most the sum of the operands' bits.
    """
    if isinstance(op, ast.Pow):
        if abs(right) > MAX_EXPONENT:
            raise InvalidArgs(f"exponent too large (at most {MAX_EXPONENT})")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            _check_bits(right * math.log2(abs(left)))
    elif isinstance(op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
        _check_bits(left.bit_length() + right.bit_length())


def _check_bits(bits: float) -> None:
    if bits > _MAX_BITS:
        _check_digits(int(bits * math.log10(2)) + 1)


def _check_digits(digits: int) -> None:
    if digits > MAX_DIGITS:
        raise InvalidArgs(
            f"the result would have about {digits:,} digits (at most {MAX_DIGITS:,}): "
            "use smaller numbers"
        )


@tool
def calculate(
    expression: Annotated[str, Field(examples=["12 * (3 + 4)"], pattern=EXPRESSION_PATTERN)],
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


TIMEZONE_PATTERN = r"^(UTC|GMT|[A-Za-z_]+/[A-Za-z0-9_+\-/]+)$"
"""An IANA name's shape (Area/Location, or UTC). A pattern, not an enum of ``zoneinfo``'s
~600 names: those would go to a hosted model with every request; unknown names get the
tool's own error."""


@tool
def current_time(
    timezone: Annotated[
        str | None, Field(examples=["Europe/Paris"], pattern=TIMEZONE_PATTERN)
    ] = None,
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
PATH_PATTERN = r"^[A-Za-z0-9_\-.]*[./][A-Za-z0-9_\-./]*$"
"""A file name with an extension or a folder part, no spaces: with this shape, a small
model copies the name from the request instead of a word around it."""
_log = logging.getLogger(__name__)


def default_sandbox() -> Path:
    """``$CALLWRIGHT_SANDBOX``, or a folder in the temp folder that only this user can enter."""
    configured = os.environ.get("CALLWRIGHT_SANDBOX")
    if configured:
        return Path(configured)
    return private_folder(Path(tempfile.gettempdir()) / f"callwright-sandbox-{_user_tag()}")


def private_folder(path: Path) -> Path:
    """``path`` made with mode 0o700, if it is (or now is) a real folder of ours that nobody
    else can enter; otherwise a fresh private ``mkdtemp`` folder.

    The temp folder is shared: another local user can plant a folder or a symlink
    under a name we would use, and writes would then land where they chose.
    """
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if _is_private(path):
        return path
    _log.warning("%s is not a private folder of this user; using a fresh one", path.name)
    return Path(tempfile.mkdtemp(prefix="callwright-sandbox-"))


def _is_private(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode):  # a symlink, or a file
        return False
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # Windows: the temp folder is per user already
        return True
    return info.st_uid == getuid() and not info.st_mode & 0o077


def _user_tag() -> str:
    getuid = getattr(os, "getuid", None)
    if getuid is not None:
        return str(getuid())
    return "".join(c for c in os.environ.get("USERNAME", "user") if c.isalnum()) or "user"


class Sandbox:
    """One folder; every path a model gives is resolved inside it or refused."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self._root = Path(root) if root is not None else None

    @property
    def root(self) -> Path:
        """The folder; the private default is chosen (and made) on first use."""
        if self._root is None:
            self._root = default_sandbox()
        return self._root

    def ensure(self) -> Path:
        root = self.root
        try:
            root.mkdir(parents=True, exist_ok=True)
            if not any(root.iterdir()):
                (root / "README.txt").write_text(
                    "This is callwright's demo sandbox. The demo agent can list, read and "
                    "(with your approval) write files here.\n"
                )
            return root.resolve()
        except (OSError, RuntimeError) as exc:
            raise ToolError(f"the sandbox folder is not usable: {_reason(exc)}") from None

    def resolve(self, path: str) -> Path:
        root = self.ensure()
        if not path or "\x00" in path:
            raise InvalidArgs("give a file name inside the sandbox")
        try:
            target = (root / path).resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
            raise ToolError(f"cannot use {path!r}: {_reason(exc)}") from None
        if target != root and root not in target.parents:
            raise ToolError(f"refused: {path!r} is outside the sandbox folder")
        return target

    def open(self, target: Path, flags: int) -> int:
        """A descriptor for ``target`` (a path ``resolve`` returned), opened one folder at a
        time from the sandbox's own with ``O_NOFOLLOW``: a symlink another process puts
        in its way after ``resolve`` is refused, never followed out of the sandbox.
        Folders on the way are made when ``flags`` create the file."""
        root = self.ensure()
        parts = target.relative_to(root).parts
        if not parts:
            raise ToolError("give a file name inside the sandbox")
        if os.open not in os.supports_dir_fd:  # no openat (Windows): resolve's check only
            if flags & os.O_CREAT:
                target.parent.mkdir(parents=True, exist_ok=True)
            return os.open(target, flags, 0o644)
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts[:-1]:
                if flags & os.O_CREAT:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=folder)
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
            return os.open(parts[-1], flags | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        finally:
            os.close(folder)


def _reason(exc: BaseException) -> str:
    """Why an OS call failed, without the absolute path its message would carry."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return "symlink loop" if isinstance(exc, RuntimeError) else type(exc).__name__


def file_tools(sandbox: Sandbox) -> list[Tool]:
    @tool
    def list_files() -> str:
        """List the files in the sandbox folder."""
        root = sandbox.ensure()
        try:
            names = sorted(
                str(p.relative_to(root)) + ("/" if p.is_dir() else "") for p in root.rglob("*")
            )
        except OSError as exc:
            raise ToolError(f"cannot list the sandbox: {_reason(exc)}") from None
        return "\n".join(names) if names else "(the sandbox is empty)"

    @tool
    def read_file(path: Annotated[str, Field(examples=["notes.txt"], pattern=PATH_PATTERN)]) -> str:
        """Read a text file from the sandbox folder.

        Args:
            path: The file name, relative to the sandbox
        """
        target = sandbox.resolve(path)
        if not target.is_file():
            raise ToolError(f"no file named {path!r} in the sandbox")
        try:
            with os.fdopen(sandbox.open(target, os.O_RDONLY), "rb") as file:
                data = file.read(MAX_FILE_BYTES)
        except OSError as exc:
            raise ToolError(f"cannot read {path!r}: {_reason(exc)}") from None
        return data.decode("utf-8", errors="replace")

    @tool(requires_approval=True)
    def write_file(
        path: Annotated[str, Field(examples=["notes.txt"], pattern=PATH_PATTERN)],
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
        try:
            created = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            with os.fdopen(sandbox.open(target, created), "w", encoding="utf-8") as file:
                file.write(content)
        except OSError as exc:
            raise ToolError(f"cannot write {path!r}: {_reason(exc)}") from None
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
