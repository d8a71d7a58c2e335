"""Frames per second of the GPU engine (``device="cuda"``) against the CPU engine and OpenCV's KNN, end to end.

One prepared run for a machine with an NVIDIA GPU; it installs nothing (numba-cuda must be there already:
``pip install -e ".[cuda]"``)::

    python benchmarks/gpu_fps.py                        # 1920x1080 and 3840x2160, olkn and norma
    python benchmarks/gpu_fps.py --size 1920x1080 --json gpu_fps.json

What it does, in order:

1. ``check``: olkn and norma on both engines over the same 320x240 frames (40, the first one's bootstrap
   included): the share of equal masks (raw and output) and the largest difference of the offsets, which on a
   real GPU (not the simulator the tests run) says whether its arithmetic gives the CPU engine's decisions.
2. For every size: ``apply`` timed on frames kept in memory, after ``--warmup`` untimed frames (which include
   the first frame's bootstrap and the kernels' compilation), for

   - ``model``: the model alone (no stabiliser, illumination compensation, median or component filters): the
     frame's upload, the kernel, the mask's download; the GPU engine's own speed;
   - ``median``: the model and the 7x7 median (on the GPU: its output is what comes back);
   - ``defaults``: the default parameters, every stage (the median on the GPU, the other stages around the
     model on the CPU);

   on ``cuda`` and ``cpu``, and OpenCV's KNN once per size. fps = timed frames / their wall time.

Prints a table and the ratios (GPU engine / CPU engine, / KNN); ``--json FILE`` writes everything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import bgsub  # noqa: E402
from bgsub.benchmark import load_frames  # noqa: E402

#: The stages around the model switched off: what ``model`` times.
MODEL_ONLY = {"stabilise": "off", "illumination": "off", "median": 0, "median_max": 0, "min_area": 0,
              "fill_holes": 0}
#: What is timed: the model alone, with the median, and the defaults.
CONFIGS = (("model", MODEL_ONLY), ("median", {**MODEL_ONLY, "median": 7}), ("defaults", {}))


def parse_size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h)


def frames_at(src: list[np.ndarray], size: tuple[int, int], n: int) -> list[np.ndarray]:
    w, h = size
    out = []
    for k in range(n):
        f = src[k % len(src)]
        out.append(cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA if w < f.shape[1] else cv2.INTER_LINEAR))
    return out


def time_apply(sub, warm: list[np.ndarray], timed: list[np.ndarray]) -> dict:
    """Warm-up frames untimed, then the timed frames one ``apply`` each."""
    t0 = time.perf_counter()
    for f in warm:
        sub.apply(f)
    t_warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    for f in timed:
        sub.apply(f)
    dt = time.perf_counter() - t0
    return {"fps": len(timed) / dt, "ms_per_frame": 1e3 * dt / len(timed), "frames": len(timed),
            "warmup_s": t_warm}


def check(src: list[np.ndarray], log, size: tuple[int, int] = (320, 240), n: int = 40) -> dict:
    """Both engines on the same ``n`` small frames: how often their masks agree."""
    frames = frames_at(src, size, n)
    out = {}
    for algo in ("olkn", "norma"):
        cpu = bgsub.create(algo)
        gpu = bgsub.create(algo, device="cuda")
        same = raw = 0.0
        for f in frames:
            same += np.mean(cpu.apply(f) == gpu.apply(f))
            raw += np.mean(cpu.getRawMask() == gpu.getRawMask())
        out[algo] = {"masks_equal": same / len(frames), "raw_masks_equal": raw / len(frames),
                     "rho_max_abs_diff": float(np.max(np.abs(cpu.rho_ - gpu.rho_))),
                     "n_steps": [int(cpu.n_steps_), int(gpu.n_steps_)]}
        log(f"check {algo} {size[0]}x{size[1]} x{n}: masks equal {100 * out[algo]['masks_equal']:.3f} %, raw "
            f"{100 * out[algo]['raw_masks_equal']:.3f} %, |rho| diff {out[algo]['rho_max_abs_diff']:.2e}, "
            f"steps cpu/gpu {out[algo]['n_steps']}")
    return out


def device_info() -> dict:
    from numba import cuda

    info = {"python": platform.python_version(), "numpy": np.__version__, "cpu_count": os.cpu_count()}
    try:
        import numba_cuda

        info["numba_cuda"] = getattr(numba_cuda, "__version__", "?")
    except ImportError:
        pass
    dev = cuda.get_current_device()
    name = getattr(dev, "name", "the CUDA simulator")
    info.update(gpu=name.decode() if isinstance(name, bytes) else str(name),
                compute_capability=list(getattr(dev, "compute_capability", ())))
    try:
        info["driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
    except Exception:  # noqa: BLE001
        pass
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", dest="sizes", action="append", default=None, metavar="WxH",
                    help="frame size (repeatable; default 1920x1080 and 3840x2160)")
    ap.add_argument("--algo", dest="algos", action="append", default=None, help="olkn, norma (default both)")
    ap.add_argument("--frames", type=int, default=200, help="timed frames on the GPU (default 200)")
    ap.add_argument("--cpu-frames", type=int, default=20, help="timed frames on the CPU and KNN (default 20)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed frames first (default 20)")
    ap.add_argument("--no-check", action="store_true", help="skip the small CPU/GPU agreement check")
    ap.add_argument("--json", type=Path, default=None, metavar="FILE", help="write the results as JSON")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        from bgsub.models._cuda_engine import cuda_runtime

        cuda_runtime()
    except ValueError as exc:
        print(f"gpu_fps: error: {exc}", file=sys.stderr)
        return 2
    report = {"device": device_info(), "sizes": []}
    log(f"device: {report['device']}")
    sizes = [parse_size(s) for s in (args.sizes or ["1920x1080", "3840x2160"])]
    algos = args.algos or ["olkn", "norma"]
    n_src = max(args.frames, args.cpu_frames) + args.warmup
    src, origin = load_frames(min(n_src, 300))
    report["source"] = origin
    log(f"frames: {origin}")
    if not args.no_check:
        report["check"] = check(src, log)
    for size in sizes:
        w, h = size
        warm = frames_at(src, size, args.warmup)
        timed = frames_at(src, size, args.frames)
        timed_cpu = timed[:args.cpu_frames]
        row = {"size": f"{w}x{h}", "results": []}
        knn = time_apply(bgsub.create("knn"), warm, timed_cpu)
        row["results"].append({"algo": "knn", "config": "defaults", "device": "cpu", **knn})
        log(f"{w}x{h} knn: {knn['fps']:.1f} fps")
        for algo in algos:
            for config, params in CONFIGS:
                for device in ("cuda", "cpu"):
                    sub = bgsub.create(algo, device=device, **params)
                    r = time_apply(sub, warm, timed if device == "cuda" else timed_cpu)
                    del sub
                    row["results"].append({"algo": algo, "config": config, "device": device, **r})
                    log(f"{w}x{h} {algo} {config} {device}: {r['fps']:.1f} fps ({r['ms_per_frame']:.2f} ms; warm-up "
                        f"{r['warmup_s']:.1f} s)")
        report["sizes"].append(row)
    print(f"{'size':<10} {'algo':<6} {'config':<9} {'cuda fps':>9} {'cpu fps':>8} {'x cpu':>6} {'x knn':>6}")
    for row in report["sizes"]:
        res = row["results"]
        knn = next(r["fps"] for r in res if r["algo"] == "knn")
        for algo in algos:
            for config, _ in CONFIGS:
                g = next(r["fps"] for r in res if (r["algo"], r["config"], r["device"]) == (algo, config, "cuda"))
                c = next(r["fps"] for r in res if (r["algo"], r["config"], r["device"]) == (algo, config, "cpu"))
                print(f"{row['size']:<10} {algo:<6} {config:<9} {g:>9.1f} {c:>8.1f} {g / c:>6.1f} {g / knn:>6.1f}")
        print(f"{row['size']:<10} {'knn':<6} {'defaults':<9} {'':>9} {knn:>8.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
