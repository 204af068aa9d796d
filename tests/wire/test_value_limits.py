"""Value counts of AG-UI ``state``/``forwardedProps`` and of client tool schemas, checked
in the decoder before anything is decoded (the server passes ``ServerLimits``)."""

from __future__ import annotations

from typing import Any

import pytest

from callwright.wire import WireError, agui, aisdk


def agui_body(**fields: Any) -> dict[str, Any]:
    message = {"id": "u1", "role": "user", "content": "hi"}
    return {"threadId": "t", "runId": "r", "messages": [message], **fields}


def chat_body(**fields: Any) -> dict[str, Any]:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    return {"id": "c", "messages": [message], **fields}


@pytest.mark.parametrize("field", ["state", "forwardedProps"])
def test_nested_values_count_at_every_depth(field: str) -> None:
    """Three keys, each a list of two one-entry objects, one of them a list of one item:
    3 + 6 + 6 + 3 = 18 values."""
    value = {k: [{"a": 1}, {"b": [2]}] for k in "xyz"}
    with pytest.raises(WireError) as refused:
        agui.decode_request(agui_body(**{field: {**value, "w": [[]]}}), max_state_values=18)
    assert (refused.value.status, refused.value.code) == (413, "state_too_large")
    assert f"RunAgentInput.{field}" in str(refused.value)
    decoded = agui.decode_request(agui_body(**{field: value}), max_state_values=18)
    assert (decoded.state if field == "state" else decoded.forwarded_props) == value


def schema_tool(values: int) -> dict[str, Any]:
    return {
        "name": "pick",
        "parameters": {"type": "object", "properties": {"x": {"enum": list(range(values))}}},
    }


def test_a_tool_schema_is_counted_before_any_tool_is_decoded() -> None:
    """The first tool is invalid: the count of the second one's schema still decides."""
    tools = [{"name": "bad", "parameters": {"type": 5}}, schema_tool(7)]
    with pytest.raises(WireError) as refused:
        agui.decode_request(agui_body(tools=tools), max_schema_values=10)
    assert (refused.value.status, refused.value.code) == (413, "schema_too_large")
    assert "'pick'" in str(refused.value)
    with pytest.raises(WireError) as refused:
        aisdk.decode_request(chat_body(tools=[schema_tool(7)]), max_schema_values=10)
    assert refused.value.code == "schema_too_large"
    decoded = aisdk.decode_request(chat_body(tools=[schema_tool(6)]), max_schema_values=10)
    assert [t.name for t in decoded.client_tools] == ["pick"]
