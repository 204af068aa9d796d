"""What the journal keeps of a conversation comes back as it was: error results stay
errors and a provider's opaque blocks stay on the assistant message."""

from __future__ import annotations

from typing import Any

from callwright import (
    Agent,
    AssistantMessage,
    ToolError,
    ToolResultMessage,
    UserMessage,
    start_journaled,
    tool,
)
from callwright.models import FinishPart, ScriptedModel, call
from callwright.store import SQLJournal

THINKING = [{"type": "thinking", "thinking": "Try it.", "signature": "c2ln"}]


@tool
def read_file(path: str) -> str:
    """Read a file."""
    raise ToolError(f"no file named {path!r}")


async def drive(journal: SQLJournal, agent: Agent, run_id: str, prompt: str) -> list[Any]:
    run, recorder = start_journaled(journal, agent, "t1", run_id, [UserMessage(prompt)], [])
    events = []
    async for event in run.events():
        recorder.record(event, repr(event).encode())
        events.append(event)
    return events


async def test_error_flag_and_provider_blocks_survive_the_journal(
    journal: SQLJournal,
) -> None:
    model = ScriptedModel(
        [
            [
                call("read_file", {"path": "x"}, id="c1"),
                FinishPart("tool-calls", provider_blocks={"anthropic": THINKING}),
            ],
            ["Not there."],
            ["Bye."],
        ]
    )
    agent = Agent(model, [read_file])
    await drive(journal, agent, "r1", "read x")
    history = journal.history("t1")
    reply = next(m for m in history if isinstance(m, AssistantMessage) and m.tool_calls)
    assert reply.provider_blocks == {"anthropic": THINKING}
    result = next(m for m in history if isinstance(m, ToolResultMessage))
    assert (result.content, result.is_error) == ("no file named 'x'", True)
    # the next run of the thread sends the journal's history to the model
    await drive(journal, agent, "r2", "bye")
    sent = model.requests[-1].messages
    assert next(m for m in sent if isinstance(m, ToolResultMessage)).is_error is True
    sent_reply = next(m for m in sent if isinstance(m, AssistantMessage) and m.tool_calls)
    assert sent_reply.provider_blocks == {"anthropic": THINKING}
