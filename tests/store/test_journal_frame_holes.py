"""A journal write that fails mid-stream leaves no hole in the run's kept log.

A streamed reply's frames are kept in chunks every half second, not at a durable point:
a chunk whose batch failed (the database away for a moment) was noticed only at the
run's end, and the chunks after it, written once the database was back, were kept after
the lost one. The replay then began mid-reply (a text delta whose start was lost; no
``RUN_STARTED``), which ``@ag-ui/client`` and ``ai`` reject: the chaos run
(bench/kill_any_one.py) found it after Postgres restarts. Now nothing more is written
after a failed write, and the frames that could not be written are kept when the run is
settled: the kept log is every frame the client saw, in order, then the run's error
(offsets skip only the events that send no frame).
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from pathlib import Path

import httpx

from callwright import Agent
from callwright.messages import UserMessage
from callwright.models import ScriptedModel
from callwright.server import create_app
from callwright.store import SQLJournal, open_journal
from live_server import Server

WORDS = 150


def test_a_failed_chunk_leaves_no_hole_in_the_kept_log(tmp_path: Path) -> None:
    target = str(tmp_path / "runs.db")
    journal = open_journal(target, busy_seconds=0.3)
    model = ScriptedModel(lambda _: [" ".join(["w"] * WORDS)], split_text=True, delay=0.02)
    run = f"r_{uuid.uuid4().hex}"
    body = {
        "threadId": f"t_{uuid.uuid4().hex}", "runId": run, "tools": [], "context": [],
        "state": {}, "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": "talk"}],
    }  # fmt: skip
    text = ""
    try:
        with Server(create_app(Agent(model, []), journal=journal)) as server:
            holder = sqlite3.connect(
                target, timeout=30, isolation_level=None, check_same_thread=False
            )
            held = threading.Event()
            with httpx.stream("POST", server.url + "/agui", json=body, timeout=60) as response:
                for chunk in response.iter_text():
                    text += chunk
                    if not held.is_set() and text.count("TEXT_MESSAGE_CONTENT") >= 10:
                        held.set()  # the write lock held past the busy timeout, then let go
                        holder.execute("BEGIN IMMEDIATE")
                        threading.Timer(1.2, holder.execute, ("ROLLBACK",)).start()
            time.sleep(1.5)
            holder.close()
            deadline = time.monotonic() + 30
            while not journal.segment_done(run) and time.monotonic() < deadline:
                time.sleep(0.1)  # settled on the writer thread once the lock is let go
            kept = journal.events_after(run, 0)
    finally:
        journal.close()
    assert held.is_set()
    offsets = [offset for offset, _ in kept]
    assert offsets, "nothing kept"
    assert offsets == sorted(set(offsets)), offsets
    assert offsets[0] == 1, offsets[:5]
    first = next(frame for _, frame in kept if frame)
    assert b'"RUN_STARTED"' in first, first[:200]
    live = [block + "\n\n" for block in text.split("\n\n") if block.startswith("data: ")]
    assert "journal_unavailable" in live[-1]
    assert [frame.decode() for _, frame in kept][:-1] == live[:-1]


def test_settling_keeps_the_unwritten_frames_in_order_and_once(journal: SQLJournal) -> None:
    """Frames handed back with a failed segment (``release(frames=...)``): those its log
    lacks are kept around the chunks it has, those it has (a write that failed after its
    commit) are not kept twice, and the closing frame comes last."""
    started = journal.begin("t", "r1", [UserMessage("hi")], [], {}, closing=b"end\n")
    segment = started.segment
    journal.append_events(segment, [(2, "E", b"b\n"), (3, "E", b"c\n")])
    journal.append_events(segment, [(7, "E", b"g\n")])
    lost = [(1, "E", b"a\n"), (3, "E", b"c\n"), (5, "E", b"e\n"), (6, "E", b"f\n"),
            (9, "E", b"i\n")]  # fmt: skip
    journal.release(segment, [], frames=lost)
    deadline = time.monotonic() + 10
    while not journal.segment_done("r1") and time.monotonic() < deadline:
        time.sleep(0.02)  # settled on the journal's writer thread
    kept = journal.events_after("r1", 0)
    assert kept == [
        (1, b"a\n"), (2, b"b\n"), (3, b"c\n"), (5, b"e\n"), (6, b"f\n"), (7, b"g\n"),
        (9, b"i\n"), (10, b"end\n"),
    ]  # fmt: skip
