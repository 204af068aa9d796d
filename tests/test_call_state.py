"""The call state machine, the streamed-argument buffer, and state patches."""

import copy
import json

import jsonpatch
import pytest
from hypothesis import given
from hypothesis import strategies as st

from callwright import Call, CallState, Denied, IllegalTransition, ToolError, ToolResult
from callwright.call import ArgumentBuffer
from callwright.state import RunState, parse_ref

S = CallState


def test_happy_path_with_approval() -> None:
    call = Call("c1", "deploy")
    for state in (S.INPUT_AVAILABLE, S.APPROVAL_REQUESTED, S.APPROVAL_RESPONDED):
        call.transition(state)
    call.succeed(ToolResult("ok"))
    assert call.state is S.OUTPUT_AVAILABLE
    assert call.model_text() == "ok"


@pytest.mark.parametrize(
    ("path", "bad"),
    [
        ([], S.OUTPUT_AVAILABLE),  # no result before the input is complete
        ([], S.APPROVAL_REQUESTED),
        ([S.INPUT_AVAILABLE], S.APPROVAL_RESPONDED),  # no answer to an unasked question
        ([S.INPUT_AVAILABLE, S.APPROVAL_REQUESTED], S.OUTPUT_AVAILABLE),  # runs before approval
        ([S.INPUT_AVAILABLE, S.OUTPUT_AVAILABLE], S.OUTPUT_ERROR),  # two results
    ],
)
def test_illegal_transitions_raise(path: list[CallState], bad: CallState) -> None:
    call = Call("c1", "t")
    for state in path:
        call.transition(state)
    with pytest.raises(IllegalTransition):
        call.transition(bad)


def test_denial_only_after_a_response() -> None:
    call = Call("c1", "t")
    call.transition(S.INPUT_AVAILABLE)
    with pytest.raises(IllegalTransition):
        call.fail(Denied("no"))
    call.transition(S.APPROVAL_REQUESTED)
    call.transition(S.APPROVAL_RESPONDED)
    call.fail(Denied("too risky"))
    assert call.state is S.OUTPUT_DENIED
    assert call.model_text() == "Tool call denied: too risky"


def test_confirm_action_deltas_accumulate_and_partial_is_available() -> None:
    buffer = ArgumentBuffer()
    buffer.append('{"act')
    assert buffer.partial() == {}
    buffer.append('ion":"Depl')
    assert buffer.partial() == {"action": "Depl"}
    buffer.append('oy the application to production"}')
    assert buffer.parse() == {"action": "Deploy the application to production"}


def test_malformed_arguments_are_invalid_args() -> None:
    buffer = ArgumentBuffer('{"a": ')
    with pytest.raises(ToolError, match="malformed JSON"):
        buffer.parse()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


@given(json_values, st.data())
def test_buffer_equals_json_loads_for_every_split(value: object, data: st.DataObject) -> None:
    text = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    buffer = ArgumentBuffer()
    start = 0
    for cut in [*cuts, len(text)]:
        buffer.append(text[start:cut])
        buffer.partial()  # asking for the partial value never disturbs the buffer
        start = cut
    assert buffer.parse() == json.loads(text)


writes = st.lists(
    st.tuples(
        st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3).map(tuple),
        json_values,
        st.sampled_from(["set", "merge", "assign", "push", "concat"]),
    ),
    max_size=8,
)


@given(writes)
def test_patches_applied_equal_the_writes(ops: list) -> None:  # type: ignore[type-arg]
    state = RunState()
    replica: dict = {}  # type: ignore[type-arg]
    for path, value, method in ops:
        before = copy.deepcopy(state.data)
        patch = state.write(path, value, method)
        replica = jsonpatch.apply_patch(replica, patch)
        assert replica == state.data
        expected = _expected_write(before, path, value, method)
        assert state.data == expected


def _expected_write(doc: dict, path: tuple, value: object, method: str) -> dict:  # type: ignore[type-arg]
    """The write semantics of the Acts spec, computed the slow obvious way."""
    doc = copy.deepcopy(doc)
    node = doc
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    key = path[-1]
    old = node.get(key, None) if key in node else _MISSING
    value = copy.deepcopy(value)
    if method == "push":
        node[key] = (
            [*old, value] if isinstance(old, list) else [value] if old is _MISSING else [old, value]
        )
    elif method == "concat":
        items = value if isinstance(value, list) else [value]
        base = old if isinstance(old, list) else [] if old is _MISSING else [old]
        node[key] = [*base, *items]
    elif method == "merge" and isinstance(old, dict) and isinstance(value, dict):
        node[key] = _deep_merge(old, value)
    elif method == "assign" and isinstance(old, dict) and isinstance(value, dict):
        node[key] = {**old, **value}
    else:
        node[key] = value
    return doc


def _deep_merge(a: dict, b: dict) -> dict:  # type: ignore[type-arg]
    out = dict(a)
    for k, v in b.items():
        out[k] = (
            _deep_merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
        )
    return out


_MISSING = object()


def test_spec_push_concat_example() -> None:
    state = RunState({"tags": ["vip"]})
    state.write(("tags",), "late", "push")
    state.write(("tags",), ["refund", "prio"], "concat")
    assert state.data == {"tags": ["vip", "late", "refund", "prio"]}


def test_refs() -> None:
    assert parse_ref("†state.order.status").path == ("order", "status")
    assert parse_ref("summary").kind == "state"
    with pytest.raises(ValueError):
        parse_ref("†state.")
