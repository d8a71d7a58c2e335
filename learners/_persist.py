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
import os
import zipfile
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


def _checksum(meta_text: str, arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    h.update(meta_text.encode("utf-8"))
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode("utf-8"))
        h.update(a.tobytes())
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


def read_checkpoint(path: str | os.PathLike, kind: str | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """Read and verify a checkpoint; returns ``(meta, arrays)``.

    With ``kind``, a checkpoint of another model is refused.

    Raises
    ------
    CheckpointError
        Missing, unreadable, truncated or edited file (checksum), another format
        version, or another model than ``kind``.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as z:
            files = {name: z[name] for name in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"{path} is not a readable checkpoint (.npz): {exc}") from None
    if "meta" not in files or "checksum" not in files:
        raise CheckpointError(f"{path} is not a checkpoint: it has no meta/checksum entries")
    meta_text = str(files["meta"][()])
    try:
        meta = json.loads(meta_text)
    except json.JSONDecodeError:
        raise CheckpointError(f"{path} is not a checkpoint: its meta entry is not JSON") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a checkpoint of this library (format {meta.get('format')!r})"
                              if isinstance(meta, dict) else f"{path} is not a checkpoint")
    if meta.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"{path} has checkpoint format version {meta.get('version')!r}; this version reads "
                              f"version {FORMAT_VERSION} only: save the model again with this version")
    arrays = {k[len(_ARRAY_PREFIX):]: v for k, v in files.items() if k.startswith(_ARRAY_PREFIX)}
    if str(files["checksum"][()]) != _checksum(meta_text, arrays):
        raise CheckpointError(f"{path} is damaged: its checksum does not match its content")
    if kind is not None and meta.get("kind") != kind:
        raise CheckpointError(f"{path} holds a {meta.get('kind')!r} model, not {kind!r}")
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
        """An estimator of this class restored from ``path`` (written by :meth:`save`)."""
        meta, arrays = read_checkpoint(path, kind=cls.__name__)
        try:
            est = cls(**{k: _dict_from_json(v) for k, v in meta["params"].items()})
        except TypeError as exc:
            raise CheckpointError(f"{path}: parameters do not fit {cls.__name__}: {exc}") from None
        for name, value in arrays.items():
            if name in meta.get("object_arrays", ()):
                value = value.astype(object)
            setattr(est, name, value)
        for name, value in meta.get("scalars", {}).items():
            setattr(est, name, value)
        return est
