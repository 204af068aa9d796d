"""The embedded model's companion package, callwright-smollm2: the file it exposes is the
pinned one, and when the model or its binding is missing the error names the command
that installs it."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

import callwright_smollm2
import pytest

from callwright.messages import UserMessage
from callwright.models import resolve_model
from callwright.models.base import ErrorPart, ModelRequest
from callwright.models.local import (
    LocalModel,
    LocalModelUnavailable,
    default_model_path,
    start_llama_server,
)

PINNED = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FIXES = ("pip install 'callwright[local]'", "pip install --find-links dist 'callwright[local]'")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def test_the_package_exposes_the_pinned_gguf_file() -> None:
    path = callwright_smollm2.model_path()
    assert path == callwright_smollm2.MODEL_PATH and path.name == callwright_smollm2.FILE_NAME
    assert path.is_file() and path.read_bytes()[:4] == b"GGUF"
    assert callwright_smollm2.SHA256 == PINNED
    assert sha256(path) == PINNED


def test_the_default_model_is_the_packaged_file() -> None:
    assert default_model_path() == callwright_smollm2.MODEL_PATH
    assert LocalModel().path == callwright_smollm2.MODEL_PATH
    assert LocalModel().name == "local:SmolLM2-135M-Instruct"


def test_a_missing_model_package_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "callwright_smollm2", None)  # import fails
    with pytest.raises(LocalModelUnavailable) as caught:
        default_model_path()
    message = str(caught.value)
    assert "callwright-smollm2" in message
    assert all(fix in message for fix in FIXES), message
    assert "local:/path/model.gguf" in message


def test_a_package_without_its_file_says_to_reinstall_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(callwright_smollm2, "MODEL_PATH", tmp_path / "gone.gguf")
    with pytest.raises(LocalModelUnavailable) as caught:
        default_model_path()
    message = str(caught.value)
    assert "pip install --force-reinstall callwright-smollm2" in message
    assert str(tmp_path) not in message


def test_a_missing_binding_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    with pytest.raises(LocalModelUnavailable) as caught:
        start_llama_server(str(callwright_smollm2.MODEL_PATH))
    message = str(caught.value)
    assert "xllamacpp" in message and all(fix in message for fix in FIXES), message


async def test_a_run_on_a_missing_model_gets_the_fix_as_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "callwright_smollm2", None)
    request = ModelRequest(messages=[UserMessage("hi")], mode="structured")
    events = [e async for e in LocalModel().stream(request)]
    assert len(events) == 1 and isinstance(events[0], ErrorPart)
    assert events[0].code == "model_unavailable"
    assert FIXES[0] in events[0].message


def test_a_model_file_path_needs_no_model_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "callwright_smollm2", None)
    model = resolve_model(f"local:{tmp_path / 'mine.gguf'}")
    assert isinstance(model, LocalModel) and model.name == "local:mine"
    assert model.path == tmp_path / "mine.gguf"


def test_readiness_names_the_fix_for_a_missing_binding_or_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def without_binding(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "xllamacpp" else real(name, package)

    with monkeypatch.context() as patched:
        patched.setattr(importlib.util, "find_spec", without_binding)
        reason = LocalModel().unconfigured()
    assert reason is not None and "xllamacpp" in reason
    assert all(fix in reason for fix in FIXES), reason
    monkeypatch.setitem(sys.modules, "callwright_smollm2", None)
    reason = LocalModel().unconfigured()
    assert reason is not None and all(fix in reason for fix in FIXES), reason
    assert "/" not in reason.replace("local:/path/model.gguf", "")  # no path of the server's
