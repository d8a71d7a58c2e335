"""Batch jobs that cannot harm their input: where each output goes, when it is finished, how it lands.

Used by ``bgsub batch`` with either executor (the local process pool or a Dask
cluster):

* :func:`check_output_location` -- an output folder equal to the input folder,
  containing it, or inside one of the input sequences is refused before anything
  is written; an output folder elsewhere inside the input tree is allowed (the
  scan skips it).
* :func:`plan_jobs` -- one output folder per input, deterministic and unique:
  the input tree is mirrored; a video whose stem is taken by another video or by a
  folder of the same parent keeps its extension (``sample.mp4`` beside the CDnet
  folder ``sample/`` -> ``sample_mp4/``).
* :func:`source_fingerprint` and :func:`is_finished` -- a job is skipped on
  resume only when its ``result.json`` records the same source (path, size,
  modification time) and the same settings.
* :class:`JobDir` -- a job's output filled under ``.NAME.partial-JOBID-...``,
  every file ``fsync``-ed, then put in place with one atomic rename (an existing
  finished folder is swapped atomically with ``renameat2(RENAME_EXCHANGE)`` where
  the kernel has it); clean-up during a run touches only the job's own
  temporary folders.
* :class:`OutputLock` -- one batch at a time per output folder.
* :func:`limit_threads` -- numba and OpenCV threads of one worker.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bgsub.cdnet import is_cdnet_sequence
from bgsub.writers import AtomicDir, remove_partials
from learners._persist import fsync_dir

__all__ = [
    "Job", "UnsafeOutputError", "check_output_location", "plan_jobs", "source_fingerprint", "is_finished",
    "read_result", "JobDir", "remove_job_partials", "OutputLock", "limit_threads", "default_threads",
    "available_cores", "current_threads", "RESULT_FILE", "WORKERS_PER_CORE", "max_workers",
]

#: Written into each output folder last, before it is renamed into place.
RESULT_FILE = "result.json"


class UnsafeOutputError(ValueError):
    """The output folder would overwrite or mix with the input (the message says why)."""


@dataclass(frozen=True)
class Job:
    """One input of a batch.

    Attributes
    ----------
    key : str
        Path of the input relative to ``IN_DIR`` (POSIX separators); the manifest's key.
    source : str
        Absolute path of the video file or sequence folder.
    kind : str
        ``"video"`` or ``"cdnet"``.
    output : str
        Absolute path of its output folder (unique within the batch).
    job_id : str
        Unique per job and run; part of the job's temporary folder names.
    """

    key: str
    source: str
    kind: str
    output: str
    job_id: str = "0"


# --------------------------------------------------------------------------
# where outputs go
# --------------------------------------------------------------------------


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_output_location(in_dir: str | os.PathLike, out_dir: str | os.PathLike) -> None:
    """Refuse an ``out_dir`` that could overwrite or mix with the input.

    Raises
    ------
    UnsafeOutputError
        When ``out_dir`` is ``in_dir``, contains it, or lies inside an input
        sequence folder (a CDnet folder, which is read as data).
    """
    inp = Path(in_dir).resolve()
    out = Path(out_dir).resolve()
    if out == inp:
        raise UnsafeOutputError(f"OUT_DIR {out_dir} is the input folder: the masks would mix with (and could "
                                "replace) the input; choose another OUT_DIR")
    if _within(inp, out):
        raise UnsafeOutputError(f"OUT_DIR {out_dir} contains the input folder {in_dir}; choose an OUT_DIR outside "
                                "it (an OUT_DIR inside the input folder is fine)")
    if _within(out, inp):
        folder = out
        while folder != inp:
            if is_cdnet_sequence(folder):
                raise UnsafeOutputError(f"OUT_DIR {out_dir} is inside the input sequence {folder}; choose an "
                                        "OUT_DIR outside the input sequences")
            folder = folder.parent
        if is_cdnet_sequence(inp):
            raise UnsafeOutputError(f"OUT_DIR {out_dir} is inside the input sequence {in_dir}; choose an OUT_DIR "
                                    "outside it")


def plan_jobs(in_dir: str | os.PathLike, out_dir: str | os.PathLike, inputs: list[tuple[Path, str]],
              run_id: str = "0") -> list[Job]:
    """Output folder of each input: the input tree mirrored under ``out_dir``, one folder per input.

    A sequence folder keeps its name (folder names are unique in their parent).
    A video gets its stem, unless another video of its folder has the same stem
    or a folder of the same parent is mirrored under that name (an input folder,
    or the parent of inputs): then it keeps its extension (``clip_mp4``), and if
    that is taken too, a number (``clip_mp4_2``). Names are compared ignoring case
    (for case-insensitive file systems). The result depends only on ``inputs``,
    in the order given; plan every input found and filter afterwards, so that a
    ``--pattern`` does not change where an input's output goes.
    """
    root = Path(in_dir).resolve()
    out = Path(out_dir).resolve()
    entries = []
    for p, kind in inputs:
        p = Path(p).resolve()
        rel = Path(p.name) if p == root else p.relative_to(root)
        entries.append((p, kind, rel))
    taken: dict[str, set[str]] = defaultdict(set)
    for _, kind, rel in entries:
        parts = rel.parts if kind == "cdnet" else rel.parts[:-1]
        for i, part in enumerate(parts):
            taken[Path(*parts[:i]).as_posix()].add(part.casefold())
    stems = Counter((rel.parent.as_posix(), rel.stem.casefold()) for _, kind, rel in entries if kind == "video")
    jobs = []
    for i, (p, kind, rel) in enumerate(entries):
        if kind == "video":
            parent = rel.parent.as_posix()
            name = rel.stem
            if name.casefold() in taken[parent] or stems[(parent, name.casefold())] > 1:
                name = f"{rel.stem}_{rel.suffix.lstrip('.')}"
            base, n = name, 2
            while name.casefold() in taken[parent]:
                name, n = f"{base}_{n}", n + 1
            taken[parent].add(name.casefold())
            target = out / rel.parent / name
        else:
            target = out / rel
        jobs.append(Job(rel.as_posix(), str(p), kind, str(target), f"{run_id}-{i}"))
    return jobs


# --------------------------------------------------------------------------
# when a job is finished
# --------------------------------------------------------------------------


def source_fingerprint(source: str | os.PathLike, kind: str) -> dict[str, Any]:
    """Path, size and modification time of an input (a sequence: its files' total size, newest time, count)."""
    p = Path(source)
    if kind != "cdnet":
        st = p.stat()
        return {"path": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    size = files = newest = 0
    for folder in (p, p / "input", p / "groundtruth"):
        if not folder.is_dir():
            continue
        for e in os.scandir(folder):
            if e.is_file():
                st = e.stat()
                size += st.st_size
                files += 1
                newest = max(newest, st.st_mtime_ns)
    return {"path": str(p), "size": size, "mtime_ns": newest, "files": files}


def read_result(output: str | os.PathLike) -> dict | None:
    """The ``result.json`` of an output folder, or None when missing or unreadable."""
    try:
        data = json.loads((Path(output) / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _canonical(obj: Any) -> Any:
    return json.loads(json.dumps(obj, sort_keys=True, default=str))


def is_finished(job: Job, settings: dict) -> bool:
    """True when ``job``'s output folder holds a finished result of this source and these settings."""
    data = read_result(job.output)
    if data is None or data.get("status") != "done":
        return False
    try:
        now = source_fingerprint(job.source, job.kind)
    except OSError:
        return False
    return data.get("source_id") == now and _canonical(data.get("settings")) == _canonical(settings)


# --------------------------------------------------------------------------
# how a job's output lands
# --------------------------------------------------------------------------

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
try:
    _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    _renameat2.restype = ctypes.c_int
except (AttributeError, OSError):  # pragma: no cover - not glibc >= 2.28
    _renameat2 = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically; False where the system cannot."""
    if _renameat2 is None:  # pragma: no cover
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):  # pragma: no cover
        return False
    raise OSError(err, os.strerror(err), str(b))


def fsync_tree(folder: str | os.PathLike) -> None:
    """``fsync`` every file under ``folder``, then the folders themselves (deepest first)."""
    dirs = []
    for dirpath, _, filenames in os.walk(folder):
        dirs.append(dirpath)
        for name in filenames:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    for d in reversed(dirs):
        fsync_dir(d)


class JobDir(AtomicDir):
    """:class:`bgsub.writers.AtomicDir` for one job: job id in the temporary name, durable commit.

    ``commit()`` ``fsync``-s every file and folder of the temporary folder,
    renames it into place (swapping atomically with an existing folder, whose
    content is then deleted), and ``fsync``-s the parent folder: once it returns,
    the finished folder survives a power cut, and at any moment the final path
    holds either the complete old folder, or the complete new one (or, on a
    system without ``RENAME_EXCHANGE``, briefly nothing).
    """

    def __init__(self, final: str | os.PathLike, job_id: str) -> None:
        super().__init__(final)
        self.job_id = job_id

    def _temp_name(self) -> Path:
        return self.final.with_name(f".{self.final.name}.partial-{self.job_id}-{os.getpid()}-{os.urandom(3).hex()}")

    def commit(self) -> Path:
        if self.tmp is None:
            raise ValueError("JobDir.commit() before open()")
        tmp, self.tmp = self.tmp, None
        fsync_tree(tmp)
        if self.final.is_dir() and _exchange(tmp, self.final):
            fsync_dir(self.final.parent)
            shutil.rmtree(tmp, ignore_errors=True)  # now the old content
        else:
            if self.final.exists():  # pragma: no cover - no RENAME_EXCHANGE
                old = self.final.with_name(f".{self.final.name}.partial-old-{self.job_id}-{os.urandom(3).hex()}")
                os.replace(self.final, old)
                os.replace(tmp, self.final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, self.final)
            fsync_dir(self.final.parent)
        return self.final


def remove_job_partials(output: str | os.PathLike, job_id: str | None = None) -> int:
    """Delete temporary folders and files of ``output`` left by killed attempts.

    With ``job_id``, only that job's (``.NAME.partial-JOBID-...``); without, every
    one of ``NAME`` (only safe when no other batch writes there: see
    :class:`OutputLock`). Returns how many were removed.
    """
    final = Path(output)
    if not final.parent.is_dir():
        return 0
    prefix = f".{final.name}.partial-" + (f"{job_id}-" if job_id is not None else "")
    return remove_partials(final.parent, prefix=prefix)


class OutputLock:
    """An exclusive lock on ``OUT_DIR`` itself (``flock`` on the folder): one batch writes there at a time.

    ``flock`` locks are released by the system when the process ends, however it
    ends, and leave no file behind. On network file systems ``flock`` may be
    local to one machine: run one batch client per output folder.
    """

    def __init__(self, out_dir: str | os.PathLike) -> None:
        self.path = Path(out_dir)
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UnsafeOutputError(f"another bgsub batch is writing into {self.path}; wait for it to finish or "
                                    "choose another OUT_DIR") from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "OutputLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


# --------------------------------------------------------------------------
# threads
# --------------------------------------------------------------------------


def available_cores() -> int:
    """Cores available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


#: A batch starts at most this many worker processes per core (``--workers``, ``--scheduler local:N``) ...
WORKERS_PER_CORE = 4
#: ... and at most one per this much of the machine's memory (a worker takes 100-300 MiB).
MEMORY_PER_WORKER = 256 * 2**20


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None


def max_workers() -> int:
    """The most worker processes a batch starts on this machine: :data:`WORKERS_PER_CORE` per core, and no more
    than the memory holds (one per :data:`MEMORY_PER_WORKER`). Many more workers than cores only slow the batch
    down; more than the memory holds run the machine out of it."""
    cap = WORKERS_PER_CORE * available_cores()
    memory = _physical_memory()
    if memory:
        cap = min(cap, memory // MEMORY_PER_WORKER)
    return max(1, cap)


def default_threads(workers: int) -> int:
    """Threads per worker so that ``workers x threads`` fills the cores without oversubscribing them."""
    return max(1, available_cores() // max(1, workers))


def current_threads() -> int:
    """Threads numba's parallel loops use in this thread."""
    import numba

    return int(numba.get_num_threads())


def limit_threads(n: int) -> int:
    """Let this process use ``n`` threads for numba's parallel loops and for OpenCV; returns what was set."""
    import cv2
    import numba

    n = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(n)
    cv2.setNumThreads(n)
    return n
