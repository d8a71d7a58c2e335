"""The README's snippets run as written and print what the README says they print."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def python_blocks() -> list[tuple[str, list[str]]]:
    """Each ```python block and the backquoted texts of the "prints ..." sentence after it."""
    out = []
    for m in re.finditer(r"```python\n(.*?)```\n\n(prints .*?)(?:\n\n|$)", README, re.S):
        out.append((m.group(1), re.findall(r"`([^`]+)`", m.group(2).split(":")[0])))
    return out


def test_every_python_block_says_what_it_prints():
    blocks = python_blocks()
    assert len(blocks) == README.count("```python") >= 3
    assert all(expected for _, expected in blocks)


@pytest.mark.parametrize("code,expected", python_blocks(), ids=lambda v: "" if isinstance(v, list) else None)
def test_readme_python_snippet_runs_as_written(code, expected, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    for text in expected:
        assert text in proc.stdout, (text, proc.stdout)


def test_ci_runs_the_readmes_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    command = [line for line in ci.splitlines() if line.strip() and not line.startswith(("#", "set ", "cd ",
                                                                                              "export "))]
    assert command == ["python3 -m pip install -e \".[dev]\" && python3 -m pytest"]
    assert f"```bash\n{command[0]}\n```" in README


def test_readme_tells_to_make_a_virtual_environment_first():
    venv = README.index("python3 -m venv .venv && . .venv/bin/activate")
    assert venv < README.index('python3 -m pip install -e ".[gui]" && bgsub demo')
