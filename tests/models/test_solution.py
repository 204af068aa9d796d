"""The structured-mode decoder: a streamed solution document becomes tool-call and text events."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from callwright.models._solution import SolutionStream, solution_events
from callwright.models.base import (
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
)


def collect(events: list) -> tuple[list[tuple[str, dict]], str]:
    """(name, parsed arguments) per call, in order, and the answer text."""
    names: dict[str, str] = {}
    args: dict[str, str] = {}
    order: list[str] = []
    ended: set[str] = set()
    text = ""
    for e in events:
        if isinstance(e, ToolCallStartPart):
            names[e.call_id] = e.name
            args[e.call_id] = ""
            order.append(e.call_id)
        elif isinstance(e, ToolCallDeltaPart):
            assert e.call_id not in ended
            args[e.call_id] += e.delta
        elif isinstance(e, ToolCallEndPart):
            ended.add(e.call_id)
        elif isinstance(e, TextPart):
            text += e.delta
    assert ended == set(order), "every started call ends"
    return [(names[i], json.loads(args[i])) for i in order], text


def feed_in_chunks(doc: str, sizes: list[int], structured: bool = False) -> list:
    stream = SolutionStream(structured_output=structured)
    events, i = [], 0
    for size in sizes:
        events += stream.feed(doc[i : i + size])
        i += size
    events += stream.feed(doc[i:])
    return events + stream.close()


def test_calls_and_text_answer() -> None:
    doc = json.dumps(
        {
            "meta": {"version": "1"},
            "calls": [
                {"_tool": "calculate", "expression": "2 + 3"},
                {"_tool": "current_time", "timezone": "UTC", "_outputPath": "/t"},
            ],
            "output": 'Working on it "now"\n',
        },
        indent=2,
    )
    calls, text = collect(solution_events(doc))
    assert calls == [
        ("calculate", {"expression": "2 + 3"}),
        ("current_time", {"timezone": "UTC", "_outputPath": "/t"}),
    ]
    assert text == 'Working on it "now"\n'


def test_arguments_stream_before_the_item_ends() -> None:
    stream = SolutionStream()
    first = stream.feed('{"meta":{},"calls":[{"_tool":"write_file","path":"a.txt","content":"hel')
    assert isinstance(first[0], ToolCallStartPart) and first[0].name == "write_file"
    assert "".join(e.delta for e in first if isinstance(e, ToolCallDeltaPart)) == (
        '{"path":"a.txt","content":"hel'
    )
    rest = stream.feed('lo"}],"output":null}') + stream.close()
    assert isinstance(rest[-1], ToolCallEndPart)


def test_text_streams_while_the_answer_is_written() -> None:
    stream = SolutionStream()
    assert stream.feed('{"meta":{},"calls":[],"output":"The answer') == [TextPart("The answer")]
    # a half escape is held back until it is complete
    assert stream.feed(" is \\") == [TextPart(" is ")]
    assert stream.feed("u00e9\\ud83d") == [TextPart("é")]
    assert stream.feed('\\ude00"}') == [TextPart("😀")]
    assert stream.close() == []


def test_tool_not_first_is_buffered_and_still_right() -> None:
    doc = '{"calls":[{"expression":"1+1","_tool":"calculate"}],"output":null,"meta":{}}'
    calls, text = collect(solution_events(doc))
    assert calls == [("calculate", {"expression": "1+1"})]
    assert text == ""


def test_tool_with_no_arguments() -> None:
    doc = '{"meta":{},"calls":[{"_tool":"list_files"}],"output":null}'
    calls, _ = collect(solution_events(doc))
    assert calls == [("list_files", {})]


def test_structured_output_becomes_final_result_call() -> None:
    doc = '{"meta":{},"calls":[],"output":{"city":"Paris","n":[1,2]}}'
    calls, text = collect(solution_events(doc, structured_output=True))
    assert calls == [("final_result", {"city": "Paris", "n": [1, 2]})]
    assert text == ""


def test_null_output_is_no_answer() -> None:
    calls, text = collect(solution_events('{"meta":{},"calls":[],"output":null}'))
    assert calls == [] and text == ""


def test_truncated_document_leaves_the_open_call_to_the_loop() -> None:
    events = solution_events('{"meta":{},"calls":[{"_tool":"calculate","expression":"1+')
    assert isinstance(events[0], ToolCallStartPart)
    assert not any(isinstance(e, ToolCallEndPart) for e in events)


documents = st.fixed_dictionaries(
    {
        "meta": st.fixed_dictionaries({"version": st.text(max_size=5)}),
        "calls": st.lists(
            st.fixed_dictionaries(
                {"_tool": st.sampled_from(["a", "b_c", "dé"])},
                optional={
                    "x": st.text(max_size=20),
                    "n": st.integers(),
                    "nested": st.dictionaries(st.text(max_size=4), st.text(max_size=6), max_size=3),
                    "_output": st.text(max_size=5),
                },
            ),
            max_size=4,
        ),
        "output": st.one_of(st.none(), st.text(max_size=40)),
    }
)


@settings(max_examples=200, deadline=None)
@given(documents, st.integers(0, 2**32), st.booleans(), st.booleans())
def test_any_chunking_gives_the_same_calls_and_text(
    doc: dict, seed: int, indent: bool, ascii_only: bool
) -> None:
    text = json.dumps(doc, indent=2 if indent else None, ensure_ascii=ascii_only)
    rng = random.Random(seed)
    sizes = [rng.randint(1, 7) for _ in range(len(text))]
    calls, answer = collect(feed_in_chunks(text, sizes))
    expected = [(c["_tool"], {k: v for k, v in c.items() if k != "_tool"}) for c in doc["calls"]]
    assert calls == expected
    assert answer == (doc["output"] or "")
