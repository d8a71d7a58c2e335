"""``bgsub batch IN_DIR OUT_DIR``: every video and CDnet sequence under a folder, in parallel.

Finds every video file and every CDnet-layout sequence folder under
``IN_DIR`` (recursively), and processes each in its own worker process (default:
one per core, ``--threads`` numba/OpenCV threads each) or, with ``--scheduler``,
as one task on a Dask cluster (:mod:`bgsub.cluster`), into its own folder under
``OUT_DIR`` that mirrors the input tree: ``IN_DIR/a/b/clip.mp4`` ->
``OUT_DIR/a/b/clip/bin%06d.png``, ``IN_DIR/cat/seq/`` (CDnet) ->
``OUT_DIR/cat/seq/bin%06d.png``; names that would clash get the video's
extension (:func:`bgsub.jobs.plan_jobs`). Symbolic links are resolved: a link to
an input of the tree is that input (one job, under its own name); dangling links,
loops and links to outside ``IN_DIR`` are skipped with a warning, recorded in the
manifest (``skipped_links``) (:func:`find_inputs`). Each input goes through the same
:class:`bgsub.pipeline.Pipeline` as ``bgsub run``: ``--roi``, ``--scale`` and
``--min-area`` apply to every input, and each output folder can also hold
``masks.EXT`` (``--mask-video``), ``overlay.EXT`` (``--overlay``) and
``objects.jsonl``/``.csv`` (``--objects``) (:class:`JobOptions`).

An ``OUT_DIR`` that is, contains, or lies inside an input is refused before
anything is written (:func:`bgsub.jobs.check_output_location`), and so is one that
cannot be created or written to, an input tree with a folder that cannot be read,
and a damaged ``manifest.json``; one batch at
a time writes into an ``OUT_DIR`` (:class:`bgsub.jobs.OutputLock`). Each output
folder is filled under a temporary name carrying its job id, ``result.json``
(with the source's path, size and modification time and the settings) is
written last, every file is ``fsync``-ed, and only then is the folder renamed
into place (:class:`bgsub.jobs.JobDir`): an output folder that exists is
finished. ``OUT_DIR/manifest.json`` (written atomically after every input)
records the parameters, each input's status and output folder, frame counts,
fps and errors, and one entry per invocation.

Re-running the same command resumes: an input is skipped only when its folder
holds a finished result of the same source and settings; unfinished, failed or
changed ones are redone, and temporary leftovers of killed runs are removed (also
when nothing is redone). The workers exit when the batch process ends, however it
ends (kill -9 included), and with them the fork server and the resource tracker. A
different algorithm or parameters on the same ``OUT_DIR`` is refused unless
``--overwrite`` (redo everything). One bad video does not stop the others; it is
reported in the manifest and the exit code is 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import errno
import fnmatch
import json
import math
import multiprocessing as mp
import os
import queue as _queue
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgsub.cdnet import is_cdnet_sequence
from bgsub.commands._common import (
    add_algorithm_arguments,
    add_frame_arguments,
    build_region,
    check_positive,
    compile_note,
    error,
    run_throwaway_frames,
)
from bgsub.jobs import (
    RESULT_FILE,
    WORKERS_PER_CORE,
    Job,
    JobDir,
    OutputLock,
    UnsafeOutputError,
    available_cores,
    check_output_location,
    current_threads,
    default_threads,
    is_finished,
    limit_threads,
    max_workers,
    plan_jobs,
    read_result,
    remove_job_partials,
    source_fingerprint,
)
from bgsub.metrics import format_metrics
from bgsub.settings import ConfigError, resolve_algorithm
from bgsub.sources import VIDEO_EXTENSIONS, SourceError, natural_sort_key, open_source
from bgsub.writers import (
    Manifest,
    remove_partials,
    utc_now,
    write_json_atomic,
)

__all__ = ["Job", "JobOptions", "find_inputs", "plan_jobs", "is_finished", "process_job", "run_batch", "add_arguments",
           "main"]

MANIFEST_FILE = "manifest.json"
#: Progress messages from the workers are sent every this many frames.
_PROGRESS_EVERY = 10


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _input_sort_key(root: Path, p: Path) -> list:
    return natural_sort_key(p.relative_to(root).as_posix() if p != root else p.name)


def matches_pattern(root: str | os.PathLike, path: str | os.PathLike, pattern: str | None) -> bool:
    """True when ``pattern`` (a shell pattern) matches the input's name or its path relative to ``root``."""
    if not pattern:
        return True
    root, p = Path(root), Path(path)
    rel = p.relative_to(root).as_posix() if p != root else p.name
    return fnmatch.fnmatch(p.name, pattern) or fnmatch.fnmatch(rel, pattern)


