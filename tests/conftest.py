"""Shared fixtures: where the real data lives."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# The GPU engine's tests run under numba-cuda's CUDA simulator, which numba chooses when numba.cuda is first
# imported: set before any test module imports it (the tests that need the real driver run a subprocess without it).
if "numba.cuda" not in sys.modules:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

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


#: The subtractors whose frame kernels take longest to compile, longest first (``(algo, preset, params)``).
_HEAVY_KERNELS = (
    ("olkn", "accurate", {}),
    ("olkn", None, {"score_map": "exact"}),
    ("norma", None, {}),
    ("norma", None, {"update_mask": "raw"}),
    ("olkn", None, {}),
    ("oem", None, {}),
    ("svmd", None, {}),
)


@pytest.fixture(scope="session", autouse=True)
def _compile_heavy_kernels_between_workers(request, tmp_path_factory):
    """Under ``pytest -n N`` over most of the suite, the workers first compile the slowest frame kernels between
    them, each taking the next one no other worker has taken (a lock file per kernel), so that no two compile
    the same kernel at once; the tests then load them from numba's cache. With the cache warm this costs the
    loads alone; a run of fewer than 500 tests skips it."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) < 2 or len(request.session.items) < 500:
        return
    import fcntl

    from bgsub.registry import default_params
    from bgsub.warmup import warm_up

    locks = tmp_path_factory.getbasetemp().parent  # shared by the workers of this run
    for i, (algo, preset, params) in enumerate(_HEAVY_KERNELS):
        with open(locks / f"compile-{i}.lock", "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another worker is compiling it
            if (locks / f"compile-{i}.done").exists():
                continue
            warm_up(algo, {**(default_params(algo, preset) if preset else {}), **params})
            (locks / f"compile-{i}.done").touch()


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
