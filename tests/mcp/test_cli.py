"""The ``callwright`` command with MCP servers from a config file (``--mcp servers.json``).

``tools`` lists the servers' tools beside the agent's own, with the hints they are
annotated with; a server that cannot be reached is named. ``run`` asks the server's
questions (elicitation) on the terminal, through a real pseudo-terminal (pexpect).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

HERE = Path(__file__).resolve().parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def config(tmp_path: Path, **servers: dict[str, Any]) -> str:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


@pytest.fixture
def everything_entry(everything_command: list[str]) -> Any:
    """``everything_entry(**options)``: server-everything's entry in a config file."""
    node, *args = everything_command
    return lambda **extra: {"command": node, "args": args, **extra}


TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "callwright.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
        stdin=subprocess.DEVNULL,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


# --- tools -----------------------------------------------------------------------------------


def test_tools_lists_mcp_tools_with_their_annotations(
    tmp_path: Path, everything_entry: Any
) -> None:
    servers = config(tmp_path, ev=everything_entry(prefix="ev"), time=TIME)
    listed = json.loads(cli("tools", "--json", "--mcp", servers).stdout)
    by_name = {t["name"]: t for t in listed}
    assert list(by_name)[:6] == [  # the demo's own tools first, as before
        "calculate",
        "current_time",
        "list_files",
        "read_file",
        "write_file",
        "count_slowly",
    ]
    echo = by_name["ev_echo"]
    assert echo["mcp"] == {
        "server": "ev",
        "name": "echo",
        "annotations": {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    }
    assert echo["idempotent"] is True and echo["requiresApproval"] is False
    assert echo["parameters"]["required"] == ["message"]
    assert by_name["ev_toggle-simulated-logging"]["idempotent"] is False
    assert by_name["get_current_time"]["mcp"]["server"] == "time"
    assert by_name["write_file"]["requiresApproval"] is True
    assert "mcp" not in by_name["write_file"]


def test_tools_panels_show_the_server_and_hints(tmp_path: Path, everything_entry: Any) -> None:
    out = cli("tools", "--mcp", config(tmp_path, ev=everything_entry())).stdout
    assert "MCP ev: readOnlyHint=true, destructiveHint=false, idempotentHint=true" in out
    assert "get-sum" in out and '"message"' in out


def test_tools_lists_an_agents_own_mcp_toolsets(tmp_path: Path, everything_entry: Any) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import sys\n"
        "from callwright import Agent\n"
        "from callwright.mcp import MCPServer\n"
        "from callwright.models import ScriptedModel\n"
        "time = MCPServer.stdio(sys.executable, ['-m', 'mcp_server_time'], name='time')\n"
        "agent = Agent(ScriptedModel([['hi']]), toolsets=[time])\n"
    )
    listed = json.loads(cli("tools", "--json", "--agent", f"{agent}:agent").stdout)
    assert {t["name"] for t in listed} >= {"get_current_time", "convert_time"}


def test_tools_names_a_server_it_cannot_reach(tmp_path: Path, everything_entry: Any) -> None:
    done = cli("tools", "--mcp", config(tmp_path, ghost={"command": "/nonexistent"}), check=False)
    assert done.returncode == 1
    assert "MCP server 'ghost' could not be reached" in done.stderr


# --- run: the server's questions on the terminal -----------------------------------------------

AGENT = f"{HERE / 'terminal_agent.py'}:agent"


def spawn(tmp_path: Path, servers: str, **env: str) -> pexpect.spawn:
    return pexpect.spawn(
        sys.executable,
        ["-m", "callwright.cli", "run", "ask me", "--agent", AGENT, "--mcp", servers],
        env={**os.environ, "COLUMNS": "200", **env},
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )


