"""Kill -9 of ``bgsub batch`` at a random moment: no process of it left, no temporary file after the next run.

Makes a few small synthetic videos, runs ``bgsub batch`` over them once to the
end (the reference), then for each trial starts the same batch in a session of
its own, kills the batch process with SIGKILL after a random delay, and checks:

* ``alive_after_s``: how long until no process of its session (workers, the
  multiprocessing fork server, the resource tracker) is left; the trial fails
  when any is still alive after ``--grace`` seconds (10 by default; zombies
  waiting for their parent to collect them count as gone);
* ``finished_identical``: every output folder the killed run committed holds the
  same mask files as the reference, byte for byte;
* ``rerun``: the same command run again to the end exits 0, leaves no
  ``.partial`` name anywhere under the output folder, and every output is
  byte-identical to the reference.

Odd trials start on an empty output folder; even ones with ``--overwrite`` on a
finished one (the killed run was replacing finished outputs; the next run, which
has nothing to redo, must still remove what it left). Trials 1, 2, 5, 6, ... kill
the batch process only (its workers must notice and exit); trials 3, 4, 7, 8, ...
kill its whole process group at once (as the OOM killer or a ``kill -9 -PGID``
would), so that the workers leave their temporary folders for the next run to
remove.

Prints one JSON line per trial and a summary; exits 1 if any trial failed.

Usage::

    python benchmarks/batch_kill.py [--trials 10] [--videos 3] [--frames 200] [--size 320x240]
                                    [--workers 2] [--algo knn] [--seed 0] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def make_videos(folder: Path, n: int, frames: int, size: tuple[int, int]) -> None:
    """``n`` synthetic MJPG videos (moving objects over a textured background) under ``folder``."""
    import cv2

    from bgsub.synthetic import SceneConfig, SyntheticScene

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        sub = folder / ("" if i % 2 == 0 else "sub")
        sub.mkdir(exist_ok=True)
        scene = SyntheticScene(SceneConfig(width=size[0], height=size[1], frames=frames, seed=i + 1, objects=3,
                                           first_object=3, warmup=min(5, frames - 1)))
        w = cv2.VideoWriter(str(sub / f"clip{i}.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, size)
        for t in range(1, frames + 1):
            w.write(scene.render(t)[0])
        w.release()


def session_processes(sid: int) -> list[tuple[int, str, str]]:
    """(pid, state, command) of every process in session ``sid`` that is not a zombie (Linux ``/proc``)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, session = fields[0], int(fields[3])
        if session == sid and state not in ("Z", "X"):
            out.append((int(entry), state, cmd.strip()[:120]))
    return out


def outputs(out: Path) -> dict[str, dict[str, str]]:
    """Each finished output folder (holding ``result.json``) -> its mask files and their SHA-256."""
    found = {}
    for result in sorted(out.rglob("result.json")):
        folder = result.parent
        rel = folder.relative_to(out).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            continue  # a temporary folder
        found[rel] = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                      for p in sorted(folder.iterdir()) if p.name != "result.json"}
    return found


def partial_names(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if ".partial" in p.name)


def batch_command(in_dir: Path, out: Path, args, overwrite: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "bgsub", "batch", str(in_dir), str(out), "--algo", args.algo,
           "--workers", str(args.workers), "--quiet"]
    return cmd + (["--overwrite"] if overwrite else [])


def run_to_end(cmd: list[str], timeout: float) -> tuple[int, float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    return p.returncode, time.perf_counter() - t0, p.stderr


def start(cmd: list[str], args) -> tuple[subprocess.Popen, float]:
    """Start ``cmd`` in a session of its own; return it once its workers run (or it ended), and when that was.

    The session then holds the batch, the resource tracker, the fork server and the workers.
    """
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
                            start_new_session=True)
    t0 = time.monotonic()
    want = 3 + min(args.workers, args.videos)
    while time.monotonic() - t0 < args.timeout and proc.poll() is None:
        if len(session_processes(proc.pid)) >= want:
            break
        time.sleep(0.02)
    return proc, time.monotonic()


