"""The numba cache's stamp covers every jitted source of learners and bgsub (learners._numba_cache)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numba.core.caching as caching

import bgsub.models._frame_kernels as fk
import learners.expansion
from learners import _numba_cache
from learners._numba_cache import jitted_sources, source_stamp

ROOT = Path(_numba_cache.__file__).resolve().parents[1]


def _copy_project(dst: Path) -> None:
    for package in _numba_cache.PACKAGES:
        shutil.copytree(ROOT / package, dst / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def test_stamp_changes_with_every_jitted_source_and_only_those(tmp_path):
    _copy_project(tmp_path)
    base = source_stamp(tmp_path)
    assert base == source_stamp(ROOT)  # the same bytes, another folder
    jitted = {p.relative_to(tmp_path).as_posix() for p in jitted_sources(tmp_path)}
    # the modules whose functions the frame kernels inline, and the kernels themselves
    assert {"learners/expansion.py", "learners/steps.py", "learners/kernels.py",
            "bgsub/models/_frame_kernels.py", "bgsub/models/_bounded_frame.py"} <= jitted
    assert "bgsub/cli.py" not in jitted and "bgsub/writers.py" not in jitted

    dependency = tmp_path / "learners" / "expansion.py"
    original = dependency.read_bytes()
    dependency.write_bytes(original + b"\n# an edit\n")
    assert source_stamp(tmp_path) != base  # bgsub's kernels, which inline it, recompile
    dependency.write_bytes(original)
    assert source_stamp(tmp_path) == base

    (tmp_path / "bgsub" / "cli.py").write_bytes(b"# not compiled by numba\n")
    assert source_stamp(tmp_path) == base  # no recompilation for a file numba never sees


def test_project_functions_are_stamped_with_the_project_sources():
    for dispatcher in (fk.olkn_bootstrap, learners.expansion.expansion_sum):
        locator = dispatcher._cache._impl._locator
        assert isinstance(locator, _numba_cache._ProjectStamp), type(locator)
        assert locator.get_source_stamp() == source_stamp(ROOT)
    assert caching.CacheImpl._locator_classes[:3] == list(_numba_cache._LOCATORS)
    _numba_cache.install()  # idempotent
    assert caching.CacheImpl._locator_classes[:3] == list(_numba_cache._LOCATORS)
    assert caching.CacheImpl._locator_classes.count(_numba_cache.InTreeLocator) == 1


def test_other_packages_keep_numbas_locators(tmp_path):
    module = tmp_path / "elsewhere_jitted.py"
    module.write_text("from numba import njit\n\n@njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    spec = importlib.util.spec_from_file_location("elsewhere_jitted", module)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["elsewhere_jitted"] = mod
    try:
        spec.loader.exec_module(mod)
        assert mod.twice(21) == 42
        locator = mod.twice._cache._impl._locator
        assert not isinstance(locator, _numba_cache._ProjectStamp)
        assert type(locator).__module__ == "numba.core.caching"
    finally:
        del sys.modules["elsewhere_jitted"]


def test_is_cached_tells_whether_the_first_call_compiles(tmp_path):
    module = tmp_path / "cached_once.py"
    module.write_text("from numba import njit\n\n@njit(cache=True)\ndef thrice(x):\n    return 3 * x\n")

    def load():
        spec = importlib.util.spec_from_file_location("cached_once", module)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    first = load()
    assert not _numba_cache.is_cached(first.thrice)
    assert first.thrice(2) == 6  # compiles and writes the cache
    assert _numba_cache.is_cached(load().thrice)  # a new process (here: a new module) would load it
    module.write_text(module.read_text() + "\n# edited\n")
    assert not _numba_cache.is_cached(load().thrice)  # stale: compiled from other sources
    assert _numba_cache.is_cached(len)  # not a jitted function: nothing to tell
