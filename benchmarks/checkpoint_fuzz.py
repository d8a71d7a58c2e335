"""Checkpoint fuzzing: mutated checkpoints of every subtractor and of OLKClassifier, loaded as an attacker's file.

A checkpoint is input: anyone can edit one and recompute its SHA-256. This script
takes a valid checkpoint of each model (16x12 frames, a few frames in), mutates it
``--cases`` times (values in arrays set to huge, negative, NaN or infinite ones,
shapes cut or grown, types changed, entries dropped or added, meta values and
parameters replaced, bytes of the file cut or flipped; the checksum recomputed for
every edit but the byte-level ones) and loads each mutant, then runs the model on
two frames (a subtractor) or predicts and learns two rows (an estimator).

Each outcome is one of: ``refused`` (a ``CheckpointError``, one line), ``loaded``
(the state passed an independent check -- every float finite, ring positions and
counts within the budget -- and the model ran), or a failure: ``other_error``
(another exception), ``bad_state`` (loaded with non-finite or out-of-range state),
``crash`` (the process died: a segmentation fault) or ``hang`` (no answer within
``--timeout`` seconds). The mutants run in worker processes that report each case
before and after it, so a crash or a hang costs one case and a new worker. The
largest peak of memory allocated while loading a mutant (tracemalloc, which sees
numpy's buffers) is reported beside the model's state size; ``--memory`` also
loads 320x240 models and compares the load's peak with their state size.

Usage::

    python benchmarks/checkpoint_fuzz.py [--cases 2000] [--models olkn,norma,svmd,oem,OLKClassifier]

Prints one row per model with the counts, and exits 1 when any failure occurred.
The test suite runs the same mutations, fewer of them, through hypothesis
(tests/bgsub/test_faults_checkpoint.py, tests/learners/test_faults_persist.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

MODELS = ("olkn", "norma", "svmd", "oem", "OLKClassifier")
#: Frame size of the fuzzed subtractors (small: the cases are many).
H, W = 12, 16

#: Values written into arrays and meta entries.
ARRAY_VALUES = (2**40, -1, -(2**40), 2**20, 2**63 - 1, float("nan"), float("inf"), float("-inf"), 1e30, -1e30, 0,
                1, 255, 256, 0.5, -0.5, 3)
META_VALUES = (None, -1, 0, 1, 5, 2**31, 2**63, 2**70, 1e400, -1e400, float("nan"), 0.5, "x", "", [1], [1, 2],
               [100000, 100000], [0, 0], {"a": 1}, {}, True, False)
DTYPES = ("u1", "i1", "u2", "i4", "i8", "f4", "f8", "?", "<U4", "c8")
OPS = ("value", "fill", "shape", "dtype", "drop_array", "add_array", "meta", "scalar", "param", "drop_meta",
       "add_scalar", "truncate", "flip")


# ------------------------------------------------------------------ valid checkpoints
def frames(n: int = 8, seed: int = 0) -> list[np.ndarray]:
    """``n`` colour frames of HxW with noise and a moving block."""
    rng = np.random.default_rng(seed)
    base = rng.integers(60, 200, size=(H, W, 3))
    out = []
    for t in range(n):
        f = base + rng.normal(0, 5, size=base.shape)
        f[3:8, t % 8:(t % 8) + 5] += 70
        out.append(np.clip(f, 0, 255).astype(np.uint8))
    return out


def rows(n: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, np.where(X[:, 0] + X[:, 1] > 0, "pos", "neg")


def make_model(name: str):
    """A model of ``name`` that has seen a few frames (rows), ready to save."""
    if name == "OLKClassifier":
        import learners

        X, y = rows()
        return learners.OLKClassifier(budget=16).partial_fit(X[:30], y[:30], classes=["neg", "pos"])
    import bgsub

    params = {"budget": 6} if name in ("olkn", "norma", "svmd") else {}
    sub = bgsub.create(name, **params)
    for f in frames()[:4]:
        sub.apply(f)
    return sub


def load(name: str, path):
    if name == "OLKClassifier":
        import learners

        return learners.OLKClassifier.load(path)
    import bgsub

    return bgsub.load(path)


def run_model(name: str, model) -> list:
    """What the model does next: two frames' masks, or two rows' predictions and learning."""
    if name == "OLKClassifier":
        X, y = rows()
        out = [model.decision_function(X[30:34]).tolist(), model.predict(X[30:34]).tolist()]
        labels = model.classes_[np.minimum(y[34:36] == "pos", model.classes_.shape[0] - 1).astype(int)]
        model.partial_fit(X[34:36], labels)  # learning goes on, with the model's own labels
        out.append(model.decision_function(X[36:]).tolist())
        return out
    masks = [model.apply(f) for f in frames()[4:6]]
    for m in masks:
        if m.dtype != np.uint8 or m.shape != (H, W) or not np.isin(m, (0, 255)).all():
            raise AssertionError(f"mask of {m.dtype} {m.shape} with values {np.unique(m)[:5]}")
    return [m.tobytes() for m in masks]


def state_problem(name: str, model) -> str | None:
    """A description of non-finite or out-of-range state in a loaded model, checked independently of the
    loader's own checks; None when every float is finite and every ring within its budget."""
    if name == "OLKClassifier":
        arrays = {k: v for k, v in vars(model).items() if isinstance(v, np.ndarray)}
        scalars = {k: v for k, v in vars(model).items() if isinstance(v, float)}
        ring, cap = arrays.get("_ring"), arrays["_sv"].shape[0] if "_sv" in arrays else None
    else:
        arrays = {k: getattr(model, k) for k in type(model)._STATE_ARRAYS if getattr(model, k, None) is not None}
        scalars = {k: getattr(model, k) for k in type(model)._STATE_SCALARS}
        ring = getattr(model, "ring_", None)
        cap = model.samples_.shape[2] if getattr(model, "samples_", None) is not None else None
    for k, a in arrays.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            return f"{k} not finite"
    for k, v in scalars.items():
        if isinstance(v, float) and not math.isfinite(v):
            return f"{k} = {v}"
        if isinstance(v, int) and not 0 <= v < 2**62:
            return f"{k} = {v}"
    if ring is not None and ring.size:
        start, count = ring[..., 0], ring[..., 1]
        if start.min() < 0 or start.max() >= cap or count.min() < 0 or count.max() > cap:
            return f"ring out of range: start [{start.min()}, {start.max()}], count [{count.min()}, {count.max()}]"
    return None


