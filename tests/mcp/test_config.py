"""``--mcp servers.json``: the ``{"mcpServers": {...}}`` shape other tools use."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from callwright import ConfigurationError
from callwright.cli import chosen_agent, parser
from callwright.mcp import MCPServer, load_mcp_config
from callwright.mcp._config import MCPConfigError

CONFIG = {
    "mcpServers": {
        "time": {"command": sys.executable, "args": ["-m", "mcp_server_time"], "env": {"A": "1"}},
        "docs": {
            "url": "https://example.com/mcp",
            "headers": {"Authorization": "Bearer x"},
            "prefix": "docs",
            "requiresApproval": True,
            "timeout": 12,
        },
    }
}


def test_both_kinds_of_entry() -> None:
    time_server, docs = load_mcp_config(CONFIG)
    assert time_server.name == "time" and time_server.process is not None
    assert time_server.process.args == ["-m", "mcp_server_time"]
    assert time_server.process.env == {"A": "1"}
    assert docs.url == "https://example.com/mcp" and docs.headers == {"Authorization": "Bearer x"}
    assert (docs.prefix, docs.requires_approval, docs.timeout) == ("docs", True, 12.0)


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"mcpServers": []},
        {"mcpServers": {"x": {}}},
        {"mcpServers": {"x": {"command": "a", "args": "b"}}},
        {"mcpServers": {"x": {"url": "http://h", "headers": []}}},
    ],
)
def test_malformed_configs_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(MCPConfigError):
        load_mcp_config(bad)


def test_the_cli_gives_the_agent_the_servers(tmp_path: Path) -> None:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps(CONFIG))
    agent_file = Path(__file__).resolve().parent / "agent.py"
    options = ["--agent", f"{agent_file}:make_agent", "--mcp", str(path)]
    args = parser().parse_args(["run", "hi", *options])
    agent = chosen_agent(args)
    assert [s.name for s in agent.toolbox.toolsets if isinstance(s, MCPServer)] == ["time", "docs"]


def test_a_missing_config_file_is_a_clear_exit(tmp_path: Path) -> None:
    args = parser().parse_args(["run", "hi", "--mcp", str(tmp_path / "nope.json")])
    with pytest.raises(ConfigurationError, match=r"--mcp .*nope\.json"):
        chosen_agent(args)
