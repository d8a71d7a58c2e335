"""Checkpoints: a model's parameters and state in one checked ``.npz`` file.

One format serves the estimators of :mod:`learners` (:class:`PersistMixin`) and
the background subtractors of ``bgsub`` (``bgsub.checkpoint``):

* ``meta`` -- a 0-d unicode array holding JSON: ``format`` (``"olk-checkpoint"``),
  ``version`` (:data:`FORMAT_VERSION`), ``kind`` (which model: a class or
  algorithm name), ``params`` (the constructor's arguments) and whatever scalar
  state the model needs (frame counter, random state, ...);
* ``a.NAME`` -- one plain numeric or string array per state array (never an
  object array: the file is read with ``np.load(allow_pickle=False)``);
* ``checksum`` -- SHA-256 over ``meta`` and every array's name, dtype, shape and
  bytes, so a truncated or edited file is refused instead of silently loaded.

Files are written atomically: to a temporary file beside the target, flushed and
``fsync``-ed, renamed over the target, and the folder ``fsync``-ed, so after a
crash or power cut the path holds the previous checkpoint or the new one, never
a mixture.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FORMAT_VERSION", "CheckpointError", "write_checkpoint", "read_checkpoint", "write_atomic", "fsync_dir",
           "PersistMixin"]

FORMAT = "olk-checkpoint"
#: Version of the file layout; files of another version are refused.
FORMAT_VERSION = 1
_ARRAY_PREFIX = "a."


class CheckpointError(ValueError):
    """A checkpoint cannot be written or read (the message says why and what to do)."""


def _bytes_of(a: np.ndarray):
    """The bytes of ``a`` in C order, without a copy where ``a`` is C-contiguous (``a.tobytes()``'s bytes)."""
    a = np.ascontiguousarray(a)
    return a.reshape(-1).view(np.uint8) if a.size else b""


def _checksum(meta_text: str, arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    h.update(meta_text.encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode("utf-8"))
        h.update(_bytes_of(a))
    return h.hexdigest()


def fsync_dir(folder: str | os.PathLike) -> None:
    """``fsync`` a folder, so that renames and new names in it survive a power cut (where supported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows: directories cannot be opened
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems without directory fsync
        pass
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike, data: bytes, *, fsync: bool = True,
                 tmp: str | os.PathLike | None = None) -> Path:
    """Write ``data`` to ``path`` via a temporary file and a rename; with ``fsync``, durably.

    With ``fsync`` the file is ``fsync``-ed before the rename and its folder
    after it, so the new content survives a power cut once this returns. ``tmp``
    names the temporary file (default ``.NAME.partial-PID-RANDOM`` beside ``path``).
    """
    path = Path(path)
    if tmp is None:
        tmp = path.with_name(f".{path.name}.partial-{os.getpid()}-{os.urandom(3).hex()}")
    tmp = Path(tmp)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        raise
    if fsync:
        fsync_dir(path.parent)
    return path


def write_checkpoint(path: str | os.PathLike, kind: str, params: dict, arrays: dict[str, np.ndarray],
                     **meta: Any) -> Path:
    """Write a checkpoint of model ``kind`` to ``path`` atomically and durably.

    ``params`` and ``meta`` must be JSON-serialisable; ``arrays`` plain (non-object)
    arrays. Returns the path.
    """
    path = Path(path)
    for name, a in arrays.items():
        if not isinstance(a, np.ndarray) or a.dtype.hasobject:
            raise CheckpointError(f"cannot save state {name!r}: not a plain numeric or string array")
    body = {"format": FORMAT, "version": FORMAT_VERSION, "kind": kind, "params": params, **meta}
    try:
        meta_text = json.dumps(body, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"cannot save {kind}: parameters or state not representable as JSON ({exc})") from None
    payload = {_ARRAY_PREFIX + k: np.ascontiguousarray(v) for k, v in arrays.items()}
    payload["meta"] = np.array(meta_text)
    payload["checksum"] = np.array(_checksum(meta_text, arrays))
    buf = io.BytesIO()
    np.savez(buf, **payload)
    if not path.parent.is_dir():
        raise CheckpointError(f"cannot write checkpoint {path}: folder {path.parent} does not exist")
    try:
        return write_atomic(path, buf.getvalue())
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {path}: {exc.strerror or exc}") from None


#: Largest ``meta`` entry read: the parameters and scalar state as JSON (numpy stores 4 bytes a character).
MAX_META_BYTES = 16 << 20
#: Most entries a checkpoint may hold (its state arrays, ``meta`` and ``checksum``).
MAX_ENTRIES = 1024
#: Array types a checkpoint may hold: booleans, integers, floats and text, in this machine's byte order.
_ARRAY_KINDS = "biufU"
_NPY_HEADER_MAX = 10000


def memory_limit() -> int:
    """Bytes of state a checkpoint may declare: half of this machine's physical memory (1 GiB where unknown).

    The loaders refuse a larger model with a message before reading it, instead of running out of memory.
    """
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):  # pragma: no cover - systems without sysconf
        return 1 << 30


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**27 else f"{n / 2**20:.3g} MiB"


def _unreadable(path, exc) -> CheckpointError:
    return CheckpointError(f"{path} is not a readable checkpoint (.npz): {exc}"[:500])


#: What reading an entry of a damaged or hostile zip file can raise (zlib.error for a bad deflate stream,
#: NotImplementedError for an unknown compression, RuntimeError for an encrypted entry).
_ZIP_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error, NotImplementedError,
               RuntimeError, struct.error, OverflowError)


def _entry_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path) -> tuple[np.dtype, tuple[int, ...], int]:
    """``(dtype, shape, data offset)`` of one ``.npy`` entry, read from its header alone (no array data is
    decompressed); refuses a header that does not fit the entry's declared size."""
    name = info.filename
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}.get(version)
        if read_header is None:
            raise CheckpointError(f"{path}: entry {name!r} has .npy format {version}, not one this library writes")
        try:
            shape, fortran, dtype = read_header(fh, max_header_size=_NPY_HEADER_MAX)
        except (*_ZIP_ERRORS, MemoryError):
            raise
        except Exception as exc:  # numpy parses the header text as a Python literal: any parser error
            raise CheckpointError(f"{path} is damaged: the header of entry {name!r} does not parse "
                                  f"({type(exc).__name__})") from None
        offset = fh.tell()
    if dtype.hasobject or dtype.kind not in _ARRAY_KINDS or dtype.itemsize == 0 or not dtype.isnative:
        raise CheckpointError(f"{path}: entry {name!r} holds {dtype.str} values; a checkpoint holds only "
                              "booleans, integers, floats and text (no objects)")
    if fortran and len(shape) > 1:
        raise CheckpointError(f"{path}: entry {name!r} is in Fortran order, which this library does not write")
    if any(n < 0 for n in shape):
        raise CheckpointError(f"{path}: entry {name!r} declares the shape {list(shape)}")
    count = 1
    for n in shape:
        count *= n
    if info.file_size != offset + count * dtype.itemsize:
        raise CheckpointError(f"{path} is damaged: entry {name!r} declares {dtype.str}{list(shape)} "
                              f"({count * dtype.itemsize} bytes) but holds {info.file_size - offset} bytes")
    return dtype, tuple(shape), offset


def _read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, dtype: np.dtype, shape: tuple[int, ...],
                offset: int) -> np.ndarray:
    """The array of one entry whose header :func:`_entry_header` checked: exactly its declared bytes, read in
    chunks into one buffer (a writable array that owns nothing else)."""
    nbytes = dtype.itemsize
    for n in shape:
        nbytes *= n
    buf = bytearray(nbytes)
    view = memoryview(buf)
    with zf.open(info) as fh:
        fh.read(offset)
        pos = 0
        while pos < nbytes:
            chunk = fh.read(min(1 << 20, nbytes - pos))
            if not chunk:
                raise EOFError(f"entry {info.filename!r} ends early")
            view[pos:pos + len(chunk)] = chunk
            pos += len(chunk)
        fh.read(1)  # at the end: the entry's CRC is checked
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


