"""Save a kernel subtractor's model to a file and continue from it later.

``sub.save(path)`` writes, atomically and durably, one ``.npz`` in the format of
:mod:`learners._persist` (format version, algorithm name, parameters as JSON,
frame size and channels, frame counter, random state, every state array, and a
SHA-256 checksum); ``bgsub.load(path)`` builds the subtractor again with
``np.load(allow_pickle=False)``. A subtractor restored after frame ``n``
(``sub.n_frames_ == n``) gives, on frames ``n + 1, ...``, the masks the original
would have given: the update policy's random selection is counter-based (seed and
frame counter), so the "random state" is the seed, the counter and any numpy
generator the subtractor keeps in ``_rng``.

What is saved is declared by the classes: ``_STATE_ARRAYS`` names the per-pixel
state arrays (allocated by ``_allocate``) and ``_STATE_SCALARS`` the scalar
state; a subclass with more state lists it there. A class whose state layout
changed sets ``_STATE_LAYOUT`` (an int, 1 when absent); a checkpoint saved with
another layout is refused with a clear message, unless the class converts it with
``_upgrade_checkpoint(layout, params, arrays) -> (params, arrays)`` (None: cannot). A parameter that joined
without changing the state layout is listed in the class's ``_ADDED_PARAMS`` with the value that behaves as
the versions before it, which a checkpoint that lacks it continues with; a scalar that joined the state so is
listed in ``_ADDED_SCALARS`` and continues from its initial value, an array so in ``_ADDED_ARRAYS`` (its
allocated value). OpenCV's subtractors (``knn``,
``mog2``) keep their model inside OpenCV and cannot be saved.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from learners._persist import CheckpointError, read_checkpoint, write_checkpoint

__all__ = ["save", "load", "CheckpointError", "algorithm_name", "Checkpointable"]


def algorithm_name(sub: Any) -> str:
    """The registry name of ``sub``'s algorithm (``"olkn"``, ``"norma"``, ...)."""
    from bgsub.registry import _REGISTRY, _ensure_loaded

    cls = sub if isinstance(sub, type) else type(sub)
    name = getattr(cls, "_ALGORITHM", None)
    if name:
        return name
    _ensure_loaded()
    specs = getattr(cls, "_SPECS", None)
    for info in _REGISTRY.values():
        if specs is not None and info.params is specs:
            return info.name
    raise CheckpointError(f"cannot save a {cls.__name__}: it is not a registered kernel subtractor "
                          "(OpenCV's knn and mog2 keep their model inside OpenCV and cannot be saved)")


def _state_names(cls) -> tuple[tuple[str, ...], tuple[str, ...]]:
    arrays = getattr(cls, "_STATE_ARRAYS", None)
    scalars = getattr(cls, "_STATE_SCALARS", None)
    if arrays is None or scalars is None:
        raise CheckpointError(f"cannot save a {cls.__name__}: it declares no checkpoint state "
                              "(OpenCV's knn and mog2 keep their model inside OpenCV and cannot be saved)")
    return tuple(arrays), tuple(scalars)


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def save(sub: Any, path: str | os.PathLike) -> Path:
    """Write ``sub``'s parameters and model to ``path`` (``.npz``); returns the path."""
    array_names, scalar_names = _state_names(type(sub))
    algo = algorithm_name(sub)
    arrays = {}
    if getattr(sub, "frame_shape_", None) is not None:
        for name in array_names:
            value = getattr(sub, name, None)
            if value is not None:
                arrays[name] = np.asarray(value)
    rng = getattr(sub, "_rng", None)
    meta = {
        "frame_shape": list(sub.frame_shape_) if sub.frame_shape_ is not None else None,
        "channels": sub.channels_,
        "scalars": {name: _plain(getattr(sub, name)) for name in scalar_names},
        "state_layout": int(getattr(type(sub), "_STATE_LAYOUT", 1)),
        "random_state": {
            "seed": sub.params.get("seed"),
            "n_frames": int(sub.n_frames_),
            "generator": rng.bit_generator.state if isinstance(rng, np.random.Generator) else None,
        },
    }
    return write_checkpoint(path, algo, dict(sub.params), arrays, **meta)


