"""From a clean virtualenv to the first answer: what a new user waits for.

Run: ``make dist && .venv/bin/python bench/first_answer.py`` (``--dist FOLDER`` for wheels
elsewhere, ``--repeats N``). Each repeat makes a fresh virtualenv (``python -m venv``),
installs the callwright wheel with ``[local,server,cli]`` and ``--find-links`` to the
built wheels (the package cache warm: a first, untimed install fills it), then runs the
README's first Python example from an empty folder and waits for its printed answer.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def the_wheel(dist: Path) -> Path:
    sys.path.insert(0, str(ROOT / "src"))
    from callwright import __version__

    wheel = dist / f"callwright-{__version__}-py3-none-any.whl"
    if not wheel.exists():
        raise SystemExit(f"no {wheel.name} in {dist}: run `make dist` first")
    return wheel


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])}... failed:\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def one_user(wheel: Path, dist: Path, example: str, home: Path) -> dict[str, float | str]:
    venv, work = home / "venv", home / "work"
    work.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    made, _ = timed([sys.executable, "-m", "venv", str(venv)], work, env)
    python = str(venv / "bin" / "python")
    install = [python, "-m", "pip", "install", "-q", "--find-links", str(dist)]
    installed, _ = timed([*install, f"{wheel}[local,server,cli]"], work, env)
    (work / "example.py").write_text(example)
    answered, answer = timed([python, "example.py"], work, env)
    return {"venv": made, "install": installed, "answer": answered, "text": answer.strip()}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--dist", type=Path, default=ROOT / "dist")
    options.add_argument("--repeats", type=int, default=3)
    args = options.parse_args()
    dist = args.dist.resolve()
    wheel = the_wheel(dist)
    found = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    if found is None:
        raise SystemExit("README.md has no ```python block")
    example = found.group(1)
    with tempfile.TemporaryDirectory() as tmp:
        one_user(wheel, dist, example, Path(tmp, "warm-up"))  # fills the package cache
        runs = [one_user(wheel, dist, example, Path(tmp, f"user{i}")) for i in range(args.repeats)]
    for key in ("venv", "install", "answer"):
        values = [float(r[key]) for r in runs]
        spread = ", ".join(f"{v:.1f}" for v in values)
        print(f"{key:8} median {statistics.median(values):5.1f} s  ({spread})")
    total = statistics.median(
        float(r["venv"]) + float(r["install"]) + float(r["answer"]) for r in runs
    )
    print(f"{'total':8} median {total:5.1f} s")
    print(f"answer: {runs[-1]['text']!r}")


if __name__ == "__main__":
    main()
