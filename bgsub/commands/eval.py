"""``bgsub eval``: score subtractors on CDnet-layout sequences.

Every frame of a sequence goes through the frame pipeline in order (frames
before the temporal ROI are learned from but not scored); masks are scored the
CDnet way (:mod:`bgsub.metrics`) and, from the score maps, a streaming ROC gives
the AUC. ``fps`` counts only the subtractor's work (``apply``), not decoding or
scoring. A sequence that fails (a frame that does not decode or changes size)
is reported and the others are still scored; the exit status is then 1.
``--out DIR`` replaces ``DIR/<sequence>/``'s masks with this run's.

Examples::

    bgsub eval ../shared/data/bgs/cdnet2014/highway --algo olkn
    bgsub eval ../shared/data/bgs --algo knn --json
    bgsub eval SEQ --algo olkn --set width=12 --set budget=30 --out masks/
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

from bgsub.cdnet import find_sequences, is_cdnet_sequence
from bgsub.commands import _common as common
from bgsub.metrics import METRIC_NAMES, mean_metrics
from bgsub.pipeline import Callback, MaskFiles, Pipeline, Scores
from bgsub.settings import resolve_algorithm
from bgsub.sources import SourceError, open_source
from bgsub.writers import json_safe

__all__ = ["add_arguments", "main", "evaluate_sequence", "evaluate", "resolve_sequences", "RESULT_KEYS"]

#: Keys of one sequence's result, in the order printed.
RESULT_KEYS = ("F", "recall", "precision", "specificity", "FPR", "FNR", "PWC", "auc", "fps")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sequences", nargs="+", metavar="SEQ_DIR",
                        help="CDnet-layout sequence folders (input/, groundtruth/, ROI.bmp, temporalROI.txt), "
                             "or folders holding such sequences")
    common.add_algorithm_arguments(parser)
    common.add_frame_arguments(parser)
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write CDnet submission masks DIR/<sequence>/bin%%06d.png (replacing earlier ones)")
    parser.add_argument("--max-frames", type=int, default=None, metavar="N",
                        help="process at most the first N frames of each sequence")
    parser.add_argument("--augment", choices=("jitter", "illumination", "noise"), default=None,
                        help="score a robustness variant of each sequence (bgsub.augment)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--verbose", action="store_true",
                        help="list every parameter of the algorithm (default: only those that differ from its "
                             "defaults)")


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


def _display_name(path: Path, all_paths: list[Path]) -> str:
    # parent/name when two sequences share a name (e.g. several "input" roots)
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
        name = _display_name(path, paths)
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


def _fmt(v: float, key: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if key == "fps":
        return f"{v:.1f}"
    if key == "PWC":
        return f"{v:.3f}"
    return f"{v:.4f}"


def format_table(rows: list[dict], mean: dict) -> str:
    """One line per sequence: scored and processed frames, the metrics, the AUC and fps."""
    keys = RESULT_KEYS
    width = max([len(r["name"]) for r in rows] + [8])
    lines = [f"{'sequence':<{width}} {'scored':>6} {'processed':>9} " + " ".join(f"{k:>11}" for k in keys)]
    for r in rows:
        lines.append(f"{r['name']:<{width}} {r['frames']:>6} {r['processed']:>9} "
                     + " ".join(f"{_fmt(r[k], k):>11}" for k in keys))
    lines.append(f"{'mean':<{width}} {'':>6} {'':>9} " + " ".join(f"{_fmt(mean.get(k), k):>11}" for k in keys))
    return "\n".join(lines)


def _unscored_by_max_frames(path: Path, max_frames: int | None) -> str | None:
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


def check_eval_outputs(args, paths: list[Path]) -> None:
    """Refuse, before any frame is read, an ``--out`` that is, contains or lies inside a sequence (or a folder
    given, or --roi/--config), that cannot be written, or whose ``<sequence>/`` folders hold masks bgsub did not
    write (OutputError, a ValueError)."""
    from bgsub.pipeline.paths import OutputError, check_outputs, check_writable
    from bgsub.writers import foreign_masks

    inputs = ([("input", Path(p)) for p in args.sequences] + [("input sequence", p) for p in paths]
              + [("--roi", getattr(args, "roi", None)), ("--config", args.config)])
    check_outputs(inputs, [("--out", args.out)])
    check_writable("--out", args.out, folder=True)
    for path in paths:
        folder = args.out / _display_name(path, paths)
        foreign = foreign_masks(folder)
        if foreign:
            raise OutputError(f"--out: {folder} already holds {len(foreign)} bin%06d.png file(s) that bgsub did "
                              "not write; this run would overwrite or mix with them: move them away or choose "
                              "another --out")


def main(args: argparse.Namespace) -> int:
    import bgsub

    try:
        common.check_positive(args.max_frames, "--max-frames")
        common.check_positive(args.min_area, "--min-area", 0)
        algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
        paths = resolve_sequences(args.sequences)
        common.build_region(args)  # refuse a bad --roi/--scale before any work
        if args.out is not None:
            check_eval_outputs(args, paths)
        unscored = {p: why for p in paths if (why := _unscored_by_max_frames(p, args.max_frames))}
        if unscored and len(unscored) == len(paths):
            raise ValueError("; ".join(f"{p.name}: {why}" for p, why in unscored.items()))
    except ValueError as exc:
        return common.error("eval", str(exc), 2)
    skipped = [{"name": _display_name(p, paths), "path": str(p), "error": why} for p, why in unscored.items()]
    all_paths, paths = paths, [p for p in paths if p not in unscored]
    try:
        rows, mean, failed = evaluate(paths, lambda: bgsub.create(algo, **params), args.out, args.max_frames,
                                      quiet=args.quiet or args.json, min_area=args.min_area,
                                      region_factory=lambda: common.build_region(args),
                                      augment=getattr(args, "augment", None))
    except KeyboardInterrupt:
        return common.error("eval", "interrupted", 130)
    failed = skipped + failed
    if args.json:
        seqs = [{k: r[k] for k in ("name", "frames", "processed") + RESULT_KEYS} for r in rows]
        print(json.dumps(json_safe({"algo": algo, "params": params, "sequences": seqs, "mean": mean,
                                    "failed": failed}), allow_nan=False))
    else:
        print((common.describe_params if args.verbose else common.summarize_params)(algo, params))
        if rows:
            print(format_table(rows, mean))
    for f in failed:
        print(f"bgsub eval: error: {f['name']} not scored: {f['error']}", file=sys.stderr)
    if failed:
        print(f"bgsub eval: error: {len(failed)} of {len(all_paths)} sequences failed", file=sys.stderr)
        return 1
    return 0


# The seven CDnet metrics are all in RESULT_KEYS.
assert set(METRIC_NAMES) <= set(RESULT_KEYS)
