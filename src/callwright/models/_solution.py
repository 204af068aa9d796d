"""Structured mode: turn a model's streamed solution JSON into model events.

A structured-output model writes one ``{meta, calls: [{_tool, ...args}], output}``
document. The run loop wants what a function-calling model gives: tool-call
start / argument deltas / end per call, and text deltas for a string answer (or a
``final_result`` call for a structured one). ``SolutionStream`` does that while
the document is still arriving, so arguments and answers stream to the UI as the
model writes them.

Written by hand because a partial-JSON parser (jiter's partial mode) re-parses
the whole buffer at every chunk and hands back values, not the raw text spans
the loop needs as prefix-stable argument deltas. A character scanner that knows
where it is (in a string or not, the container depth, the current top-level
key) gives both in one pass, with work proportional to the new text only.
"""

from __future__ import annotations

import copy
import json
import secrets
from typing import Any

from .._tool_files import with_stand_ins
from ..call import OUTPUT_TOOL
from .base import ModelEvent, TextPart, ToolCallDeltaPart, ToolCallEndPart, ToolCallStartPart

_WS = " \t\r\n"


def new_call_id() -> str:
    return f"call_{secrets.token_hex(8)}"


def split_item(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A calls item's tool name and its arguments (``_tool`` removed, other ``_`` meta kept)."""
    name = item.get("_tool")
    args = {k: v for k, v in item.items() if k != "_tool"}
    return (name if isinstance(name, str) else ""), args


class _Call:
    """One item of ``calls`` while it streams."""

    __slots__ = ("buffer", "call_id", "first_key", "mode", "name", "pending")

    def __init__(self) -> None:
        self.buffer = "{"  # the item's raw text, kept until we know how to stream it
        self.first_key: str | None = None
        self.name: str | None = None
        self.call_id: str | None = None
        self.mode = "head"  # head | after-tool | streaming | buffered
        self.pending = ""  # argument text not yet emitted


class SolutionStream:
    """Feed the solution text as it arrives; get model events back.

    ``structured_output``: the request has an output schema, so ``output`` becomes
    a ``final_result`` tool call instead of text. ``answer_with_calls=False`` drops
    an answer written next to calls (a small model guesses the result there).
    """

    def __init__(self, *, structured_output: bool = False, answer_with_calls: bool = True) -> None:
        self.structured_output = structured_output
        self.answer_with_calls = answer_with_calls
        self.calls_made = 0
        self.output_seen = False
        self._stack: list[str] = []  # "{" / "["
        self._expect_key: list[bool] = []  # per object on the stack
        self._in_string = False
        self._escape = False
        self._string = ""  # the current string's raw text (keys and scalar values at depth 1/3)
        self._capture_string = False
        self._top_key: str | None = None
        self._item_key: str | None = None
        self._call: _Call | None = None
        self._out_kind: str | None = None  # "text" | "raw" | "skip"
        self._out_raw = ""  # raw output value text (object / array / fallback)
        self._out_text_raw = ""  # undecoded raw characters of a string output
        self._out_call: str | None = None
        self._events: list[ModelEvent] = []

    # --- public -------------------------------------------------------------------------

    def feed(self, text: str) -> list[ModelEvent]:
        for ch in text:
            self._char(ch)
        self._flush()
        out, self._events = self._events, []
        return out

    def close(self) -> list[ModelEvent]:
        """The stream ended: flush what is complete; unfinished calls are left to the loop."""
        self._flush(final=True)
        if self._out_kind == "raw" and self._out_call is None and self._out_raw:
            self._emit_raw_output(self._out_raw)
        out, self._events = self._events, []
        return out

    # --- the scanner --------------------------------------------------------------------

    @property
    def _depth(self) -> int:
        return len(self._stack)

    def _char(self, ch: str) -> None:
        """One character of the solution document: a hand-written JSON state machine.

        Longer than the house's 60 lines on purpose: it runs per character of every
        structured answer, and one flat function with its state in locals is what keeps
        the embedded model's streaming cheap (a split adds a call per character).
        """
        depth = self._depth
        call = self._call
        # an item of `calls` (depth >= 3 inside it) sees every character
        if call is not None:
            self._item_char(call, ch)
        elif self._top_key == "output" and self._out_kind is not None and depth >= 1:
            self._output_char(ch)
        if self._in_string:
            if self._escape:
                self._escape = False
            elif ch == "\\":
                self._escape = True
            elif ch == '"':
                self._in_string = False
                self._end_string()
                return
            if self._capture_string:
                self._string += ch
            return
        if ch in _WS:
            return
        if ch == '"':
            self._in_string = True
            self._escape = False
            self._string = ""
            self._capture_string = self._wants_string()
            if self._depth == 1 and not self._is_key() and self._top_key == "output":
                self._start_output('"')
            return
        if ch in "{[":
            if depth == 1 and self._top_key == "output" and not self._is_key():
                self._start_output(ch)
            if depth == 2 and self._top_key == "calls" and self._stack[-1] == "[" and ch == "{":
                self._call = _Call()
            self._stack.append(ch)
            self._expect_key.append(ch == "{")
            return
        if ch in "}]":
            if self._stack:
                self._stack.pop()
                self._expect_key.pop()
            if self._depth == 2 and self._call is not None and ch == "}":
                self._end_call(self._call)
                self._call = None
            elif self._depth == 1 and self._out_kind == "raw":
                self._out_kind = "done"
            return
        if ch == ":":
            if self._expect_key:
                self._expect_key[-1] = False
            return
        if ch == ",":
            if self._stack and self._stack[-1] == "{":
                self._expect_key[-1] = True
            if self._depth == 1 and self._out_kind is not None:
                self._out_kind = "done"
            return
        # a literal (number, true, false, null) at the top level
        if self._depth == 1 and self._top_key == "output" and self._out_kind is None:
            self._start_output(ch)

    def _is_key(self) -> bool:
        return bool(self._expect_key) and self._expect_key[-1]

    def _wants_string(self) -> bool:
        depth = self._depth
        if depth == 1 and self._is_key():
            return True
        return depth == 3 and self._call is not None and self._call.mode == "head"

    def _end_string(self) -> None:
        depth = self._depth
        if depth == 1 and self._is_key():
            self._top_key = _decode(self._string)
            self._out_kind = None if self._top_key == "output" else self._out_kind
            return
        call = self._call
        if call is None or depth != 3 or call.mode != "head":
            return
        if self._is_key():
            self._item_key = _decode(self._string)
            if call.first_key is None:
                call.first_key = self._item_key
                if self._item_key != "_tool":
                    call.mode = "buffered"
        elif self._item_key == "_tool":
            call.name = _decode(self._string)
            call.mode = "after-tool"

    # --- calls ----------------------------------------------------------------------------

    def _item_char(self, call: _Call, ch: str) -> None:
        if self._depth < 3:
            return  # the opening brace itself: already in the buffer
        if call.mode in ("head", "buffered"):
            call.buffer += ch
        elif call.mode == "after-tool":
            if ch in _WS or ch == '"':  # the closing quote of the name, then whitespace
                return
            self._start_call(call)
            if ch == ",":
                call.mode = "streaming"
                call.pending = "{"
            elif ch == "}":
                call.pending = "{}"
                call.mode = "closed"
        elif call.mode == "streaming":
            call.pending += ch

    def _start_call(self, call: _Call) -> None:
        call.call_id = new_call_id()
        self.calls_made += 1
        self._events.append(ToolCallStartPart(call.call_id, call.name or ""))

    def _end_call(self, call: _Call) -> None:
        if call.mode in ("head", "buffered"):
            try:
                item = json.loads(call.buffer)
            except ValueError:
                item = {}
            name, args = split_item(item if isinstance(item, dict) else {})
            call.name = name
            self._start_call(call)
            call.pending = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
        assert call.call_id is not None
        if call.pending:
            self._events.append(ToolCallDeltaPart(call.call_id, call.pending))
            call.pending = ""
        self._events.append(ToolCallEndPart(call.call_id))

    # --- output ---------------------------------------------------------------------------

    def _start_output(self, first: str) -> None:
        self.output_seen = True
        if self.calls_made and not self.answer_with_calls:
            self._out_kind = "skip"
        elif first == '"' and not self.structured_output:
            self._out_kind = "text"
        elif first in "{[":
            self._out_kind = "raw"
            self._out_raw = first
            if self.structured_output:
                self._out_call = new_call_id()
                self.calls_made += 1
                self._events.append(ToolCallStartPart(self._out_call, OUTPUT_TOOL))
        else:
            self._out_kind = "skip"  # null (no answer yet) or a scalar where none fits

    def _output_char(self, ch: str) -> None:
        if self._out_kind == "text":
            if self._in_string and not (ch == '"' and not self._escape):
                self._out_text_raw += ch
        elif self._out_kind == "raw":
            self._out_raw += ch

    def _flush(self, final: bool = False) -> None:
        call = self._call
        if call is not None and call.mode == "streaming" and call.pending and call.call_id:
            self._events.append(ToolCallDeltaPart(call.call_id, call.pending))
            call.pending = ""
        if self._out_text_raw:
            cut = _safe_cut(self._out_text_raw)
            if cut:
                self._events.append(TextPart(_decode(self._out_text_raw[:cut])))
                self._out_text_raw = self._out_text_raw[cut:]
        if self._out_call is not None and self._out_raw:
            self._events.append(ToolCallDeltaPart(self._out_call, self._out_raw))
            self._out_raw = ""
        if self._out_call is not None and (self._out_kind == "done" or final):
            self._events.append(ToolCallEndPart(self._out_call))
            self._out_call = None
        if (
            not self.structured_output
            and self._out_kind == "done"
            and self._out_raw
            and self._out_call is None
        ):
            self._emit_raw_output(self._out_raw)
            self._out_raw = ""

    def _emit_raw_output(self, raw: str) -> None:
        """An object answer where text was expected: hand it over as JSON text."""
        self._events.append(TextPart(raw))
        self._out_raw = ""


def _safe_cut(raw: str) -> int:
    """How much of a string's raw text decodes alone: no half escape, no lone high surrogate."""
    i, n = 0, len(raw)
    while i < n:
        if raw[i] != "\\":
            i += 1
            continue
        if i + 1 >= n:
            return i
        if raw[i + 1] != "u":
            i += 2
            continue
        if i + 6 > n:
            return i
        hexa = raw[i + 2 : i + 6]
        if _is_hex(hexa) and 0xD800 <= int(hexa, 16) <= 0xDBFF:
            if i + 12 > n:
                return i  # wait for the low surrogate
            i += 12
            continue
        i += 6
    return n


def _is_hex(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)


_LENIENT = json.JSONDecoder(strict=False)  # an unconstrained model may write raw newlines


def _decode(raw: str) -> str:
    try:
        value = _LENIENT.decode(f'"{raw}"')
    except ValueError:
        return raw
    return value if isinstance(value, str) else raw


def solution_events(text: str, *, structured_output: bool = False) -> list[ModelEvent]:
    """All events of a complete solution document (for non-streaming responses and tests)."""
    stream = SolutionStream(structured_output=structured_output)
    return stream.feed(text) + stream.close()


# --- prompting a structured-output model -------------------------------------------------

SYSTEM_PROMPT = """\
You are a helpful assistant that can use tools. Always reply with one JSON object:
{"meta": {}, "calls": [...], "output": ...}.
To use a tool, put {"_tool": "<tool name>", <arguments>} in "calls" and set "output" to null;
the results come back in the next message. When no tool is needed, or the results are in,
leave "calls" empty and write the answer in "output"."""


def tool_items(schema: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The per-tool item schemas of a solution schema's ``calls``."""
    if not schema:
        return []
    calls = schema.get("properties", {}).get("calls", {})
    items = calls.get("items")
    if not isinstance(items, dict):
        return []
    return list(items.get("anyOf", [items]))


def item_name(item: dict[str, Any]) -> str:
    tool = item.get("properties", {}).get("_tool", {})
    return str(tool.get("const", "")) if isinstance(tool, dict) else ""


def describe_tools(schema: dict[str, Any] | None) -> str:
    """One line per tool: ``name(arg: type, opt?: type): description``."""
    lines = []
    for item in tool_items(schema):
        props = {k: v for k, v in item.get("properties", {}).items() if k != "_tool"}
        required = set(item.get("required", []))
        args = ", ".join(
            f"{k}{'' if k in required else '?'}: {_type_name(v)}" for k, v in props.items()
        )
        description = str(item.get("description", "")).split("\n\n")[0].strip()
        lines.append(f"- {item_name(item)}({args}): {description}".rstrip(": "))
    return "\n".join(lines)


def _type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind:
        return str(kind)
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return "|".join(_type_name(s) for s in schema[key])
    return "any"


def system_prompt(request_instructions: str | None, schema: dict[str, Any] | None) -> str:
    parts = [SYSTEM_PROMPT]
    tools = describe_tools(schema)
    parts.append(f"Tools:\n{tools}" if tools else "No tools are available: answer in output.")
    if request_instructions:
        parts.append(request_instructions)
    return "\n\n".join(parts)


def solution_text(calls: list[dict[str, Any]], output: Any) -> str:
    return json.dumps({"meta": {}, "calls": calls, "output": output}, ensure_ascii=False)


def conversation(messages: list[Any]) -> list[dict[str, str]]:
    """The run's messages as chat turns for a structured-output model.

    The model's own turns are shown as the solution documents it wrote; tool
    results come back as one user turn per step, so the roles alternate.
    """
    from ..messages import AssistantMessage, SystemMessage, ToolResultMessage, UserMessage

    out: list[dict[str, str]] = []
    results: list[str] = []

    def flush_results() -> None:
        if results:
            out.append({"role": "user", "content": "\n".join(results)})
            results.clear()

    for m in messages:
        if isinstance(m, ToolResultMessage):
            status = "error" if m.is_error else "result"
            results.append(f"Tool {m.tool_name} {status}: {with_stand_ins(m.content, m.files)}")
            continue
        flush_results()
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            calls = [{"_tool": c.name, **c.arguments} for c in m.tool_calls]
            out.append({"role": "assistant", "content": solution_text(calls, m.text or None)})
    flush_results()
    return out


def fit_schema(schema: dict[str, Any], tool_choice: str) -> dict[str, Any]:
    """The solution schema narrowed by ``tool_choice``.

    ``none`` (and the last step, which offers no tools) must end in an answer, so
    ``output`` is a required non-null value and ``calls`` is empty; ``required``
    asks for at least one call; a tool name keeps only that tool.
    """
    schema = json.loads(json.dumps(schema))
    props = schema.setdefault("properties", {})
    calls = props.setdefault("calls", {"type": "array"})
    if tool_choice == "none" or not tool_items(schema):
        calls.pop("items", None)
        calls["maxItems"] = 0
        props["output"] = non_null(props.get("output", {"type": "string"}))
    elif tool_choice == "required":
        calls["minItems"] = 1
    elif tool_choice != "auto":
        kept = [i for i in tool_items(schema) if item_name(i) == tool_choice]
        if kept:
            calls["items"] = kept[0]
            calls["minItems"] = 1
    return schema


def non_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``null`` alternative: an answer that must be given."""
    schema = dict(schema)
    kind = schema.get("type")
    if isinstance(kind, list):
        kept = [t for t in kind if t != "null"] or ["string"]
        schema["type"] = kept[0] if len(kept) == 1 else kept
        return schema
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if len(options) == 1:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**options[0], **rest}
        schema["anyOf"] = options
    return schema


# --- bounding the schema -------------------------------------------------------------------

_CONSTRAINED_STRING = ("enum", "const", "format", "maxLength")


def bound_schema(
    schema: dict[str, Any], *, max_calls: int, max_string: int, max_output: int
) -> dict[str, Any]:
    """Bound what a tiny model can write so a loop always ends.

    ``maxItems`` on ``calls``, ``maxLength`` on every free string (``max_output``
    for a string answer); ``meta`` is left empty. LLGuidance already forbids
    raw control characters in JSON strings, as the JSON grammar does.
    """
    schema = copy.deepcopy(schema)
    props = schema.get("properties", {})
    props["meta"] = {"type": "object", "properties": {}, "additionalProperties": False}
    calls = props.get("calls")
    output = props.get("output")
    if isinstance(output, dict):
        bound_strings(output, max_output)
    if isinstance(calls, dict):
        current = calls.get("maxItems")
        calls["maxItems"] = max_calls if current is None else min(current, max_calls)
        if "minItems" in calls:
            calls["minItems"] = min(calls["minItems"], calls["maxItems"])
        bound_strings(calls, max_string)
    return schema


def bound_strings(node: Any, limit: int) -> None:
    if isinstance(node, list):
        for item in node:
            bound_strings(item, limit)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    is_string = kind == "string" or (isinstance(kind, list) and "string" in kind)
    if is_string and not any(k in node for k in _CONSTRAINED_STRING):
        node["maxLength"] = limit
    if node.get("type") == "array" or (isinstance(kind, list) and "array" in kind):
        node.setdefault("maxItems", 16)
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            if isinstance(value, dict):
                for sub in value.values():
                    bound_strings(sub, limit)
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties", "prefixItems"):
            bound_strings(value, limit)