#: The entries of a subtractor checkpoint's meta (besides the format's own: format, version, kind, params).
_META_KEYS = frozenset({"format", "version", "kind", "params", "frame_shape", "channels", "scalars", "state_layout",
                        "random_state"})
#: Largest frame side a checkpoint may declare (pixels).
MAX_SIDE = 1 << 16
#: Largest frame counter a checkpoint may hold: the frame kernels seed their draws with it as a 64-bit integer.
MAX_COUNT = 1 << 62


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _frame_size(path, meta: dict) -> tuple[int, int, int] | None:
    """``(H, W, C)`` the checkpoint declares, checked; None for a model saved before its first frame."""
    shape = meta.get("frame_shape")
    if shape is None:
        return None
    C = meta.get("channels")
    if not (isinstance(shape, list) and len(shape) == 2 and all(map(_is_int, shape)) and _is_int(C)):
        raise CheckpointError(f"{path}: frame size {shape!r:.80} with channels {C!r:.40} is not valid "
                              "(two whole numbers and 1 or 3 channels)")
    H, W = shape
    if not (1 <= H <= MAX_SIDE and 1 <= W <= MAX_SIDE) or C not in (1, 3):
        raise CheckpointError(f"{path}: frame size {W}x{H} with {C} channel(s) is not valid (sides 1 to "
                              f"{MAX_SIDE}, 1 or 3 channels)")
    return H, W, C


def _checked_meta(path, meta: dict) -> tuple[str, dict, int]:
    """``(algorithm, params, state layout)`` of a checkpoint's meta, every entry's type checked."""
    from bgsub.registry import algorithms

    unknown = sorted(set(meta) - _META_KEYS)
    if unknown:
        raise CheckpointError(f"{path}: unknown entries {', '.join(map(repr, unknown))[:200]} in its meta; "
                              "it was not written by this version")
    algo = meta.get("kind")
    if algo not in algorithms():
        raise CheckpointError(f"{path} holds a model of {algo!r:.80}, which this version does not know; "
                              f"known algorithms: {', '.join(algorithms())}")
    params = meta.get("params")
    if not isinstance(params, dict):
        raise CheckpointError(f"{path}: its parameters are {type(params).__name__}, not a table of values")
    for key in ("scalars", "random_state"):
        if not isinstance(meta.get(key, {}), dict):
            raise CheckpointError(f"{path}: its {key} entry is {meta[key]!r:.80}, not a table of values")
    layout = meta.get("state_layout", 1)
    if not _is_int(layout):
        raise CheckpointError(f"{path}: its state layout {layout!r:.80} is not a whole number")
    return algo, params, layout


def _create(path, algo: str, params: dict):
    """The subtractor of ``params``, with the value of every parameter that joined since the file was written,
    without those removed since at their neutral value (another value of one is refused)."""
    from bgsub.registry import create

    try:
        removed = getattr(type(create(algo)), "without_removed_params", None)
        if removed is not None:
            params = removed(params)
        sub = create(algo, **params)
        # parameters that joined after the file was written: the value that behaves as that version did
        added = {k: v for k, v in getattr(type(sub), "_ADDED_PARAMS", {}).items() if k not in params}
        if added:
            params = {**params, **added}
            sub = create(algo, **params)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CheckpointError(f"{path}: its parameters are not valid for {algo}: {exc}"[:600]) from None
    return sub, params


def _upgraded_params(path, sub, algo: str, params: dict, saved_layout: int, arrays: dict) -> tuple[dict, dict]:
    """The parameters and arrays of a checkpoint of another state layout, as this version's layout."""
    layout = getattr(type(sub), "_STATE_LAYOUT", 1)
    if saved_layout == layout:
        return params, arrays
    upgrade = getattr(type(sub), "_upgrade_checkpoint", None)
    upgraded = upgrade(saved_layout, dict(params), dict(arrays)) if upgrade is not None else None
    if upgraded is None:
        raise CheckpointError(f"{path} holds a model of {algo} in state layout {saved_layout}, from another "
                              f"version; this version uses layout {layout} and cannot continue it: "
                              "start a new model")
    return upgraded