def read_checkpoint(path: str | os.PathLike, kind: str | None = None,
                    check: Callable[[dict, dict[str, tuple[np.dtype, tuple[int, ...]]]], None] | None = None,
                    ) -> tuple[dict, dict[str, np.ndarray]]:
    """Read and verify a checkpoint; returns ``(meta, arrays)``.

    The file is untrusted input: its zip directory and every entry's ``.npy`` header
    are read first, and each entry's size checked against its header, before any
    array is decompressed. ``check(meta, declared)``, where given, then sees the
    verified ``meta`` and ``{name: (dtype, shape)}`` of every state array as the
    file declares it, and raises :class:`CheckpointError` when that is not the
    model's layout; without it, arrays are read while their total size stays within
    :func:`memory_limit`. With ``kind``, a checkpoint of another model is refused.

    Raises
    ------
    CheckpointError
        Missing, unreadable, truncated or edited file (checksum), entries that are
        not this library's, another format version, another model than ``kind``,
        or a layout ``check`` refuses.
    """
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(f"checkpoint {path} is a folder; give the .npz file")
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        zf = zipfile.ZipFile(path)
    except _ZIP_ERRORS as exc:
        raise _unreadable(path, exc) from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ENTRIES:
            raise CheckpointError(f"{path} is not a checkpoint: it holds {len(infos)} entries")
        members: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            key = info.filename[:-4] if info.filename.endswith(".npy") else None
            if key is None or not (key in ("meta", "checksum") or key.startswith(_ARRAY_PREFIX)):
                raise CheckpointError(f"{path} is not a checkpoint of this library: it holds the entry "
                                      f"{info.filename[:80]!r}")
            if key in members:
                raise CheckpointError(f"{path} is not a valid checkpoint: it holds the entry {info.filename[:80]!r} "
                                      "twice")
            members[key] = info
        if "meta" not in members or "checksum" not in members:
            raise CheckpointError(f"{path} is not a checkpoint: it has no meta/checksum entries")
        try:
            headers = {key: _entry_header(zf, info, path) for key, info in members.items()}
            for key, limit in (("meta", MAX_META_BYTES), ("checksum", 1024)):
                dtype, shape, _ = headers[key]
                if dtype.kind != "U" or shape != () or dtype.itemsize > limit:
                    raise CheckpointError(f"{path} is not a checkpoint: its {key} entry is {dtype.str}{list(shape)}, "
                                          "not a text of at most " + _gib(limit))
            meta_text = str(_read_entry(zf, members["meta"], *headers["meta"])[()])
            try:
                meta = json.loads(meta_text)
            except (ValueError, RecursionError):
                raise CheckpointError(f"{path} is not a checkpoint: its meta entry is not JSON") from None
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise CheckpointError(f"{path} is not a checkpoint of this library (format {meta.get('format')!r:.80})"
                                      if isinstance(meta, dict) else f"{path} is not a checkpoint")
            if meta.get("version") != FORMAT_VERSION:
                raise CheckpointError(f"{path} has checkpoint format version {meta.get('version')!r:.40}; this "
                                      f"version reads version {FORMAT_VERSION} only: save the model again with "
                                      "this version")
            if kind is not None and meta.get("kind") != kind:
                raise CheckpointError(f"{path} holds a {meta.get('kind')!r:.80} model, not {kind!r}")
            declared = {key[len(_ARRAY_PREFIX):]: headers[key][:2] for key in members if key.startswith(_ARRAY_PREFIX)}
            if check is not None:
                check(meta, declared)
            else:
                total = sum(d.itemsize * math.prod(s) for d, s in declared.values())
                if total > memory_limit():
                    raise CheckpointError(f"{path} declares {_gib(total)} of state, more than this machine can "
                                          f"hold ({_gib(memory_limit())})")
            arrays = {key[len(_ARRAY_PREFIX):]: _read_entry(zf, members[key], *headers[key])
                      for key in members if key.startswith(_ARRAY_PREFIX)}
            checksum = str(_read_entry(zf, members["checksum"], *headers["checksum"])[()])
        except CheckpointError:
            raise
        except MemoryError:
            raise CheckpointError(f"{path}: not enough memory to read this checkpoint") from None
        except _ZIP_ERRORS as exc:
            raise _unreadable(path, exc) from None
    if checksum != _checksum(meta_text, arrays):
        raise CheckpointError(f"{path} is damaged: its checksum does not match its content")
    return meta, arrays


