"""The ``callwright`` command: tools, run (on the embedded model), serve."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from callwright.cli import build_model, main
from callwright.models.openai import OpenAIModel


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tools_lists_names_descriptions_and_schemas(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools", "--json"]) == 0
    blueprints = json.loads(capsys.readouterr().out)
    assert [b["name"] for b in blueprints] == [
        "calculate",
        "current_time",
        "list_files",
        "read_file",
        "write_file",
        "count_slowly",
    ]
    calculate = blueprints[0]
    assert calculate["description"] == "Calculate an arithmetic expression."
    assert calculate["parameters"]["required"] == ["expression"]
    assert blueprints[5]["parameters"]["properties"]["n"]["maximum"] == 60


def test_tools_panels() -> None:
    out = cli("tools")
    assert "write_file" in out and "needs approval" in out and '"content"' in out


def test_run_streams_a_tool_call_and_the_answer_on_the_embedded_model(tmp_path: Path) -> None:
    out = cli("run", "What is 17 * 23?", "--sandbox", str(tmp_path))
    assert '→ calculate {"expression": "17 * 23"}' in out
    assert "← calculate 391" in out
    lines = [line for line in out.splitlines() if line.strip()]
    assert "391" in lines[-1]  # the answer comes after the result


def test_run_denies_approvals_without_a_terminal(tmp_path: Path) -> None:
    out = cli("run", "Save the text 'Buy milk' in shopping.txt", "--sandbox", str(tmp_path))
    assert "→ write_file" in out
    assert "denied write_file" in out
    assert not (tmp_path / "shopping.txt").exists()


def test_base_url_means_an_openai_compatible_server() -> None:
    model = build_model("openai:qwen", "http://127.0.0.1:1/v1")
    assert isinstance(model, OpenAIModel) and model.model == "qwen"
    assert model.base_url == "http://127.0.0.1:1/v1"
    assert build_model(None, "http://127.0.0.1:1/v1").name == "openai:default"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_prints_the_url_and_serves(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "CALLWRIGHT_SANDBOX": str(tmp_path), "COLUMNS": "200"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline() + proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in first
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                    assert page.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