def trial(i: int, in_dir: Path, ref: dict, ref_out: Path, work: Path, args, rng: random.Random,
          work_s: float) -> dict:
    out = work / f"out{i}"
    overwrite = i % 2 == 0
    group = i % 4 in (3, 0)
    if overwrite:
        shutil.copytree(ref_out, out)
    proc, t_up = start(batch_command(in_dir, out, args, overwrite), args)
    time.sleep(rng.uniform(0.0, args.kill_window * work_s))
    finished_first = proc.poll() is not None
    if not finished_first:
        if group:  # the batch and all its processes at once: the workers cannot clean up
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            os.kill(proc.pid, signal.SIGKILL)
    killed_at = time.monotonic() - t_up
    proc.wait()
    t_kill = time.monotonic()
    left = session_processes(proc.pid)
    while left and time.monotonic() - t_kill < args.grace:
        time.sleep(0.05)
        left = session_processes(proc.pid)
    gone_after = round(time.monotonic() - t_kill, 2)
    for pid, _, _ in left:  # leave nothing behind, whatever the result
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    after_kill = outputs(out) if out.exists() else {}
    partial_after_kill = partial_names(out) if out.exists() else []
    finished_identical = all(after_kill[k] == ref.get(k) for k in after_kill)
    rc, _, err = run_to_end(batch_command(in_dir, out, args), args.timeout)
    final = outputs(out)
    left_partials = partial_names(out)
    record = {
        "trial": i, "overwrite": overwrite, "killed": "group" if group else "batch",
        "killed_after_workers_started_s": round(killed_at, 2), "finished_before_kill": finished_first,
        "alive_after_grace": [f"{pid} {state} {cmd}" for pid, state, cmd in left],
        "gone_after_s": gone_after if not left else None,
        "committed_at_kill": len(after_kill), "partials_at_kill": len(partial_after_kill),
        "finished_identical": finished_identical,
        "rerun_rc": rc, "rerun_partials": left_partials, "rerun_identical": final == ref,
    }
    if rc != 0:
        record["rerun_stderr"] = err[-500:]
    record["ok"] = (not left and finished_identical and rc == 0 and not left_partials and final == ref)
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--videos", type=int, default=3)
    ap.add_argument("--frames", type=int, default=200)
    ap.add_argument("--size", default="320x240", help="WxH of the videos")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--algo", default="knn", help="knn needs no numba compile; any registered algorithm works")
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    ap.add_argument("--grace", type=float, default=10.0, help="seconds the processes have to exit after the kill")
    ap.add_argument("--kill-window", type=float, default=0.9,
                    help="kill at a uniform moment in [0, this x the reference run's work] after the workers start")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one batch run may take")
    ap.add_argument("--json", action="store_true", help="print only the summary as one JSON object")
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = ap.parse_args(argv)
    w, h = (int(v) for v in args.size.lower().split("x"))
    work = args.keep if args.keep is not None else Path(tempfile.mkdtemp(prefix="bgsub-batch-kill-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    try:
        in_dir = work / "in"
        make_videos(in_dir, args.videos, args.frames, (w, h))
        ref_out = work / "ref"
        # The reference: to the end, timing the work after the workers started (the window of the kills).
        proc, t_up = start(batch_command(in_dir, ref_out, args), args)
        rc = proc.wait(timeout=args.timeout)
        work_s = time.monotonic() - t_up
        if rc != 0:
            print(f"the reference run failed (exit {rc})", file=sys.stderr)
            return 1
        ref = outputs(ref_out)
        records = []
        for i in range(1, args.trials + 1):
            record = trial(i, in_dir, ref, ref_out, work, args, rng, work_s)
            records.append(record)
            if not args.json:
                print(json.dumps(record), flush=True)
        killed = [r for r in records if not r["finished_before_kill"]]
        summary = {
            "trials": len(records), "killed": len(killed), "ok": sum(r["ok"] for r in records),
            "reference_work_s": round(work_s, 2), "outputs": len(ref),
            "max_gone_after_s": max((r["gone_after_s"] or args.grace for r in records), default=None),
            "processes_left": sum(len(r["alive_after_grace"]) for r in records),
            "partials_after_rerun": sum(len(r["rerun_partials"]) for r in records),
            "partials_at_kill": sum(r["partials_at_kill"] for r in records),
            "all_identical": all(r["finished_identical"] and r["rerun_identical"] for r in records),
        }
        if args.json:
            summary["records"] = records
        print(json.dumps(summary), flush=True)
        return 0 if summary["ok"] == summary["trials"] and killed else 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
