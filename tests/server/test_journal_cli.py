"""``callwright serve`` with a journal: a clear one-line error for an unusable
``--journal``, ``--processes`` needing ``--journal``, ``--retention-days`` reaching the
journal, each process building the same app."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from callwright import cli

ROOT = Path(__file__).resolve().parents[2]
AGENT = f"{ROOT / 'bench' / '_kill_app.py'}:make_agent"


def serve(*options: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "callwright.cli", "serve", "--agent", AGENT, *options],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "CALLWRIGHT_KILL_LOG": str(tmp_path / "log"), "COLUMNS": "300"},
    )


def unusable_paths(tmp_path: Path) -> list[tuple[str, str]]:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("not a database, just some text that is long enough " * 20)
    return [
        ("a folder that does not exist", str(tmp_path / "missing" / "runs.db")),
        ("a folder", str(tmp_path)),
        ("a file that is not a database", str(not_a_db)),
        *([] if os.geteuid() == 0 else [("a folder we may not write", str(locked / "runs.db"))]),
    ]


def test_an_unusable_journal_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    for what, path in unusable_paths(tmp_path):
        done = serve("--journal", path, "--port", "1", tmp_path=tmp_path)
        assert done.returncode == 1, (what, done.stderr)
        assert done.stdout == "" and "Traceback" not in done.stderr, what
        expected = f"callwright: error: --journal {path}: cannot use it as the run journal ("
        assert done.stderr.startswith(expected), done.stderr
        assert len(done.stderr.splitlines()) == 1, (what, done.stderr)


def test_a_read_only_journal_file_is_refused_at_start_up(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    path = tmp_path / "runs.db"
    cli.open_sqlite(str(path)).close()
    path.chmod(0o400)
    done = serve("--journal", str(path), "--port", "1", tmp_path=tmp_path)
    assert done.returncode == 1 and "cannot use it as the run journal" in done.stderr


def test_processes_need_a_journal(tmp_path: Path) -> None:
    done = serve("--processes", "2", "--port", "1", tmp_path=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("callwright: error: --processes needs --journal:"), done.stderr


def test_retention_days_reach_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = cli.parser().parse_args(
        ["serve", "--agent", AGENT, "--journal", str(tmp_path / "runs.db"), "--retention-days", "7"]
    )
    monkeypatch.setenv("CALLWRIGHT_KILL_LOG", str(tmp_path / "log"))
    journal = cli.build_app(args, None).journal.journal
    try:
        assert journal.retention_days == 7
    finally:
        journal.close()


def test_each_process_builds_the_same_app_from_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = cli.parser().parse_args(
        ["serve", "--agent", AGENT, "--journal", str(tmp_path / "runs.db"), "--processes", "2"]
    )
    monkeypatch.setenv("CALLWRIGHT_KILL_LOG", str(tmp_path / "log"))
    options = {k: v for k, v in vars(args).items() if k != "handler"}
    monkeypatch.setenv(cli.SERVE_ARGS, json.dumps({**options, "token": "t" * 16}))
    with TestClient(cli.process_app()) as http:  # its lifespan opens and closes the journal
        assert http.post("/agui", json={}).status_code == 401  # the token came along
        authorized = {"authorization": "Bearer " + "t" * 16}
        assert http.post("/agui", json={}, headers=authorized).status_code == 400
