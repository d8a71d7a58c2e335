"""``run_batch``: every input under a folder into its own output folder, resumable (see :mod:`bgsub.batch`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bgsub.batch.inputs import find_inputs, matches_pattern
from bgsub.batch.jobs import SETTINGS_KEYS, Job, JobOptions, describe_differences, is_finished, plan_jobs, read_result
from bgsub.batch.outputs import OutputLock, check_output_location, check_writable, make_output_dir
from bgsub.batch.pool import ctrl_c_interrupts, run_pool
from bgsub.batch.threads import WORKERS_PER_CORE, available_cores, default_threads, max_workers
from bgsub.batch.worker import process_job
from bgsub.pipeline.paths import OutputError
from bgsub.settings import ConfigError
from bgsub.sources import VIDEO_EXTENSIONS
from bgsub.warmup import compile_note, run_throwaway_frames
from bgsub.writers import Manifest, remove_partials, utc_now

__all__ = ["run_batch", "MANIFEST_FILE", "default_workers", "compile_here"]

MANIFEST_FILE = "manifest.json"


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
    """Process every input under ``in_dir`` into ``out_dir``; see :mod:`bgsub.batch`.

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
        See :class:`bgsub.batch.jobs.JobOptions`; each is part of the settings that resume compares.

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
    except OutputError as exc:
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
    make_output_dir(out_dir)
    lock = OutputLock(out_dir)
    try:
        lock.acquire()
    except OutputError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot open OUT_DIR {out_dir}: {exc.strerror}; choose a folder you can write to") \
            from None
    try:
        check_writable(out_dir)
        for folder in sorted({Path(job.output).parent for job in jobs} - {out_dir.resolve()}):
            if folder.is_dir():  # the mirrored folders an earlier run made
                check_writable(folder, "the output folder")
        return _run_locked(jobs, in_dir, out_dir, run_id, algo=algo, params=params, workers=workers,
                           threads=threads, scheduler=scheduler, security=security, pattern=pattern,
                           options=options, overwrite=overwrite, progress=progress, log=log, skipped_links=skipped)
    finally:
        lock.release()


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
                f"{out_dir} holds results made with other settings: {describe_differences(old, settings)}. "
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
        from bgsub.batch import cluster

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
        compile_here(algo, params, log)
    interrupted = False
    t0 = time.perf_counter()
    with ctrl_c_interrupts():
        if todo and scheduler:
            job_args = (algo, params, options, threads)
            interrupted = cluster.run_jobs(scheduler, todo, process_job, job_args, manifest, security=security,
                                           progress=progress, log=log)
            run_record["workers"] = manifest.data.get("cluster_workers")
        elif todo:
            interrupted = run_pool(todo, manifest, algo, params, n_workers, n_threads, options, progress, log)
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


def compile_here(algo: str, params: dict, log) -> None:
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