# --------------------------------------------------------------------------
# estimators
# --------------------------------------------------------------------------

_SCALARS = (bool, int, float, str, type(None))


#: A dict parameter (SVMDClassifier's ``taxonomy``) in the JSON meta: its items as ``[key, value]`` pairs,
#: so that int and string keys come back as they were.
_DICT_TAG = "dict_items"


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _dict_to_json(kind, name, mapping):
    items = [[_plain(k), _plain(v)] for k, v in mapping.items()]
    if not all(isinstance(x, _SCALARS) for pair in items for x in pair):
        raise CheckpointError(f"cannot save {kind}: parameter {name} must map plain values (numbers, strings, "
                              "None) to plain values")
    return {_DICT_TAG: items}


def _dict_from_json(value):
    if isinstance(value, dict) and set(value) == {_DICT_TAG}:
        items = value[_DICT_TAG]
        if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 for p in items):
            raise CheckpointError(f"a dict parameter in the checkpoint is malformed: {value!r}"[:300])
        return {k: v for k, v in items}
    return value


class PersistMixin:
    """``save(path)`` / ``Class.load(path)`` for the estimators, in the checkpoint format.

    Saves ``get_params()`` and every attribute the estimator set while fitting
    (``name_`` attributes and the private expansion arrays): plain arrays as
    arrays, Python scalars in the JSON meta. Pickling keeps working as before.
    """

    def save(self, path: str | os.PathLike) -> Path:
        """Write the parameters and fitted state to ``path`` (``.npz``), atomically."""
        params = self.get_params(deep=False)
        for k, v in params.items():
            if isinstance(v, dict):
                params[k] = _dict_to_json(type(self).__name__, k, v)
            elif not isinstance(v, _SCALARS):
                raise CheckpointError(f"cannot save {type(self).__name__}: parameter {k}={v!r} is not a plain "
                                      "value (use an int random_state)")
        arrays: dict[str, np.ndarray] = {}
        scalars: dict[str, Any] = {}
        strings: list[str] = []
        for name, value in vars(self).items():
            if name in params:
                continue
            if isinstance(value, np.ndarray):
                if value.dtype == object:
                    if not all(isinstance(v, str) for v in value.ravel()):
                        raise CheckpointError(f"cannot save state {name!r}: an object array of non-strings")
                    value = value.astype(str)
                    strings.append(name)
                arrays[name] = value
            elif isinstance(value, _SCALARS + (np.integer, np.floating, np.bool_)):
                scalars[name] = value.item() if isinstance(value, np.generic) else value
            else:
                raise CheckpointError(f"cannot save state {name!r} of type {type(value).__name__}")
        return write_checkpoint(path, type(self).__name__, params, arrays, scalars=scalars, object_arrays=strings)

    @classmethod
    def load(cls, path: str | os.PathLike):
        """An estimator of this class restored from ``path`` (written by :meth:`save`).

        The file is untrusted input: its arrays' declared sizes are checked before
        they are read, and the restored state against the state this class builds
        for the saved parameters, features and classes (every array's name, type and
        shape, the ring's position and count within the expansion, every float
        finite, the published values such as ``offset_`` equal to what the state
        gives), so an edited file is refused with a message instead of crashing or
        predicting from a state no stream leads to.
        """
        meta, arrays = read_checkpoint(path, kind=cls.__name__, check=lambda m, d: _declared_estimator(path, m, d))
        params, scalars, strings = _estimator_meta(path, meta)
        try:
            est = cls(**{k: _dict_from_json(v) for k, v in params.items()})
            if not arrays and not scalars:
                return est  # saved before fitting: its parameters are checked when it fits, as scikit-learn does
            fit_params = est._check_params() if hasattr(est, "_check_params") else None
        except CheckpointError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise CheckpointError(f"{path}: parameters do not fit {cls.__name__}: {exc}"[:600]) from None
        for name in strings:
            arrays[name] = arrays[name].astype(object)
        try:
            _restore_estimator(est, fit_params, scalars, arrays)
        except CheckpointError as exc:
            raise CheckpointError(f"{path}: {exc}"[:600]) from None
        except (TypeError, ValueError, KeyError, IndexError, OverflowError, AttributeError) as exc:
            raise CheckpointError(f"{path}: the state of this {cls.__name__} is not valid: {exc}"[:600]) from None
        return est


