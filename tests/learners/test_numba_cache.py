"""The numba cache's stamp of a file covers it and every project file it imports (learners._numba_cache)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import numba.core.caching as caching

import bgsub.models._frame_kernels as fk
import learners.expansion
from learners import _numba_cache
from learners._numba_cache import imported_files, source_closure, source_stamp

ROOT = Path(_numba_cache.__file__).resolve().parents[1]


def _copy_project(dst: Path) -> None:
    for package in _numba_cache.PACKAGES:
        shutil.copytree(ROOT / package, dst / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def test_a_files_stamp_changes_with_it_and_what_it_imports_and_only_those(tmp_path):
    _copy_project(tmp_path)
    kernels = tmp_path / "bgsub" / "models" / "_bounded_frame.py"
    em = tmp_path / "learners" / "online_em.py"
    base, base_em = source_stamp(kernels, tmp_path), source_stamp(em, tmp_path)
    assert base == source_stamp(ROOT / "bgsub" / "models" / "_bounded_frame.py", ROOT)  # same bytes, another folder
    # the modules whose functions the bounded frame inlines, through the frame kernels
    closure = {p.relative_to(tmp_path).as_posix() for p in source_closure(kernels, tmp_path)}
    assert {"learners/expansion.py", "learners/steps.py", "learners/kernels.py", "bgsub/models/_frame_kernels.py",
            "bgsub/models/_bounded_frame.py"} <= closure
    assert "bgsub/cli.py" not in closure and "learners/online_em.py" not in closure

    dependency = tmp_path / "learners" / "expansion.py"
    original = dependency.read_bytes()
    dependency.write_bytes(original + b"\n# an edit\n")
    assert source_stamp(kernels, tmp_path) != base  # the kernels, which inline it, recompile
    assert source_stamp(em, tmp_path) == base_em  # online EM, which does not import it, does not
    dependency.write_bytes(original)
    assert source_stamp(kernels, tmp_path) == base

    (tmp_path / "bgsub" / "cli.py").write_bytes(b"# not imported by a kernel\n")
    assert source_stamp(kernels, tmp_path) == base


def test_imports_are_resolved_to_files(tmp_path):
    pkg = tmp_path / "bgsub" / "models"
    pkg.mkdir(parents=True)
    for name in ("__init__.py", "a.py", "b.py", "c.py"):
        (pkg / name).write_text("")
    (tmp_path / "learners").mkdir()
    (tmp_path / "learners" / "steps.py").write_text("")
    (pkg / "a.py").write_text("import numpy as np\nfrom bgsub.models import b as bb\nfrom . import c\n"
                              "def f():\n    from learners.steps import x\n    import os\n")
    assert imported_files(pkg / "a.py", tmp_path) == {pkg / "b.py", pkg / "c.py", tmp_path / "learners" / "steps.py"}
    (pkg / "b.py").write_text("from .c import g\nfrom bgsub.models import nothing_here\n")
    assert imported_files(pkg / "b.py", tmp_path) == {pkg / "c.py", pkg / "__init__.py"}
    assert source_closure(pkg / "a.py", tmp_path) == sorted(
        [pkg / "a.py", pkg / "b.py", pkg / "c.py", pkg / "__init__.py", tmp_path / "learners" / "steps.py"])


def test_project_functions_are_stamped_with_the_project_sources():
    for dispatcher in (fk.olkn_bootstrap, learners.expansion.expansion_sum):
        locator = dispatcher._cache._impl._locator
        assert isinstance(locator, _numba_cache._ProjectStamp), type(locator)
        assert locator.get_source_stamp() == source_stamp(Path(dispatcher.py_func.__code__.co_filename).resolve(), ROOT)
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
