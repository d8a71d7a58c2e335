"""benchmarks/gpu_session.sh, the prepared GPU measurement: its steps, and its eval step on the CPU engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gpu_session.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and timeout")


def run(tmp_path, *steps, **env):
    python = tmp_path / "bin"
    python.mkdir(exist_ok=True)
    (python / "python3").symlink_to(sys.executable)  # the script calls python3: this interpreter
    full = {**os.environ, "OUT": str(tmp_path / "out"), "PATH": f"{python}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(["bash", str(SCRIPT), *steps], capture_output=True, text=True, env=full, timeout=300)


def test_a_dry_run_lists_every_step_under_its_limit(tmp_path):
    done = run(tmp_path, DRY_RUN="1")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("== ")]
    names = [line[3:].split(" (limit")[0] for line in lines]
    assert set(names[:3]) == {"warm-olkn", "warm-norma", "gpu-check"}  # side by side, in any order
    assert names[3:] == ["gpu_fps", "eval olkn", "eval norma", "profile", "cpu-profile"]
    assert "benchmarks/gpu_fps.py --json" in done.stdout and "--device cuda" in done.stdout
    # every limit together within the device tool's 600 s a command (the warm-ups run side by side)
    limits = {n: int(line.split("(limit ")[1].split("s)")[0]) for n, line in zip(names, lines)}
    assert max(limits["warm-olkn"], limits["warm-norma"], limits["gpu-check"]) + limits["gpu_fps"] \
        + limits["eval olkn"] + limits["eval norma"] + limits["profile"] + limits["cpu-profile"] <= 600


def test_an_unknown_step_is_refused(tmp_path):
    done = run(tmp_path, "nonsense", DRY_RUN="1")
    assert done.returncode == 2 and "unknown step nonsense" in done.stderr


def test_the_eval_step_scores_the_sequences_on_the_cpu_engine(tmp_path):
    done = run(tmp_path, "eval", DEVICE="cpu", DEVDATA=str(REPO / "videos" / "sample"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "eval_olkn_cpu.json").read_text())
    assert report["algo"] == "olkn" and [s["name"] for s in report["sequences"]] == ["sample"]
    assert report["mean"]["F"] == pytest.approx(0.788, abs=0.001)  # the bundled sample's olkn F (README)
    assert "eval_olkn_cpu: mean F 0.78" in done.stdout and "eval_norma_cpu: mean F 0.76" in done.stdout