# ------------------------------------------------------------------ mutations
def _value_for(dtype: np.dtype, value):
    """``value`` as an element of ``dtype`` where it fits, else the dtype's extreme of its sign."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if isinstance(value, float) and not math.isfinite(value):
            value = info.max if value != -math.inf else info.min
        return np.array(int(max(info.min, min(info.max, int(value)))), dtype)
    if dtype.kind == "b":
        return np.array(bool(value == value and value), dtype)
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(value, dtype)
    return np.array(str(value)[: max(1, dtype.itemsize // 4)], dtype)


def mutate(meta: dict, arrays: dict, op: str, pick: int, where: float, choice: int) -> tuple[dict, dict, str]:
    """One mutation of a checkpoint's ``meta`` and ``arrays`` (copies): ``op`` one of :data:`OPS` except the
    byte-level ``truncate``/``flip`` (:func:`mutate_bytes`), ``pick`` which entry, ``where`` (0-1) where in it,
    ``choice`` which value. Returns ``(meta, arrays, description)``."""
    meta = json.loads(json.dumps(meta))
    arrays = {k: v.copy() for k, v in arrays.items()}
    names = sorted(arrays)
    name = names[pick % len(names)] if names else None
    if op in ("value", "fill") and name is not None:
        a = arrays[name]
        if a.size:
            value = _value_for(a.dtype, ARRAY_VALUES[choice % len(ARRAY_VALUES)])
            if op == "fill":
                a[...] = value
            else:
                a.reshape(-1)[min(int(where * a.size), a.size - 1)] = value
        return meta, arrays, f"{op} {name} = {ARRAY_VALUES[choice % len(ARRAY_VALUES)]!r}"
    if op == "shape" and name is not None:
        a = arrays[name]
        if a.ndim == 0:
            arrays[name] = a.reshape(1)
        else:
            axis = pick % a.ndim
            n = a.shape[axis]
            new = max(0, n + (choice % 7) - 3) if choice % 2 else (n * 2 if n else 1)
            if new <= n:
                arrays[name] = np.ascontiguousarray(np.take(a, range(new), axis=axis))
            else:
                pad = [(0, 0)] * a.ndim
                pad[axis] = (0, new - n)
                arrays[name] = np.pad(a, pad) if a.dtype.kind != "U" else np.pad(a, pad, constant_values="")
        return meta, arrays, f"shape {name} {a.shape} -> {arrays[name].shape}"
    if op == "dtype" and name is not None:
        dt = np.dtype(DTYPES[choice % len(DTYPES)])
        try:
            with np.errstate(all="ignore"):
                arrays[name] = arrays[name].astype(dt)
        except (ValueError, TypeError):
            arrays[name] = np.zeros(arrays[name].shape, dt)
        return meta, arrays, f"dtype {name} -> {dt.str}"
    if op == "drop_array" and name is not None:
        del arrays[name]
        return meta, arrays, f"drop {name}"
    if op == "add_array":
        extra = ("predict", "junk_", "ring_", "_ring", "samples_", "coef_", "__class__", "_sv")[choice % 8]
        if extra in arrays:
            extra = extra + "x"
        arrays[extra] = np.zeros((choice % 5, 3), np.float64)
        return meta, arrays, f"add array {extra}"
    keys = sorted(meta)
    value = META_VALUES[choice % len(META_VALUES)]
    if op == "meta":
        key = keys[pick % len(keys)]
        meta[key] = value
        return meta, arrays, f"meta {key} = {value!r}"
    if op in ("scalar", "add_scalar"):
        scalars = meta.get("scalars")
        if not isinstance(scalars, dict) or not scalars:
            meta["scalars"] = value
            return meta, arrays, f"scalars = {value!r}"
        key = sorted(scalars)[pick % len(scalars)] if op == "scalar" else ("predict", "junk_", "fit", "_rng")[pick % 4]
        scalars[key] = value
        return meta, arrays, f"scalar {key} = {value!r}"
    if op == "param":
        params = meta.get("params")
        if isinstance(params, dict) and params:
            key = sorted(params)[pick % len(params)]
            params[key] = value
            return meta, arrays, f"param {key} = {value!r}"
        return meta, arrays, "param (none)"
    if op == "drop_meta":
        key = keys[pick % len(keys)]
        sub = meta.get(key)
        if isinstance(sub, dict) and sub and choice % 2:
            inner = sorted(sub)[pick % len(sub)]
            del sub[inner]
            return meta, arrays, f"drop {key}.{inner}"
        del meta[key]
        return meta, arrays, f"drop meta {key}"
    raise ValueError(f"unknown mutation {op!r}")


def mutate_bytes(data: bytes, op: str, where: float, choice: int) -> tuple[bytes, str]:
    """A byte-level mutation of a checkpoint file: cut at ``where``, or ``choice % 8 + 1`` bytes flipped there."""
    if op == "truncate":
        n = int(where * len(data))
        return data[:n], f"truncate at {n}/{len(data)}"
    out = bytearray(data)
    at = min(int(where * len(out)), len(out) - 1)
    for i in range(choice % 8 + 1):
        out[min(at + i, len(out) - 1)] ^= 0xFF if i % 2 == 0 else (choice * 37 + i) & 0xFF or 1
    return bytes(out), f"flip {choice % 8 + 1} bytes at {at}"


def write_mutant(path: Path, valid: Path, op: str, pick: int, where: float, choice: int) -> str:
    """Write the mutant of the checkpoint ``valid`` to ``path`` with its checksum recomputed, as an editor
    would (byte-level mutations: as they fall); returns its description."""
    from learners._persist import read_checkpoint

    if op in ("truncate", "flip"):
        data, what = mutate_bytes(valid.read_bytes(), op, where, choice)
        path.write_bytes(data)
        return what
    meta, arrays = read_checkpoint(valid)
    meta, arrays, what = mutate(meta, arrays, op, pick, where, choice)
    write_edited(path, meta, arrays)
    return what


def write_edited(path: Path, meta: dict, arrays: dict) -> Path:
    """A checkpoint of ``meta`` and ``arrays`` with its checksum recomputed (what anyone editing one can do)."""
    from learners._persist import _checksum

    text = json.dumps(meta, sort_keys=True, allow_nan=True)
    payload = {"a." + k: v for k, v in arrays.items()}
    payload["meta"] = np.array(text)
    payload["checksum"] = np.array(_checksum(text, arrays))
    with open(path, "wb") as fh:
        np.savez(fh, **payload)
    return Path(path)


def case(seed: int, index: int) -> tuple[str, int, float, int]:
    """The mutation of case ``index``: ``(op, pick, where, choice)``."""
    rng = np.random.default_rng([seed, index])
    return OPS[int(rng.integers(len(OPS)))], int(rng.integers(1 << 16)), float(rng.random()), int(rng.integers(1 << 16))


# ------------------------------------------------------------------ one case
def try_case(name: str, valid: Path, path: Path, mutation: tuple, reference: list | None = None,
             trace: bool = False) -> tuple[str, str]:
    """Load the mutant ``mutation`` of ``valid`` and run it: ``(outcome, detail)``; with ``trace``, the peak of
    memory allocated while loading goes to ``try_case.peak``."""
    from learners._persist import CheckpointError

    what = write_mutant(path, valid, *mutation)
    if trace:
        tracemalloc.start()
    try:
        model = load(name, path)
    except CheckpointError as exc:
        msg = str(exc)
        if not msg or "\n" in msg:
            return "other_error", f"{what}: unclear message {msg!r}"
        return "refused", what
    except Exception as exc:  # noqa: BLE001 - any other exception is what this script counts
        return "other_error", f"{what}: {type(exc).__name__}: {exc}"[:300]
    finally:
        if tracemalloc.is_tracing():
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            try_case.peak = peak
    problem = state_problem(name, model)
    if problem is not None:
        return "bad_state", f"{what}: {problem}"
    try:
        out = run_model(name, model)
    except Exception as exc:  # noqa: BLE001
        return "other_error", f"{what}: running: {type(exc).__name__}: {exc}"[:300]
    same = reference is not None and out == reference
    return "loaded", what + (" (same output)" if same else "")


def worker(name: str, seed: int, start: int, stop: int) -> None:
    """Run cases ``start..stop-1`` of ``name``, printing ``start I`` and ``done I OUTCOME peak DETAIL`` per case."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        valid = tmp / "valid.npz"
        make_model(name).save(valid)
        reference = run_model(name, load(name, valid))  # compiles the kernels before the first timed case
        declared = sum(v.nbytes for v in _arrays_of(load(name, valid)))
        print(f"ready {declared}", flush=True)
        for i in range(start, stop):
            print(f"start {i}", flush=True)
            try_case.peak = 0
            outcome, detail = try_case(name, valid, tmp / "m.npz", case(seed, i), reference, trace=True)
            peak = try_case.peak
            print(f"done {i} {outcome} {peak} {json.dumps(detail)}", flush=True)


