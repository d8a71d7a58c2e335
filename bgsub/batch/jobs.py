"""The jobs of a batch: one per input, where its output goes, what it depends on, when it is finished.

* :func:`plan_jobs` -- one output folder per input, deterministic and unique:
  the input tree is mirrored; a video whose stem is taken by another video or by a
  folder of the same parent keeps its extension (``sample.mp4`` beside the CDnet
  folder ``sample/`` -> ``sample_mp4/``).
* :class:`JobOptions` -- how every input is processed; its :meth:`~JobOptions.settings`
  are recorded in each ``result.json`` and compared on resume.
* :func:`source_fingerprint` and :func:`is_finished` -- a job is skipped on
  resume only when its ``result.json`` records the same source (path, size,
  modification time) and the same settings.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgsub.batch.outputs import RESULT_FILE

__all__ = ["Job", "JobOptions", "SETTINGS_KEYS", "plan_jobs", "roi_id", "source_fingerprint", "read_result",
           "is_finished", "describe_differences"]


@dataclass(frozen=True)
class Job:
    """One input of a batch.

    Attributes
    ----------
    key : str
        Path of the input relative to ``IN_DIR`` (POSIX separators); the manifest's key.
    source : str
        Absolute path of the video file or sequence folder.
    kind : str
        ``"video"`` or ``"cdnet"``.
    output : str
        Absolute path of its output folder (unique within the batch).
    job_id : str
        Unique per job and run; part of the job's temporary folder names.
    """

    key: str
    source: str
    kind: str
    output: str
    job_id: str = "0"


def plan_jobs(in_dir: str | os.PathLike, out_dir: str | os.PathLike, inputs: list[tuple[Path, str]],
              run_id: str = "0") -> list[Job]:
    """Output folder of each input: the input tree mirrored under ``out_dir``, one folder per input.

    A sequence folder keeps its name (folder names are unique in their parent).
    A video gets its stem, unless another video of its folder has the same stem
    or a folder of the same parent is mirrored under that name (an input folder,
    or the parent of inputs): then it keeps its extension (``clip_mp4``), and if
    that is taken too, a number (``clip_mp4_2``). Names are compared ignoring case
    (for case-insensitive file systems). The result depends only on ``inputs``,
    in the order given; plan every input found and filter afterwards, so that a
    ``--pattern`` does not change where an input's output goes.
    """
    root = Path(in_dir).resolve()
    out = Path(out_dir).resolve()
    entries = []
    for p, kind in inputs:
        p = Path(p).resolve()
        rel = Path(p.name) if p == root else p.relative_to(root)
        entries.append((p, kind, rel))
    taken: dict[str, set[str]] = defaultdict(set)
    for _, kind, rel in entries:
        parts = rel.parts if kind == "cdnet" else rel.parts[:-1]
        for i, part in enumerate(parts):
            taken[Path(*parts[:i]).as_posix()].add(part.casefold())
    stems = Counter((rel.parent.as_posix(), rel.stem.casefold()) for _, kind, rel in entries if kind == "video")
    jobs = []
    for i, (p, kind, rel) in enumerate(entries):
        if kind == "video":
            parent = rel.parent.as_posix()
            name = rel.stem
            if name.casefold() in taken[parent] or stems[(parent, name.casefold())] > 1:
                name = f"{rel.stem}_{rel.suffix.lstrip('.')}"
            base, n = name, 2
            while name.casefold() in taken[parent]:
                name, n = f"{base}_{n}", n + 1
            taken[parent].add(name.casefold())
            target = out / rel.parent / name
        else:
            target = out / rel
        jobs.append(Job(rel.as_posix(), str(p), kind, str(target), f"{run_id}-{i}"))
    return jobs


#: Every setting a job's output depends on besides its source (resume compares them).
SETTINGS_KEYS = ("algo", "params", "mask_video", "max_frames", "roi", "scale", "min_area", "objects", "overlay")


def roi_id(roi) -> str | None:
    """``WxH sha256:...`` of a region-of-interest mask (None for none): what resume compares."""
    if roi is None:
        return None
    import hashlib

    import numpy as np

    roi = np.asarray(roi, dtype=bool)
    digest = hashlib.sha256(repr(roi.shape).encode() + np.packbits(roi).tobytes()).hexdigest()
    return f"{roi.shape[1]}x{roi.shape[0]} sha256:{digest[:16]}"


@dataclass(frozen=True, eq=False)
class JobOptions:
    """How every input of a batch is processed and what it makes besides its masks.

    Attributes
    ----------
    mask_video, overlay : str or None
        Suffix (``.mp4``, ``.avi``, ``.mkv``) of ``masks.EXT`` / ``overlay.EXT``
        (the input with the mask tinted and the objects boxed) in each output folder.
    objects : str or None
        ``.jsonl`` or ``.csv``: ``objects.EXT`` with every object of every frame and its track id.
    max_frames : int or None
        At most this many frames per input.
    roi : ndarray of bool, shape (H, W), or None
        Process only these pixels (every input must have this frame size).
    scale : float
        Processing resolution relative to the input, in (0, 1].
    min_area : int
        Drop foreground blobs smaller than this many pixels.
    """

    mask_video: str | None = None
    overlay: str | None = None
    objects: str | None = None
    max_frames: int | None = None
    roi: Any = None
    scale: float = 1.0
    min_area: int = 0

    def settings(self, algo: str, params: dict) -> dict:
        """What a job's output depends on besides its source (recorded in ``result.json``; resume compares it).

        The options added after the first version (``roi``, ``scale``,
        ``min_area``, ``objects``, ``overlay``) are recorded only when used, so
        that the results of earlier versions, which had none of them, still resume.
        """
        settings = {"algo": algo, "params": params, "mask_video": self.mask_video, "max_frames": self.max_frames}
        extra = {"roi": roi_id(self.roi), "scale": None if self.scale == 1.0 else float(self.scale),
                 "min_area": self.min_area or None, "objects": self.objects, "overlay": self.overlay}
        settings.update({k: v for k, v in extra.items() if v is not None})
        return settings


def source_fingerprint(source: str | os.PathLike, kind: str) -> dict[str, Any]:
    """Path, size and modification time of an input (a sequence: its files' total size, newest time, count)."""
    p = Path(source)
    if kind != "cdnet":
        st = p.stat()
        return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    size = files = newest = 0
    for folder in (p, p / "input", p / "groundtruth"):
        if not folder.is_dir():
            continue
        for e in os.scandir(folder):
            if e.is_file():
                st = e.stat()
                size += st.st_size
                files += 1
                newest = max(newest, st.st_mtime_ns)
    return {"path": str(p), "size": size, "mtime_ns": newest, "files": files}


def read_result(output: str | os.PathLike) -> dict | None:
    """The ``result.json`` of an output folder, or None when missing or unreadable."""
    try:
        data = json.loads((Path(output) / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def is_finished(job: Job, settings: dict) -> bool:
    """True when ``job``'s output folder holds a finished result of this source and these settings."""
    data = read_result(job.output)
    if data is None or data.get("status") != "done":
        return False
    try:
        now = source_fingerprint(job.source, job.kind)
    except OSError:
        return False
    return data.get("source_id") == now and _canonical(data.get("settings")) == _canonical(settings)


def describe_differences(old: dict, new: dict) -> str:
    """Only the settings that differ: ``width 40 there, 30 now; mask_video none there, .mkv now``."""
    def flat(cfg):
        out = {"algo": cfg.get("algo")}
        out.update(cfg.get("params") or {})
        out.update({k: cfg.get(k) for k in SETTINGS_KEYS if k not in ("algo", "params")})
        # unrecorded means the default
        out.update({k: v for k, v in (("scale", 1.0), ("min_area", 0)) if out.get(k) is None})
        return out

    a, b = flat(old), flat(new)
    show = lambda v: "none" if v is None else v  # noqa: E731
    return "; ".join(f"{k} {show(a.get(k))} there, {show(b.get(k))} now"
                     for k in list(dict.fromkeys([*a, *b])) if a.get(k) != b.get(k))
