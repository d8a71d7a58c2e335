"""``bgsub eval``: score subtractors on CDnet-layout sequences.

Every frame of a sequence is fed to the subtractor in order (frames before the
temporal ROI are learned from but not scored); masks are scored the CDnet way
(:mod:`bgsub.metrics`) and, from the score maps, a streaming ROC gives the AUC.
``fps`` counts only the subtractor's work (``apply``), not decoding or scoring.

Examples::

    bgsub eval ../shared/data/bgs/cdnet2014/highway --algo olkn
    bgsub eval ../shared/data/bgs --algo knn --json
    bgsub eval SEQ --algo olkn --set width=12 --set budget=30 --out masks/
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bgsub.cdnet import CDnetSequence, find_sequences, is_cdnet_sequence, load_sequence
from bgsub.metrics import METRIC_NAMES, SequenceScorer, mean_metrics

__all__ = ["add_arguments", "main", "evaluate_sequence", "evaluate", "resolve_sequences", "RESULT_KEYS"]

#: Keys of one sequence's result, in the order printed.
RESULT_KEYS = ("F", "recall", "precision", "specificity", "FPR", "FNR", "PWC", "auc", "fps")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sequences", nargs="+", metavar="SEQ_DIR",
                        help="CDnet-layout sequence folders (input/, groundtruth/, ROI.bmp, temporalROI.txt), "
                             "or folders holding such sequences")
    parser.add_argument("--algo", default="olkn", help="olkn, norma, knn or mog2 (default: olkn)")
    parser.add_argument("--preset", default=None, metavar="NAME",
                        help="start from a named parameter preset (e.g. paper)")
    parser.add_argument("--set", dest="assignments", action="append", default=[], metavar="KEY=VALUE",
                        help="set one parameter, e.g. --set width=12 (repeatable)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="write CDnet submission masks DIR/<sequence>/bin%%06d.png")
    parser.add_argument("--max-frames", type=int, default=None, metavar="N",
                        help="process at most the first N frames of each sequence")
    parser.add_argument("--augment", choices=("jitter", "illumination", "noise"), default=None,
                        help="score a robustness variant of each sequence (bgsub.augment)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


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


def evaluate_sequence(seq: CDnetSequence, subtractor, out_dir: Path | None = None, max_frames: int | None = None,
                      progress: Callable[[int, int], None] | None = None, name: str | None = None) -> dict[str, Any]:
    """Run ``subtractor`` over every frame of ``seq`` and score it.

    Parameters
    ----------
    seq : CDnetSequence
    subtractor : object with ``apply`` and optionally ``getScoreMap``/``score_range``
    out_dir : Path, optional
        Folder for ``bin%06d.png`` masks (one per processed frame, written atomically).
    max_frames : int, optional
        Stop after this many frames.
    progress : callable(done, total), optional
    name : str, optional
        Name to report (default: the sequence folder's name).

    Returns
    -------
    dict
        ``name, frames`` (scored frames), the seven metrics, ``auc`` (nan without
        a score map or without both classes), ``fps`` (frames per second of
        ``apply`` alone), ``processed`` (frames fed), ``counts`` (tp, fp, fn, tn).
    """
    score_range = getattr(subtractor, "score_range", None)
    has_scores = callable(getattr(subtractor, "getScoreMap", None)) and score_range is not None
    scorer = SequenceScorer(score_range=tuple(score_range) if has_scores else None, keep_frames=False)
    writer = None
    if out_dir is not None:
        from bgsub.writers import MaskWriter

        writer = MaskWriter(out_dir)
    frames = seq.frames if max_frames is None else seq.frames[: max(0, int(max_frames))]
    roi = None
    busy = 0.0
    scored = 0
    total = len(frames)
    for k, n in enumerate(frames):
        img = seq.read_frame(n)
        t0 = time.perf_counter()
        mask = subtractor.apply(img)
        busy += time.perf_counter() - t0
        if writer is not None:
            writer.write(n, mask)
        if seq.is_scored(n):
            gt = seq.read_groundtruth(n)
            if roi is None:
                roi = seq.roi(gt.shape)
            scores = subtractor.getScoreMap() if has_scores else None
            scorer.add(n, mask, gt, roi, scores=scores)
            scored += 1
        if progress is not None:
            progress(k + 1, total)
    m = scorer.metrics()
    result: dict[str, Any] = {"name": name or seq.name, "frames": scored}
    for key in RESULT_KEYS:
        if key == "fps":
            result["fps"] = (total / busy) if busy > 0 else math.nan
        elif key == "auc":
            result["auc"] = m.get("auc", math.nan)
        else:
            result[key] = m[key]
    result["processed"] = total
    result["counts"] = scorer.counts.as_dict()
    return result


def evaluate(paths: list[Path], make_subtractor: Callable[[], Any], out: Path | None = None,
             max_frames: int | None = None, quiet: bool = True, augment: str | None = None) -> tuple[list[dict], dict]:
    """Evaluate a fresh subtractor on each sequence (or its ``augment`` variant); returns ``(rows, mean)``."""
    from bgsub.augment import augment as augmented

    rows = []
    for path in paths:
        seq = augmented(load_sequence(path), augment)
        name = _display_name(path, paths)
        if not seq.has_groundtruth:
            print(f"warning: {path} has no groundtruth/ folder; it is processed but not scored", file=sys.stderr)
        progress = None
        if not quiet:
            def progress(done, total, _name=name):
                if done == total or done % 50 == 0:
                    print(f"\r{_name}: {done}/{total} frames", end="" if done < total else "\n",
                          file=sys.stderr, flush=True)
        seq_out = None if out is None else out / name
        rows.append(evaluate_sequence(seq, make_subtractor(), seq_out, max_frames, progress, name))
    mean = mean_metrics(rows, keys=RESULT_KEYS)
    return rows, mean


def _json_safe(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def _fmt(v: float, key: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if key == "fps":
        return f"{v:.1f}"
    if key == "PWC":
        return f"{v:.3f}"
    return f"{v:.4f}"


def format_table(rows: list[dict], mean: dict) -> str:
    keys = RESULT_KEYS
    width = max([len(r["name"]) for r in rows] + [8])
    lines = [f"{'sequence':<{width}} {'frames':>6} " + " ".join(f"{k:>11}" for k in keys)]
    for r in rows:
        lines.append(f"{r['name']:<{width}} {r['frames']:>6} " + " ".join(f"{_fmt(r[k], k):>11}" for k in keys))
    lines.append(f"{'mean':<{width}} {'':>6} " + " ".join(f"{_fmt(mean.get(k), k):>11}" for k in keys))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    import bgsub
    from bgsub.registry import default_params, parse_assignments, validate_params

    algo = args.algo
    try:
        if algo not in bgsub.algorithms():
            raise ValueError(f"unknown algorithm {algo!r}; choose one of {', '.join(bgsub.algorithms())}")
        params = default_params(algo, args.preset)
        params.update(parse_assignments(algo, args.assignments))
        params = validate_params(algo, params)
        paths = resolve_sequences(args.sequences)
        if args.max_frames is not None and args.max_frames < 1:
            raise ValueError(f"--max-frames must be >= 1, got {args.max_frames}")
        bgsub.create(algo, **params)  # fail early on inconsistent parameters
    except ValueError as exc:
        print(f"bgsub eval: error: {exc}", file=sys.stderr)
        return 2
    try:
        rows, mean = evaluate(paths, lambda: bgsub.create(algo, **params), args.out, args.max_frames,
                              quiet=args.quiet or args.json, augment=getattr(args, "augment", None))
    except (OSError, ValueError) as exc:
        print(f"bgsub eval: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        seqs = [{k: r[k] for k in ("name", "frames") + RESULT_KEYS} for r in rows]
        print(json.dumps(_json_safe({"algo": algo, "params": params, "sequences": seqs, "mean": mean}),
                         allow_nan=False))
    else:
        print(f"{algo} " + " ".join(f"{k}={v}" for k, v in params.items()))
        print(format_table(rows, mean))
    return 0


# The seven CDnet metrics are all in RESULT_KEYS.
assert set(METRIC_NAMES) <= set(RESULT_KEYS)
