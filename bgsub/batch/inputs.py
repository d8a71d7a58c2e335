"""What a batch processes: every video file and CDnet sequence folder under a folder, links resolved."""

from __future__ import annotations

import errno
import fnmatch
import os
from pathlib import Path

from bgsub.cdnet import is_cdnet_sequence
from bgsub.settings import ConfigError
from bgsub.sources import VIDEO_EXTENSIONS, natural_sort_key

__all__ = ["find_inputs", "matches_pattern"]


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _input_sort_key(root: Path, p: Path) -> list:
    return natural_sort_key(p.relative_to(root).as_posix() if p != root else p.name)


def matches_pattern(root: str | os.PathLike, path: str | os.PathLike, pattern: str | None) -> bool:
    """True when ``pattern`` (a shell pattern) matches the input's name or its path relative to ``root``."""
    if not pattern:
        return True
    root, p = Path(root), Path(path)
    rel = p.relative_to(root).as_posix() if p != root else p.name
    return fnmatch.fnmatch(p.name, pattern) or fnmatch.fnmatch(rel, pattern)


def find_inputs(in_dir: str | os.PathLike, pattern: str | None = None,
                exclude: str | os.PathLike | None = None,
                skipped: list[dict] | None = None) -> list[tuple[Path, str]]:
    """Video files and CDnet sequence folders under ``in_dir``, in natural order.

    Symbolic links are resolved and never make an input of their own: a link
    to an input of the tree is that input (one job, under the target's name);
    a link to anything else (another folder of the tree, which is searched under
    its own name, a loop, a file that is not an input), a dangling link, and a
    link to somewhere outside ``in_dir`` are skipped and, when ``skipped`` is
    given, appended to it as ``{"path", "target", "reason"}``.

    Parameters
    ----------
    in_dir : path
        The folder searched (recursively). A CDnet sequence folder itself is
        one input.
    pattern : str, optional
        Shell pattern (``*.mp4``, ``baseline/*``) matched against the input's
        name and its path relative to ``in_dir``.
    exclude : path, optional
        A folder not to descend into (the output folder, when inside ``in_dir``).
    skipped : list, optional
        Receives the links that were skipped, and why.

    Returns
    -------
    list of (Path, str)
        Each input and its kind, ``"video"`` or ``"cdnet"``.

    Raises
    ------
    ConfigError
        When a folder of the tree cannot be read (its permissions).
    """
    root = Path(in_dir)
    real_root = root.resolve()
    exclude_real = Path(exclude).resolve() if exclude is not None else None
    found: dict[Path, tuple[Path, str]] = {}  # real path -> (path under root, kind)
    links: list[Path] = []

    def unreadable(path, exc: OSError):
        return ConfigError(f"cannot read {path}: {exc.strerror or exc}; make it readable, or move it out of {in_dir}")

    def is_sequence(folder: Path) -> bool:
        try:
            return is_cdnet_sequence(folder)
        except OSError as exc:
            raise unreadable(folder, exc) from None

    def scan(folder: Path) -> None:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: natural_sort_key(e.name))
        except OSError as exc:
            raise unreadable(folder, exc) from None
        for e in entries:
            if e.name.startswith("."):
                continue
            path = folder / e.name
            try:
                if e.is_symlink():
                    links.append(path)
                elif e.is_dir(follow_symlinks=False):
                    if exclude_real is not None and path.resolve() == exclude_real:
                        continue
                    if is_sequence(path):
                        found[path.resolve()] = (path, "cdnet")
                    else:
                        scan(path)
                elif Path(e.name).suffix.lower() in VIDEO_EXTENSIONS and e.is_file(follow_symlinks=False):
                    found[path.resolve()] = (path, "video")
            except OSError as exc:
                raise unreadable(path, exc) from None

    if is_sequence(root):
        found[real_root] = (root, "cdnet")
    else:
        scan(root)
    notes: list[dict] = []
    for link in sorted(links, key=lambda p: _input_sort_key(root, p)):
        rel = link.relative_to(root).as_posix()
        try:
            shown = os.readlink(link)
        except OSError:
            shown = "?"
        try:
            target = link.resolve(strict=True)
        except FileNotFoundError:
            reason = "a dangling link (its target does not exist)"
        except (RuntimeError, OSError) as exc:  # a loop (ELOOP), or a folder on the way that cannot be read
            reason = ("a link loop" if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP
                      else f"a link that cannot be followed ({getattr(exc, 'strerror', None) or exc})")
        else:
            shown = str(target)
            if not _within(target, real_root):
                reason = "a link to outside the input folder (only links within it are followed)"
            elif exclude_real is not None and _within(target, exclude_real):
                reason = "a link into the output folder"
            elif target in found:
                reason = (f"a link to the input {_rel(root, found[target][0])}, which is processed once, under its "
                          "own name")
            elif any(part.startswith(".") for part in target.relative_to(real_root).parts):
                reason = "a link to a hidden file or folder (hidden ones are not searched)"
            elif target.is_dir() and _within(real_root, target):
                reason = "a link loop (to a folder that contains it)"
            elif target.is_dir():
                reason = "a link to a folder of the input tree, which is searched under its own name"
            else:
                reason = "a link to a file that is not an input (not a video file, or inside a sequence folder)"
        notes.append({"path": rel, "target": shown, "reason": reason})
    if skipped is not None:
        skipped.extend(notes)
    inputs = [v for v in found.values() if matches_pattern(root, v[0], pattern)]
    inputs.sort(key=lambda item: _input_sort_key(root, item[0]))
    return inputs


def _rel(root: Path, p: Path) -> str:
    return p.relative_to(root).as_posix() if p != root else p.name