def find_inputs(in_dir: str | os.PathLike, pattern: str | None = None,
                exclude: str | os.PathLike | None = None,
                skipped: list[dict] | None = None) -> list[tuple[Path, str]]:
    """Video files and CDnet sequence folders under ``in_dir``, in natural order.

    Symbolic links are resolved and never make an input of their own: a link
    to an input of the tree is that input (one job, under the target's name);
    a link to anything else (another folder of the tree, which is searched under
    its own name, a loop, a file that is not an input), a dangling link, and a
    link to somewhere outside ``in_dir`` are skipped and, when ``skipped`` is
    given, appended to it as ``{"path", "target", "reason"}``.

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
    skipped : list, optional
        Receives the links that were skipped, and why.

    Returns
    -------
    list of (Path, str)
        Each input and its kind, ``"video"`` or ``"cdnet"``.

    Raises
    ------
    ConfigError
        When a folder of the tree cannot be read (its permissions).
    """
    root = Path(in_dir)
    real_root = root.resolve()
    exclude_real = Path(exclude).resolve() if exclude is not None else None
    found: dict[Path, tuple[Path, str]] = {}  # real path -> (path under root, kind)
    links: list[Path] = []

    def unreadable(path, exc: OSError):
        return ConfigError(f"cannot read {path}: {exc.strerror or exc}; make it readable, or move it out of {in_dir}")

    def is_sequence(folder: Path) -> bool:
        try:
            return is_cdnet_sequence(folder)
        except OSError as exc:
            raise unreadable(folder, exc) from None

    def scan(folder: Path) -> None:
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: natural_sort_key(e.name))
        except OSError as exc:
            raise unreadable(folder, exc) from None
        for e in entries:
            if e.name.startswith("."):
                continue
            path = folder / e.name
            try:
                if e.is_symlink():
                    links.append(path)
                elif e.is_dir(follow_symlinks=False):
                    if exclude_real is not None and path.resolve() == exclude_real:
                        continue
                    if is_sequence(path):
                        found[path.resolve()] = (path, "cdnet")
                    else:
                        scan(path)
                elif Path(e.name).suffix.lower() in VIDEO_EXTENSIONS and e.is_file(follow_symlinks=False):
                    found[path.resolve()] = (path, "video")
            except OSError as exc:
                raise unreadable(path, exc) from None

    if is_sequence(root):
        found[real_root] = (root, "cdnet")
    else:
        scan(root)
    notes: list[dict] = []
    for link in sorted(links, key=lambda p: _input_sort_key(root, p)):
        rel = link.relative_to(root).as_posix()
        try:
            shown = os.readlink(link)
        except OSError:
            shown = "?"
        try:
            target = link.resolve(strict=True)
        except FileNotFoundError:
            reason = "a dangling link (its target does not exist)"
        except (RuntimeError, OSError) as exc:  # a loop (ELOOP), or a folder on the way that cannot be read
            reason = ("a link loop" if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP
                      else f"a link that cannot be followed ({getattr(exc, 'strerror', None) or exc})")
        else:
            shown = str(target)
            if not _within(target, real_root):
                reason = "a link to outside the input folder (only links within it are followed)"
            elif exclude_real is not None and _within(target, exclude_real):
                reason = "a link into the output folder"
            elif target in found:
                reason = (f"a link to the input {_rel(root, found[target][0])}, which is processed once, under its "
                          "own name")
            elif any(part.startswith(".") for part in target.relative_to(real_root).parts):
                reason = "a link to a hidden file or folder (hidden ones are not searched)"
            elif target.is_dir() and _within(real_root, target):
                reason = "a link loop (to a folder that contains it)"
            elif target.is_dir():
                reason = "a link to a folder of the input tree, which is searched under its own name"
            else:
                reason = "a link to a file that is not an input (not a video file, or inside a sequence folder)"
        notes.append({"path": rel, "target": shown, "reason": reason})
    if skipped is not None:
        skipped.extend(notes)
    inputs = [v for v in found.values() if matches_pattern(root, v[0], pattern)]
    inputs.sort(key=lambda item: _input_sort_key(root, item[0]))
    return inputs


