"""``bgsub batch`` wall time for combinations of ``--workers`` and ``--threads``.

Copies the bundled ``videos/sample.mp4`` ``--inputs`` times into a temporary
input folder and runs the batch (default algorithm, fresh output folder each
time) for every ``WORKERSxTHREADS`` combination asked for, ``--repeat`` times,
keeping the best wall time. Prints a Markdown table: combination, wall seconds,
frames per second over the whole batch, and the ratio to 1 worker x 1 thread.
The table measured on the dev machine is in ``docs/usage.md``.

Usage::

    python benchmarks/batch_threads.py [--inputs 4] [--combos 1x1 1x2 2x1 2x2 4x1] [--repeat 2]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inputs", type=int, default=4)
    p.add_argument("--combos", nargs="+", default=["1x1", "1x2", "2x1", "2x2", "4x1"])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--algo", default="olkn")
    args = p.parse_args(argv)
    from bgsub.batch import run_batch
    from bgsub.batch.threads import available_cores

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in"
        src.mkdir()
        for i in range(args.inputs):
            shutil.copy(REPO / "videos" / "sample.mp4", src / f"clip{i}.mp4")
        for combo in args.combos:
            workers, threads = (int(v) for v in combo.split("x"))
            best, frames = None, 0
            for r in range(args.repeat):
                out = Path(tmp) / f"out-{combo}-{r}"
                t0 = time.perf_counter()
                m = run_batch(src, out, algo=args.algo, params={}, workers=workers, threads=threads,
                              progress=False, log=io.StringIO())
                seconds = time.perf_counter() - t0
                frames = sum(int(v.get("frames") or 0) for v in m.items.values())
                best = seconds if best is None else min(best, seconds)
                shutil.rmtree(out)
            rows.append((combo, best, frames / best))
    base = rows[0][1]
    print(f"{args.inputs} x sample.mp4 (300 frames, 320x240), {args.algo}, {available_cores()} cores, "
          f"best of {args.repeat}; 1-min load average at the end: {os.getloadavg()[0]:.1f}")
    print("| workers x threads | wall s | frames/s | speed vs first |")
    print("|---|---|---|---|")
    for combo, seconds, fps in rows:
        print(f"| {combo} | {seconds:.1f} | {fps:.0f} | {base / seconds:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