def transcript(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    return ANSI.sub("", child.before or "")


def answer(child: pexpect.spawn, field: str, typed: str) -> str:
    """Wait for ``field``'s prompt, type ``typed``; what the terminal showed before it."""
    child.expect(re.escape(field) + r"[^\n]*: ")
    shown = ANSI.sub("", child.before)
    child.sendline(typed)
    return shown


def test_run_asks_the_servers_question_field_by_field_and_accepts(
    tmp_path: Path, everything_entry: Any
) -> None:
    child = spawn(tmp_path, config(tmp_path, ev=everything_entry()))
    child.expect(r"Answer, decline or cancel\? \[a/d/c\] ")
    shown = ANSI.sub("", child.before)
    assert "trigger-elicitation-request asks: Please provide inputs for the following fields:" in (
        shown
    )
    child.sendline("a")
    shown = answer(child, "String (required)", "")  # required: asked again
    assert "Your full, legal name" in shown  # the field's description comes first
    child.expect("a value is required")
    answer(child, "String (required)", "Ada Lovelace")
    answer(child, "Boolean [y/n]", "maybe")
    child.expect("answer y or n")
    answer(child, "Boolean [y/n]", "y")
    answer(child, 'String with default (default "It was a dark and stormy night.")', "")
    answer(child, "String with email format", "not an email")
    child.expect('"not an email" is not a "email"')
    answer(child, "String with email format", "ada@example.com")
    answer(child, "String with uri format", "")  # optional: left out
    answer(child, "String with date format", "")
    answer(child, "Integer (default 42)", "500")
    child.expect("500 is greater than the maximum of 100")
    answer(child, "Integer (default 42)", "7")
    answer(child, "Number in range 1-1000 (default 3.14)", "seven")
    child.expect("a number, please")
    answer(child, "Number in range 1-1000 (default 3.14)", "2.5")
    answer(child, "Untitled Single Select Enum [Monica/Rachel/Joey/Chandler/Ross/Phoebe]", "rachel")
    answer(child, "Untitled Multiple Select Enum [Guitar, Piano, Violin, Drums, Bass]", "Tuba")
    child.expect("choose from the list")
    answer(child, "Untitled Multiple Select Enum", "Guitar, Drums")
    answer(child, "Titled Single Select Enum [Superman/Green Lantern/Wonder Woman] (default "
           "Superman)", "Wonder Woman")  # fmt: skip
    answer(child, "Titled Multiple Select Enum [Tuna, Salmon, Trout] (default Tuna)", "")
    answer(child, "Legacy Titled Single Select Enum [Cats/Dogs/Birds/Fish/Reptiles]", "Dogs")
    out = transcript(child)
    raw = json.loads(out[out.rindex("Raw result: ") + 12 : out.rindex("}") + 1].replace("\r", ""))
    assert raw == {
        "action": "accept",
        "content": {
            "name": "Ada Lovelace",
            "check": True,
            "firstLine": "It was a dark and stormy night.",
            "email": "ada@example.com",
            "integer": 7,
            "number": 2.5,
            "untitledSingleSelectEnum": "Rachel",
            "untitledMultipleSelectEnum": ["Guitar", "Drums"],
            "titledSingleSelectEnum": "hero-3",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-2",
        },
    }
    assert "Done: ✅ User provided the requested information!" in out


@pytest.mark.parametrize(
    ("key", "said"),
    [("d", "User declined to provide"), ("c", "User cancelled the elicitation dialog")],
)
def test_run_passes_decline_and_cancel_back(
    tmp_path: Path, everything_entry: Any, key: str, said: str
) -> None:
    child = spawn(tmp_path, config(tmp_path, ev=everything_entry()))
    child.expect(r"Answer, decline or cancel\? \[a/d/c\] ")
    child.sendline("x")
    child.expect("Please answer a, d or c.")
    child.expect(r"Answer, decline or cancel\? \[a/d/c\] ")
    child.sendline(key)
    out = transcript(child)
    assert "← trigger-elicitation-request " in out and said in out
    assert "Done: " in out and said in out.split("Done: ")[1]


def test_run_shows_a_url_question_and_accepts_when_done(
    tmp_path: Path, everything_entry: Any
) -> None:
    arguments = {"url": "https://example.com/authorize", "message": "Sign in to go on."}
    env = {"ASK_TOOL": "trigger-url-elicitation", "ASK_ARGS": json.dumps(arguments)}
    child = spawn(tmp_path, config(tmp_path, ev=everything_entry()), **env)
    child.expect(r"Answer, decline or cancel\? \[a/d/c\] ")
    shown = ANSI.sub("", child.before)
    assert "trigger-url-elicitation asks: Sign in to go on." in shown
    assert "open https://example.com/authorize, then answer to go on" in shown
    child.sendline("a")
    out = transcript(child)
    assert "User completed the URL elicitation flow" in out.split("Done: ")[1]


def test_run_without_a_terminal_cancels_the_question(tmp_path: Path, everything_entry: Any) -> None:
    servers = config(tmp_path, ev=everything_entry())
    out = cli("run", "ask me", "--agent", AGENT, "--mcp", servers).stdout
    assert "cancelled trigger-elicitation-request's question: no terminal to answer it" in out
    assert "User cancelled the elicitation dialog" in out.split("Done: ")[1]


# --- serve --mcp-path: the gate with the server's options ---------------------------------------


def listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_serve_mcp_path_applies_the_servers_origins_and_hosts(tmp_path: Path) -> None:
    import socket
    import time

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    app = "https://app.example.com"
    proc = subprocess.Popen(
        [sys.executable, "-m", "callwright.cli", "serve", "--port", str(port), "--mcp-path",
         "/mcp", "--agent", f"{HERE / 'agent.py'}:make_agent", "--allowed-origin", app],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"accept": "application/json, text/event-stream"}
        with httpx.Client(timeout=30) as http:
            foreign = http.post(url, json=ping, headers={"origin": "https://evil.example"})
            rebinding = http.post(url, json=ping, headers={"host": f"evil.example:{port}"})
            allowed = http.post(url, json=ping, headers={"origin": app, **accept})
    finally:
        proc.terminate()
        proc.wait(10)
    assert (foreign.status_code, foreign.json()["error"]["code"]) == (403, "origin_not_allowed")
    assert (rebinding.status_code, rebinding.json()["error"]["code"]) == (400, "invalid_host")
    assert allowed.headers["access-control-allow-origin"] == app
    assert allowed.status_code != 403 and allowed.headers["x-content-type-options"] == "nosniff"
