"""Size caps on what the journal stores (``JournalLimits``): a marked excerpt beyond them."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from ..messages import Message, message_to_dict
from .base import JournalLimits, canonical_json

TEXT_FIELDS = {"assistant": ("text", "reasoning"), "user": ("content",), "system": ("content",)}


def cap_text(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` UTF-8 bytes, else its head and a marker saying so."""
    if len(text) * 4 <= limit:  # cannot be over: skip the encoding
        return text
    raw = text.encode()
    if len(raw) <= limit:
        return text
    kept = raw[:limit].decode(errors="ignore")
    return f"{kept}\n[… truncated by the journal: kept {limit:,} of {len(raw):,} bytes]"


def cap_arguments(arguments: dict[str, Any], limit: int) -> dict[str, Any]:
    size = len(canonical_json(arguments).encode())
    if size <= limit:
        return arguments
    return {"_truncated": f"arguments of {size:,} bytes not stored (over the journal's {limit:,})"}


def cap_message(data: dict[str, Any], limits: JournalLimits) -> dict[str, Any]:
    """A message dict (``message_to_dict``) within the limits: long texts cut, oversized
    arguments replaced; the dict is copied only when something is cut."""
    role = data.get("role")
    out = data
    if role == "tool":
        fields: tuple[str, ...] = ("content",)
    else:
        fields = TEXT_FIELDS.get(str(role), ())
    for name in fields:
        value = data.get(name)
        if isinstance(value, str):
            capped = cap_text(value, limits.max_text_bytes)
            if capped is not value:
                out = out if out is not data else dict(data)
                out[name] = capped
    calls = data.get("tool_calls")
    if calls:
        capped_calls = [
            {**c, "arguments": cap_arguments(c.get("arguments") or {}, limits.max_argument_bytes)}
            for c in calls
        ]
        pairs = zip(capped_calls, calls, strict=True)
        if any(a["arguments"] is not c.get("arguments") for a, c in pairs):
            out = out if out is not data else dict(data)
            out["tool_calls"] = capped_calls
    return out


def cap_output(output: Any, limits: JournalLimits) -> Any:
    """A tool operation's output (``{"state", "content", "is_error"}``) within the limits."""
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        capped = cap_text(output["content"], limits.max_text_bytes)
        if capped is not output["content"]:
            return {**output, "content": capped}
    return output


_MESSAGE: TypeAdapter[Message] = TypeAdapter(Annotated[Message, Field(discriminator="role")])


def message_body(message: Message, limits: JournalLimits) -> str:
    """The JSON a message is stored as (pydantic's serializer: no key sorting needed,
    nothing compares bodies), capped when it is larger than a cap."""
    raw = _MESSAGE.dump_json(message, exclude_none=True)
    if len(raw) <= min(limits.max_text_bytes, limits.max_argument_bytes):
        return raw.decode()
    return canonical_json(cap_message(message_to_dict(message), limits))