def _arrays_of(model) -> list[np.ndarray]:
    names = getattr(type(model), "_STATE_ARRAYS", None)
    if names is None:
        return [v for v in vars(model).values() if isinstance(v, np.ndarray)]
    return [getattr(model, n) for n in names if getattr(model, n, None) is not None]


def fuzz(name: str, cases: int, seed: int, timeout: float) -> dict:
    """All ``cases`` of ``name`` through worker processes; the counts of each outcome."""
    counts = {k: 0 for k in ("refused", "loaded", "other_error", "bad_state", "crash", "hang")}
    failures: list[str] = []
    peak_bytes = 0
    same = 0
    i = 0
    while i < cases:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", name, "--seed", str(seed), "--start", str(i),
                                 "--stop", str(cases)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                bufsize=1)
        declared = None
        current = None
        ready_by = time.monotonic() + 1800  # the first compile of the kernels may take minutes
        while True:
            # a case has ``timeout`` seconds; between cases (writing the next mutant) a loaded machine may pause
            limit = ready_by if declared is None else time.monotonic() + (timeout if current is not None else 120)
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, limit - time.monotonic()))
            line = proc.stdout.readline() if ready else None
            if line is None:  # no answer in time: the current case hangs
                proc.kill()
                proc.wait()
                if declared is None:
                    raise RuntimeError(f"the {name} worker did not start")
                current = i if current is None else current
                counts["hang"] += 1
                failures.append(f"case {current}: hang")
                i = current + 1
                break
            if line == "":  # the worker ended
                rc = proc.wait()
                if current is not None:
                    counts["crash"] += 1
                    failures.append(f"case {current}: the process died (exit {rc})")
                    i = current + 1
                elif declared is None:
                    raise RuntimeError(f"the {name} worker failed before its first case (exit {rc})")
                else:
                    i = cases
                break
            word, *rest = line.rstrip("\n").split(" ", 4)
            if word == "ready":
                declared = int(rest[0])
            elif word == "start":
                current = int(rest[0])
            elif word == "done":
                outcome, peak, detail = rest[1], int(rest[2]), json.loads(rest[3])
                counts[outcome] += 1
                same += detail.endswith("(same output)")
                if outcome not in ("refused", "loaded"):
                    failures.append(f"case {current}: {outcome}: {detail}")
                peak_bytes = max(peak_bytes, peak)
                current = None
                i = int(rest[0]) + 1
    return {"model": name, "cases": cases, **counts, "same_output": same, "load_peak_bytes": peak_bytes,
            "model_bytes": declared, "failures": failures[:20]}


