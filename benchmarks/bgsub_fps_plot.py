"""fps against frame size for every algorithm (and olkn's fast preset): one ``bgsub bench`` run, plotted.

Runs :func:`bgsub.commands.bench.benchmark` (the same frames in memory, rounds
interleaved, median fps) at each size and draws fps against the number of
pixels, log-log, into a PNG; prints the table and the machine's load. Usage::

    python benchmarks/bgsub_fps_plot.py --out docs/img/fps_vs_size.png \
        --size 160x120 --size 320x240 --size 640x480 --size 1280x720 --size 1920x1080 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import bgsub
from bgsub.commands.bench import benchmark


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/fps_vs_size.png"))
    ap.add_argument("--size", action="append", default=None)
    ap.add_argument("--algo", action="append", default=None,
                    help="default: every registered algorithm and olkn:fast")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--frames", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the bench report here")
    a = ap.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in (a.size or ["160x120", "320x240", "640x480",
                                                                      "1280x720", "1920x1080"])]
    algos = tuple(a.algo or (*bgsub.algorithms(), "olkn:fast"))
    load = os.getloadavg()
    rep = benchmark(algos, sizes, a.frames, a.rounds, None, lambda m: print(m, file=sys.stderr, flush=True))
    rep["load_before"] = load
    rep["load_after"] = os.getloadavg()
    if a.json:
        a.json.write_text(json.dumps(rep, indent=1))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    pixels = [int(s["size"].split("x")[0]) * int(s["size"].split("x")[1]) for s in rep["sizes"]]
    for algo in algos:
        fps = [next(r["fps"] for r in s["results"] if r["algo"] == algo) for s in rep["sizes"]]
        ax.plot(pixels, fps, marker="o", label=algo, linestyle="--" if algo in ("knn", "mog2") else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(pixels)
    ax.set_xticklabels([s["size"] for s in rep["sizes"]], rotation=30)
    ax.set_xlabel("frame size")
    ax.set_ylabel("frames per second (apply only)")
    ax.set_title(f"bgsub bench, {rep['rounds']} interleaved rounds, {rep['numba_threads']} threads, "
                 f"load {load[0]:.1f}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(a.out, dpi=110)
    print(f"{a.out}; load {load[0]:.1f} before, {rep['load_after'][0]:.1f} after")
    print("| size | " + " | ".join(algos) + " |")
    print("|---|" + "---|" * len(algos))
    for s in rep["sizes"]:
        row = {r["algo"]: r for r in s["results"]}
        print(f"| {s['size']} | " + " | ".join(
            f"{row[a]['fps']:.1f} ({row[a].get('ratio_to_knn', float('nan')):.2f}x)" for a in algos) + " |")


if __name__ == "__main__":
    main()
