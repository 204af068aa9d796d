"""``callwright serve`` with a journal: a clear one-line error for an unusable ``--db``,
``--workers`` needing ``--db``, ``--retention-days`` reaching the journal."""

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


def test_an_unusable_db_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    for what, path in unusable_paths(tmp_path):
        done = serve("--db", path, "--port", "1", tmp_path=tmp_path)
        output = (done.stdout + done.stderr).strip()
        assert done.returncode == 2, (what, output)
        assert "Traceback" not in output, what
        assert output.startswith(f"--db {path}: cannot use it as the run journal ("), output
        assert len(output.splitlines()) == 1, (what, output)


def test_a_read_only_journal_file_is_refused_at_start_up(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes read-only files")
    path = tmp_path / "runs.db"
    cli.open_journal(str(path)).close()
    path.chmod(0o400)
    done = serve("--db", str(path), "--port", "1", tmp_path=tmp_path)
    assert done.returncode == 2 and "cannot use it as the run journal" in done.stdout


def test_workers_need_a_journal(tmp_path: Path) -> None:
    done = serve("--workers", "2", "--port", "1", tmp_path=tmp_path)
    assert done.returncode == 2
    assert "--workers needs --db" in done.stdout and "Traceback" not in done.stderr


def test_retention_days_reach_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = cli.parser().parse_args(
        ["serve", "--agent", AGENT, "--db", str(tmp_path / "runs.db"), "--retention-days", "7"]
    )
    monkeypatch.setenv("CALLWRIGHT_KILL_LOG", str(tmp_path / "log"))
    _, _, journal = cli.build_app(args, None)
    try:
        assert journal.retention_days == 7
    finally:
        journal.close()


def test_a_worker_builds_the_same_app_from_the_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = cli.parser().parse_args(
        ["serve", "--agent", AGENT, "--db", str(tmp_path / "runs.db"), "--workers", "2"]
    )
    monkeypatch.setenv("CALLWRIGHT_KILL_LOG", str(tmp_path / "log"))
    monkeypatch.setenv(cli.WORKER_ARGS, json.dumps({**cli._plain(args), "token": "t" * 16}))
    with TestClient(cli.worker_app()) as http:  # its lifespan opens and closes the journal
        assert http.post("/agui", json={}).status_code == 401  # the token came along
        authorized = {"authorization": "Bearer " + "t" * 16}
        assert http.post("/agui", json={}, headers=authorized).status_code == 400
