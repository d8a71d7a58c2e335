"""``bgsub batch IN_DIR OUT_DIR``: every video and CDnet sequence under a folder, in parallel.

Argument parsing and messages; the engine (inputs, output folders, workers,
Dask, resume, the manifest) is :mod:`bgsub.batch`.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from bgsub.batch import run_batch
from bgsub.batch.threads import WORKERS_PER_CORE, max_workers
from bgsub.commands._common import add_algorithm_arguments, add_frame_arguments, build_region, check_positive, error
from bgsub.devices import add_device_argument, check_device_for
from bgsub.metrics import format_metrics
from bgsub.pipeline import check_model_scale
from bgsub.settings import ConfigError, resolve_algorithm

__all__ = ["add_arguments", "main"]

VIDEO_SUFFIXES = (".mp4", ".avi", ".mkv")
OBJECTS_SUFFIXES = (".jsonl", ".csv")


def _suffix(option: str, choices: tuple[str, ...]):
    """An argparse type: ``mkv`` or ``.mkv`` -> ``.mkv``, one of ``choices``."""
    def parse(text: str) -> str:
        value = "." + text.lower().lstrip(".")
        if value not in choices:
            raise argparse.ArgumentTypeError(
                f"{option} takes one of {', '.join(c.lstrip('.') for c in choices)}, got {text!r}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("in_dir", type=Path, metavar="IN_DIR", help="folder searched for videos and CDnet sequences")
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="where the mask folders and manifest.json go")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default: one per core; at most 4 per core)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="numba and OpenCV threads per worker (default: cores / workers)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on Dask: tcp://HOST:8786 (an existing cluster; tls://... with the --tls-* options) "
                             "or local[:N] (a local cluster of N processes on 127.0.0.1, at most 4 per core, that "
                             "only this batch can connect to: private TLS keys); needs the [cluster] extra")
    parser.add_argument("--tls-ca-file", default=None, metavar="PEM", help="Dask TLS: CA certificate")
    parser.add_argument("--tls-cert", default=None, metavar="PEM", help="Dask TLS: this client's certificate")
    parser.add_argument("--tls-key", default=None, metavar="PEM", help="Dask TLS: this client's private key")
    parser.add_argument("--pattern", default=None, metavar="GLOB",
                        help="only inputs whose name or relative path matches, e.g. '*.mp4' or 'baseline/*'")
    add_algorithm_arguments(parser)
    add_device_argument(parser, "; recorded with the parameters")
    parser.add_argument("--mask-video", default=None, type=_suffix("--mask-video", VIDEO_SUFFIXES), metavar="EXT",
                        help="also write each input's masks as a video masks.EXT (.mp4, .avi, or .mkv = lossless)")
    parser.add_argument("--overlay", nargs="?", const=".mp4", default=None, metavar="EXT",
                        type=_suffix("--overlay", VIDEO_SUFFIXES),
                        help="also write each input with the mask tinted and the objects boxed as overlay.EXT "
                             "(default .mp4; .avi, .mkv)")
    parser.add_argument("--objects", nargs="?", const=".jsonl", default=None, metavar="FORMAT",
                        type=_suffix("--objects", OBJECTS_SUFFIXES),
                        help="also write each input's foreground objects (frame, track id, box, area, centroid) "
                             "as objects.jsonl (default) or objects.csv")
    add_frame_arguments(parser)
    parser.add_argument("--max-frames", type=int, default=None, metavar="N", help="at most N frames per input")
    parser.add_argument("--overwrite", action="store_true",
                        help="redo every input, also finished ones (needed to change settings on an OUT_DIR)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        return error("batch", f"--workers must be >= 1, got {args.workers}", 2)
    if args.workers is not None and args.workers > max_workers():
        return error("batch", f"--workers takes at most {max_workers()} on this machine ({WORKERS_PER_CORE} per "
                              f"core, and what its memory holds), got {args.workers}", 2)
    if args.max_frames is not None and args.max_frames < 1:
        return error("batch", f"--max-frames must be >= 1, got {args.max_frames}", 2)
    if args.threads is not None and args.threads < 1:
        return error("batch", f"--threads must be >= 1, got {args.threads}", 2)
    try:
        check_positive(args.min_area, "--min-area", 0)
        region = build_region(args)
    except ValueError as exc:
        return error("batch", str(exc), 2)
    tls = (args.tls_ca_file, args.tls_cert, args.tls_key)
    if any(tls) and not args.scheduler:
        return error("batch", "--tls-ca-file, --tls-cert and --tls-key need --scheduler tls://HOST:PORT", 2)
    if args.scheduler and args.workers is not None:
        return error("batch", "--workers is for the local process pool; with --scheduler the cluster's workers run "
                              "the jobs (local:N starts N)", 2)
    try:
        algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
        try:
            check_model_scale(algo, region.scale)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        device = getattr(args, "device", "cpu")
        if device != "cpu":  # (create takes it beside the parameters; the results record it with them)
            try:
                check_device_for(algo, params, device)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            params = {**params, "device": device}
        security = None
        if args.scheduler:
            from bgsub.batch import cluster

            cluster.check_scheduler(args.scheduler, tls)
            security = cluster.security(*tls) if any(tls) else None
        manifest = run_batch(
            args.in_dir, args.out_dir, algo=algo, params=params, workers=args.workers, threads=args.threads,
            scheduler=args.scheduler, security=security, pattern=args.pattern, mask_video=args.mask_video,
            max_frames=args.max_frames, overlay=args.overlay, objects=args.objects, roi=region.roi,
            scale=region.scale, min_area=args.min_area, overwrite=args.overwrite, progress=not args.quiet,
        )
    except ConfigError as exc:
        return error("batch", str(exc), 2)
    except OSError as exc:  # while running: the output's disk or folder failed under the batch
        where = f" {exc.filename}" if exc.filename else ""
        return error("batch", f"cannot write{where}: {exc.strerror or exc}; finished inputs are kept, run the same "
                              "command again to go on", 1)
    items = manifest.items
    counts = manifest.counts()
    failed = [k for k, v in items.items() if v.get("status") == "failed"]
    unfinished = [k for k, v in items.items() if v.get("status") not in ("done", "failed")]
    for key, item in items.items():
        if item.get("status") == "done" and item.get("warnings"):
            for w in item["warnings"]:
                print(f"warning: {key}: {w}", file=sys.stderr)
    links = len(manifest.data.get("skipped_links") or {})
    print(f"{counts.get('done', 0)} done, {len(failed)} failed"
          + (f", {len(unfinished)} unfinished" if unfinished else "")
          + (f", {links} link{'s' if links != 1 else ''} skipped (see the warnings)" if links else "")
          + f"; manifest: {manifest.path}")
    scored = [(k, v["metrics"]) for k, v in items.items() if v.get("status") == "done" and v.get("metrics")]
    for key, metrics in scored:
        print(f"  {key}: {format_metrics(metrics)}")
    if len(scored) > 1:
        from bgsub.metrics import mean_metrics

        mean = mean_metrics([{k: (math.nan if v is None else v) for k, v in m.items()} for _, m in scored])
        print(f"  mean over {len(scored)} scored inputs: {format_metrics(mean)}")
    for key in failed:
        print(f"  failed: {key}: {items[key].get('error')}", file=sys.stderr)
    if unfinished:
        return 130
    return 1 if failed else 0
