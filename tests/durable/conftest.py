"""The replicas' event streams pass the conformance checks: recorded by the test's
httpx clients, since each replica is a process of its own."""

from __future__ import annotations

import pytest

from conformance import conformance_check, record_clients  # noqa: F401  (checks the module's streams)


@pytest.fixture(autouse=True)
def _client_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    record_clients(monkeypatch)
