"""CDnet 2014 scoring: confusion counts, the seven metrics, and a streaming ROC.

Rules (changedetection.net, 2014; see ``ALGORITHMS.md``):

- ground-truth labels: 0 static, 50 hard shadow, 85 outside ROI, 170 unknown,
  255 motion;
- a pixel is scored when it lies inside ``ROI.bmp`` and its label is neither 85
  nor 170; it is *positive* when its label is 255 (shadow counts as negative);
- a prediction is *foreground* exactly where the mask is 255;
- per video the counts are summed over the frames of ``temporalROI.txt``, then
  ``Re = TP/(TP+FN)``, ``Sp = TN/(TN+FP)``, ``FPR = FP/(FP+TN)``,
  ``FNR = FN/(TP+FN)``, ``PWC = 100 (FN+FP)/(TP+FN+FP+TN)``, ``Pr = TP/(TP+FP)``,
  ``F = 2 Pr Re/(Pr+Re)``; a category's metric is the mean over its videos.

A metric whose denominator is zero (e.g. recall of a frame without motion) is
``nan``; :func:`mean_metrics` skips ``nan`` values.

:class:`StreamingROC` accumulates two histograms of a continuous score (one for
positive pixels, one for negative ones), O(pixels) per frame and memory that
does not depend on the length of the sequence, from which it draws the ROC curve
of the thresholded score and its area.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from bgsub.cdnet import LABEL_MOTION, LABEL_OUTSIDE_ROI, LABEL_UNKNOWN

__all__ = [
    "METRIC_NAMES",
    "ConfusionCounts",
    "frame_counts",
    "scored_pixels",
    "StreamingROC",
    "SequenceScorer",
    "mean_metrics",
    "format_metrics",
]

#: The seven CDnet metrics, in the order CDnet reports them.
METRIC_NAMES = ("recall", "specificity", "FPR", "FNR", "PWC", "precision", "F")


def _ratio(num: int, den: int) -> float:
    return num / den if den > 0 else math.nan


@dataclass(frozen=True)
class ConfusionCounts:
    """Pixel counts of one frame or a sum over frames.

    Attributes
    ----------
    tp, fp, fn, tn : int
        True positives (mask 255, label 255), false positives (mask 255, label
        static or shadow), false negatives (mask not 255, label 255) and true
        negatives, over the scored pixels only.
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def __add__(self, other: "ConfusionCounts") -> "ConfusionCounts":
        if not isinstance(other, ConfusionCounts):
            return NotImplemented
        return ConfusionCounts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn, self.tn + other.tn)

    def __radd__(self, other):
        # sum(list_of_counts) starts from 0
        if isinstance(other, int) and other == 0:
            return self
        return NotImplemented

    @property
    def total(self) -> int:
        """Number of scored pixels."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def positives(self) -> int:
        """Scored pixels labelled motion (``tp + fn``)."""
        return self.tp + self.fn

    def metrics(self) -> dict[str, float]:
        """The seven CDnet metrics; ``nan`` where a denominator is zero.

        Returns
        -------
        dict
            ``recall, specificity, FPR, FNR, PWC, precision, F``. ``PWC`` is a
            percentage; the others are fractions in [0, 1].
        """
        tp, fp, fn, tn = self.tp, self.fp, self.fn, self.tn
        recall = _ratio(tp, tp + fn)
        precision = _ratio(tp, tp + fp)
        if math.isnan(recall) or math.isnan(precision):
            f = math.nan
        elif recall + precision == 0:
            f = 0.0
        else:
            f = 2.0 * precision * recall / (precision + recall)
        return {
            "recall": recall,
            "specificity": _ratio(tn, tn + fp),
            "FPR": _ratio(fp, fp + tn),
            "FNR": _ratio(fn, tp + fn),
            "PWC": 100.0 * _ratio(fn + fp, tp + fn + fp + tn),
            "precision": precision,
            "F": f,
        }

    def as_dict(self) -> dict[str, int]:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn}


def _check_pair(mask: np.ndarray, gt: np.ndarray, roi: np.ndarray | None, what: str = "mask"):
    mask = np.asarray(mask)
    gt = np.asarray(gt)
    if gt.ndim == 3 and gt.shape[2] in (1, 3, 4):
        gt = gt[:, :, 0]
    if gt.ndim != 2:
        raise ValueError(f"ground truth must be a 2-D label image (H, W), got shape {gt.shape}")
    if mask.ndim == 3 and mask.shape[2] == 1:
        mask = mask[:, :, 0]
    if mask.shape != gt.shape:
        raise ValueError(
            f"{what} shape {mask.shape} does not match the ground truth's {gt.shape}; "
            "score frames of the same size as their ground truth"
        )
    if roi is not None:
        roi = np.asarray(roi)
        if roi.ndim == 3:
            roi = roi[:, :, 0]
        if roi.shape != gt.shape:
            raise ValueError(f"roi shape {roi.shape} does not match the ground truth's {gt.shape}")
        roi = roi.astype(bool, copy=False)
    return mask, gt, roi


def scored_pixels(gt: np.ndarray, roi: np.ndarray | None = None) -> np.ndarray:
    """Boolean ``(H, W)``: pixels CDnet scores (inside ``roi``, label not 85/170)."""
    gt = np.asarray(gt)
    valid = (gt != LABEL_OUTSIDE_ROI) & (gt != LABEL_UNKNOWN)
    if roi is not None:
        valid &= np.asarray(roi).astype(bool, copy=False)
    return valid


def frame_counts(mask: np.ndarray, gt: np.ndarray, roi: np.ndarray | None = None) -> ConfusionCounts:
    """Confusion counts of one frame, CDnet rules.

    Parameters
    ----------
    mask : array (H, W)
        Predicted mask; foreground exactly where it equals 255.
    gt : array (H, W) of uint8
        CDnet ground-truth labels (0, 50, 85, 170, 255).
    roi : array (H, W) of bool, optional
        Region of interest (``ROI.bmp > 0``); all pixels when None.

    Returns
    -------
    ConfusionCounts
    """
    mask, gt, roi = _check_pair(mask, gt, roi)
    valid = scored_pixels(gt, roi)
    pos = gt == LABEL_MOTION
    pred = mask == 255
    # one pass: code = 2*pred + pos over valid pixels
    code = pred.view(np.uint8) * np.uint8(2) + pos.view(np.uint8)
    hist = np.bincount(code[valid], minlength=4)
    tn, fn, fp, tp = (int(v) for v in hist[:4])
    return ConfusionCounts(tp=tp, fp=fp, fn=fn, tn=tn)


class StreamingROC:
    """ROC curve of a continuous score over a stream of frames.

    Two histograms of ``n_bins`` equal bins over ``[lo, hi]`` (plus one bin for
    scores ``<= lo`` and one for scores ``> hi``) count the positive and negative
    scored pixels. A pixel is predicted foreground at threshold ``t`` when its
    score is ``> t``; thresholds are the bin edges, so the curve is exact at
    every edge. Memory is ``O(n_bins)``, an update is ``O(pixels)``.

    Parameters
    ----------
    lo, hi : float
        Score range (``score_range`` of a subtractor); ``lo < hi``.
    n_bins : int
        Number of bins between ``lo`` and ``hi``.

    Attributes
    ----------
    edges : ndarray (n_bins + 1,)
        Thresholds at which the curve is exact.
    pos_hist, neg_hist : ndarray (n_bins + 2,) of int64
        Counts; index 0 holds scores ``<= lo``, index ``k`` (1..n_bins) holds
        ``(edges[k-1], edges[k]]``, the last index scores ``> hi``.
    """

    def __init__(self, lo: float, hi: float, n_bins: int = 1024) -> None:
        lo = float(lo)
        hi = float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
            raise ValueError(f"score range must be finite with lo < hi, got ({lo}, {hi})")
        n_bins = int(n_bins)
        if n_bins < 1:
            raise ValueError(f"n_bins must be >= 1, got {n_bins}")
        self.lo = lo
        self.hi = hi
        self.n_bins = n_bins
        self.edges = np.linspace(lo, hi, n_bins + 1)
        self.pos_hist = np.zeros(n_bins + 2, dtype=np.int64)
        self.neg_hist = np.zeros(n_bins + 2, dtype=np.int64)
        self._inv_width = n_bins / (hi - lo)

    def _bin(self, scores: np.ndarray) -> np.ndarray:
        s = scores.astype(np.float64, copy=False)
        idx = np.ceil((s - self.lo) * self._inv_width)
        # NaN scores are treated as the lowest bin (never foreground).
        idx = np.nan_to_num(idx, nan=0.0, posinf=self.n_bins + 1, neginf=0.0)
        np.clip(idx, 0, self.n_bins + 1, out=idx)
        return idx.astype(np.intp)

    def update(self, scores: np.ndarray, gt: np.ndarray, roi: np.ndarray | None = None) -> None:
        """Add one frame: ``scores`` (H, W) float, ``gt`` CDnet labels, optional ``roi``."""
        scores, gt, roi = _check_pair(scores, gt, roi, what="score map")
        valid = scored_pixels(gt, roi)
        pos = gt == LABEL_MOTION
        idx = self._bin(scores)
        self.pos_hist += np.bincount(idx[valid & pos], minlength=self.n_bins + 2)
        self.neg_hist += np.bincount(idx[valid & ~pos], minlength=self.n_bins + 2)

    def merge(self, other: "StreamingROC") -> "StreamingROC":
        """Add ``other``'s counts (same range and bins) into this one; returns self."""
        if (other.lo, other.hi, other.n_bins) != (self.lo, self.hi, self.n_bins):
            raise ValueError("can only merge ROC histograms with the same range and bins")
        self.pos_hist += other.pos_hist
        self.neg_hist += other.neg_hist
        return self

    @property
    def positives(self) -> int:
        return int(self.pos_hist.sum())

    @property
    def negatives(self) -> int:
        return int(self.neg_hist.sum())

    def curve(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(fpr, tpr, thresholds)``, thresholds decreasing from ``+inf`` to ``-inf``.

        ``fpr[i], tpr[i]`` are the rates of ``score > thresholds[i]``. With no
        positive (negative) pixel seen, ``tpr`` (``fpr``) is all ``nan``.
        """
        # Predicted positive at threshold edges[k] (k = 0..n_bins): bins k+1 .. n_bins+1,
        # i.e. the suffix sum starting at k+1.
        pos_above = np.cumsum(self.pos_hist[::-1])[::-1][1:]
        neg_above = np.cumsum(self.neg_hist[::-1])[::-1][1:]
        P = self.positives
        N = self.negatives
        tp = np.concatenate([[0], pos_above[::-1], [P]])
        fp = np.concatenate([[0], neg_above[::-1], [N]])
        thresholds = np.concatenate([[np.inf], self.edges[::-1], [-np.inf]])
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr = tp / P if P else np.full(tp.shape, np.nan)
            fpr = fp / N if N else np.full(fp.shape, np.nan)
        return np.asarray(fpr, dtype=np.float64), np.asarray(tpr, dtype=np.float64), thresholds

    def auc(self) -> float:
        """Area under the ROC curve (trapezoids); ``nan`` without both classes."""
        if self.positives == 0 or self.negatives == 0:
            return math.nan
        fpr, tpr, _ = self.curve()
        return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) * 0.5))

    def operating_point(self, threshold: float = 0.0) -> tuple[float, float]:
        """``(fpr, tpr)`` of ``score > threshold``, ``threshold`` rounded to the nearest edge."""
        t = float(threshold)
        if t < self.lo:
            k = -1
        elif t >= self.hi:
            k = self.n_bins
        else:
            k = int(round((t - self.lo) * self._inv_width))
        tp = int(self.pos_hist[k + 1:].sum())
        fp = int(self.neg_hist[k + 1:].sum())
        P, N = self.positives, self.negatives
        return (fp / N if N else math.nan, tp / P if P else math.nan)


class SequenceScorer:
    """Accumulates the CDnet score of one sequence frame by frame.

    Parameters
    ----------
    score_range : (float, float), optional
        Range of the score maps; enables the ROC (``roc``) when given.
    n_bins : int
        ROC histogram bins.
    keep_frames : bool
        Keep the per-frame counts in ``frames`` (one small record per frame).

    Attributes
    ----------
    counts : ConfusionCounts
        Sum over the frames added so far.
    frames : list of (int, ConfusionCounts)
        Frame number and its counts, when ``keep_frames``.
    roc : StreamingROC or None
    """

    def __init__(self, score_range: tuple[float, float] | None = None, n_bins: int = 1024,
                 keep_frames: bool = True) -> None:
        self.counts = ConfusionCounts()
        self.frames: list[tuple[int, ConfusionCounts]] = []
        self.keep_frames = keep_frames
        self.roc = StreamingROC(score_range[0], score_range[1], n_bins) if score_range is not None else None

    def add(self, number: int, mask: np.ndarray, gt: np.ndarray, roi: np.ndarray | None = None,
            scores: np.ndarray | None = None) -> ConfusionCounts:
        """Score frame ``number``; returns its counts."""
        c = frame_counts(mask, gt, roi)
        self.counts = self.counts + c
        if self.keep_frames:
            self.frames.append((int(number), c))
        if self.roc is not None and scores is not None:
            self.roc.update(scores, gt, roi)
        return c

    def metrics(self) -> dict[str, float]:
        """The seven metrics of the summed counts, plus ``auc`` when the ROC is on."""
        out = self.counts.metrics()
        if self.roc is not None:
            out["auc"] = self.roc.auc()
        return out


def mean_metrics(rows: Iterable[dict[str, float]], keys: Iterable[str] | None = None) -> dict[str, float]:
    """Mean of each metric over ``rows`` (e.g. videos of a category), skipping ``nan``.

    ``keys`` defaults to the numeric keys of the first row.
    """
    rows = list(rows)
    if not rows:
        return {}
    if keys is None:
        keys = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    out = {}
    for k in keys:
        vals = [float(r[k]) for r in rows if k in r and r[k] is not None and not math.isnan(float(r[k]))]
        out[k] = float(np.mean(vals)) if vals else math.nan
    return out


def format_metrics(metrics: dict[str, float]) -> str:
    """One line of CDnet metrics: ``F=0.812 recall=... precision=... PWC=...`` (``nan`` where undefined)."""
    parts = []
    for key in ("F", "recall", "precision", "specificity", "FPR", "FNR", "PWC"):
        if key in metrics:
            v = metrics[key]
            parts.append(f"{key}={'nan' if v is None or (isinstance(v, float) and math.isnan(v)) else f'{v:.3f}'}")
    return " ".join(parts)
