"""Scoring subtractors on CDnet-layout sequences (what ``bgsub eval`` runs).

Every frame of a sequence goes through the frame pipeline in order (frames
before the temporal ROI are learned from but not scored); masks are scored the
CDnet way (:mod:`bgsub.metrics`) and, from the score maps, a streaming ROC gives
the AUC. ``fps`` counts only the subtractor's work (``apply``), not decoding or
scoring. A sequence that fails (a frame that does not decode or changes size)
is reported and the others are still scored.
"""

from __future__ import annotations

import itertools
import math
import sys
from pathlib import Path
from typing import Any, Callable

from bgsub.cdnet import find_sequences, is_cdnet_sequence
from bgsub.metrics import METRIC_NAMES, mean_metrics
from bgsub.pipeline import Callback, MaskFiles, Pipeline, Scores
from bgsub.sources import SourceError, open_source

__all__ = ["RESULT_KEYS", "resolve_sequences", "display_name", "evaluate_sequence", "evaluate",
           "unscored_by_max_frames"]

#: Keys of one sequence's result, in the order printed.
RESULT_KEYS = ("F", "recall", "precision", "specificity", "FPR", "FNR", "PWC", "auc", "fps")


def resolve_sequences(paths: list[str | Path]) -> list[Path]:
    """Expand each path to the CDnet sequences at or below it.

    Raises
    ------
    ValueError
        When a path does not exist or holds no sequence.
    """
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise ValueError(f"{p} does not exist")
        if is_cdnet_sequence(p):
            out.append(p)
            continue
        found = find_sequences(p) if p.is_dir() else []
        if not found:
            raise ValueError(
                f"{p} is not a CDnet-layout sequence (a folder with input/in%06d.jpg) and holds none"
            )
        out.extend(found)
    return out


def display_name(path: Path, all_paths: list[Path]) -> str:
    """The sequence's name, or ``parent/name`` when two sequences share a name (e.g. several "input" roots)."""
    names = [q.name for q in all_paths]
    if names.count(path.name) > 1:
        return f"{path.parent.name}/{path.name}"
    return path.name


def evaluate_sequence(source, subtractor, out_dir: Path | None = None,
                      progress: Callable[[int, int | None], None] | None = None, name: str | None = None,
                      region=None, min_area: int = 0) -> dict[str, Any]:
    """Run ``subtractor`` over every frame of a CDnet source through the pipeline and score it.

    Parameters
    ----------
    source : FrameSource
        An open CDnet sequence (:func:`bgsub.sources.open_source`).
    subtractor : object with ``apply`` and optionally ``getScoreMap``/``score_range``
    out_dir : Path, optional
        Folder for ``bin%06d.png`` masks (one per processed frame, written
        atomically); masks of an earlier run there are removed first.
    progress : callable(done, total), optional
    name : str, optional
        Name to report (default: the source's name).
    region : bgsub.pipeline.Region, optional
        ROI and processing scale.
    min_area : int
        Minimum foreground blob, pixels.

    Returns
    -------
    dict
        ``name``, ``frames`` (scored frames), ``processed`` (frames fed), the
        seven metrics, ``auc`` (nan without a score map or without both
        classes), ``fps`` (frames per second of ``apply`` alone), ``counts``
        (tp, fp, fn, tn), ``error`` (None, or why the sequence stopped early).
    """
    scores = Scores(roc=True)
    sinks: list = [scores]
    if out_dir is not None:
        sinks.append(MaskFiles(out_dir))
    if progress is not None:
        done = itertools.count(1)
        sinks.append(Callback(lambda out: progress(next(done), source.frame_count)))
    result = Pipeline(subtractor, region=region, min_area=min_area, sinks=sinks).run(source)
    m = scores.metrics() or scores.counts.metrics()
    row: dict[str, Any] = {"name": name or source.name, "frames": scores.frames}
    for key in RESULT_KEYS:
        if key == "fps":
            row["fps"] = result.subtract_fps if result.subtract_fps > 0 else math.nan
        else:
            row[key] = m.get(key, math.nan)
    row["processed"] = result.frames
    row["counts"] = scores.counts.as_dict()
    row["error"] = result.error
    row["interrupted"] = result.interrupted
    return row


def evaluate(paths: list[Path], make_subtractor: Callable[[], Any], out: Path | None = None,
             max_frames: int | None = None, quiet: bool = True, region_factory=None,
             min_area: int = 0, augment: str | None = None) -> tuple[list[dict], dict, list[dict]]:
    """Evaluate a fresh subtractor on each sequence (or its ``augment`` variant, :mod:`bgsub.augment`).

    Returns
    -------
    rows : list of dict
        One per sequence scored to its end (:func:`evaluate_sequence`).
    mean : dict
        Mean of each key over ``rows``.
    failed : list of dict
        ``{"name", "path", "error"}`` of each sequence that could not be scored to its end.
    """
    from bgsub.augment import augment as augmented

    rows, failed = [], []
    for path in paths:
        name = display_name(path, paths)
        progress = None
        if not quiet:
            def progress(done, total, _name=name):
                if done == total or done % 50 == 0:
                    print(f"\r{_name}: {done}/{total} frames", end="" if done != total else "\n",
                          file=sys.stderr, flush=True)
        try:
            with augmented(open_source(path, max_frames=max_frames), augment) as source:
                if source.sequence is not None and not source.sequence.has_groundtruth:
                    print(f"warning: {path} has no groundtruth/ folder; it is processed but not scored",
                          file=sys.stderr)
                row = evaluate_sequence(source, make_subtractor(), None if out is None else out / name,
                                        progress, name, region_factory() if region_factory else None, min_area)
        except (SourceError, OSError, ValueError) as exc:
            failed.append({"name": name, "path": str(path), "error": str(exc)})
            continue
        if row["interrupted"]:
            raise KeyboardInterrupt
        if row["error"] is not None:
            failed.append({"name": name, "path": str(path), "error": f"stopped at {row['error']}"})
            continue
        rows.append(row)
    return rows, mean_metrics(rows, keys=RESULT_KEYS), failed


def unscored_by_max_frames(path: Path, max_frames: int | None) -> str | None:
    """Why the first ``max_frames`` frames of the sequence at ``path`` hold none of its scored frames, else None."""
    from bgsub.cdnet import load_sequence

    if max_frames is None:
        return None
    try:
        seq = load_sequence(path)
    except (OSError, ValueError):
        return None  # evaluate() reports it
    first, last = seq.temporal_roi
    read = seq.frames[:max_frames]
    if not seq.has_groundtruth or first > last or not read or any(seq.is_scored(n) for n in read):
        return None
    needed = next(i for i, n in enumerate(seq.frames) if seq.is_scored(n)) + 1
    return (f"--max-frames {max_frames} stops at frame {read[-1]}, before its scored frames {first}-{last} "
            f"(temporalROI.txt): nothing would be scored; give --max-frames {needed} or more to score any "
            "frame, or leave it out")


# The seven CDnet metrics are all in RESULT_KEYS.
assert set(METRIC_NAMES) <= set(RESULT_KEYS)
