"""Output that is never half-written: masks, mask videos, folders and manifests.

Every writer here writes under a temporary name in the destination folder and
renames into place only when the content is complete (``os.replace`` is atomic
on one file system), so a killed process leaves either the previous file, or
nothing, or a complete new file, and never something that looks finished but
is not. Temporary names start with a dot and contain ``.partial``.

* :func:`write_bytes_atomic`, :func:`write_text_atomic`, :func:`write_json_atomic`
* :func:`write_image_atomic` -- one PNG (or any OpenCV format)
* :class:`MaskWriter` -- one ``bin%06d.png`` per frame, CDnet numbering, each
  marked as written by bgsub (:func:`is_written_mask`), so that replacing the
  masks of an earlier run never deletes a file it did not write
* :class:`MaskVideoWriter` -- a mask video, renamed into place on ``close()``
* :class:`AtomicDir` -- a folder filled under a temporary name, then renamed
* :class:`Manifest` -- the JSON record of a batch run
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shutil
import zlib
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from learners._persist import write_atomic

__all__ = [
    "write_bytes_atomic",
    "make_folder",
    "temp_path",
    "json_safe",
    "write_text_atomic",
    "write_json_atomic",
    "write_image_atomic",
    "MaskWriter",
    "MaskVideoWriter",
    "AtomicDir",
    "Manifest",
    "MASK_PATTERN",
    "mask_name",
    "list_masks",
    "is_written_mask",
    "foreign_masks",
    "encode_mask_png",
    "is_partial_name",
    "remove_partials",
    "utc_now",
]

#: File name of frame ``n``'s mask, as CDnet expects (``bin000001.png`` first).
MASK_PATTERN = "bin{:06d}.png"
_MASK_RE = re.compile(r"^bin(\d{6,})\.png$")
_PARTIAL_RE = re.compile(r"^\..*\.partial")
_MASK_PARTIAL_RE = re.compile(r"^\.bin\d{6,}\.partial-\d+-[0-9a-f]+\.png$")


def utc_now() -> str:
    """The time now, ISO 8601 in UTC, to the second."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def mask_name(index: int) -> str:
    """``bin%06d.png`` for frame ``index`` (1-based)."""
    return MASK_PATTERN.format(int(index))


def list_masks(folder: str | os.PathLike) -> dict[int, Path]:
    """Frame number to path of every ``bin%06d.png`` in ``folder``."""
    out = {}
    folder = Path(folder)
    if folder.is_dir():
        for e in os.scandir(folder):
            m = _MASK_RE.match(e.name)
            if m:
                out[int(m.group(1))] = Path(e.path)
    return dict(sorted(out.items()))


#: The PNG text chunk that marks a mask as written by :class:`MaskWriter` (``Software: bgsub mask``).
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_TAG_TEXT = b"Software\x00bgsub mask"
_TAG_CHUNK = (len(_TAG_TEXT).to_bytes(4, "big") + b"tEXt" + _TAG_TEXT
              + zlib.crc32(b"tEXt" + _TAG_TEXT).to_bytes(4, "big"))
_IHDR_END = 8 + 4 + 4 + 13 + 4  # signature, then the IHDR chunk, which PNG puts first


#: How masks are encoded: no row filter and run-length deflate. libpng's default tries every row filter on every
#: row, most of an encode's time: a 1920x1080 highway mask took 15.3 ms at compression 1 and takes 3.3 ms (and
#: 6.5 instead of 14.3 KB); the decoded pixels are the same. (An OpenCV without ``IMWRITE_PNG_FILTER`` ignores it.)
MASK_PNG_PARAMS = [cv2.IMWRITE_PNG_COMPRESSION, 1, cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE,
                   getattr(cv2, "IMWRITE_PNG_FILTER", 19), getattr(cv2, "IMWRITE_PNG_FILTER_NONE", 8)]


def encode_mask_png(mask: np.ndarray) -> bytes:
    """``mask`` (uint8 (H, W)) as PNG bytes (:data:`MASK_PNG_PARAMS`) carrying the chunk that marks it as bgsub's
    (the pixels are OpenCV's)."""
    ok, buf = cv2.imencode(".png", mask, MASK_PNG_PARAMS)
    if not ok:
        raise OSError("OpenCV could not encode a mask as PNG")
    data = buf.tobytes()
    if data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":  # pragma: no cover - OpenCV writes IHDR first
        raise OSError("OpenCV wrote an unexpected PNG layout")
    return data[:_IHDR_END] + _TAG_CHUNK + data[_IHDR_END:]


