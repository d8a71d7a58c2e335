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
