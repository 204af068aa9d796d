"""The scripted turns both servers under load play (bench/load.py): one call to a tool
that returns at once, then 50 words of text, streamed a word per delta."""

from __future__ import annotations

TOOL = "lookup"
"""The one tool each run calls."""
ARGUMENTS = '{"city":"Paris"}'
"""The call's argument text, streamed as one delta."""
RESULT = "Paris: 21 °C, light wind"
"""What the tool returns."""
WORDS = [f"word{i}" for i in range(50)]
"""The answer after the tool result, one text delta per word."""
TEXT = " ".join(WORDS)
"""The answer as one string (the scripted model splits it on spaces)."""