def _rel(root: Path, p: Path) -> str:
    return p.relative_to(root).as_posix() if p != root else p.name


# --------------------------------------------------------------------------
# Worker side
# --------------------------------------------------------------------------

_worker_state: dict[str, Any] = {}


def _init_worker(progress_queue, stop_event, parent_pid: int, algo: str, params: dict,
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
        import numpy as np

        from bgsub.registry import create

        sub = create(algo, **params)
        blank = np.zeros((16, 16, 3), np.uint8)
        for _ in range(2):
            sub.apply(blank)
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


#: Names of the optional per-input outputs inside each output folder (the suffix follows).
MASK_VIDEO_NAME, OVERLAY_NAME, OBJECTS_NAME = "masks", "overlay", "objects"
#: Every setting a job's output depends on besides its source (resume compares them).
SETTINGS_KEYS = ("algo", "params", "mask_video", "max_frames", "roi", "scale", "min_area", "objects", "overlay")


def roi_id(roi) -> str | None:
    """``WxH sha256:...`` of a region-of-interest mask (None for none): what resume compares."""
    if roi is None:
        return None
    import hashlib

    import numpy as np

    roi = np.asarray(roi, dtype=bool)
    digest = hashlib.sha256(repr(roi.shape).encode() + np.packbits(roi).tobytes()).hexdigest()
    return f"{roi.shape[1]}x{roi.shape[0]} sha256:{digest[:16]}"


@dataclass(frozen=True, eq=False)
class JobOptions:
    """How every input of a batch is processed and what it makes besides its masks.

    Attributes
    ----------
    mask_video, overlay : str or None
        Suffix (``.mp4``, ``.avi``, ``.mkv``) of ``masks.EXT`` / ``overlay.EXT``
        (the input with the mask tinted and the objects boxed) in each output folder.
    objects : str or None
        ``.jsonl`` or ``.csv``: ``objects.EXT`` with every object of every frame and its track id.
    max_frames : int or None
        At most this many frames per input.
    roi : ndarray of bool, shape (H, W), or None
        Process only these pixels (every input must have this frame size).
    scale : float
        Processing resolution relative to the input, in (0, 1].
    min_area : int
        Drop foreground blobs smaller than this many pixels.
    """

    mask_video: str | None = None
    overlay: str | None = None
    objects: str | None = None
    max_frames: int | None = None
    roi: Any = None
    scale: float = 1.0
    min_area: int = 0

    def settings(self, algo: str, params: dict) -> dict:
        """What a job's output depends on besides its source (recorded in ``result.json``; resume compares it).

        The options added after the first version (``roi``, ``scale``,
        ``min_area``, ``objects``, ``overlay``) are recorded only when used, so
        that the results of earlier versions, which had none of them, still resume.
        """
        settings = {"algo": algo, "params": params, "mask_video": self.mask_video, "max_frames": self.max_frames}
        extra = {"roi": roi_id(self.roi), "scale": None if self.scale == 1.0 else float(self.scale),
                 "min_area": self.min_area or None, "objects": self.objects, "overlay": self.overlay}
        settings.update({k: v for k, v in extra.items() if v is not None})
        return settings


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
        if q is not None and n % _PROGRESS_EVERY == 0:
            q.put(("frames", job.key, _PROGRESS_EVERY))

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


# --------------------------------------------------------------------------
# Parent side
# --------------------------------------------------------------------------


def default_workers() -> int:
    """One worker per core available to this process."""
    return available_cores()


def run_batch(
    in_dir: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    algo: str,
    params: dict,
    workers: int | None = None,
    threads: int | None = None,
    scheduler: str | None = None,
    security: Any = None,
    pattern: str | None = None,
    mask_video: str | None = None,
    max_frames: int | None = None,
    overlay: str | None = None,
    objects: str | None = None,
    roi=None,
    scale: float = 1.0,
    min_area: int = 0,
    overwrite: bool = False,
    progress: bool = True,
    log=None,
) -> Manifest:
    """Process every input under ``in_dir`` into ``out_dir``; see the module docstring.

    Parameters
    ----------
    workers : int, optional
        Worker processes of the local pool (default: one per core).
    threads : int, optional
        numba and OpenCV threads per worker (default: cores / workers, at least 1).
    scheduler : str, optional
        Run the jobs on Dask instead of the local pool: ``tcp://HOST:8786`` (or
        ``tls://...``) for an existing cluster, ``local`` or ``local:N`` for a
        :class:`distributed.LocalCluster` of N worker processes on 127.0.0.1.
    security : distributed.Security, optional
        TLS settings for the connection to the scheduler.
    mask_video, overlay, objects, max_frames, roi, scale, min_area
        See :class:`JobOptions`; each is part of the settings that resume compares.

    Returns
    -------
    Manifest
        Saved in ``out_dir/manifest.json``; ``manifest.items[key]["status"]``
        is ``done`` or ``failed`` (``interrupted`` after Ctrl-C) for every input.

    Raises
    ------
    ConfigError
        For a missing ``in_dir``, an ``out_dir`` that is, contains or mixes with
        the input, an ``out_dir`` holding another configuration's results
        (without ``overwrite``), another batch writing into ``out_dir``, or no
        inputs found.
    """
    log = log if log is not None else sys.stderr
    in_dir, out_dir = Path(in_dir), Path(out_dir)
    if workers is not None and not 1 <= workers <= max_workers():
        raise ConfigError(f"workers must be between 1 and {max_workers()} on this machine ({WORKERS_PER_CORE} per "
                          f"core, and what its memory holds), got {workers}")
    options = JobOptions(mask_video=mask_video, overlay=overlay, objects=objects, max_frames=max_frames, roi=roi,
                         scale=float(scale), min_area=int(min_area))
    if not in_dir.is_dir():
        raise ConfigError(f"{in_dir} is not a folder" if in_dir.exists() else f"{in_dir} does not exist")
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} exists and is not a folder")
    try:
        check_output_location(in_dir, out_dir)
    except UnsafeOutputError as exc:
        raise ConfigError(str(exc)) from None
    # Plan on every input, then filter: a --pattern must not move an input's output.
    skipped: list[dict] = []
    inputs = find_inputs(in_dir, None, exclude=out_dir, skipped=skipped)
    run_id = os.urandom(4).hex()
    jobs = [j for j, (p, _) in zip(plan_jobs(in_dir, out_dir, inputs, run_id), inputs)
            if matches_pattern(in_dir, p, pattern)]
    for note in skipped:
        print(f"warning: {note['path']}: {note['reason']}; skipped", file=log)
    if not jobs:
        what = f" matching {pattern!r}" if pattern else ""
        raise ConfigError(
            f"no video files ({', '.join(VIDEO_EXTENSIONS[:4])}, ...) or CDnet sequence folders{what} "
            f"under {in_dir}"
        )
    _make_output_dir(out_dir)
    lock = OutputLock(out_dir)
    try:
        lock.acquire()
    except UnsafeOutputError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot open OUT_DIR {out_dir}: {exc.strerror}; choose a folder you can write to") \
            from None
    try:
        _check_writable(out_dir)
        for folder in sorted({Path(job.output).parent for job in jobs} - {out_dir.resolve()}):
            if folder.is_dir():  # the mirrored folders an earlier run made
                _check_writable(folder, "the output folder")
        return _run_locked(jobs, in_dir, out_dir, run_id, algo=algo, params=params, workers=workers,
                           threads=threads, scheduler=scheduler, security=security, pattern=pattern,
                           options=options, overwrite=overwrite, progress=progress, log=log, skipped_links=skipped)
    finally:
        lock.release()