#: The meta entries of an estimator's checkpoint.
_ESTIMATOR_META = frozenset({"format", "version", "kind", "params", "scalars", "object_arrays"})
#: Largest feature count and class count a checkpoint may declare.
MAX_FEATURES = 1 << 24
MAX_CLASSES = 1 << 16
#: Fitted values the first rows fix where their parameter names a data rule (``width="scale"``, ``C="scale"``),
#: and the parameter: checked > 0, and equal to the parameter where it is a number.
_DATA_RULES = (("width_", "width"), ("C_", "C"))
#: Arrays whose length is the rows of a call (scratch of the last call, the trace of every step size).
_ROW_ARRAYS = frozenset({"_margin_out", "eta_trace_"})


def _estimator_meta(path, meta: dict) -> tuple[dict, dict, list]:
    unknown = sorted(set(meta) - _ESTIMATOR_META)
    if unknown:
        raise CheckpointError(f"{path}: unknown entries {', '.join(map(repr, unknown))[:200]} in its meta; it was "
                              "not written by this version")
    params, scalars, strings = meta.get("params"), meta.get("scalars", {}), meta.get("object_arrays", [])
    for key, value, kind in (("params", params, dict), ("scalars", scalars, dict), ("object_arrays", strings, list)):
        if not isinstance(value, kind):
            raise CheckpointError(f"{path}: its {key} entry is {value!r:.80}, not a "
                                  f"{'table of values' if kind is dict else 'list of names'}")
    if not all(isinstance(v, _SCALARS) or isinstance(v, dict) for v in params.values()):
        raise CheckpointError(f"{path}: its parameters hold values that are not plain numbers, strings or tables")
    bad = [k for k, v in params.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise CheckpointError(f"{path}: its parameter {bad[0]} = {params[bad[0]]!r} is not a finite number")
    if not all(isinstance(v, _SCALARS) for v in scalars.values()):
        raise CheckpointError(f"{path}: its state values are not plain numbers or strings")
    return params, scalars, strings


def _declared_estimator(path, meta: dict, declared: dict) -> None:
    """Refuse, before any array is read, arrays larger than the saved parameters, feature count and class
    count allow (the exact layout is checked once they are read, :func:`_restore_estimator`)."""
    params, scalars, strings = _estimator_meta(path, meta)
    if not set(strings) <= set(declared):
        raise CheckpointError(f"{path}: its object_arrays name arrays it does not hold")
    if not declared:
        return
    nf = scalars.get("n_features_in_")
    if not isinstance(nf, int) or isinstance(nf, bool) or not 1 <= nf <= MAX_FEATURES:
        raise CheckpointError(f"{path}: n_features_in_ = {nf!r:.40} is not a feature count in [1, {MAX_FEATURES}]")
    K = declared.get("classes_", (None, (1,)))[1]
    if len(K) != 1 or not 1 <= K[0] <= MAX_CLASSES:
        raise CheckpointError(f"{path}: classes_ of shape {list(K)} is not a list of 1 to {MAX_CLASSES} labels")
    K = K[0]
    budget = params.get("budget")
    rows = declared.get("_sv", (None, (0, 0)))[1]
    if len(rows) != 2 or rows[1] != nf:
        raise CheckpointError(f"{path}: its support vectors _sv of shape {list(rows)} do not have the "
                              f"{nf} features of n_features_in_")
    if isinstance(budget, int) and not isinstance(budget, bool) and rows[0] != budget:
        raise CheckpointError(f"{path}: its expansion holds {rows[0]} slots, not the budget of {budget}")
    total = 0
    for name, (dtype, shape) in declared.items():
        count = math.prod(shape)
        total += count * dtype.itemsize
        if name in _ROW_ARRAYS:  # the rows of the last call, of every call: at most the steps taken
            steps = scalars.get("n_steps_")
            if len(shape) != 1 or not isinstance(steps, int) or shape[0] > steps:
                raise CheckpointError(f"{path}: state {name!r} is declared {dtype.str}{list(shape)}, more than the "
                                      f"{steps!r:.40} rows learnt")
            continue
        if len(shape) > 2 or count > max(rows[0] + 3, K) * max(nf, K, 3) + 16:
            raise CheckpointError(f"{path}: state {name!r:.80} is declared {dtype.str}{list(shape)}, larger than a "
                                  f"model of {rows[0]} slots, {nf} features and {K} classes holds")
    if total > memory_limit():
        raise CheckpointError(f"{path} declares {_gib(total)} of state, more than this machine can hold "
                              f"({_gib(memory_limit())})")


def _finite(name: str, value) -> None:
    a = np.asarray(value)
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise CheckpointError(f"state {name!r} holds NaN or infinite values")


def _restore_estimator(est, params: dict | None, scalars: dict, arrays: dict[str, np.ndarray]) -> None:
    """Set the saved state on the fresh estimator ``est`` after checking it against the state this class
    builds for the same parameters, features and classes (a reference allocated by the estimator's own code:
    its ``_start`` after its ``_encode_labels``)."""
    cls = type(est)
    if params is None or not hasattr(est, "_allocate"):  # pragma: no cover - every estimator has them
        raise CheckpointError(f"{cls.__name__} does not restore fitted state")
    nf = scalars.get("n_features_in_")
    if "_state" not in arrays or not isinstance(nf, int):
        raise CheckpointError("the state is incomplete: it lacks the expansion's _state or n_features_in_")
    # the reference: a model of these parameters that has seen these classes and features, before any row
    ref = cls(**est.get_params(deep=False))
    classes = arrays.get("classes_")
    if classes is not None:
        if classes.ndim != 1 or classes.shape[0] == 0 or (classes.dtype.kind == "f" and not np.isfinite(classes).all()):
            raise CheckpointError("classes_ is not a list of labels")
        labels = np.unique(classes)
        if labels.shape != classes.shape or not (labels == classes).all():
            raise CheckpointError("classes_ is not a sorted list of distinct labels")
        if not hasattr(ref, "_encode_labels"):
            raise CheckpointError(f"classes_ is saved, but a {cls.__name__} has no classes")
        if classes.shape[0] == 1 and hasattr(ref, "_code_one"):
            ref._code_one(classes[0].item() if isinstance(classes[0], np.generic) else classes[0])
        else:
            ref._encode_labels(classes, classes, True)
    elif hasattr(ref, "_encode_labels"):
        raise CheckpointError(f"the state lacks the classes_ of this {cls.__name__}")
    ref.n_features_in_ = nf
    ref._start(np.zeros((1, nf)), params)
    reference = {k: v for k, v in vars(ref).items() if k not in est.get_params(deep=False)}
    budget = params.get("budget")
    slots = cls._slot_arrays
    capacity = arrays["_sv"].shape[0] if "_sv" in arrays else None
    # arrays: the reference's, of its type and shape (an unbounded expansion: any number of slots)
    for name, want in reference.items():
        if not isinstance(want, np.ndarray) or name in ("classes_",):
            continue
        got = arrays.get(name)
        if got is None:
            raise CheckpointError(f"the state lacks the array {name!r}")
        shape = want.shape
        if name in _ROW_ARRAYS:
            shape = got.shape[:1] + shape[1:]
        elif name in slots and budget is None:
            shape = (capacity,) + shape[1:]
        if got.dtype != want.dtype or got.shape != shape:
            raise CheckpointError(f"state {name!r} is {got.dtype}{list(got.shape)}, but this model needs "
                                  f"{want.dtype}{list(shape)}")
    extras = {"feature_names_in_": (nf,), "_feature_keys": (nf,), "_margin_out": None, "offset_": None}
    for name, a in arrays.items():
        if name in reference or name == "classes_":
            pass
        elif name not in extras:
            raise CheckpointError(f"{name!r:.80} is not a state array of {cls.__name__}")
        elif extras[name] is not None and (a.shape != extras[name] or a.dtype.kind not in "UO"):
            raise CheckpointError(f"state {name!r} is {a.dtype}{list(a.shape)}, not {nf} names")
        elif name == "_margin_out" and (a.dtype != np.float64 or a.ndim != 1):
            raise CheckpointError(f"state {name!r} is {a.dtype}{list(a.shape)}, not a row of float64")
        _finite(name, a)
    # values: finite, the ring within the expansion, the scale where renormalisation keeps it
    ring = arrays["_ring"]
    cap = arrays["_sv"].shape[0]
    if not (0 <= ring[0] < cap and 0 <= ring[1] <= cap):
        raise CheckpointError(f"state '_ring' = {ring.tolist()} is out of range: with {cap} slots its position "
                              f"lies in [0, {cap - 1}] and its count in [0, {cap}]")
    if "_coef" in reference:
        from learners.expansion import SCALE_MAX, SCALE_MIN
        from learners import _stream

        scale = arrays["_state"][_stream.SCALE]
        if not SCALE_MIN <= scale <= SCALE_MAX:
            raise CheckpointError(f"state '_state' holds the scale {scale!r}, outside [{SCALE_MIN:g}, {SCALE_MAX:g}]")
        steps = arrays["_state"][_stream.STEPS]
    else:
        from learners import svmd_steps

        steps = arrays["_state"][svmd_steps.STEPS]
        if not arrays["_state"][svmd_steps.ETA] > 0.0:
            raise CheckpointError("state '_state' holds a step size <= 0")
    if not (0 <= steps < 2**53 and steps == math.floor(steps)):
        raise CheckpointError(f"state '_state' holds the step count {steps!r}, not a whole number >= 0")
    if "_calibrator" in arrays and not (arrays["_calibrator"] >= 0).all():
        raise CheckpointError("state '_calibrator' holds negative values")
    # scalars: the reference's, and those the state gives, equal to what it gives
    for name, value in arrays.items():
        setattr(est, name, value)
    est.n_features_in_ = nf
    # what the first rows fix where a parameter says so ("scale", "local"): > 0, else the parameter itself
    for attr, param in _DATA_RULES:
        value = scalars.get(attr)
        if attr == "C_" and (value is None or param not in est.get_params(deep=False)):
            if value is not None:
                raise CheckpointError(f"unknown state value {attr!r} for {cls.__name__}")
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
            raise CheckpointError(f"state value {attr} = {value!r:.40} is not a number > 0")
        given = params.get(param)
        if isinstance(given, (int, float)) and not isinstance(given, bool) and value != given:
            raise CheckpointError(f"state value {attr} = {value!r} differs from the {param} parameter {given!r}")
        setattr(est, attr, float(value))
    for name in ("_binary", "_loss_code"):  # derived from the classes and the loss: the reference's
        if name in reference:
            if scalars.get(name) != reference[name]:
                raise CheckpointError(f"state value {name} = {scalars.get(name)!r:.40} does not fit the loss and "
                                      f"classes (expected {reference[name]!r})")
            setattr(est, name, reference[name])
    for name in ("_kappa", "_delta"):  # SVMD's label kernel and distances: from the classes and the loss
        if name in reference and not np.array_equal(arrays[name], reference[name]):
            raise CheckpointError(f"state {name!r} does not fit the loss and classes")
    est._publish_state(params)
    published = {k: v for k, v in vars(est).items() if k not in est.get_params(deep=False)}
    for name, value in scalars.items():
        if name in ("n_features_in_", "width_", "C_", "_binary", "_loss_code") or (name == "_feature_keys" and
                                                                                    value is None):
            continue
        if name not in published:
            raise CheckpointError(f"unknown state value {name!r:.80} for {cls.__name__}")
        if not (value == published[name] or (isinstance(value, float) and math.isnan(value) and
                                             math.isnan(published[name]))):
            raise CheckpointError(f"state value {name} = {value!r:.40} differs from what the model's state gives "
                                  f"({published[name]!r:.40})")
    if "offset_" in arrays and not np.array_equal(arrays["offset_"], np.asarray(published.get("offset_"))):
        raise CheckpointError("state 'offset_' differs from what the model's state gives")
    missing = {k for k, v in published.items() if not isinstance(v, np.ndarray) and k not in scalars}
    if missing:
        raise CheckpointError(f"the state lacks the values {', '.join(sorted(missing))}")
    if "_feature_keys" in scalars and "_feature_keys" not in arrays:
        est._feature_keys = None
