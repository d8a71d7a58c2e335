"""Where a batch may write, and how each job's output lands.

* :func:`check_output_location` -- an output folder equal to the input folder,
  containing it, or inside one of the input sequences is refused before anything
  is written (the rule of :func:`bgsub.pipeline.paths.check_outputs`); an output
  folder elsewhere inside the input tree is allowed (the scan skips it).
* :func:`make_output_dir`, :func:`check_writable` -- ``OUT_DIR`` created, and
  refused where files cannot be created in it, each with a one-line reason.
* :class:`JobDir` -- a job's output filled under ``.NAME.partial-JOBID-...``,
  every file ``fsync``-ed, then put in place with one atomic rename (an existing
  finished folder is swapped atomically with ``renameat2(RENAME_EXCHANGE)`` where
  the kernel has it); clean-up during a run touches only the job's own
  temporary folders (:func:`remove_job_partials`).
* :class:`OutputLock` -- one batch at a time per output folder.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from pathlib import Path

from bgsub.cdnet import is_cdnet_sequence
from bgsub.pipeline.paths import OutputError, check_outputs, probe_folder, real_path
from bgsub.settings import ConfigError
from bgsub.writers import AtomicDir, remove_partials
from learners._persist import fsync_dir

__all__ = ["RESULT_FILE", "UnsafeOutputError", "check_output_location", "make_output_dir", "check_writable",
           "JobDir", "fsync_tree", "remove_job_partials", "OutputLock"]

#: Written into each output folder last, before it is renamed into place.
RESULT_FILE = "result.json"


class UnsafeOutputError(OutputError):
    """The output folder would overwrite or mix with the input, or another batch writes there (the message says
    why)."""


def check_output_location(in_dir: str | os.PathLike, out_dir: str | os.PathLike) -> None:
    """Refuse an ``out_dir`` that could overwrite or mix with the input.

    Raises
    ------
    OutputError
        When ``out_dir`` is ``in_dir``, contains it, or lies inside an input
        sequence folder (a CDnet folder, which is read as data).
    """
    inp, out = real_path(in_dir), real_path(out_dir)
    around = [f for f in (out, *out.parents) if (f == inp or inp in f.parents) and is_cdnet_sequence(f)]
    check_outputs([("input", in_dir), *(("input sequence", f) for f in around)], [("OUT_DIR", out_dir)],
                  may_lie_inside=["input"])


def make_output_dir(out_dir: Path) -> None:
    """Create ``out_dir`` (and its parents), or say in one line why it cannot be (ConfigError)."""
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


def check_writable(folder: Path, what: str = "OUT_DIR") -> None:
    """Refuse a ``folder`` this process cannot create files in, before anything is done (ConfigError)."""
    try:
        probe_folder(folder)
    except OSError as exc:
        fix = "choose a folder you can write to" if what == "OUT_DIR" else "make it writable, or choose another OUT_DIR"
        raise ConfigError(f"cannot write into {what} {folder}: {exc.strerror or exc}; {fix}") from None


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
