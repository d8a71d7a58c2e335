"""A batch's worker side: one job from its input to its committed output folder.

:func:`process_job` is the entry point of both executors (the local process
pool, :mod:`bgsub.batch.pool`, and Dask, :mod:`bgsub.batch.cluster`). A job
stops, deleting its temporary folder, when the batch tells it to or when the
batch process is gone (:func:`init_worker` watches it).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from bgsub.batch.jobs import Job, JobOptions, read_result, source_fingerprint
from bgsub.batch.outputs import RESULT_FILE, JobDir, remove_job_partials
from bgsub.batch.threads import current_threads, limit_threads
from bgsub.sources import SourceError, open_source
from bgsub.warmup import run_throwaway_frames
from bgsub.writers import utc_now, write_json_atomic

__all__ = ["init_worker", "process_job", "process_frames", "MASK_VIDEO_NAME", "OVERLAY_NAME", "OBJECTS_NAME"]

#: Progress messages from the workers are sent every this many frames.
PROGRESS_EVERY = 10
#: Names of the optional per-input outputs inside each output folder (the suffix follows).
MASK_VIDEO_NAME, OVERLAY_NAME, OBJECTS_NAME = "masks", "overlay", "objects"

_worker_state: dict[str, Any] = {}


def init_worker(progress_queue, stop_event, parent_pid: int, algo: str, params: dict,
                 threads: int | None = None, parent_alive=None) -> None:
    # Ctrl-C goes to the whole process group: the parent decides, through
    # stop_event, so that a worker never dies half-way through a write.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_state.update(queue=progress_queue, stop=stop_event, batch_pid=parent_pid,
                         ppid=os.getppid(), polls=0, parent_gone=False, in_job=False)
    if parent_alive is not None:
        _watch_parent(parent_alive)
    if threads:
        limit_threads(threads)
    # Warm up: compile (or load from numba's cache) the subtractor's kernels
    # once, so that the first video's fps is not the compiler's.
    try:
        from bgsub.registry import create

        run_throwaway_frames(create(algo, **params), 2)
    except Exception:
        pass


#: After the batch dies, a worker in the middle of a job has this long to stop and delete its temporary folder
#: before it exits anyway.
_ORPHAN_GRACE_S = 2.0


def _watch_parent(parent_alive) -> None:
    """Exit this worker when the batch process ends, however it ends (kill -9 included).

    ``parent_alive`` is the read end of a pipe whose only write end the batch
    holds: the system closes it when the batch ends, and the read returns. An
    idle worker (waiting for a job that will never come, on a queue it holds
    both ends of) exits at once; a running job is told to stop, gets
    :data:`_ORPHAN_GRACE_S` to remove its temporary folder, and the worker
    exits. Once the workers are gone, the fork server and the resource tracker,
    which live only as long as some process holds their pipes, exit too.
    """
    def watch():
        try:
            parent_alive.recv_bytes()
        except (EOFError, OSError):
            pass
        _worker_state["parent_gone"] = True
        deadline = time.monotonic() + _ORPHAN_GRACE_S
        while _worker_state.get("in_job") and time.monotonic() < deadline:
            time.sleep(0.02)
        os._exit(3)

    threading.Thread(target=watch, name="bgsub-batch-parent-watch", daemon=True).start()


def _stop_requested() -> bool:
    if _worker_state.get("parent_gone"):
        return True
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


def process_frames(source, subtractor, folder: Path, options: JobOptions, on_frame):
    """One input's frames through the pipeline into ``folder``: masks and the optional outputs.

    The folder is the job's temporary one (renamed into place as a whole), so
    the masks are written without a rename each. Stops when the batch is told to.

    Returns
    -------
    result : bgsub.pipeline.PipelineResult
    outputs : dict
        The optional sinks by name (``mask_video``, ``overlay``, ``objects``).
    """
    from bgsub.pipeline import Callback, MaskFiles, MaskVideo, ObjectsFile, OverlayVideo, Pipeline, Region, Scores

    fps = source.fps or 25.0
    outputs: dict[str, Any] = {}
    if options.mask_video:
        outputs["mask_video"] = MaskVideo(folder / f"{MASK_VIDEO_NAME}{options.mask_video}", fps)
    if options.overlay:
        outputs["overlay"] = OverlayVideo(folder / f"{OVERLAY_NAME}{options.overlay}", fps)
    if options.objects:
        outputs["objects"] = ObjectsFile(folder / f"{OBJECTS_NAME}{options.objects}")
    sinks = [MaskFiles(folder, replace=False, atomic=False), Scores(roc=False), Callback(on_frame),
             *outputs.values()]
    pipeline = Pipeline(subtractor, region=Region(options.roi, options.scale), min_area=options.min_area,
                        sinks=sinks)
    return pipeline.run(source, should_stop=_stop_requested, catch_interrupt=False), outputs


def process_job(job: Job, algo: str, params: dict, options: JobOptions | None = None,
                threads: int | None = None) -> dict:
    """Process one input into its output folder; the worker's entry point (process pool or Dask).

    Returns the result record (``status`` ``done``, ``failed`` or
    ``interrupted``), which is also written as ``result.json`` into a finished
    output folder, with the source's fingerprint (path, size, modification time)
    and the settings, which a resumed batch compares before skipping the job.
    ``threads`` limits numba's and OpenCV's threads in this worker.
    """
    _worker_state["in_job"] = True
    try:
        return _process_job(job, algo, params, options, threads)
    finally:
        _worker_state["in_job"] = False


def _process_job(job: Job, algo: str, params: dict, options: JobOptions | None, threads: int | None) -> dict:
    from bgsub.registry import create

    options = options if options is not None else JobOptions()
    if threads:
        limit_threads(threads)

    q = _worker_state.get("queue")
    record: dict[str, Any] = {
        "source": job.source,
        "kind": job.kind,
        "output": job.output,
        "algo": algo,
        "params": params,
        "started": utc_now(),
        "worker_pid": os.getpid(),
        "job_id": job.job_id,
        "threads": current_threads(),
        "settings": options.settings(algo, params),
    }
    final = Path(job.output)
    earlier = read_result(final)
    if earlier is not None and earlier.get("job_id") == job.job_id and earlier.get("status") == "done":
        return earlier  # committed by this job already (a retried task whose result was lost with its worker)
    final.parent.mkdir(parents=True, exist_ok=True)
    # what an earlier attempt of this job left (a worker killed mid-job); never another job's
    remove_job_partials(final, job.job_id)
    folder = JobDir(final, job.job_id)
    tmp = folder.open()
    sent = [0]

    def on_frame(out):
        n = sent[0] + 1
        sent[0] = n
        if q is not None and n % PROGRESS_EVERY == 0:
            q.put(("frames", job.key, PROGRESS_EVERY))

    try:
        try:
            record["source_id"] = source_fingerprint(job.source, job.kind)
            source = open_source(job.source, max_frames=options.max_frames)
        except (SourceError, OSError) as exc:
            raise _Failed(str(exc)) from None
        with source:
            if q is not None:
                q.put(("start", job.key, source.frame_count))
            # OpenCV's KNN and MOG draw from this thread's random generator: seeded for each job, an input's
            # masks do not depend on which worker ran it or what that worker ran before (a resumed batch, or a
            # batch with other workers, writes the same bytes).
            import cv2

            cv2.setRNGSeed(0)
            result, outputs = process_frames(source, create(algo, **params), tmp, options, on_frame)
            if result.interrupted:
                raise _Interrupted()
            if result.error is not None:
                raise _Failed(f"stopped at {result.error}")
        if q is not None and sent[0] % PROGRESS_EVERY:
            q.put(("frames", job.key, sent[0] % PROGRESS_EVERY))
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
            **{name: str(final / sink.path.name) for name, sink in outputs.items()},
            **({"objects_count": outputs["objects"].count} if "objects" in outputs else {}),
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