def is_written_mask(path: str | os.PathLike) -> bool:
    """True when ``path`` is a mask PNG written by :class:`MaskWriter` (it carries bgsub's marking chunk).

    Only such files are ever deleted when an earlier run's masks are replaced.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(_IHDR_END + len(_TAG_CHUNK))
    except OSError:
        return False
    return head[:8] == _PNG_SIGNATURE and head[12:16] == b"IHDR" and head[_IHDR_END:] == _TAG_CHUNK


def foreign_masks(folder: str | os.PathLike) -> list[Path]:
    """The ``bin%06d.png`` files in ``folder`` that bgsub did not write (see :func:`is_written_mask`)."""
    return [p for p in list_masks(folder).values() if p.is_symlink() or not is_written_mask(p)]


def is_partial_name(name: str) -> bool:
    """True for the temporary names used by this module (``.NAME.partial...``)."""
    return bool(_PARTIAL_RE.match(name))


def remove_partials(folder: str | os.PathLike, stem: str | None = None, *, prefix: str | None = None) -> int:
    """Delete temporary files and folders left in ``folder`` by a killed writer.

    Only names made by this module (``.NAME.partial...``) are touched; with
    ``stem``, only those of ``NAME == stem``; with ``prefix``, only names that
    start with it (e.g. one job's ``.NAME.partial-JOBID-``). Returns how many
    were removed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    if prefix is None and stem is not None:
        prefix = f".{stem}.partial"
    removed = 0
    for e in os.scandir(folder):
        if not is_partial_name(e.name) or (prefix is not None and not e.name.startswith(prefix)):
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def temp_path(path: str | os.PathLike) -> Path:
    """A temporary name beside ``path`` (``.STEM.partial-PID-RANDOM.SUFFIX``), removed by :func:`remove_partials`."""
    # Keeps the suffix, which OpenCV uses to pick the container.
    path = Path(path)
    return path.with_name(f".{path.stem}.partial-{os.getpid()}-{os.urandom(3).hex()}{path.suffix}")


def make_folder(folder: str | os.PathLike, what: str = "folder") -> Path:
    """Create ``folder`` (and its parents) when missing; OSError with a plain reason when it cannot be.

    A file where a folder should be is named as such (not "File exists"), and a
    folder that exists but cannot be written into is refused (tried with a
    temporary file, which holds for root and read-only mounts too).
    """
    folder = Path(folder) if str(folder) else Path(".")
    existing = folder
    while not existing.is_dir() and existing != existing.parent:
        if existing.exists() or existing.is_symlink():
            raise OSError(f"cannot create the {what} {folder}: {existing} is a file, not a folder")
        existing = existing.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".bgsub-probe.partial-{os.getpid()}-{os.urandom(3).hex()}"
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        os.unlink(probe)
    except OSError as exc:
        raise OSError(f"cannot write into the {what} {folder}: {exc.strerror or exc}") from None
    return folder


def write_bytes_atomic(path: str | os.PathLike, data: bytes, *, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename (with ``fsync``: durably)."""
    return write_atomic(path, data, fsync=fsync, tmp=temp_path(path))


def write_text_atomic(path: str | os.PathLike, text: str, *, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_bytes_atomic(path, text.encode("utf-8"), fsync=fsync)


def _json_default(obj: Any):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot write {type(obj).__name__} to JSON")


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN and infinities (in nested dicts, lists, tuples) turned into None: JSON has neither."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_json_atomic(path: str | os.PathLike, obj: Any, *, fsync: bool = True) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically (NaN -> null)."""
    text = json.dumps(json_safe(obj), indent=2, default=_json_default, allow_nan=False)
    return write_text_atomic(path, text + "\n", fsync=fsync)


def write_image_atomic(path: str | os.PathLike, image: np.ndarray, params: list[int] | None = None) -> Path:
    """Encode ``image`` by ``path``'s suffix (OpenCV) and write it atomically."""
    path = Path(path)
    ok, buf = cv2.imencode(path.suffix or ".png", image, params or [])
    if not ok:
        raise OSError(f"OpenCV could not encode an image as {path.suffix}")
    return write_bytes_atomic(path, buf.tobytes())


def _as_mask(mask: np.ndarray) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.ndim == 3 and mask.shape[2] == 1:
        mask = mask[:, :, 0]
    if mask.ndim != 2:
        raise ValueError(f"a mask must be (H, W), got shape {mask.shape}")
    if mask.dtype == bool:
        return np.where(mask, np.uint8(255), np.uint8(0))
    if mask.dtype != np.uint8:
        return np.clip(mask, 0, 255).astype(np.uint8)
    return mask


class MaskWriter:
    """Writes one ``bin%06d.png`` per frame into a folder.

    Parameters
    ----------
    folder : str or Path
        Created if missing.
    atomic : bool
        Write each file through a temporary name and a rename (default). Turn
        off only when the whole folder is itself renamed into place later
        (:class:`AtomicDir`).

    Attributes
    ----------
    folder : Path
    count : int
        Masks written.
    last_index : int or None
        Frame number of the last mask written.
    """

    def __init__(self, folder: str | os.PathLike, *, atomic: bool = True) -> None:
        self.folder = Path(folder)
        make_folder(self.folder, "mask folder")
        self.atomic = atomic
        self.count = 0
        self.last_index: int | None = None

    def path(self, index: int) -> Path:
        """Where frame ``index``'s mask goes."""
        return self.folder / mask_name(index)

    def write(self, index: int, mask: np.ndarray) -> Path:
        """Write frame ``index``'s mask (uint8 0/255 or bool, (H, W))."""
        path = self.path(index)
        data = encode_mask_png(_as_mask(mask))
        if self.atomic:
            write_bytes_atomic(path, data)
        else:
            with open(path, "wb") as fh:
                fh.write(data)
        self.count += 1
        self.last_index = int(index)
        return path

    def remove_stale(self, first: int = 1) -> int:
        """Delete the masks an earlier run wrote into the folder, from frame ``first`` on.

        Only files this class wrote are deleted (:func:`is_written_mask`); any
        other ``bin%06d.png`` is kept. Returns how many were deleted.
        """
        n = 0
        for index, p in list_masks(self.folder).items():
            if index >= first and not p.is_symlink() and is_written_mask(p):
                p.unlink(missing_ok=True)
                n += 1
        for e in os.scandir(self.folder):  # the temporary files of masks a killed run was writing
            if _MASK_PARTIAL_RE.match(e.name) and e.is_file(follow_symlinks=False):
                try:
                    os.unlink(e.path)
                except FileNotFoundError:
                    pass
        return n


#: Codec by container: FFV1 is lossless (the masks stay exactly 0/255).
_FOURCC_BY_SUFFIX = {".mp4": "mp4v", ".m4v": "mp4v", ".avi": "MJPG", ".mkv": "FFV1", ".mov": "mp4v"}


class MaskVideoWriter:
    """Writes masks (or any frames) into a video file, renamed into place on close.

    The file is written as ``.NAME.partial-...SUFFIX`` beside ``path`` and
    renamed to ``path`` by :meth:`close`, once the container is finalised, so an
    interrupted run that still reaches ``close()`` (Ctrl-C) leaves a playable
    file and a killed one leaves no file under the final name.

    Parameters
    ----------
    path : str or Path
        ``.mp4`` (MPEG-4 Part 2), ``.avi`` (MJPG) or ``.mkv`` (FFV1, lossless).
    fps : float
        Frame rate written to the container.
    fourcc : str, optional
        Four-character codec code, overriding the choice by suffix.

    Attributes
    ----------
    path : Path
    count : int
        Frames written.
    """

    def __init__(self, path: str | os.PathLike, fps: float | None = 25.0, *, fourcc: str | None = None) -> None:
        self.path = Path(path)
        suffix = self.path.suffix.lower()
        if fourcc is None:
            fourcc = _FOURCC_BY_SUFFIX.get(suffix)
            if fourcc is None:
                raise ValueError(
                    f"cannot tell the video format of {self.path.name!r}: end the name in .mp4, .avi or .mkv"
                )
        if len(fourcc) != 4:
            raise ValueError(f"fourcc must be 4 characters, got {fourcc!r}")
        self.fourcc = fourcc
        self.fps = float(fps) if fps and fps > 0 else 25.0
        make_folder(self.path.parent, f"folder of {self.path.name}")
        self._tmp = temp_path(self.path)
        self._writer: cv2.VideoWriter | None = None
        self._size: tuple[int, int] | None = None
        self._color: bool | None = None
        self.count = 0
        self.closed = False

    def write(self, frame: np.ndarray) -> None:
        """Append one frame: a mask (H, W) or a BGR image (H, W, 3), uint8."""
        if self.closed:
            raise ValueError(f"{self.path} is closed")
        frame = np.asarray(frame)
        if frame.dtype == bool:
            frame = _as_mask(frame)
        color = frame.ndim == 3
        size = (frame.shape[1], frame.shape[0])
        if self._writer is None:
            self._writer = cv2.VideoWriter(
                str(self._tmp), cv2.VideoWriter_fourcc(*self.fourcc), self.fps, size, isColor=color
            )
            if not self._writer.isOpened():
                self._writer = None
                raise OSError(
                    f"OpenCV cannot write {self.fourcc} video to {self.path}; try another container "
                    "(.avi or .mkv)"
                )
            self._size, self._color = size, color
        if size != self._size:
            raise ValueError(f"frame is {size[0]}x{size[1]} but the video is {self._size[0]}x{self._size[1]}")
        if color != self._color:
            frame = cv2.cvtColor(frame, cv2.COLOR_GRAY2BGR if self._color else cv2.COLOR_BGR2GRAY)
        self._writer.write(np.ascontiguousarray(frame))
        self.count += 1

    def close(self) -> Path | None:
        """Finalise the container and rename it into place; None if no frame was written."""
        if self.closed:
            return self.path if self.path.exists() and self.count else None
        self.closed = True
        if self._writer is None:
            return None
        self._writer.release()
        self._writer = None
        os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the file being written."""
        self.closed = True
        if self._writer is not None:
            self._writer.release()
            self._writer = None
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> "MaskVideoWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None or issubclass(exc_type, KeyboardInterrupt):
            self.close()
        else:
            self.abort()


class AtomicDir:
    """A folder filled under a temporary name and renamed into place on commit.

    ``with AtomicDir(final) as tmp:`` creates ``.NAME.partial-...`` beside
    ``final``; leaving the block without an exception renames it to ``final``
    (replacing an earlier ``final``), with an exception deletes it.

    Parameters
    ----------
    final : str or Path
        The folder to create.

    Attributes
    ----------
    final : Path
    tmp : Path
        The temporary folder (exists between ``__enter__`` and commit).
    """

    def __init__(self, final: str | os.PathLike) -> None:
        self.final = Path(final)
        self.tmp: Path | None = None

    def _temp_name(self) -> Path:
        return self.final.with_name(f".{self.final.name}.partial-{os.getpid()}-{os.urandom(4).hex()}")

    def open(self) -> Path:
        """Create the temporary folder (permissions as for any new folder) and return it."""
        self.final.parent.mkdir(parents=True, exist_ok=True)
        while True:
            tmp = self._temp_name()
            try:
                os.mkdir(tmp)  # unlike mkdtemp, honours the umask (not 0700)
            except FileExistsError:
                continue
            self.tmp = tmp
            return tmp

    def commit(self) -> Path:
        """Rename the temporary folder to ``final``."""
        if self.tmp is None:
            raise ValueError("AtomicDir.commit() before open()")
        if self.final.exists():
            old = self.final.with_name(f".{self.final.name}.partial-old-{os.getpid()}-{os.urandom(3).hex()}")
            os.replace(self.final, old)
            os.replace(self.tmp, self.final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(self.tmp, self.final)
        self.tmp = None
        return self.final

    def abort(self) -> None:
        """Delete the temporary folder."""
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self) -> Path:
        return self.open()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class Manifest:
    """The JSON record of a batch run (``OUT_DIR/manifest.json``).

    Holds the parameters (``config``), one entry per input in ``items`` keyed
    by its path relative to the input folder (``status``: ``pending``,
    ``running``, ``done``, ``failed`` or ``interrupted``; ``frames``, ``fps``,
    ``seconds``, ``error``, ``warnings``, ``output``), and one entry per
    invocation in ``runs``. Saved atomically with :meth:`save`.

    Parameters
    ----------
    path : str or Path
        The JSON file.
    data : dict, optional
        Initial content (default: empty manifest).
    """

    VERSION = 1

    def __init__(self, path: str | os.PathLike, data: dict | None = None) -> None:
        self.path = Path(path)
        self.data = data if data is not None else {
            "format": "bgsub-batch-manifest",
            "version": self.VERSION,
            "config": {},
            "runs": [],
            "items": {},
        }

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Manifest":
        """Read ``path``; a missing file gives an empty manifest.

        Raises
        ------
        ValueError
            When the file exists but is not a batch manifest.
        """
        path = Path(path)
        if not path.exists():
            return cls(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not a readable batch manifest: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != "bgsub-batch-manifest":
            raise ValueError(f"{path} is not a bgsub batch manifest")
        data.setdefault("runs", [])
        data.setdefault("items", {})
        data.setdefault("config", {})
        return cls(path, data)

    @property
    def items(self) -> dict[str, dict]:
        return self.data["items"]

    @property
    def config(self) -> dict:
        return self.data["config"]

    @property
    def runs(self) -> list[dict]:
        return self.data["runs"]

    def save(self) -> Path:
        """Write the manifest atomically."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return write_json_atomic(self.path, self.data)

    def counts(self) -> dict[str, int]:
        """How many items have each status."""
        out: dict[str, int] = {}
        for item in self.items.values():
            out[item.get("status", "?")] = out.get(item.get("status", "?"), 0) + 1
        return out
