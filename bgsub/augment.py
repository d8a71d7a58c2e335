"""Robustness variants of a sequence: camera jitter, illumination changes, sensor noise.

:class:`AugmentedSequence` wraps a CDnet-layout sequence (anything with
``frames``, ``name``, ``has_groundtruth``, ``read_frame``, ``read_groundtruth``,
``roi`` and ``is_scored``, e.g. :class:`bgsub.cdnet.CDnetSequence`) and changes
what it reads, deterministically from ``(seed, frame number)``:

- ``jitter``: every frame is shifted by an integer offset of up to ``amount``
  pixels in x and y (default 3: a shaking camera), input **and** ground truth
  alike; pixels shifted in from outside the frame are replicated in the input
  and labelled 85 (outside the ROI, not scored) in the ground truth;
- ``illumination``: a global gain that jumps at 40 % and 70 % of the sequence
  (1 -> ``1 - amount`` -> ``1 + amount / 2``, default ``amount`` 0.3), as when a
  light is switched or the sun comes out; the ground truth is unchanged;
- ``noise``: additive Gaussian sensor noise of standard deviation ``amount``
  grey levels (default 10), new every frame; the ground truth is unchanged.

``bgsub eval --augment jitter`` scores a subtractor on such a variant.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from bgsub.pipeline.registration import translate

__all__ = ["AUGMENTATIONS", "Augmentation", "AugmentedSequence", "AugmentedSource", "augment", "translate"]

#: Kinds and their default amounts.
AUGMENTATIONS = {"jitter": 3.0, "illumination": 0.3, "noise": 10.0}

#: Ground-truth label of pixels outside the region of interest (not scored).
_OUTSIDE = 85


def _rng(seed: int, number: int) -> np.random.Generator:
    return np.random.default_rng([int(seed), int(number)])


class Augmentation:
    """The per-frame transform: ``image(n, img)`` and ``groundtruth(n, gt)`` for frame number ``n``.

    Parameters
    ----------
    kind : {"jitter", "illumination", "noise"}
    amount : float, optional
        Strength (see the module docstring); default per kind in :data:`AUGMENTATIONS`.
    seed : int
        Seed of the per-frame random draws.
    frames : list of int
        The sequence's frame numbers (illumination jumps at 40 % and 70 % of them).
    """

    def __init__(self, kind: str, amount: float | None = None, seed: int = 0, frames=()) -> None:
        if kind not in AUGMENTATIONS:
            raise ValueError(f"unknown augmentation {kind!r}; choose one of {', '.join(AUGMENTATIONS)}")
        amount = AUGMENTATIONS[kind] if amount is None else float(amount)
        if not amount >= 0:
            raise ValueError(f"augmentation amount must be >= 0, got {amount}")
        self.kind = kind
        self.amount = amount
        self.seed = int(seed)
        self.frames = list(frames)
        self._pos = {n: k for k, n in enumerate(self.frames)}

    def shift(self, number: int) -> tuple[int, int]:
        """``(dx, dy)`` of frame ``number`` under jitter (0, 0 otherwise)."""
        if self.kind != "jitter":
            return 0, 0
        a = int(round(self.amount))
        dx, dy = _rng(self.seed, number).integers(-a, a + 1, size=2)
        return int(dx), int(dy)

    def gain(self, number: int) -> float:
        """Global gain of frame ``number`` under illumination (1 otherwise)."""
        if self.kind != "illumination" or not self.frames:
            return 1.0
        pos = self._pos.get(number, 0) / len(self.frames)
        if pos < 0.4:
            return 1.0
        if pos < 0.7:
            return 1.0 - self.amount
        return 1.0 + self.amount / 2

    def image(self, number: int, img: np.ndarray) -> np.ndarray:
        if self.kind == "jitter":
            return translate(img, *self.shift(number), cv2.BORDER_REPLICATE, 0)
        if self.kind == "illumination":
            g = self.gain(number)
            return img if g == 1.0 else cv2.convertScaleAbs(img, alpha=g)
        noise = _rng(self.seed, number).normal(0.0, self.amount, size=img.shape)
        return np.clip(img.astype(np.float32) + noise, 0, 255).astype(np.uint8)

    def groundtruth(self, number: int, gt: np.ndarray | None) -> np.ndarray | None:
        if gt is None or self.kind != "jitter":
            return gt
        return translate(gt, *self.shift(number), cv2.BORDER_CONSTANT, _OUTSIDE)


class AugmentedSequence:
    """A sequence whose frames (and, for jitter, ground truth) are transformed on reading.

    Parameters
    ----------
    seq : CDnetSequence-like
    kind, amount, seed
        See :class:`Augmentation`.
    """

    def __init__(self, seq: Any, kind: str, amount: float | None = None, seed: int = 0) -> None:
        self.seq = seq
        self.frames = list(seq.frames)
        self.augmentation = Augmentation(kind, amount, seed, self.frames)
        self.kind = kind
        self.name = f"{seq.name}+{kind}"

    # the wrapped sequence's interface
    @property
    def has_groundtruth(self) -> bool:
        return self.seq.has_groundtruth

    def __len__(self) -> int:
        return len(self.frames)

    def is_scored(self, number: int) -> bool:
        return self.seq.is_scored(number)

    def roi(self, shape: tuple[int, int]) -> np.ndarray:
        return self.seq.roi(shape)

    def shift(self, number: int) -> tuple[int, int]:
        return self.augmentation.shift(number)

    def gain(self, number: int) -> float:
        return self.augmentation.gain(number)

    def read_frame(self, number: int) -> np.ndarray:
        return self.augmentation.image(number, self.seq.read_frame(number))

    def read_groundtruth(self, number: int) -> np.ndarray | None:
        return self.augmentation.groundtruth(number, self.seq.read_groundtruth(number))


class AugmentedSource:
    """A frame source (:mod:`bgsub.sources`) whose frames and ground truth are transformed.

    Delegates everything else (``sequence``, ``close``, ...) to the wrapped source.
    """

    def __init__(self, source: Any, kind: str, amount: float | None = None, seed: int = 0) -> None:
        self._source = source
        frames = getattr(source, "numbers", None) or list(range(1, (getattr(source, "frame_count", 0) or 0) + 1))
        self.augmentation = Augmentation(kind, amount, seed, frames)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)

    def __iter__(self):
        import dataclasses

        aug = self.augmentation
        for frame in self._source:
            yield dataclasses.replace(frame, image=aug.image(frame.index, frame.image),
                                      groundtruth=aug.groundtruth(frame.index, frame.groundtruth))

    def __enter__(self) -> "AugmentedSource":
        self._source.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._source.__exit__(*exc)


def augment(seq: Any, kind: str | None, amount: float | None = None, seed: int = 0) -> Any:
    """``seq`` itself when ``kind`` is None or "none", else an :class:`AugmentedSequence`
    (or an :class:`AugmentedSource` when ``seq`` is a frame source)."""
    if kind is None or kind == "none":
        return seq
    if hasattr(seq, "read_frame"):
        return AugmentedSequence(seq, kind, amount, seed)
    return AugmentedSource(seq, kind, amount, seed)
