"""numba's on-disk cache, kept fresh across this project's modules.

numba stamps a cached function with its own source file only (numba 0.68: a hash of the file's
bytes). The kernels here inline functions from other modules (``learners.expansion`` and
``learners.steps`` inside ``bgsub.models._frame_kernels``, for one), so an edit to
``learners/expansion.py`` alone left every cached frame kernel compiled from the old code: loaded
without a warning, in a development tree, in a cache directory that outlives a checkout (the CI's
``NUMBA_CACHE_DIR``), or in an installation upgraded over its ``__pycache__``.

:func:`install` puts a locator in front of numba's own for the files of ``learners`` and
``bgsub`` that compile with numba: it stores the cache where numba would (``NUMBA_CACHE_DIR``, the
module's ``__pycache__``, or the user-wide folder, in numba's order) and stamps every such
function with one hash of all those files (:func:`source_stamp`). A change to any of them
recompiles them all on first use (a few minutes for the whole test suite); a cache is never used
with sources other than those it was compiled from. Other packages' functions keep numba's
locators.

This module imports only the standard library and numba.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import re
from pathlib import Path

from numba.core import caching

__all__ = ["install", "is_cached", "jitted_sources", "source_stamp"]

#: The packages whose jitted functions inline each other's.
PACKAGES = ("learners", "bgsub")
#: A file that compiles with numba (its functions can be inlined into another file's).
_JITTED = re.compile(rb"\bnjit\b|@intrinsic\b|@jit\b|@vectorize\b|@overload\b")
_ROOT = Path(__file__).resolve().parents[1]


def jitted_sources(root: Path = _ROOT) -> list[Path]:
    """The ``.py`` files of :data:`PACKAGES` under ``root`` that compile with numba, sorted."""
    files = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if _JITTED.search(path.read_bytes()):
                files.append(path)
    return files


def source_stamp(root: Path = _ROOT) -> bytes:
    """One SHA-256 over every file of :func:`jitted_sources` (its path relative to ``root`` and its bytes):
    any edit to any of them changes it."""
    h = hashlib.sha256()
    for path in jitted_sources(root):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        data = path.read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


@functools.lru_cache(maxsize=None)
def _project_stamp() -> bytes:
    return source_stamp(_ROOT)


def _ours(py_file: str) -> bool:
    try:
        rel = Path(py_file).resolve().relative_to(_ROOT)
    except ValueError:
        return False
    return len(rel.parts) > 1 and rel.parts[0] in PACKAGES


class _ProjectStamp:
    """Mixin for numba's source-file locators: the project's stamp instead of the file's, and only for
    this project's files."""

    def get_source_stamp(self):
        return _project_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _ours(py_file):
            return None
        return super().from_function(py_func, py_file)


class UserProvidedLocator(_ProjectStamp, caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, stamped with the project's sources."""


class InTreeLocator(_ProjectStamp, caching.InTreeCacheLocator):
    """The module's ``__pycache__``, stamped with the project's sources."""


class UserWideLocator(_ProjectStamp, caching.UserWideCacheLocator):
    """numba's user-wide cache folder, stamped with the project's sources."""


_LOCATORS = (UserProvidedLocator, InTreeLocator, UserWideLocator)


def install() -> None:
    """Put the project's locators first in numba's list (once). Called by ``learners`` on import, before
    any of its or ``bgsub``'s functions is decorated. ``NUMBA_CACHE_LOCATOR_CLASSES``, where set, replaces
    numba's list, and these locators with it."""
    classes = caching.CacheImpl._locator_classes
    if classes[: len(_LOCATORS)] != list(_LOCATORS):
        classes[:] = list(_LOCATORS) + [c for c in classes if c not in _LOCATORS]


def is_cached(dispatcher) -> bool:
    """Whether numba's cache holds ``dispatcher`` compiled from the current sources (for some signature): if
    not, its first call compiles it. True where that cannot be told (not a cached jitted function)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except (AttributeError, OSError, EOFError, pickle.UnpicklingError):
        return True
