"""``bgsub batch IN_DIR OUT_DIR``: every video and CDnet sequence under a folder, in parallel.

Finds every video file and every CDnet-layout sequence folder under
``IN_DIR`` (recursively), and processes each in its own worker process (default:
one per core) into its own folder under ``OUT_DIR`` that mirrors the input
tree: ``IN_DIR/a/b/clip.mp4`` -> ``OUT_DIR/a/b/clip/bin%06d.png``,
``IN_DIR/cat/seq/`` (CDnet) -> ``OUT_DIR/cat/seq/bin%06d.png``.

Each output folder is filled under a temporary name (``.NAME.partial-...``),
``result.json`` is written into it last, and only then is it renamed into place:
an output folder that exists is finished. ``OUT_DIR/manifest.json`` (written
atomically after every video) records the parameters, each input's status,
frame counts, fps and errors, and one entry per invocation.

Re-running the same command resumes: finished videos are skipped, unfinished or
failed ones are redone, and temporary leftovers of a killed run are removed. A
different algorithm or parameters on the same ``OUT_DIR`` is refused unless
``--overwrite`` (redo everything). One bad video does not stop the others; it is
reported in the manifest and the exit code is 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import fnmatch
import json
import math
import multiprocessing as mp
import os
import queue as _queue
import shutil
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgsub.cdnet import is_cdnet_sequence
from bgsub.commands.run import ConfigError, add_algorithm_arguments, format_metrics, resolve_algorithm
from bgsub.sources import VIDEO_EXTENSIONS, SourceError, natural_sort_key, open_source
from bgsub.writers import (
    AtomicDir,
    Manifest,
    MaskVideoWriter,
    MaskWriter,
    remove_partials,
    utc_now,
    write_json_atomic,
)

__all__ = ["Job", "find_inputs", "plan_jobs", "is_finished", "process_job", "run_batch", "add_arguments", "main"]

#: Written into each output folder last, before it is renamed into place.
RESULT_FILE = "result.json"
MANIFEST_FILE = "manifest.json"
#: Progress messages from the workers are sent every this many frames.
_PROGRESS_EVERY = 10


@dataclass(frozen=True)
class Job:
    """One input of a batch.

    Attributes
    ----------
    key : str
        Path of the input relative to ``IN_DIR`` (POSIX separators); the
        manifest's key.
    source : str
        Absolute path of the video file or sequence folder.
    kind : str
        ``"video"`` or ``"cdnet"``.
    output : str
        Absolute path of its output folder.
    """

    key: str
    source: str
    kind: str
    output: str


def find_inputs(in_dir: str | os.PathLike, pattern: str | None = None,
                exclude: str | os.PathLike | None = None) -> list[tuple[Path, str]]:
    """Video files and CDnet sequence folders under ``in_dir``, in natural order.

    Parameters
    ----------
    in_dir : path
        The folder searched (recursively). A CDnet sequence folder itself is
        one input.
    pattern : str, optional
        Shell pattern (``*.mp4``, ``baseline/*``) matched against the input's
        name and its path relative to ``in_dir``.
    exclude : path, optional
        A folder not to descend into (the output folder, when inside ``in_dir``).

    Returns
    -------
    list of (Path, str)
        Each input and its kind, ``"video"`` or ``"cdnet"``.
    """
    root = Path(in_dir)
    exclude_real = Path(exclude).resolve() if exclude is not None else None
    found: list[tuple[Path, str]] = []
    if is_cdnet_sequence(root):
        found.append((root, "cdnet"))
    else:
        for dirpath, dirnames, filenames in os.walk(root):
            d = Path(dirpath)
            keep = []
            for name in sorted(dirnames, key=natural_sort_key):
                sub = d / name
                if name.startswith(".") or (exclude_real is not None and sub.resolve() == exclude_real):
                    continue
                if is_cdnet_sequence(sub):
                    found.append((sub, "cdnet"))
                else:
                    keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames, key=natural_sort_key):
                if name.startswith(".") or Path(name).suffix.lower() not in VIDEO_EXTENSIONS:
                    continue
                found.append((d / name, "video"))
    if pattern:
        def matches(p: Path) -> bool:
            rel = p.relative_to(root).as_posix() if p != root else p.name
            return fnmatch.fnmatch(p.name, pattern) or fnmatch.fnmatch(rel, pattern)

        found = [(p, k) for p, k in found if matches(p)]
    found.sort(key=lambda item: natural_sort_key(
        item[0].relative_to(root).as_posix() if item[0] != root else item[0].name))
    return found


def plan_jobs(in_dir: str | os.PathLike, out_dir: str | os.PathLike, inputs: list[tuple[Path, str]]) -> list[Job]:
    """Output folder of each input, mirroring the input tree under ``out_dir``.

    A video ``a/clip.mp4`` goes to ``a/clip/``; when two videos of one folder
    share a stem (``clip.mp4``, ``clip.avi``), each keeps its suffix
    (``clip_mp4/``, ``clip_avi/``). A sequence folder keeps its name.
    """
    root = Path(in_dir).resolve()
    out = Path(out_dir).resolve()
    stems: dict[tuple[str, str], int] = {}
    rels = []
    for p, kind in inputs:
        p = p.resolve()
        rel = Path(p.name) if p == root else p.relative_to(root)
        rels.append((p, kind, rel))
        if kind == "video":
            k = (rel.parent.as_posix(), rel.stem)
            stems[k] = stems.get(k, 0) + 1
    jobs = []
    for p, kind, rel in rels:
        if kind == "video":
            clash = stems[(rel.parent.as_posix(), rel.stem)] > 1
            name = f"{rel.stem}_{rel.suffix.lstrip('.')}" if clash else rel.stem
            target = out / rel.parent / name
        else:
            target = out / rel
        jobs.append(Job(rel.as_posix(), str(p), kind, str(target)))
    return jobs


def is_finished(job: Job) -> bool:
    """True when ``job``'s output folder is in place with its ``result.json``."""
    result = Path(job.output) / RESULT_FILE
    if not result.is_file():
        return False
    try:
        data = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return data.get("status") == "done"


# --------------------------------------------------------------------------
# Worker side
# --------------------------------------------------------------------------

_worker_state: dict[str, Any] = {}


def _init_worker(progress_queue, stop_event, parent_pid: int, algo: str, params: dict) -> None:
    # Ctrl-C goes to the whole process group: the parent decides, through
    # stop_event, so that a worker never dies half-way through a write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_state.update(queue=progress_queue, stop=stop_event, batch_pid=parent_pid,
                         ppid=os.getppid(), polls=0)
    # Warm up: compile (or load from numba's cache) the subtractor's kernels
    # once, so that the first video's fps is not the compiler's.
    try:
        import numpy as np

        from bgsub.registry import create

        sub = create(algo, **params)
        blank = np.zeros((16, 16, 3), np.uint8)
        for _ in range(2):
            sub.apply(blank)
    except Exception:
        pass


def _stop_requested() -> bool:
    stop = _worker_state.get("stop")
    if stop is not None and stop.is_set():
        return True
    # The batch was killed: stop instead of writing on as an orphan. The
    # worker's parent is the batch or its fork server; either one gone means
    # nobody is waiting for this work.
    if "ppid" not in _worker_state:
        return False
    if os.getppid() != _worker_state["ppid"]:
        return True
    _worker_state["polls"] += 1
    if _worker_state["polls"] % 10 == 0:
        try:
            os.kill(_worker_state["batch_pid"], 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            pass
    return False


class _Interrupted(Exception):
    pass


class _Failed(Exception):
    pass


def process_job(job: Job, algo: str, params: dict, mask_video: str | None = None,
                max_frames: int | None = None) -> dict:
    """Process one input into its output folder; the worker's entry point.

    Returns the result record (``status`` ``done``, ``failed`` or
    ``interrupted``), which is also written as ``result.json`` into a finished
    output folder.
    """
    from bgsub.commands.run import process
    from bgsub.registry import create

    q = _worker_state.get("queue")
    record: dict[str, Any] = {
        "source": job.source,
        "kind": job.kind,
        "output": job.output,
        "algo": algo,
        "params": params,
        "started": utc_now(),
        "worker_pid": os.getpid(),
    }
    final = Path(job.output)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_partials(final.parent, final.name)
    folder = AtomicDir(final)
    tmp = folder.open()
    sent = [0]

    def on_frame(frame, mask):
        n = sent[0] + 1
        sent[0] = n
        if q is not None and n % _PROGRESS_EVERY == 0:
            q.put(("frames", job.key, _PROGRESS_EVERY))

    try:
        try:
            source = open_source(job.source, max_frames=max_frames)
        except SourceError as exc:
            raise _Failed(str(exc)) from None
        with source:
            if q is not None:
                q.put(("start", job.key, source.frame_count))
            subtractor = create(algo, **params)
            masks = MaskWriter(tmp, atomic=False)
            video = MaskVideoWriter(tmp / f"masks{mask_video}", source.fps or 25.0) if mask_video else None
            try:
                result = process(source, subtractor, masks=masks, video=video, on_frame=on_frame,
                                 should_stop=_stop_requested, catch_interrupt=False)
            except SourceError as exc:
                if video is not None:
                    video.abort()
                raise _Failed(str(exc)) from None
            except BaseException:
                if video is not None:
                    video.abort()
                raise
            if result.interrupted:
                if video is not None:
                    video.abort()
                raise _Interrupted()
            if video is not None:
                video.close()
        if q is not None and sent[0] % _PROGRESS_EVERY:
            q.put(("frames", job.key, sent[0] % _PROGRESS_EVERY))
        if result.frames == 0:
            raise _Failed(f"no frame could be decoded from {job.source}")
        record.update(
            status="done",
            frames=result.frames,
            expected_frames=result.expected_frames,
            decode_errors=result.decode_errors,
            fps=round(result.fps, 2),
            subtract_fps=round(result.subtract_fps, 2),
            seconds=round(result.seconds, 3),
            first_frame=result.first_index,
            last_frame=result.last_index,
            warnings=result.warnings,
            metrics=result.metrics,
            scored_frames=result.scored_frames,
            mask_video=str(final / f"masks{mask_video}") if mask_video else None,
            finished=utc_now(),
        )
        # The marker goes in last, then the folder is renamed into place.
        write_json_atomic(tmp / RESULT_FILE, record)
        folder.commit()
        return record
    except _Interrupted:
        folder.abort()
        record.update(status="interrupted", error="stopped before the end", finished=utc_now())
        return record
    except _Failed as exc:
        folder.abort()
        record.update(status="failed", error=str(exc), finished=utc_now())
        return record
    except Exception as exc:  # a bug or an I/O error: report it, keep the batch going
        folder.abort()
        record.update(
            status="failed",
            error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(limit=8),
            finished=utc_now(),
        )
        return record
    except BaseException:
        folder.abort()
        raise


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------


def default_workers() -> int:
    """One worker per core available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run_batch(
    in_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    algo: str,
    params: dict,
    workers: int | None = None,
    pattern: str | None = None,
    mask_video: str | None = None,
    max_frames: int | None = None,
    overwrite: bool = False,
    progress: bool = True,
    log=None,
) -> Manifest:
    """Process every input under ``in_dir`` into ``out_dir``; see the module docstring.

    Returns
    -------
    Manifest
        Saved in ``out_dir/manifest.json``; ``manifest.items[key]["status"]``
        is ``done`` or ``failed`` (``interrupted`` after Ctrl-C) for every input.

    Raises
    ------
    ConfigError
        For a missing ``in_dir``, an ``out_dir`` holding another configuration's
        results (without ``overwrite``), or no inputs found.
    """
    log = log if log is not None else sys.stderr
    in_dir, out_dir = Path(in_dir), Path(out_dir)
    if not in_dir.is_dir():
        raise ConfigError(f"{in_dir} is not a folder" if in_dir.exists() else f"{in_dir} does not exist")
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} exists and is not a folder")
    inputs = find_inputs(in_dir, pattern, exclude=out_dir)
    if not inputs:
        what = f" matching {pattern!r}" if pattern else ""
        raise ConfigError(
            f"no video files ({', '.join(VIDEO_EXTENSIONS[:4])}, ...) or CDnet sequence folders{what} "
            f"under {in_dir}"
        )
    jobs = plan_jobs(in_dir, out_dir, inputs)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        manifest = Manifest.load(out_dir / MANIFEST_FILE)
    except ValueError as exc:
        raise ConfigError(f"{exc}; use another OUT_DIR") from None
    config = {"algo": algo, "params": params, "mask_video": mask_video, "max_frames": max_frames,
              "input": str(in_dir.resolve())}
    if manifest.config and not overwrite:
        old = {k: manifest.config.get(k) for k in ("algo", "params", "mask_video", "max_frames")}
        new = {k: config[k] for k in ("algo", "params", "mask_video", "max_frames")}
        if json.loads(json.dumps(old)) != json.loads(json.dumps(new)):
            raise ConfigError(
                f"{out_dir} holds results made with other settings ({_describe(old)}); "
                f"now asked for {_describe(new)}. Use another OUT_DIR, or --overwrite to redo everything"
            )
    manifest.data["config"] = config
    # What is finished already.
    todo: list[Job] = []
    skipped = 0
    for job in jobs:
        item = manifest.items.get(job.key, {})
        if not overwrite and is_finished(job):
            if item.get("status") != "done":
                try:
                    item = json.loads((Path(job.output) / RESULT_FILE).read_text(encoding="utf-8"))
                except (OSError, json.JSONDecodeError):
                    item = {"status": "done"}
            item["status"] = "done"
            manifest.items[job.key] = item
            skipped += 1
        else:
            if overwrite and Path(job.output).exists():
                shutil.rmtree(job.output)
            manifest.items[job.key] = {"status": "pending", "source": job.source, "kind": job.kind,
                                       "output": job.output}
            todo.append(job)
    # Leftovers of a killed run.
    stale = 0
    for job in todo:
        stale += remove_partials(Path(job.output).parent, Path(job.output).name)
    # A manifest write cut short by a kill leaves its temporary file beside it.
    stale += remove_partials(out_dir, Path(MANIFEST_FILE).stem)
    n_workers = max(1, min(workers or default_workers(), len(todo) or 1))
    run_record = {"started": utc_now(), "workers": n_workers, "pid": os.getpid(), "todo": len(todo),
                  "skipped": skipped, "stale_removed": stale, "pattern": pattern}
    manifest.runs.append(run_record)
    manifest.save()
    print(f"{len(jobs)} input{'s' if len(jobs) != 1 else ''} under {in_dir}: {skipped} finished earlier, {len(todo)} to do "
          f"with {n_workers} worker{'s' if n_workers != 1 else ''} ({algo})", file=log)
    if stale:
        print(f"removed {stale} unfinished outputs of an interrupted run", file=log)
    interrupted = False
    t0 = time.perf_counter()
    if todo:
        interrupted = _run_pool(todo, manifest, algo, params, n_workers, mask_video, max_frames, progress, log)
    seconds = time.perf_counter() - t0
    frames = sum(int(manifest.items[j.key].get("frames") or 0) for j in todo
                 if manifest.items[j.key].get("status") == "done")
    run_record["finished"] = utc_now()
    run_record["interrupted"] = interrupted
    run_record["frames"] = frames
    run_record["seconds"] = round(seconds, 3)
    run_record["fps"] = round(frames / seconds, 2) if seconds > 0 and frames else 0.0
    run_record["counts"] = manifest.counts()
    manifest.save()
    return manifest


def _estimate_frames(job: Job, max_frames: int | None) -> int:
    """Frame count of an input from its container or folder, without decoding (0 if unknown)."""
    n = 0
    try:
        if job.kind == "cdnet":
            n = sum(1 for e in os.scandir(Path(job.source) / "input") if e.name.startswith("in"))
        else:
            import cv2

            from bgsub.sources import _quiet_opencv, _restore_opencv

            level = _quiet_opencv()
            try:
                cap = cv2.VideoCapture(job.source, cv2.CAP_FFMPEG)
            finally:
                _restore_opencv(level)
            try:
                n = max(0, int(cap.get(cv2.CAP_PROP_FRAME_COUNT))) if cap.isOpened() else 0
            finally:
                cap.release()
    except OSError:
        n = 0
    return min(n, max_frames) if max_frames else n


def _describe(cfg: dict) -> str:
    params = cfg.get("params") or {}
    text = f"algo={cfg.get('algo')} " + " ".join(f"{k}={v}" for k, v in params.items())
    if cfg.get("mask_video"):
        text += f" mask_video={cfg['mask_video']}"
    if cfg.get("max_frames"):
        text += f" max_frames={cfg['max_frames']}"
    return text.strip()


def _pool_context():
    """Fresh worker processes, never a fork of this (possibly threaded) one.

    Where available, a fork server that imported bgsub once forks the workers
    (fast start, and it is reused by later batches of this process); else spawn.
    """
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["bgsub.commands.batch"])
        return ctx
    return mp.get_context("spawn")


def _run_pool(todo, manifest, algo, params, n_workers, mask_video, max_frames, progress, log) -> bool:
    ctx = _pool_context()
    progress_queue = ctx.Queue()
    stop_event = ctx.Event()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=None, unit="frame", desc=f"0/{len(todo)} videos", dynamic_ncols=True, file=log)
    expected = {job.key: _estimate_frames(job, max_frames) for job in todo}
    processed: dict[str, int] = {}
    if bar is not None:
        bar.total = sum(expected.values())
        bar.refresh()
    done_count = 0
    interrupted = False

    def drain():
        while True:
            try:
                kind, key, value = progress_queue.get_nowait()
            except _queue.Empty:
                return
            except (OSError, EOFError, ValueError):
                return
            if kind == "start":
                if manifest.items[key].get("status") == "pending":
                    manifest.items[key]["status"] = "running"
                if value is not None and value != expected.get(key) and bar is not None:
                    bar.total += value - expected.get(key, 0)
                    expected[key] = value
            elif kind == "frames":
                processed[key] = processed.get(key, 0) + value
                if bar is not None:
                    bar.update(value)

    executor = cf.ProcessPoolExecutor(
        max_workers=n_workers, mp_context=ctx, initializer=_init_worker,
        initargs=(progress_queue, stop_event, os.getpid(), algo, params),
    )
    futures = {}
    try:
        for job in todo:
            futures[executor.submit(process_job, job, algo, params, mask_video, max_frames)] = job
        pending = set(futures)
        while pending:
            finished, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            drain()
            for fut in finished:
                job = futures[fut]
                try:
                    record = fut.result()
                except Exception as exc:  # the worker process died
                    record = {"status": "failed", "source": job.source, "kind": job.kind,
                              "output": job.output, "error": f"worker failed: {type(exc).__name__}: {exc}"}
                manifest.items[job.key] = record
                manifest.save()
                done_count += 1
                if bar is not None:
                    # A failed or short video will not deliver its estimate.
                    drain()
                    short = expected.get(job.key, 0) - processed.get(job.key, 0)
                    if short:
                        bar.total -= short
                        bar.refresh()
                if bar is not None:
                    bar.set_description(f"{done_count}/{len(todo)} videos")
                if record["status"] == "failed":
                    msg = f"FAILED {job.key}: {record.get('error')}"
                    if bar is not None:
                        bar.write(msg, file=log)
                    else:
                        print(msg, file=log)
    except KeyboardInterrupt:
        interrupted = True
        stop_event.set()
        print("\ninterrupted: stopping the workers (unfinished videos are redone next time)", file=log)
        for fut, job in futures.items():
            if fut.cancel():
                manifest.items[job.key]["status"] = "interrupted"
        # Let the running ones stop and clean up; a second Ctrl-C ends at once.
        try:
            for fut, job in futures.items():
                if fut.cancelled():
                    continue
                try:
                    record = fut.result()
                except Exception as exc:
                    record = {"status": "failed", "error": f"worker failed: {exc}"}
                manifest.items[job.key] = {**manifest.items[job.key], **record}
        except KeyboardInterrupt:
            pass
        manifest.save()
    finally:
        executor.shutdown(wait=not interrupted, cancel_futures=True)
        drain()
        if bar is not None:
            bar.close()
        if interrupted:
            for job in todo:
                if manifest.items[job.key].get("status") in ("pending", "running"):
                    manifest.items[job.key]["status"] = "interrupted"
            manifest.save()
    return interrupted


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("in_dir", type=Path, metavar="IN_DIR", help="folder searched for videos and CDnet sequences")
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="where the mask folders and manifest.json go")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="worker processes (default: one per core)")
    parser.add_argument("--pattern", default=None, metavar="GLOB",
                        help="only inputs whose name or relative path matches, e.g. '*.mp4' or 'baseline/*'")
    add_algorithm_arguments(parser)
    parser.add_argument("--mask-video", default=None, choices=(".mp4", ".avi", ".mkv"),
                        help="also write each input's masks as a video masks.EXT")
    parser.add_argument("--max-frames", type=int, default=None, metavar="N", help="at most N frames per input")
    parser.add_argument("--overwrite", action="store_true",
                        help="redo every input, also finished ones (needed to change settings on an OUT_DIR)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def main(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        print(f"bgsub batch: --workers must be >= 1, got {args.workers}", file=sys.stderr)
        return 2
    if args.max_frames is not None and args.max_frames < 1:
        print(f"bgsub batch: --max-frames must be >= 1, got {args.max_frames}", file=sys.stderr)
        return 2
    try:
        algo, params = resolve_algorithm(args.algo, args.assignments, args.config, args.preset)
        manifest = run_batch(
            args.in_dir, args.out_dir, algo=algo, params=params, workers=args.workers,
            pattern=args.pattern, mask_video=args.mask_video, max_frames=args.max_frames,
            overwrite=args.overwrite, progress=not args.quiet,
        )
    except ConfigError as exc:
        print(f"bgsub batch: {exc}", file=sys.stderr)
        return 2
    items = manifest.items
    counts = manifest.counts()
    failed = [k for k, v in items.items() if v.get("status") == "failed"]
    unfinished = [k for k, v in items.items() if v.get("status") not in ("done", "failed")]
    for key, item in items.items():
        if item.get("status") == "done" and item.get("warnings"):
            for w in item["warnings"]:
                print(f"warning: {key}: {w}", file=sys.stderr)
    print(f"{counts.get('done', 0)} done, {len(failed)} failed"
          + (f", {len(unfinished)} unfinished" if unfinished else "")
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
