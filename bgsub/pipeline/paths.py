"""Where outputs may go: never onto, around or inside an input, and only where they can be written.

Every command that writes (``run``, ``demo``, ``eval``, ``batch``) and the desktop app
check their outputs here before they read a frame:

* :func:`check_outputs` refuses an output that is an input (the same file or
  folder after resolving symbolic links, or a hard link to it), contains one,
  or lies inside an input folder, and two outputs that name the same file;
* :func:`check_writable` refuses an output whose folder is a file, or a folder
  this process cannot create files in (tried with a real temporary file, so it
  also holds for root and for read-only mounts);
* :func:`check_mask_folder` refuses a mask folder holding ``bin%06d.png`` files
  bgsub did not write (the masks would overwrite or mix with them);
* :func:`source_path` is the file or folder an :func:`bgsub.sources.open_source`
  spec reads (None for cameras and streams).

The checks raise :class:`OutputError` (a ``ValueError``) with a one-line message
naming the option, the path and what to do.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

__all__ = ["OutputError", "check_outputs", "check_writable", "check_mask_folder", "probe_folder", "source_path",
           "real_path"]

Labelled = Iterable[tuple[str, "str | os.PathLike | None"]]


class OutputError(ValueError):
    """An output that would overwrite or mix with an input, or that cannot be written."""


def real_path(path: str | os.PathLike) -> Path:
    """``path`` absolute, with every symbolic link along it resolved (also where the end does not exist yet)."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def source_path(spec) -> Path | None:
    """The file or folder :func:`bgsub.sources.open_source` reads for ``spec``; None for a camera or a stream."""
    if spec is None or isinstance(spec, (bool, int)):
        return None
    text = os.fspath(spec) if isinstance(spec, os.PathLike) else str(spec)
    text = text.strip()
    if not text or (text.isdigit() and not Path(text).exists()):
        return None
    if text.lower().startswith("file://"):
        text = text[7:]
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text):
        return None
    return Path(text).expanduser()


def _same(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)  # hard links, bind mounts
    except OSError:
        return False


def _inside(path: Path, folder: Path) -> bool:
    return folder in path.parents


def _what(label: str, path: Path) -> str:
    kind = "folder" if path.is_dir() else "file"
    return f"the {label} {kind} {path}"


def check_outputs(inputs: Labelled, outputs: Labelled, *, may_replace: Iterable[tuple[str, str]] = (),
                  may_lie_inside: Iterable[str] = ()) -> None:
    """Refuse any output that is, contains or lies inside an input, and two outputs naming one file.

    Parameters
    ----------
    inputs : iterable of (label, path or None)
        What is read: ``("input", "clip.mp4")``, ``("--roi", "roi.png")``, ... (None entries are skipped).
    outputs : iterable of (option, path or None)
        What is written: ``("--out", "masks/")``, ``("--mask-video", "m.mkv")``, ...
    may_replace : iterable of (option, label)
        Pairs where the output may be the input itself: ``("--checkpoint", "--resume")``
        (the checkpoint is read whole before it is written again).
    may_lie_inside : iterable of str
        Labels of input folders an output may lie inside: ``"input"`` for a
        batch's input tree, whose scan skips the output folder.

    Raises
    ------
    OutputError
        Naming the output, the input and what to do.
    """
    allowed, inside_ok = set(may_replace), set(may_lie_inside)
    ins = [(label, Path(p), real_path(p)) for label, p in inputs if p is not None]
    outs = [(label, Path(p), real_path(p)) for label, p in outputs if p is not None]
    for option, given, out in outs:
        for label, in_given, inp in ins:
            if _same(out, inp):
                if (option, label) in allowed:
                    continue
                if in_given.is_dir():
                    raise OutputError(f"{option} {given} is {_what(label, in_given)}: writing into it would mix "
                                      "with the input and could replace it; choose another folder")
                raise OutputError(f"{option} {given} is {_what(label, in_given)}: writing it would destroy "
                                  "the input; choose another name")
            if _inside(inp, out):
                raise OutputError(f"{option} {given} contains {_what(label, in_given)}: outputs would mix with "
                                  "the input (and could replace it); choose a folder outside it")
            if _inside(out, inp) and label not in inside_ok:
                raise OutputError(f"{option} {given} lies inside {_what(label, in_given)}: outputs would mix "
                                  "with the input; choose a place outside it")
    for i, (option, given, out) in enumerate(outs):
        for other, other_given, out2 in outs[i + 1:]:
            if _same(out, out2):
                raise OutputError(f"{option} {given} and {other} {other_given} name the same place; give each "
                                  "output its own")


def probe_folder(folder: str | os.PathLike) -> None:
    """Create and remove a temporary file in ``folder`` (a real test, not ``os.access``, which is wrong for root
    and for some network file systems); raises OSError when that cannot be done."""
    probe = Path(folder) / f".bgsub-probe.partial-{os.getpid()}-{os.urandom(3).hex()}"
    fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    os.unlink(probe)


def check_writable(option: str, path: str | os.PathLike, *, folder: bool = False) -> None:
    """Refuse an output ``path`` that cannot be written, before any work.

    ``folder=False``: ``path`` is a file to be written (its folder is created
    when missing); ``folder=True``: ``path`` is a folder to be filled. Nothing is
    left behind: a temporary file is created and removed in the folder (or, when
    it does not exist yet, in the nearest folder above it that does).

    Raises
    ------
    OutputError
        When ``path`` (or a folder on the way to it) is a file, a file output is
        an existing folder, or the folder is not writable (read-only, permission
        denied), with the reason.
    """
    p = Path(path).expanduser()
    if folder:
        if p.exists() and not p.is_dir():
            raise OutputError(f"{option} {path} is a file; give a folder")
        target = p
    else:
        if p.is_dir():
            raise OutputError(f"{option} {path} is a folder; give a file name")
        target = p.parent if str(p.parent) else Path(".")
    existing = target
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():
            raise OutputError(f"{option} {path}: {existing} is a broken symbolic link; remove it or choose "
                              "another place")
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"{option} {path}: {existing} is a file, not a folder; choose a path in a folder")
    try:
        probe_folder(existing)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OutputError(f"{option} {path}: the folder {existing} is not writable ({reason}); choose a folder "
                          "you can write to") from None


def check_mask_folder(option: str, folder: str | os.PathLike) -> None:
    """Refuse a mask folder that holds ``bin%06d.png`` files bgsub did not write (the masks would overwrite or mix
    with them); bgsub's own masks of an earlier run are fine (they are replaced)."""
    from bgsub.writers import foreign_masks

    foreign = foreign_masks(folder)
    if foreign:
        names = ", ".join(p.name for p in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise OutputError(f"{option} {folder} already holds {len(foreign)} bin%06d.png file(s) that bgsub did not "
                          f"write ({names}); this run would overwrite or mix with them: move them away or choose "
                          "another folder")
