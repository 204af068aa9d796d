"""The wheel is the product: build callwright's and its model's wheels, install them into a
fresh virtualenv the way a user would (not editable, the checkout not on ``sys.path``, a
temp folder as the working directory, no PYTHONPATH), and use callwright from there: the
README's first example, ``callwright serve`` (page, health, an AG-UI run) and
``callwright run``. Also what the wheels and sdists hold, and that installing compiled
nothing. Select with ``-m wheel``."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tarfile
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

import callwright

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]
MODEL_DIR = ROOT / "packages" / "callwright-smollm2"
MODEL_FILE = "callwright_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
NPM_SOURCES = ("package.json", "package-lock.json", "app.js", "timeline.js", "node_modules")


@dataclass
class Built:
    folder: Path
    """Both wheels (callwright's built here, the model's linked in), for --find-links."""
    wheel: Path
    sdist: Path
    model_wheel: Path


@dataclass
class Installed:
    venv: Path
    work: Path
    """An empty working directory outside the checkout."""
    env: dict[str, str]
    pip_output: str
    report: dict[str, object]

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=timeout
        )


def build(outdir: Path, source: Path, *options: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(outdir), *options, str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def model_version() -> str:
    text = (MODEL_DIR / "src" / "callwright_smollm2" / "__init__.py").read_text()
    found = re.search(r'^__version__ = "(.+)"', text, re.M)
    assert found
    return found.group(1)


def model_wheel(tmp: Path) -> Path:
    """The model wheel `make` built into dist/ when it is newer than its sources (a
    rebuild fetches the 93 MB file again), or a fresh one."""
    name = f"callwright_smollm2-{model_version()}-py3-none-any.whl"
    made = ROOT / "dist" / name
    sources = [MODEL_DIR / "pyproject.toml", MODEL_DIR / "hatch_build.py"]
    sources += list((MODEL_DIR / "src" / "callwright_smollm2").glob("*.py"))
    if made.exists() and made.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
        return made
    build(tmp, MODEL_DIR, "--wheel")
    return tmp / name


def user_env(venv: Path) -> dict[str, str]:
    """The environment without this checkout's venv or paths; pip's own settings stay."""
    drop = {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTEST_ADDOPTS"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    folder = tmp_path_factory.mktemp("dist")
    build(folder, ROOT)  # the sdist, then the wheel from the sdist, as `make dist` does
    model = model_wheel(tmp_path_factory.mktemp("model"))
    linked = folder / model.name
    linked.symlink_to(model)
    (wheel,) = folder.glob("callwright-*.whl")
    (sdist,) = folder.glob("callwright-*.tar.gz")
    return Built(folder, wheel, sdist, linked)


@pytest.fixture(scope="module")
def installed(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    home = tmp_path_factory.mktemp("user")
    venv, work = home / "venv", home / "work"
    work.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = user_env(venv)
    report = home / "report.json"
    done = subprocess.run(
        [
            str(venv / "bin" / "python"),
            *("-m", "pip", "install", "--find-links", str(built.folder)),
            *("--report", str(report)),
            f"{built.wheel}[local,server,cli]",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    yield Installed(venv, work, env, done.stdout + done.stderr, json.loads(report.read_text()))


def test_the_installed_callwright_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    done = installed.run(
        installed.bin("python"),
        "-c",
        "import callwright, callwright_smollm2; print(callwright.__file__); "
        "print(callwright.__version__); print(callwright_smollm2.model_path())",
    )
    assert done.returncode == 0, done.stderr
    module, version, model = done.stdout.split()
    site = str(installed.venv / "lib")
    assert module.startswith(site) and model.startswith(site), done.stdout
    assert not module.startswith(str(ROOT / "src"))
    assert version == callwright.__version__
    done = installed.run(installed.bin("callwright"), "--version")
    assert done.returncode == 0 and done.stdout.strip() == f"callwright {version}", done


def test_pip_installed_wheels_only_and_compiled_nothing(installed: Installed) -> None:
    assert "Building wheel for" not in installed.pip_output
    items = installed.report["install"]
    assert isinstance(items, list) and items
    names = {item["metadata"]["name"].lower() for item in items}
    assert {"callwright", "callwright-smollm2", "xllamacpp", "starlette", "rich"} <= names
    for item in items:
        url = item["download_info"]["url"]
        assert url.endswith(".whl"), (item["metadata"]["name"], url)


def test_the_readme_first_example_prints_the_models_answer(installed: Installed) -> None:
    readme = (ROOT / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.S)
    assert example is not None
    script = installed.work / "example.py"
    script.write_text(example.group(1))
    done = installed.run(installed.bin("python"), str(script))
    assert done.returncode == 0, done.stderr[-3000:]
    answer = done.stdout.strip()
    assert answer and answer != "None", done.stdout + done.stderr[-2000:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(url: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert server.poll() is None, "callwright serve exited"
        try:
            httpx.get(url + "/", timeout=2)
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline, "callwright serve did not come up"
            time.sleep(0.2)


def sse_types(raw: str) -> list[str]:
    return [json.loads(b[6:])["type"] for b in raw.split("\n\n") if b.startswith("data: {")]


def test_serve_answers_the_page_health_and_an_agui_run(installed: Installed) -> None:
    port = free_port()
    sandbox = installed.work / "sandbox"
    sandbox.mkdir(exist_ok=True)
    server = subprocess.Popen(
        [installed.bin("callwright"), "serve", "--port", str(port)],
        cwd=installed.work,
        env={**installed.env, "CALLWRIGHT_SANDBOX": str(sandbox)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, server)
        with httpx.Client(base_url=url, timeout=300) as http:
            page, script = http.get("/"), http.get("/playground.js")
            healthz, readyz = http.get("/healthz"), http.get("/readyz")
            body = {
                "threadId": f"t_{uuid.uuid4().hex}",
                "runId": f"r_{uuid.uuid4().hex}",
                "messages": [{"id": "u1", "role": "user", "content": "What is 17 * 23?"}],
                "tools": [],
                "context": [],
                "state": {},
                "forwardedProps": {},
            }
            agui = http.post("/agui", json=body, headers={"accept": "text/event-stream"})
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert page.status_code == 200 and "<script" in page.text
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/java")
    assert agui.status_code == 200, agui.text[:500]
    types = sse_types(agui.text)
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED", types
    assert "391" in agui.text
    assert healthz.status_code == 200 and healthz.json() == {"status": "ok"}
    assert readyz.status_code == 200 and readyz.json()["status"] == "ready"


def test_run_answers_on_the_embedded_model(installed: Installed) -> None:
    sandbox = installed.work / "sandbox"
    sandbox.mkdir(exist_ok=True)
    done = installed.run(
        installed.bin("callwright"), "run", "What is 17 * 23?", "--sandbox", str(sandbox)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "391" in done.stdout


def test_the_wheel_holds_the_page_and_no_npm_sources(built: Built) -> None:
    names = zipfile.ZipFile(built.wheel).namelist()
    assert "callwright/playground/playground.js" in names
    assert "callwright/playground/index.html" in names
    assert "callwright/py.typed" in names
    playground = [n for n in names if n.startswith("callwright/playground/")]
    assert not [n for n in playground if n.rsplit("/", 1)[-1] in NPM_SOURCES]
    assert not [n for n in names if "node_modules" in n or n.endswith(".ts")]
    assert not [n for n in names if n.startswith(("tests/", "bench/", "packages/"))]


def test_the_sdist_holds_the_sources_and_no_installs_or_builds(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        names = [n.split("/", 1)[1] for n in sdist.getnames() if "/" in n]
    assert "pyproject.toml" in names and "README.md" in names
    assert "src/callwright/playground/playground.js" in names
    assert "src/callwright/py.typed" in names
    for unwanted in ("node_modules/", ".venv/", "dist/", "packages/", ".git/", "__pycache__/"):
        assert not [n for n in names if unwanted in n + "/"], unwanted
    assert not [n for n in names if n.endswith((".gguf", ".db", ".whl"))]


def test_the_model_wheel_holds_the_file_and_its_licence(built: Built) -> None:
    with zipfile.ZipFile(built.model_wheel) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
    assert MODEL_FILE in names
    assert [n for n in names if n.endswith("licenses/LICENSE")]
    assert [n for n in names if n.endswith("licenses/NOTICE")]
    assert b"Requires-Dist" not in metadata  # no dependencies at all
    assert built.model_wheel.name.endswith("-py3-none-any.whl")


def test_the_model_build_fails_in_one_line_on_a_wrong_file(tmp_path: Path) -> None:
    wrong = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    wrong.write_bytes(b"GGUF but not the model")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path), str(MODEL_DIR)],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "CALLWRIGHT_SMOLLM2_GGUF": str(wrong)},
    )
    assert done.returncode != 0
    output = done.stdout + done.stderr
    lines = [line for line in output.splitlines() if "callwright-smollm2:" in line]
    assert len(lines) == 1 and "sha256" in lines[0] and "expected" in lines[0], output
    assert "Traceback" not in output
    assert not list(tmp_path.glob("*.whl"))
