"""Subtract the background of every video in a folder, in parallel, on a local Dask cluster (or a running one).

::

    python examples/cluster_folder.py videos/ masks/                    # a LocalCluster, one worker a core
    python examples/cluster_folder.py videos/ masks/ --workers 4 --algo norma
    python examples/cluster_folder.py videos/ masks/ --scheduler tcp://10.0.0.5:8786   # your own cluster

``pip install "olk-bgsub[cluster]"`` (dask.distributed). Each video is one task: a worker opens it, runs a fresh
subtractor over every frame through :class:`bgsub.pipeline.Pipeline` and writes the masks as a lossless video
``OUT/<name>_mask.mkv``; the task returns a small summary, printed as it completes. For resumable jobs with
retries and a manifest, the command line has ``bgsub batch`` (``--scheduler`` for the same clusters).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

VIDEO_SUFFIXES = (".mp4", ".avi", ".mkv", ".mov", ".m4v", ".webm")


def process_video(video: str, out_dir: str, algo: str) -> dict:
    """One video through a fresh ``algo`` subtractor; runs on a worker."""
    import bgsub
    from bgsub.pipeline import MaskVideo, Pipeline
    from bgsub.sources import open_source

    target = Path(out_dir) / f"{Path(video).stem}_mask.mkv"
    with open_source(video) as source:
        sink = MaskVideo(target, source.fps or 25.0)
        result = Pipeline(bgsub.create(algo), sinks=[sink]).run(source, catch_interrupt=False)
    return {"video": Path(video).name, "frames": result.frames, "fps": result.subtract_fps,
            "masks": str(target), "error": result.error}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cluster_folder.py", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder of videos")
    parser.add_argument("out", type=Path, help="folder for the mask videos")
    parser.add_argument("--algo", default="olkn", help="subtractor (default olkn)")
    parser.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: one a core)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="a running Dask scheduler (tcp://host:8786) instead of a LocalCluster")
    args = parser.parse_args(argv)

    videos = sorted(str(p) for p in args.folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES) \
        if args.folder.is_dir() else []
    if not videos:
        print(f"cluster_folder.py: error: no video ({', '.join(VIDEO_SUFFIXES)}) in {args.folder}", file=sys.stderr)
        return 2
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        print("cluster_folder.py: error: needs dask.distributed: pip install 'olk-bgsub[cluster]'", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.scheduler:
        cluster, client = None, Client(args.scheduler)
    else:
        # processes, one thread each: the subtractors are numba kernels, one core each
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    failed = 0
    try:
        futures = client.map(process_video, videos, out_dir=str(args.out.resolve()), algo=args.algo, pure=False)
        for future in as_completed(futures):
            r = future.result()
            if r["error"] is not None:
                failed += 1
                print(f"{r['video']}: stopped at {r['error']}", file=sys.stderr)
            else:
                print(f"{r['video']}: {r['frames']} frames, {r['fps']:.1f} fps -> {r['masks']}", flush=True)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    print(f"{len(videos) - failed} of {len(videos)} videos done")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
