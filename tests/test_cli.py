"""The ``callwright`` command: tools, run (on the embedded model), serve."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from callwright import cli as cli_module
from callwright.cli import build_model, main, parser
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


# --- --agent from the current directory, and one-line errors -------------------------------

CALLWRIGHT = Path(sys.executable).with_name("callwright")
"""The installed console script (not ``python -m``, which puts the cwd on the path)."""

AGENT_MODULE = '''
from callwright import Agent, tool
from callwright.models import ScriptedModel


@tool
def ping() -> str:
    """Answers pong."""
    return "pong"


agent = Agent(ScriptedModel([["hi"]]), [ping])
'''


def callwright(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script, as a user runs it: in ``cwd``, without PYTHONPATH."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CALLWRIGHT_DEBUG")}
    return subprocess.run(
        [str(CALLWRIGHT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**clean, "COLUMNS": "200", **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def app_folder(tmp_path: Path) -> Path:
    """A project folder: ``myapp/agent.py`` (a package), ``broken.py`` and
    ``raises.py`` (modules that fail as they import), ``not_agent.py``."""
    (tmp_path / "myapp").mkdir()
    (tmp_path / "myapp" / "__init__.py").write_text("")
    (tmp_path / "myapp" / "agent.py").write_text(AGENT_MODULE)
    (tmp_path / "broken.py").write_text("import no_such_package_here\n")
    (tmp_path / "raises.py").write_text("settings = {}\nport = settings['port']\n")
    (tmp_path / "not_agent.py").write_text("agent = 42\n")
    return tmp_path


def test_agent_module_imports_from_the_current_directory(tmp_path: Path) -> None:
    done = callwright("tools", "--json", "--agent", "myapp.agent:agent", cwd=app_folder(tmp_path))
    assert done.returncode == 0, done.stderr
    assert [t["name"] for t in json.loads(done.stdout)] == ["ping"]


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["tools", "--agent", "myapp.agent"],
            {},
            "--agent myapp.agent: use module:name or path/to/file.py:name",
        ),
        (
            ["tools", "--agent", "nothere.agent:agent"],
            {},
            "--agent nothere.agent:agent: no module named 'nothere' in {cwd} or on the Python path",
        ),
        (
            ["tools", "--agent", "broken:agent"],
            {},
            "--agent broken:agent: importing broken failed: No module named 'no_such_package_here'",
        ),
        (
            ["tools", "--agent", "raises:agent"],
            {},
            "--agent raises:agent: importing raises raised KeyError: 'port' (raises.py, line 2)",
        ),
        (
            ["tools", "--agent", "raises.py:agent"],
            {},
            "--agent raises.py:agent: raises.py raised KeyError: 'port' (raises.py, line 2)",
        ),
        (
            ["tools", "--agent", "not_agent.py:agent"],
            {},
            "--agent not_agent.py:agent: agent is not an Agent or a function returning one",
        ),
        (
            ["tools", "--agent", "myapp.agent:agnet"],
            {},
            "--agent myapp.agent:agnet: myapp.agent defines no 'agnet'",
        ),
        (
            ["run", "hello", "--model", "foo:bar"],
            {},
            "unknown model 'foo:bar': use 'local', 'local:/path/model.gguf', "
            "'openai:<model>', 'anthropic:<model>', 'gemini:<model>', or a model object",
        ),
        (
            ["serve", "--agent", "myapp.agent:agent", "--journal", "{cwd}/missing/runs.db"],
            {},
            "--journal {cwd}/missing/runs.db: cannot use it as the run journal (unable to "
            "open database file)",
        ),
        (
            ["serve", "--agent", "myapp.agent:agent", "--journal", "mysql://me:pw@db/app"],
            {},
            "--journal: not a journal (mysql): use a SQLite file path, sqlite:///path or "
            "postgresql://…",
        ),
        (
            ["serve", "--agent", "myapp.agent:agent"],
            {"PYTHONPATH": "{cwd}/shadow"},  # a uvicorn that is not installed
            "callwright serve needs the server extra (uvicorn is not installed): pip install "
            "'callwright[server]'",
        ),
        (
            ["worker", "--agent", "myapp.agent:agent"],
            {},
            "callwright worker needs --journal URL (or $CALLWRIGHT_JOURNAL)",
        ),
    ],
)
def test_an_error_is_one_line_on_stderr(
    tmp_path: Path, argv: list[str], env: dict[str, str], message: str
) -> None:
    folder = app_folder(tmp_path)
    (folder / "shadow" / "uvicorn").mkdir(parents=True)
    (folder / "shadow" / "uvicorn" / "__init__.py").write_text(
        "raise ImportError('uvicorn is not installed')\n"
    )
    cwd = str(folder)
    done = callwright(
        *[a.replace("{cwd}", cwd) for a in argv],
        cwd=folder,
        env={k: v.replace("{cwd}", cwd) for k, v in env.items()},
    )
    assert done.stderr == f"callwright: error: {message.replace('{cwd}', cwd)}\n"
    assert done.returncode == (2 if argv[0] == "worker" else 1)
    assert done.stdout == ""


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    for argv, env in [
        (["--debug", "tools", "--agent", "raises:agent"], {}),
        (["tools", "--agent", "raises:agent", "--debug"], {}),
        (["tools", "--agent", "raises:agent"], {"CALLWRIGHT_DEBUG": "1"}),
    ]:
        done = callwright(*argv, cwd=folder, env=env)
        assert done.returncode == 1, argv
        assert "Traceback" in done.stderr and "KeyError: 'port'" in done.stderr, argv
        assert "callwright: error:" not in done.stderr


def test_a_usage_error_is_argparses_exit_code_2(tmp_path: Path) -> None:
    done = callwright("serve", "--log-level", "chatty", cwd=tmp_path)
    assert done.returncode == 2 and "invalid choice: 'chatty'" in done.stderr
    done = callwright("serve", "--processes", "2", "--port", "1", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("callwright: error: --processes needs --journal:")


def test_an_interrupt_exits_130_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "tools", interrupted)
    assert main(["tools"]) == 130
    assert capsys.readouterr() == ("", "")


def test_run_prints_a_failed_run_in_one_line_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(
        "from callwright import Agent\n"
        "from callwright.models import ScriptedModel\n"
        "from callwright.models.base import ErrorPart\n"
        "agent = Agent(ScriptedModel([[ErrorPart('the provider is down\\nretry later', "
        "'overloaded')]]))\n"
    )
    done = callwright("run", "hello", "--agent", "failing.py:agent", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        "error (overloaded): the provider is down retry later"
    )
    assert "Traceback" not in done.stderr


# --- the deprecated names ------------------------------------------------------------------


def test_the_old_option_names_still_work_with_one_warning_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parser().parse_args(["serve", "--db", "runs.db", "--workers", "3"])
    assert (args.journal, args.processes) == ("runs.db", 3)
    assert capsys.readouterr().err.splitlines() == [
        "callwright: warning: --db is deprecated, use --journal",
        "callwright: warning: --workers is deprecated, use --processes",
    ]
    args = parser().parse_args(["serve", "--database", "postgresql://h/db"])
    assert args.journal == "postgresql://h/db"
    args = parser().parse_args(["worker", "--database", "postgresql://h/db"])
    assert args.journal == "postgresql://h/db"
    assert (
        capsys.readouterr().err.splitlines()
        == ["callwright: warning: --database is deprecated, use --journal"] * 2
    )
    args = parser().parse_args(["serve", "--journal", "runs.db", "--processes", "2"])
    assert (args.journal, args.processes) == ("runs.db", 2)
    assert capsys.readouterr().err == ""


def test_the_journal_defaults_to_callwright_journal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLWRIGHT_JOURNAL", "postgresql://db.internal/app")
    assert parser().parse_args(["serve"]).journal == "postgresql://db.internal/app"
    assert parser().parse_args(["worker"]).journal == "postgresql://db.internal/app"
    assert parser().parse_args(["serve", "--journal", "runs.db"]).journal == "runs.db"


def test_a_json_log_line_carries_the_records_fields_and_its_exception() -> None:
    from callwright._cli_logging import JsonFormatter

    try:
        raise ValueError("bad value")
    except ValueError:
        record = logging.getLogger("callwright.call").makeRecord(
            "callwright.call", logging.WARNING, __file__, 1, "call %s failed", ("c1",),
            sys.exc_info(), extra={"call_id": "c1", "tool_name": "ping", "duration_ms": 1.5},
        )  # fmt: skip
    line = json.loads(JsonFormatter().format(record))
    assert {k: line[k] for k in ("level", "logger", "message", "call_id", "tool_name")} == {
        "level": "warning",
        "logger": "callwright.call",
        "message": "call c1 failed",
        "call_id": "c1",
        "tool_name": "ping",
    }
    assert line["duration_ms"] == 1.5 and line["pid"] == os.getpid()
    assert line["exception"].endswith("ValueError: bad value")
    assert "args" not in line and "exc_info" not in line and "msg" not in line


def test_the_demo_agents_options_beside_agent_are_refused_not_ignored(tmp_path: Path) -> None:
    """``--model``, ``--base-url`` and ``--sandbox`` configure the demo agent; beside
    ``--agent`` they would be ignored silently, so they are a usage error. A model from
    ``$CALLWRIGHT_MODEL`` is a default, not a choice, and does not count."""
    folder = app_folder(tmp_path)
    done = callwright(
        "run", "ping", "--agent", "myapp.agent:agent", "--model", "openai:gpt-x", cwd=folder
    )
    assert done.returncode == 2
    assert done.stderr == (
        "callwright: error: --model is for the demo agent: --agent myapp.agent:agent brings "
        "its own model and tools (set them in your code)\n"
    )
    done = callwright(
        "run", "ping", "--agent", "myapp.agent:agent", "--base-url", "http://x", "--sandbox",
        "/tmp", cwd=folder,
    )  # fmt: skip
    assert done.returncode == 2 and "--base-url and --sandbox are for the demo agent" in done.stderr
    done = callwright(
        "run", "ping", "--agent", "myapp.agent:agent", cwd=folder,
        env={"CALLWRIGHT_MODEL": "openai:gpt-x"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