def _make_output_dir(out_dir: Path) -> None:
    """Create ``out_dir`` (and its parents), or say in one line why it cannot be."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except NotADirectoryError:
        blocker = next((a for a in [out_dir, *out_dir.parents] if a.exists() and not a.is_dir()), None)
        where = f"{blocker} is a file, not a folder" if blocker is not None else "a part of it is not a folder"
        raise ConfigError(f"cannot create OUT_DIR {out_dir}: {where}; choose another OUT_DIR") from None
    except FileExistsError:
        raise ConfigError(f"cannot create OUT_DIR {out_dir}: {out_dir} exists and is not a folder") from None
    except OSError as exc:
        where = next((a for a in out_dir.parents if a.exists()), None)
        raise ConfigError(f"cannot create OUT_DIR {out_dir}"
                          + (f" in {where}" if where is not None else "")
                          + f": {exc.strerror or exc}; choose a folder you can write to") from None


def _check_writable(folder: Path, what: str = "OUT_DIR") -> None:
    """Refuse a ``folder`` this process cannot create files in, before anything is done (a real test, not
    ``os.access``, which is wrong for root and for some network file systems)."""
    probe = folder / f".{Path(MANIFEST_FILE).stem}.partial-probe-{os.getpid()}-{os.urandom(3).hex()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        fix = "choose a folder you can write to" if what == "OUT_DIR" else "make it writable, or choose another OUT_DIR"
        raise ConfigError(f"cannot write into {what} {folder}: {exc.strerror or exc}; {fix}") from None
    os.close(fd)
    os.unlink(probe)


def _check_manifest(manifest: Manifest) -> None:
    """Refuse a manifest whose parts have the wrong types (edited or damaged) before anything relies on them."""
    data = manifest.data
    for key, kind, what in (("config", dict, "an object"), ("items", dict, "an object"), ("runs", list, "a list")):
        if not isinstance(data.get(key), kind):
            raise ConfigError(f"{manifest.path} is damaged: its {key!r} is not {what} "
                              f"(got {type(data.get(key)).__name__}); use another OUT_DIR, or delete that file to "
                              "start its record afresh")
    for key, item in data["items"].items():
        if not isinstance(item, dict):
            raise ConfigError(f"{manifest.path} is damaged: its item {key!r} is not an object; use another OUT_DIR, "
                              "or delete that file to start its record afresh")


def _run_locked(jobs, in_dir, out_dir, run_id, *, algo, params, workers, threads, scheduler, security, pattern,
                options, overwrite, progress, log, skipped_links=()) -> Manifest:
    try:
        manifest = Manifest.load(out_dir / MANIFEST_FILE)
    except ValueError as exc:
        raise ConfigError(f"{exc}; use another OUT_DIR") from None
    _check_manifest(manifest)
    settings = options.settings(algo, params)
    config = {**settings, "input": str(in_dir.resolve())}
    if manifest.config and not overwrite:
        old = {k: manifest.config.get(k) for k in SETTINGS_KEYS}
        new = {k: settings.get(k) for k in SETTINGS_KEYS}
        if json.loads(json.dumps(old)) != json.loads(json.dumps(new)):
            raise ConfigError(
                f"{out_dir} holds results made with other settings: {_differences(old, settings)}. "
                "Use another OUT_DIR, or --overwrite to redo everything"
            )
    manifest.data["config"] = config
    # What is finished already: same source (path, size, time) and same settings.
    todo: list[Job] = []
    skipped = 0
    for job in jobs:
        if not overwrite and is_finished(job, settings):
            item = manifest.items.get(job.key, {})
            if item.get("status") != "done":
                item = read_result(job.output) or {}
            item["status"] = "done"
            manifest.items[job.key] = item
            skipped += 1
        else:
            # A finished folder of another source or settings stays until its job's new
            # output replaces it atomically.
            manifest.items[job.key] = {"status": "pending", "source": job.source, "kind": job.kind,
                                       "output": job.output, "job_id": job.job_id}
            todo.append(job)
    # Leftovers of killed runs, also where nothing is redone (no other batch writes here: we hold the lock):
    # every temporary name in the folders the outputs go to, and a manifest write cut short beside it.
    folders = {out_dir.resolve(), *(Path(job.output).parent for job in jobs)}
    stale = sum(remove_partials(folder) for folder in folders)
    if scheduler:
        from bgsub import cluster

        n_workers = None
    else:
        n_workers = max(1, min(workers or default_workers(), len(todo) or 1))
    n_threads = threads or default_threads(n_workers or 1)
    warnings = [f"{note['path']}: {note['reason']}; skipped" for note in skipped_links]
    manifest.data["skipped_links"] = {note["path"]: {"target": note["target"], "reason": note["reason"]}
                                      for note in skipped_links}
    run_record = {"started": utc_now(), "run_id": run_id, "workers": n_workers, "threads": n_threads,
                  "scheduler": scheduler, "pid": os.getpid(), "todo": len(todo), "skipped": skipped,
                  "stale_removed": stale, "pattern": pattern, "warnings": warnings}
    manifest.runs.append(run_record)
    manifest.save()
    where = (f"on Dask {scheduler}" if scheduler else f"with {n_workers} worker{'s' if n_workers != 1 else ''} "
             f"x {n_threads} thread{'s' if n_threads != 1 else ''}")
    print(f"{len(jobs)} input{'s' if len(jobs) != 1 else ''} under {in_dir}: {skipped} finished earlier, "
          f"{len(todo)} to do {where} ({algo})", file=log)
    if stale:
        print(f"removed {stale} unfinished outputs of an interrupted run", file=log)
    if todo and (not scheduler or scheduler.startswith("local")):
        _compile_here(algo, params, log)
    interrupted = False
    t0 = time.perf_counter()
    with _ctrl_c_interrupts():
        if todo and scheduler:
            job_args = (algo, params, options, threads)
            interrupted = cluster.run_jobs(scheduler, todo, process_job, job_args, manifest, security=security,
                                           progress=progress, log=log)
            run_record["workers"] = manifest.data.get("cluster_workers")
        elif todo:
            interrupted = _run_pool(todo, manifest, algo, params, n_workers, n_threads, options, progress, log)
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


def _compile_here(algo: str, params: dict, log) -> None:
    """Where numba's cache does not hold ``algo``'s frame kernels, say so and compile them in this process on two
    small frames, before any worker starts: the workers on this machine then load them from the cache instead of
    each compiling the same kernels (once instead of once a worker: the same wall time where every worker has a
    core of its own, 70-73 s for two 30-frame videos on 2 workers and 2 cores either way, less where the workers
    outnumber the cores)."""
    from bgsub.registry import create

    subtractor = create(algo, **params)
    note = compile_note(subtractor)
    if note is None:
        return
    print(f"{note} (here, before the workers start)", file=log, flush=True)
    run_throwaway_frames(subtractor, 2)


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


def _differences(old: dict, new: dict) -> str:
    """Only the settings that differ: ``width 40 there, 30 now; mask_video none there, .mkv now``."""
    def flat(cfg):
        out = {"algo": cfg.get("algo")}
        out.update(cfg.get("params") or {})
        out.update({k: cfg.get(k) for k in SETTINGS_KEYS if k not in ("algo", "params")})
        # unrecorded means the default
        out.update({k: v for k, v in (("scale", 1.0), ("min_area", 0)) if out.get(k) is None})
        return out

    a, b = flat(old), flat(new)
    show = lambda v: "none" if v is None else v  # noqa: E731
    return "; ".join(f"{k} {show(a.get(k))} there, {show(b.get(k))} now"
                     for k in list(dict.fromkeys([*a, *b])) if a.get(k) != b.get(k))


@contextlib.contextmanager
def _ctrl_c_interrupts():
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


def _run_pool(todo, manifest, algo, params, n_workers, n_threads, options, progress, log) -> bool:
    ctx = _pool_context()
    progress_queue = ctx.Queue()
    stop_event = ctx.Event()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=None, unit="frame", desc=f"0/{len(todo)} videos", dynamic_ncols=True, file=log)
    expected = {job.key: _estimate_frames(job, options.max_frames) for job in todo}
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
        max_workers=n_workers, mp_context=ctx, initializer=_init_worker,
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


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

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
        security = None
        if args.scheduler:
            from bgsub import cluster

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