def _declared_layout(path, meta: dict, declared: dict) -> None:
    """Refuse, before any array is read, a checkpoint whose declared arrays are not the model's: each must be a
    state array of the algorithm, of the type and shape the model has at the declared frame size; and the
    whole model must fit in memory."""
    from learners._persist import _gib, memory_limit

    algo, params, saved_layout = _checked_meta(path, meta)
    sub, params = _create(path, algo, params)
    params, _ = _upgraded_params(path, sub, algo, params, saved_layout, {})
    sub, params = _create(path, algo, params)
    array_names, _ = _state_names(type(sub))
    size = _frame_size(path, meta)
    if size is None:
        if declared:
            raise CheckpointError(f"{path}: state arrays without a frame size")
        return
    H, W, C = size
    # one pixel's state, and a 3x2 frame's: which axes follow the frame's height and width, and what the
    # model holds per pixel (every array holds H * W times as much)
    probe, _ = _create(path, algo, params)
    probe._allocate(1, 1, C)
    one = {name: getattr(probe, name) for name in array_names if getattr(probe, name, None) is not None}
    probe._allocate(2, 3, C)
    expected = {name: (a.dtype, tuple(H if (x, y) == (1, 2) else W if (x, y) == (1, 3) else x
                                      for x, y in zip(a.shape, getattr(probe, name).shape)))
                for name, a in one.items()}
    model = sum(a.nbytes for a in one.values()) * H * W
    if model > memory_limit():
        raise CheckpointError(f"{path}: a {algo} model of {W}x{H} pixels needs {_gib(model)} of memory, more than "
                              f"this machine can hold ({_gib(memory_limit())})")
    removed = getattr(type(sub), "_REMOVED_ARRAYS", ())  # per-pixel float32 state of features removed since
    for name, (dtype, shape) in declared.items():
        if name in removed:
            if dtype != np.dtype(np.float32) or tuple(shape) != (H, W):
                raise CheckpointError(f"{path}: state {name!r} is declared {dtype.str}{list(shape)}, not float32 "
                                      f"[{H}, {W}]")
            continue  # read, not restored
        if name not in array_names:
            raise CheckpointError(f"{path}: {name!r:.80} is not a state array of {algo}; its arrays are "
                                  f"{', '.join(array_names)}")
        if name == "stabilise_reference_":  # the stabiliser's grey reference
            dtypes, want = (np.dtype(np.uint8),), (H, W)
        elif name not in expected:
            raise CheckpointError(f"{path}: state {name!r} is saved, but {algo} with these parameters has none")
        else:
            dtypes, want = (expected[name][0],), expected[name][1]
        if dtype not in dtypes or shape != want:
            raise CheckpointError(f"{path}: state {name!r} is {dtype.name}{list(shape)}, but {algo} with these "
                                  f"parameters at {W}x{H}x{C} needs {' or '.join(d.name for d in dtypes)}{list(want)}")


