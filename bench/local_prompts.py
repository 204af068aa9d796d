"""The embedded model's benchmark set: one-step prompts over the demo agent's tools.

Rules (issue 16): right means the exact tool name and arguments (expressions
compared without spaces, missing optional arguments equal to left out), or, for
small talk, a text answer and no call (the text itself is not judged). Every
expression and every file name or text to write appears literally in the prompt.

The first 22 are the original set; the rest were written afterwards with the same
rules, before any model saw them. The split is mechanical: within each expected
tool, in the order listed here, prompts alternate between the tuning half and the
held-out half (first one to tuning). Prompting and decoding were tuned by looking
at the tuning half only; the held-out half is reported, never read prompt by prompt
while tuning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    prompt: str
    tool: str | None
    """The expected tool; ``None`` for "answer in text, call nothing"."""
    args: dict[str, Any] = field(default_factory=dict)
    original: bool = False
    """One of the 22 prompts of the first benchmark."""


_ORIGINAL = [
    Case("What is 17 * 23?", "calculate", {"expression": "17 * 23"}),
    Case("Calculate 2 + 2", "calculate", {"expression": "2 + 2"}),
    Case("Compute 100 / 4", "calculate", {"expression": "100 / 4"}),
    Case("What is 3 to the power of 5? Use 3 ** 5", "calculate", {"expression": "3 ** 5"}),
    Case("Calculate (7 + 8) * 2", "calculate", {"expression": "(7 + 8) * 2"}),
    Case("What time is it?", "current_time"),
    Case("What is the current time in Europe/Paris?", "current_time", {"timezone": "Europe/Paris"}),
    Case("Tell me the date and time in Asia/Tokyo", "current_time", {"timezone": "Asia/Tokyo"}),
    Case("What time is it in America/New_York?", "current_time", {"timezone": "America/New_York"}),
    Case("List the files in the sandbox", "list_files"),
    Case("Which files are there?", "list_files"),
    Case("Read the file notes.txt", "read_file", {"path": "notes.txt"}),
    Case("Show me what is in README.txt", "read_file", {"path": "README.txt"}),
    Case("Open todo.md and read it", "read_file", {"path": "todo.md"}),
    Case("Write 'hello' to the file hi.txt", "write_file", {"path": "hi.txt", "content": "hello"}),
    Case(
        "Save the text 'Buy milk' in shopping.txt",
        "write_file",
        {"path": "shopping.txt", "content": "Buy milk"},
    ),
    Case("Count slowly to 5", "count_slowly", {"n": 5}),
    Case("Count to 3 slowly", "count_slowly", {"n": 3}),
    Case("Hello!", None),
    Case("Who are you?", None),
    Case("Thank you, that is all.", None),
    Case("Say hi to my friend Sam.", None),
]

_NEW = [
    Case("How much is 45 - 17?", "calculate", {"expression": "45 - 17"}),
    Case("Please work out 1024 / 8", "calculate", {"expression": "1024 / 8"}),
    Case("What is sqrt(144)?", "calculate", {"expression": "sqrt(144)"}),
    Case("Evaluate 2 ** 10", "calculate", {"expression": "2 ** 10"}),
    Case("Calculate 3.5 * 4", "calculate", {"expression": "3.5 * 4"}),
    Case("I need the result of (12 - 4) / 2", "calculate", {"expression": "(12 - 4) / 2"}),
    Case("What does 99 + 1 make?", "calculate", {"expression": "99 + 1"}),
    Case("Compute 7 * 6 for me", "calculate", {"expression": "7 * 6"}),
    Case("What time is it in Europe/London?", "current_time", {"timezone": "Europe/London"}),
    Case("What's the time right now?", "current_time"),
    Case("Give me the current date.", "current_time"),
    Case("What is the time in Australia/Sydney?", "current_time", {"timezone": "Australia/Sydney"}),
    Case("Current time in Asia/Kolkata please", "current_time", {"timezone": "Asia/Kolkata"}),
    Case(
        "Tell me the time in America/Los_Angeles",
        "current_time",
        {"timezone": "America/Los_Angeles"},
    ),
    Case("What files do I have?", "list_files"),
    Case("Show me the files in the sandbox", "list_files"),
    Case("List all files", "list_files"),
    Case("What is in the sandbox folder?", "list_files"),
    Case("Do I have any files?", "list_files"),
    Case("Print the contents of log.txt", "read_file", {"path": "log.txt"}),
    Case("Read notes.md", "read_file", {"path": "notes.md"}),
    Case("What does the file data.csv say?", "read_file", {"path": "data.csv"}),
    Case("Open README.txt", "read_file", {"path": "README.txt"}),
    Case("Show me the file plan.txt", "read_file", {"path": "plan.txt"}),
    Case("Can you read report.txt for me?", "read_file", {"path": "report.txt"}),
    Case(
        "Write 'see you soon' to bye.txt",
        "write_file",
        {"path": "bye.txt", "content": "see you soon"},
    ),
    Case(
        "Create a file todo.txt containing 'call mom'",
        "write_file",
        {"path": "todo.txt", "content": "call mom"},
    ),
    Case(
        "Save 'hello world' into greeting.txt",
        "write_file",
        {"path": "greeting.txt", "content": "hello world"},
    ),
    Case(
        "Put the text 'pay rent' in the file reminders.txt",
        "write_file",
        {"path": "reminders.txt", "content": "pay rent"},
    ),
    Case(
        "Write the word 'done' into status.txt",
        "write_file",
        {"path": "status.txt", "content": "done"},
    ),
    Case("Count slowly to 10", "count_slowly", {"n": 10}),
    Case("Please count to 7 slowly", "count_slowly", {"n": 7}),
    Case("Slowly count up to 4", "count_slowly", {"n": 4}),
    Case("Count from 1 to 8, slowly", "count_slowly", {"n": 8}),
    Case("Nice to meet you", None),
    Case("Good morning!", None),
    Case("How are you today?", None),
    Case("What can you do?", None),
    Case("Thanks a lot!", None),
    Case("Tell me a joke.", None),
    Case("Goodbye!", None),
    Case("What is your name?", None),
]


def _split(cases: list[Case]) -> tuple[list[Case], list[Case]]:
    """Alternate within each expected tool, in listed order: first to tuning."""
    tuning: list[Case] = []
    held_out: list[Case] = []
    seen: dict[str | None, int] = {}
    for case in cases:
        index = seen.get(case.tool, 0)
        seen[case.tool] = index + 1
        (tuning if index % 2 == 0 else held_out).append(case)
    return tuning, held_out


ALL = [Case(c.prompt, c.tool, c.args, original=True) for c in _ORIGINAL] + _NEW
TUNING, HELD_OUT = _split(ALL)
