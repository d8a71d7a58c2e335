"""A batch's jobs on a local pool of worker processes, with a progress bar of frames.

The workers are fresh processes (a fork server's, else spawned), never forks of
the batch; they exit when the batch ends, however it ends (kill -9 included):
they watch a pipe whose only write end the batch holds (:func:`bgsub.batch.worker.init_worker`).
Ctrl-C stops them, lets the running jobs remove their temporary folders, and
records what finished.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import queue as _queue
import signal
import threading
from pathlib import Path

from bgsub.batch.jobs import Job
from bgsub.batch.worker import init_worker, process_job

__all__ = ["run_pool", "pool_context", "ctrl_c_interrupts", "estimate_frames"]


def estimate_frames(job: Job, max_frames: int | None) -> int:
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


@contextlib.contextmanager
def ctrl_c_interrupts():
    """Within: Ctrl-C (SIGINT) raises KeyboardInterrupt, which stops the workers and records what finished, even
    in a process that started with SIGINT ignored (as a shell starts a command a script put in the background);
    ``bgsub run`` takes Ctrl-C the same way (:meth:`bgsub.pipeline.Pipeline.run`). The handler before is put back
    after."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def pool_context():
    """Fresh worker processes, never a fork of this (possibly threaded) one.

    Where available, a fork server that imported bgsub once forks the workers
    (fast start, and it is reused by later batches of this process); else spawn.
    """
    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["bgsub.batch.worker"])
        return ctx
    return mp.get_context("spawn")


def run_pool(todo, manifest, algo, params, n_workers, n_threads, options, progress, log) -> bool:
    ctx = pool_context()
    progress_queue = ctx.Queue()
    stop_event = ctx.Event()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=None, unit="frame", desc=f"0/{len(todo)} videos", dynamic_ncols=True, file=log)
    expected = {job.key: estimate_frames(job, options.max_frames) for job in todo}
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

    # The workers watch the read end of this pipe; only this process holds the write end (not inherited by
    # anything it starts), so the workers learn at once when it ends, even by kill -9.
    alive_r, alive_w = ctx.Pipe(duplex=False)
    executor = cf.ProcessPoolExecutor(
        max_workers=n_workers, mp_context=ctx, initializer=init_worker,
        initargs=(progress_queue, stop_event, os.getpid(), algo, params, n_threads, alive_r),
    )
    futures = {}
    try:
        for job in todo:
            futures[executor.submit(process_job, job, algo, params, options)] = job
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
        alive_w.close()  # workers left running after a second Ctrl-C exit now
        alive_r.close()
        drain()
        if bar is not None:
            bar.close()
        if interrupted:
            for job in todo:
                if manifest.items[job.key].get("status") in ("pending", "running"):
                    manifest.items[job.key]["status"] = "interrupted"
            manifest.save()
    return interrupted
