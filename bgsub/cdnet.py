"""CDnet 2014 sequence layout: input frames, ground truth, ROI and temporal ROI.

A sequence folder holds ``input/in%06d.{jpg,png}``, ``groundtruth/gt%06d.png``,
``ROI.bmp`` (optional; whole frame when absent) and ``temporalROI.txt``
(``"first last"``, 1-based, inclusive; optional: all frames when absent).

Ground-truth labels: 0 static, 50 hard shadow, 85 outside ROI, 170 unknown,
255 motion.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

__all__ = [
    "LABEL_STATIC",
    "LABEL_SHADOW",
    "LABEL_OUTSIDE_ROI",
    "LABEL_UNKNOWN",
    "LABEL_MOTION",
    "CDnetSequence",
    "is_cdnet_sequence",
    "load_sequence",
    "find_sequences",
]

LABEL_STATIC = 0
LABEL_SHADOW = 50
LABEL_OUTSIDE_ROI = 85
LABEL_UNKNOWN = 170
LABEL_MOTION = 255

_INPUT_RE = re.compile(r"^in(\d+)\.(jpg|jpeg|png|bmp)$", re.IGNORECASE)
_GT_RE = re.compile(r"^gt(\d+)\.(png|bmp)$", re.IGNORECASE)


def _numbered(folder: Path, pattern: re.Pattern) -> dict[int, Path]:
    out: dict[int, Path] = {}
    for entry in os.scandir(folder):
        m = pattern.match(entry.name)
        if m and entry.is_file():
            out[int(m.group(1))] = Path(entry.path)
    return out


@dataclass
class CDnetSequence:
    """A CDnet-layout sequence on disk.

    Attributes
    ----------
    path : Path
        The sequence folder.
    name : str
        The folder's name.
    frames : list of int
        1-based frame numbers present in ``input/``, ascending.
    input_paths : dict of int to Path
        Frame number to input image.
    gt_paths : dict of int to Path
        Frame number to ground-truth image (may be empty).
    temporal_roi : tuple of int
        ``(first, last)`` scored frame numbers, inclusive, clipped to the frames
        that exist in both ``input/`` and ``groundtruth/``.
    roi_path : Path or None
        ``ROI.bmp`` when present.
    """

    path: Path
    name: str
    frames: list[int]
    input_paths: dict[int, Path]
    gt_paths: dict[int, Path] = field(default_factory=dict)
    temporal_roi: tuple[int, int] = (1, 0)
    roi_path: Path | None = None
    _roi: np.ndarray | None = field(default=None, repr=False)

    @property
    def has_groundtruth(self) -> bool:
        return bool(self.gt_paths)

    def __len__(self) -> int:
        return len(self.frames)

    def read_frame(self, number: int) -> np.ndarray:
        """Input frame ``number`` (1-based) as BGR uint8 ``(H, W, 3)``."""
        path = self.input_paths[number]
        img = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if img is None:
            raise OSError(f"cannot decode input frame {path}: not a readable image")
        return img

    def read_groundtruth(self, number: int) -> np.ndarray | None:
        """Ground-truth labels of frame ``number`` as uint8 ``(H, W)``, or None."""
        path = self.gt_paths.get(number)
        if path is None:
            return None
        gt = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        if gt is None:
            raise OSError(f"cannot decode ground truth {path}: not a readable image")
        return gt

    def roi(self, shape: tuple[int, int]) -> np.ndarray:
        """Boolean ``(H, W)`` region of interest (``ROI.bmp`` > 0; all True if absent)."""
        if self._roi is None or self._roi.shape != tuple(shape):
            if self.roi_path is not None:
                roi = cv2.imread(str(self.roi_path), cv2.IMREAD_GRAYSCALE)
                if roi is None:
                    raise OSError(f"cannot decode {self.roi_path}: not a readable image")
                if roi.shape != tuple(shape):
                    raise ValueError(
                        f"{self.roi_path} is {roi.shape[1]}x{roi.shape[0]} but the frames are "
                        f"{shape[1]}x{shape[0]}"
                    )
                self._roi = roi > 0
            else:
                self._roi = np.ones(shape, dtype=bool)
        return self._roi

    def is_scored(self, number: int) -> bool:
        first, last = self.temporal_roi
        return first <= number <= last and number in self.gt_paths


def is_cdnet_sequence(path: str | os.PathLike) -> bool:
    """True when ``path`` is a folder with an ``input/`` folder of ``in%06d`` images."""
    p = Path(path)
    inp = p / "input"
    if not inp.is_dir():
        return False
    try:
        return any(_INPUT_RE.match(e.name) for e in os.scandir(inp))
    except OSError:
        return False


def load_sequence(path: str | os.PathLike) -> CDnetSequence:
    """Index a CDnet-layout sequence folder.

    Raises
    ------
    FileNotFoundError
        When the folder or its ``input/`` folder is missing.
    ValueError
        When ``input/`` holds no ``in%06d`` frames or ``temporalROI.txt`` is malformed.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"sequence folder {p} does not exist")
    if not p.is_dir():
        raise NotADirectoryError(f"{p} is not a folder: a CDnet sequence is a folder with input/")
    inp = p / "input"
    if not inp.is_dir():
        raise FileNotFoundError(
            f"{p} has no input/ folder: a CDnet sequence holds input/in%06d.jpg frames"
        )
    inputs = _numbered(inp, _INPUT_RE)
    if not inputs:
        raise ValueError(f"{inp} holds no frames named in%06d.jpg or in%06d.png")
    gts: dict[int, Path] = {}
    if (p / "groundtruth").is_dir():
        gts = _numbered(p / "groundtruth", _GT_RE)
    frames = sorted(inputs)
    first, last = frames[0], frames[-1]
    troi = p / "temporalROI.txt"
    if troi.is_file():
        parts = troi.read_text().split()
        try:
            first, last = int(parts[0]), int(parts[1])
        except (IndexError, ValueError):
            raise ValueError(
                f"{troi} must hold two frame numbers 'first last', got {troi.read_text()!r}"
            ) from None
    # Clip the temporal ROI to the frames actually present.
    scored = [n for n in frames if n in gts]
    if scored:
        first = max(first, scored[0])
        last = min(last, scored[-1])
    else:
        first, last = 1, 0
    roi_path = p / "ROI.bmp"
    return CDnetSequence(
        path=p,
        name=p.name,
        frames=frames,
        input_paths=inputs,
        gt_paths=gts,
        temporal_roi=(first, last),
        roi_path=roi_path if roi_path.is_file() else None,
    )


def find_sequences(root: str | os.PathLike) -> list[Path]:
    """All CDnet-layout sequence folders at or below ``root``, sorted."""
    root = Path(root)
    if is_cdnet_sequence(root):
        return [root]
    found = []
    for dirpath, dirnames, _ in os.walk(root):
        d = Path(dirpath)
        if is_cdnet_sequence(d):
            found.append(d)
            dirnames[:] = []
        else:
            dirnames.sort()
    return sorted(found)
