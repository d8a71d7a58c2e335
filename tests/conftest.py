"""Shared fixtures: where the real data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """``$OLK_DATA_DIR``, else ``../shared/data`` beside the checkout."""
    env = os.environ.get("OLK_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real sequences and digit sets; skips the test where they are absent."""
    d = shared_data_dir()
    if not d.is_dir():
        pytest.skip(f"real data not found at {d} (set OLK_DATA_DIR to its folder)")
    return d


@pytest.fixture(scope="session")
def highway(shared_data) -> Path:
    p = shared_data / "bgs" / "cdnet2014" / "highway"
    if not p.is_dir():
        pytest.skip(f"CDnet highway not found at {p}")
    return p


def pytest_configure(config):
    """``BGSUB_COMPILE_LOG=FILE``: append one line per numba compile (seconds, nesting depth, function,
    argument types) to FILE, to see where a run with an empty cache spends its time (docs/performance.md)."""
    path = os.environ.get("BGSUB_COMPILE_LOG")
    if path:
        _log_compiles(Path(path))


def _log_compiles(path: Path) -> None:
    import time

    from numba.core import event

    class CompileLog(event.Listener):
        def __init__(self):
            self.started = []

        def on_start(self, ev):
            self.started.append(time.perf_counter())

        def on_end(self, ev):
            seconds = time.perf_counter() - self.started.pop()
            d = ev.data["dispatcher"]
            name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
            with path.open("a") as f:
                f.write(f"{seconds:.2f}\t{len(self.started)}\t{name}\t{ev.data['args']}\n")

    event.register("numba:compile", CompileLog())
