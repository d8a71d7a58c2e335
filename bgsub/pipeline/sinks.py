"""Sinks: where a pipeline's frames go (files, videos, objects, scores, checkpoints).

A sink has ``write(out)`` (``out`` a :class:`bgsub.pipeline.FrameOutput`; a
return value of ``False`` stops the run) and ``close(ok=True)``, called once
when the run ends (``ok`` False when it stopped on an error). Class attributes
``needs_score`` and ``needs_objects`` ask the pipeline for the score map and
the connected components; ``background = True`` lets :meth:`Pipeline.run
<bgsub.pipeline.Pipeline.run>` call ``write`` on its writer thread (the sink
only reads the :class:`~bgsub.pipeline.FrameOutput` it is given and touches no
shared state). Every file a sink writes appears under its final name only when
complete.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np

from bgsub.metrics import ConfusionCounts, SequenceScorer, StreamingROC
from bgsub.pipeline.objects import OBJECT_FIELDS
from bgsub.pipeline.paths import check_mask_folder
from bgsub.writers import MaskVideoWriter, MaskWriter, make_folder, temp_path

__all__ = [
    "Sink",
    "MaskFiles",
    "MaskVideo",
    "OverlayVideo",
    "ObjectsFile",
    "Scores",
    "Checkpoints",
    "Callback",
    "draw_overlay",
]


class Sink:
    """Base of the sinks: does nothing. A sink wrapping a file writer keeps it in ``writer``."""

    needs_score = False
    needs_objects = False
    #: True: ``write`` may run on the pipeline's writer thread, overlapping the next frame's processing.
    background = False
    writer = None

    @property
    def count(self) -> int:
        """What the writer wrote: masks or video frames."""
        return self.writer.count if self.writer is not None else 0

    def write(self, out) -> bool | None:  # pragma: no cover - interface
        return None

    def close(self, ok: bool = True) -> None:
        return None


class MaskFiles(Sink):
    """One ``bin%06d.png`` per frame (CDnet numbering), each written atomically.

    Parameters
    ----------
    folder : path
        Created when missing.
    replace : bool
        Make the folder hold this run's masks only: the masks an earlier run
        wrote there are deleted just before the first mask of this one is
        written (their number is then in ``stale_removed``; a run that writes
        nothing deletes nothing). Only masks bgsub wrote are ever deleted
        (:func:`bgsub.writers.is_written_mask`): a folder holding other
        ``bin%06d.png`` files is refused with a ValueError, since this run would
        overwrite some of them and mix with the others.
    resume : bool
        With ``replace``: this run continues an earlier one, whose masks before
        this run's first frame are kept (only those from that frame on are
        replaced).
    atomic : bool
        See :class:`bgsub.writers.MaskWriter`.
    option : str
        How the folder was given, for messages (``--out``).
    """

    background = True

    def __init__(self, folder: str | os.PathLike, *, replace: bool = True, resume: bool = False,
                 atomic: bool = True, option: str = "--out") -> None:
        if replace:
            check_mask_folder(option, folder)
        self._created = not Path(folder).exists()
        self.writer = MaskWriter(folder, atomic=atomic)
        self.replace = bool(replace)
        self.resume = bool(resume)
        self.stale_removed = 0
        self._pending = self.replace

    @property
    def folder(self) -> Path:
        return self.writer.folder

    def write(self, out) -> None:
        if self._pending:
            self._pending = False
            self.stale_removed = self.writer.remove_stale(out.index if self.resume else 1)
        self.writer.write(out.index, out.mask)

    def close(self, ok: bool = True) -> None:
        """Remove the folder again when this sink created it and no mask was written (nothing else is touched)."""
        if self._created and self.writer.count == 0:
            try:
                self.folder.rmdir()  # only when empty
            except OSError:
                pass


class MaskVideo(Sink):
    """The masks as a video (``.mp4``, ``.avi``, ``.mkv`` = lossless FFV1)."""

    background = True

    def __init__(self, path: str | os.PathLike, fps: float | None = 25.0) -> None:
        self.writer = MaskVideoWriter(path, fps)

    @property
    def path(self) -> Path:
        return self.writer.path

    def picture(self, out) -> np.ndarray:
        """The video frame of ``out``."""
        return out.mask

    def write(self, out) -> None:
        self.writer.write(self.picture(out))

    def close(self, ok: bool = True) -> None:
        self.writer.close()


def draw_overlay(image: np.ndarray, mask: np.ndarray, objects=None) -> np.ndarray:
    """``image`` with the foreground tinted red and each object's box and track id drawn."""
    out = image.copy()
    fg = mask > 0
    if fg.any():
        tint = np.array([0, 0, 255], np.float32)
        out[fg] = (0.45 * out[fg].astype(np.float32) + 0.55 * tint).astype(np.uint8)
    for o in objects or ():
        cv2.rectangle(out, (o.x, o.y), (o.x + o.width - 1, o.y + o.height - 1), (0, 255, 0), 1)
        if o.track:
            cv2.putText(out, str(o.track), (o.x, max(8, o.y - 2)), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                        (0, 255, 0), 1, cv2.LINE_AA)
    return out


class OverlayVideo(MaskVideo):
    """The input with the mask tinted and the objects' boxes drawn, as a video."""

    needs_objects = True

    def picture(self, out) -> np.ndarray:
        return draw_overlay(out.image, out.mask, out.objects)


