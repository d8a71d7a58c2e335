"""``bgsub eval``: score subtractors on CDnet-layout sequences (:mod:`bgsub.evaluation`).

A sequence that fails is reported and the others are still scored; the exit
status is then 1. ``--out DIR`` replaces ``DIR/<sequence>/``'s masks with this run's.

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
from pathlib import Path

from bgsub.commands import _common as common
from bgsub.devices import add_device_argument, check_device_for
from bgsub.evaluation import RESULT_KEYS, display_name, evaluate, resolve_sequences, unscored_by_max_frames
from bgsub.pipeline import check_model_scale
from bgsub.pipeline.paths import check_mask_folder, check_outputs, check_writable
from bgsub.settings import resolve_algorithm
from bgsub.writers import json_safe

__all__ = ["add_arguments", "main", "format_table", "evaluate", "resolve_sequences", "RESULT_KEYS"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sequences", nargs="+", metavar="SEQ_DIR",
                        help="CDnet-layout sequence folders (input/, groundtruth/, ROI.bmp, temporalROI.txt), "
                             "or folders holding such sequences")
    common.add_algorithm_arguments(parser)
    add_device_argument(parser)
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


def check_eval_outputs(args, paths: list[Path]) -> None:
    """Refuse, before any frame is read, an ``--out`` that is, contains or lies inside a sequence (or a folder
    given, or --roi/--config), that cannot be written, or whose ``<sequence>/`` folders hold masks bgsub did not
    write (OutputError, a ValueError)."""
    inputs = ([("input", Path(p)) for p in args.sequences] + [("input sequence", p) for p in paths]
              + [("--roi", getattr(args, "roi", None)), ("--config", args.config)])
    check_outputs(inputs, [("--out", args.out)])
    check_writable("--out", args.out, folder=True)
    for path in paths:
        check_mask_folder("--out", args.out / display_name(path, paths))


def main(args: argparse.Namespace) -> int:
    import bgsub

    try:
        common.check_positive(args.max_frames, "--max-frames")
        common.check_positive(args.min_area, "--min-area", 0)
        algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
        device = getattr(args, "device", "cpu")
        check_device_for(algo, params, device)
        check_model_scale(algo, common.build_region(args).scale)  # refuse a bad --roi/--scale before any work
        paths = resolve_sequences(args.sequences)
        if args.out is not None:
            check_eval_outputs(args, paths)
        unscored = {p: why for p in paths if (why := unscored_by_max_frames(p, args.max_frames))}
        if unscored and len(unscored) == len(paths):
            raise ValueError("; ".join(f"{p.name}: {why}" for p, why in unscored.items()))
    except ValueError as exc:
        return common.error("eval", str(exc), 2)
    skipped = [{"name": display_name(p, paths), "path": str(p), "error": why} for p, why in unscored.items()]
    all_paths, paths = paths, [p for p in paths if p not in unscored]
    try:
        rows, mean, failed = evaluate(paths, lambda: bgsub.create(algo, device=device, **params), args.out,
                                      args.max_frames, quiet=args.quiet or args.json, min_area=args.min_area,
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