def load_memory(name: str = "olkn", size: tuple[int, int] = (240, 320)) -> dict:
    """Memory used while loading a checkpoint of a model of ``size`` frames, against the model's state size:
    the peak allocated (tracemalloc, which sees numpy's buffers, zero pages not yet touched included) and
    the growth of the resident set's peak in a fresh process (Linux)."""
    import bgsub

    rng = np.random.default_rng(0)
    sub = bgsub.create(name)
    for _ in range(2):
        sub.apply(rng.integers(0, 256, (*size, 3), dtype=np.uint8))
    with tempfile.TemporaryDirectory() as tmp:
        path = sub.save(Path(tmp) / "big.npz")
        model = sum(a.nbytes for a in _arrays_of(sub))
        del sub
        tracemalloc.start()
        bgsub.load(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        code = ("import sys\nimport bgsub\n"
                "def kib(f):\n    return next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith(f))\n"
                "before = kib('VmRSS:')\nbgsub.load(sys.argv[1])\nprint(kib('VmHWM:') - before)\n")
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parents[1])
        rss = int(out.stdout.strip()) * 1024 if out.returncode == 0 and out.stdout.strip() else None
    return {"model": name, "frame": f"{size[1]}x{size[0]}", "state_bytes": model, "load_peak_allocated": peak,
            "allocated_x_state": round(peak / model, 2), "load_peak_rss_growth": rss,
            "rss_x_state": None if rss is None else round(rss / model, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000, help="mutated checkpoints per model (default 2000)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds a case may take before it counts as a hang")
    ap.add_argument("--memory", action="store_true", help="also the load's peak memory on 320x240 models")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--stop", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.seed, args.start, args.stop)
        return 0
    bad = 0
    for name in args.models.split(","):
        t0 = time.perf_counter()
        row = fuzz(name, args.cases, args.seed, args.timeout)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        bad += sum(row[k] for k in ("other_error", "bad_state", "crash", "hang"))
        print(json.dumps(row), flush=True)
    if args.memory:
        for name in ("olkn", "svmd", "oem"):
            print(json.dumps(load_memory(name)), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