def _restore_scalars(path, sub, algo: str, scalars: dict, scalar_names: tuple[str, ...], upgraded: bool) -> None:
    removed = getattr(type(sub), "_REMOVED_SCALARS", {})  # state of features removed since: only their value when off
    for name, off in removed.items():
        if name in scalars and scalars[name] != off:
            raise CheckpointError(f"{path}: state value {name} = {scalars[name]!r:.40} belongs to a feature that was "
                                  f"removed (only {off!r}, off, is read): start a new model")
    scalars = {k: v for k, v in scalars.items() if k not in removed}
    unknown = sorted(set(scalars) - set(scalar_names))
    if unknown:
        raise CheckpointError(f"{path}: unknown state values {', '.join(map(repr, unknown))[:200]} for {algo}; its "
                              f"state values are {', '.join(scalar_names)}")
    for name in scalar_names:
        if name not in scalars:
            if upgraded or name in getattr(type(sub), "_ADDED_SCALARS", ()):
                continue  # a value that joined the state after that file was written: its initial value
            raise CheckpointError(f"{path} lacks the state value {name!r} of {algo}")
        value, current = scalars[name], getattr(sub, name, None)
        if _is_int(current):
            if not _is_int(value) or not 0 <= value < MAX_COUNT:
                raise CheckpointError(f"{path}: state value {name} = {value!r:.40} is not a whole number in "
                                      f"[0, 2^62)")
        elif isinstance(current, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise CheckpointError(f"{path}: state value {name} = {value!r:.40} is not a finite number")
            value = float(value)
        else:  # pragma: no cover - every declared scalar is an int or a float
            raise CheckpointError(f"{path}: state value {name} cannot be restored")
        setattr(sub, name, value)


def load(path: str | os.PathLike, algorithm: str | None = None):
    """The subtractor saved in ``path`` by ``sub.save(path)``, ready for the next frame.

    The file is untrusted input: its declared arrays are checked against the
    model's layout (types, sizes, the frame size) before any is read, and the
    restored state -- every index, count and float -- before it is returned, so an
    edited file is refused with a message instead of crashing or misleading the
    frame kernels.

    Parameters
    ----------
    path : str or Path
        The ``.npz`` checkpoint.
    algorithm : str, optional
        Refuse a checkpoint of any other algorithm.

    Raises
    ------
    CheckpointError (a ValueError)
        Missing, damaged or edited file, another format version, another
        algorithm than asked for, unknown entries or state values, state arrays
        whose shape or type do not fit the saved parameters and frame size, or
        state out of range (a ring position past the budget, a non-finite
        coefficient, ...).
    """
    meta, arrays = read_checkpoint(path, kind=algorithm, check=lambda m, d: _declared_layout(path, m, d))
    algo, params, saved_layout = _checked_meta(path, meta)
    sub, params = _create(path, algo, params)
    upgraded = saved_layout != getattr(type(sub), "_STATE_LAYOUT", 1)
    params, arrays = _upgraded_params(path, sub, algo, params, saved_layout, arrays)
    sub, params = _create(path, algo, params)
    array_names, scalar_names = _state_names(type(sub))
    size = _frame_size(path, meta)
    if size is not None:
        H, W, C = size
        try:
            sub._allocate(H, W, C)
        except MemoryError:
            raise CheckpointError(f"{path}: not enough memory for a {algo} model of {W}x{H} pixels") from None
        for name in array_names:
            fresh = getattr(sub, name, None)
            if name not in arrays:
                if fresh is not None and name not in getattr(type(sub), "_ADDED_ARRAYS", ()):
                    raise CheckpointError(f"{path} lacks the state array {name!r} of {algo}")
                continue
            saved = arrays[name]
            if fresh is not None and (saved.shape != fresh.shape or saved.dtype != fresh.dtype):
                raise CheckpointError(
                    f"{path}: state {name!r} is {saved.dtype}{list(saved.shape)}, but {algo} with these "
                    f"parameters at {W}x{H}x{C} needs {fresh.dtype}{list(fresh.shape)}")
            if fresh is None and saved.shape != (H, W):  # the stabiliser's reference, at the model's size
                raise CheckpointError(f"{path}: state {name!r} is {saved.dtype}{list(saved.shape)}, but the frames "
                                      f"are {W}x{H}")
            # read into a buffer of its own (learners._persist): the model keeps it without a copy
            setattr(sub, name, np.ascontiguousarray(saved))
    elif arrays:
        raise CheckpointError(f"{path}: state arrays without a frame size")
    _restore_scalars(path, sub, algo, meta.get("scalars", {}), scalar_names, upgraded)
    gen = meta.get("random_state", {}).get("generator")
    if gen is not None and isinstance(getattr(sub, "_rng", None), np.random.Generator):
        try:
            sub._rng.bit_generator.state = gen
        except (TypeError, ValueError, KeyError, OverflowError):
            raise CheckpointError(f"{path}: its random generator state is not valid") from None
    try:
        sub._check_restored_state()
    except ValueError as exc:
        raise CheckpointError(f"{path}: {exc}"[:600]) from None
    return sub


class Checkpointable:
    """``sub.save(path)`` and ``Cls.load(path)`` for a subtractor that declares its state.

    The class lists its per-pixel arrays in ``_STATE_ARRAYS`` and its scalar state in
    ``_STATE_SCALARS``, and has ``params``, ``frame_shape_``, ``channels_``,
    ``n_frames_`` and ``_allocate(H, W, C)``.
    """

    def save(self, path):
        """Write the parameters and model to ``path`` (``.npz``, atomic); see :mod:`bgsub.checkpoint`."""
        return save(self, path)

    @classmethod
    def load(cls, path):
        """The subtractor saved in ``path``; refuses a checkpoint of another algorithm."""
        return load(path, algorithm=algorithm_name(cls))
