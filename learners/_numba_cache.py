"""numba's on-disk cache, kept fresh across this project's modules.

numba stamps a cached function with its own source file only (numba 0.68: a hash of the file's
bytes). The kernels here inline functions from other modules (``learners.expansion`` and
``learners.steps`` inside ``bgsub.models._frame_kernels``, for one), so an edit to
``learners/expansion.py`` alone left every cached frame kernel compiled from the old code: loaded
without a warning, in a development tree, in a cache directory that outlives a checkout (the CI's
``NUMBA_CACHE_DIR``), or in an installation upgraded over its ``__pycache__``.

:func:`install` puts a locator in front of numba's own for the files of ``learners`` and
``bgsub``: it stores the cache where numba would (``NUMBA_CACHE_DIR``, the module's
``__pycache__``, or the user-wide folder, in numba's order) and stamps every function of a file
with one hash of that file and of every file of the two packages it imports, directly or through
others (:func:`source_stamp`; constants a kernel reads from another module are frozen into its
machine code too). An edit recompiles the functions of the files that import the edited one, and
only those; a cache is never used with sources other than those it was compiled from. Other
packages' functions keep numba's locators.

This module imports only the standard library and numba.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import pickle
from pathlib import Path

from numba.core import caching

__all__ = ["install", "is_cached", "imported_files", "source_closure", "source_stamp"]

#: The packages whose jitted functions inline each other's.
PACKAGES = ("learners", "bgsub")
_ROOT = Path(__file__).resolve().parents[1]


def _module_file(root: Path, module: str) -> Path | None:
    """The file of ``module`` (a dotted name) under ``root``, if it is one of :data:`PACKAGES`'."""
    parts = module.split(".")
    if not parts or parts[0] not in PACKAGES:
        return None
    base = root.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported_files(path: Path, root: Path = _ROOT) -> set[Path]:
    """The files of :data:`PACKAGES` that ``path`` imports, anywhere in it (``from a.b import c`` gives
    ``a/b/c.py`` where ``c`` is a module, else ``a/b.py`` or ``a/b/__init__.py``)."""
    return set(_imported_files(Path(path), root, path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=None)
def _imported_files(path: Path, root: Path, mtime: int) -> frozenset[Path]:
    package = path.relative_to(root).parts[:-1]
    names = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                names.append(sub if _module_file(root, sub) is not None else base)
    return frozenset(f for f in (_module_file(root, name) for name in names) if f is not None)


def source_closure(path: Path, root: Path = _ROOT) -> list[Path]:
    """``path`` and every file of :data:`PACKAGES` it imports, directly or through others, sorted."""
    seen: set[Path] = set()
    todo = [Path(path)]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(imported_files(current, root) - seen)
    return sorted(seen)


def source_stamp(path: Path, root: Path = _ROOT) -> bytes:
    """One SHA-256 over :func:`source_closure` of ``path`` (each file's path relative to ``root`` and its
    bytes): an edit to ``path`` or to any file it imports changes it, an edit elsewhere does not."""
    h = hashlib.sha256()
    for file in source_closure(path, root):
        h.update(file.relative_to(root).as_posix().encode())
        h.update(b"\0")
        data = file.read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


@functools.lru_cache(maxsize=None)
def _file_stamp(py_file: str) -> bytes:
    return source_stamp(Path(py_file).resolve(), _ROOT)


def _ours(py_file: str) -> bool:
    try:
        rel = Path(py_file).resolve().relative_to(_ROOT)
    except ValueError:
        return False
    return len(rel.parts) > 1 and rel.parts[0] in PACKAGES


class _ProjectStamp:
    """Mixin for numba's source-file locators: the stamp of the file and of what it imports
    (:func:`source_stamp`) instead of the file's own, and only for this project's files."""

    def get_source_stamp(self):
        return _file_stamp(self._py_file)

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