class ObjectsFile(Sink):
    """Every object of every frame, one JSON object per line (``.jsonl``) or one CSV row (``.csv``).

    Columns/keys: ``frame, track, x, y, width, height, area, cx, cy`` (see
    :class:`bgsub.pipeline.objects.DetectedObject`). Written under a temporary
    name and renamed into place by :meth:`close`.
    """

    background = True
    needs_objects = True
    SUFFIXES = (".jsonl", ".csv")

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.format = self.path.suffix.lower()
        if self.format not in self.SUFFIXES:
            raise ValueError(f"--objects {self.path.name}: end the name in .jsonl or .csv")
        if self.path.is_dir():
            raise ValueError(f"--objects {self.path} is a folder; give a file name ending in .jsonl or .csv")
        make_folder(self.path.parent, f"folder of {self.path.name}")
        self._tmp = temp_path(self.path)
        self._fh: io.TextIOBase | None = open(self._tmp, "w", encoding="utf-8", newline="")
        self._csv = None
        if self.format == ".csv":
            self._csv = csv.writer(self._fh)
            self._csv.writerow(OBJECT_FIELDS)
        self.rows = 0
        self.frames = 0

    @property
    def count(self) -> int:
        """Objects written."""
        return self.rows

    def write(self, out) -> None:
        self.frames += 1
        for o in out.objects:
            if self._csv is not None:
                self._csv.writerow([getattr(o, k) for k in OBJECT_FIELDS])
            else:
                self._fh.write(json.dumps(o.as_dict()) + "\n")
            self.rows += 1

    def close(self, ok: bool = True) -> None:
        """Rename the file into place; a run that gave no frame leaves ``path`` as it was."""
        if self._fh is None:
            return
        self._fh.close()
        self._fh = None
        if self.frames:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


class Scores(Sink):
    """CDnet confusion counts and, from the score maps, a streaming ROC.

    Frames are scored when they carry ground truth inside the sequence's
    temporal ROI (:attr:`bgsub.pipeline.FrameOutput.scored`).

    Parameters
    ----------
    roc : bool
        Also accumulate the ROC of the score maps (when the subtractor has them).

    Attributes
    ----------
    counts : ConfusionCounts
        Summed over the frames scored since the last :meth:`reset_counts`.
    frames : int
        Frames in ``counts``.
    roc : StreamingROC or None
        Created at the first scored frame with a score map.
    """

    def __init__(self, roc: bool = True) -> None:
        self.needs_score = bool(roc)
        self._scorer = SequenceScorer(keep_frames=False)
        self.frames = 0

    @property
    def counts(self) -> ConfusionCounts:
        return self._scorer.counts

    @property
    def roc(self) -> StreamingROC | None:
        return self._scorer.roc

    def write(self, out) -> None:
        if not out.scored:
            return
        if self.needs_score and self._scorer.roc is None and out.score is not None:
            self._scorer.roc = StreamingROC(*out.score_range)
        self._scorer.add(out.index, out.mask, out.groundtruth, out.roi,
                         scores=out.score if self.needs_score else None)
        self.frames += 1

    def reset_counts(self) -> None:
        """Start the confusion counts again (the ROC is kept)."""
        self._scorer.counts = ConfusionCounts()
        self.frames = 0

    def metrics(self) -> dict[str, float] | None:
        """The seven CDnet metrics (and ``auc`` with the ROC); None before a scored frame."""
        return self._scorer.metrics() if self.frames else None


class Checkpoints(Sink):
    """Saves the subtractor every ``every`` frames (and at the end) with its ``save(path)``.

    ``save`` writes atomically, so a kill leaves the previous checkpoint.
    Nothing is saved at the end of a run that stopped on an error. The folder
    is created and tried with a temporary file when the sink is made, so that a
    checkpoint that cannot be written stops the run before its first frame.
    """

    def __init__(self, subtractor, path: str | os.PathLike, every: int = 100) -> None:
        from bgsub.checkpoint import algorithm_name
        from bgsub.models.opencv_api import check_checkpoint_name

        if every < 1:
            raise ValueError(f"--checkpoint-every must be >= 1, got {every}")
        try:
            algorithm_name(subtractor)
        except ValueError as exc:  # CheckpointError: OpenCV's subtractors cannot be saved
            raise ValueError(f"--checkpoint: {exc}") from None
        self.subtractor = subtractor
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"--checkpoint {self.path} is a folder; give a file name ending in .npz")
        check_checkpoint_name(self.path, writing=True)
        make_folder(self.path.parent, f"folder of {self.path.name}")
        self.every = int(every)
        self.saved = 0
        self._since = 0

    def _save(self) -> None:
        self.subtractor.save(self.path)
        self.saved += 1
        self._since = 0

    def saves_next(self) -> bool:
        """True when the next ``write`` saves: the pipeline first waits for its writer thread (the masks
        of every frame up to the checkpoint are on disk before the checkpoint says they were processed)."""
        return self._since + 1 >= self.every

    def write(self, out) -> None:
        self._since += 1
        if self._since >= self.every:
            self._save()

    def close(self, ok: bool = True) -> None:
        if ok and self._since:
            self._save()


class Callback(Sink):
    """Calls ``fn(out)`` for each frame; ``fn`` returning False stops the run."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def write(self, out):
        return self.fn(out)
