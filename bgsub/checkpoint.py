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
listed in ``_ADDED_SCALARS`` and continues from its initial value. OpenCV's subtractors (``knn``,
``mog2``) keep their model inside OpenCV and cannot be saved.
"""

from __future__ import annotations

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


def load(path: str | os.PathLike, algorithm: str | None = None):
    """The subtractor saved in ``path`` by ``sub.save(path)``, ready for the next frame.

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
        algorithm than asked for, or state arrays whose shape or type do not fit
        the saved parameters and frame size.
    """
    from bgsub.registry import algorithms, create

    meta, arrays = read_checkpoint(path, kind=algorithm)
    algo = meta.get("kind")
    if algo not in algorithms():
        raise CheckpointError(f"{path} holds a model of {algo!r}, which this version does not know; "
                              f"known algorithms: {', '.join(algorithms())}")
    params = dict(meta["params"])
    try:
        sub = create(algo, **params)
        # parameters that joined after the file was written: the value that behaves as that version did
        added = {k: v for k, v in getattr(type(sub), "_ADDED_PARAMS", {}).items() if k not in params}
        if added:
            params.update(added)
            sub = create(algo, **params)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: its parameters are not valid for {algo}: {exc}") from None
    array_names, scalar_names = _state_names(type(sub))
    layout, saved_layout = getattr(type(sub), "_STATE_LAYOUT", 1), meta.get("state_layout", 1)
    if saved_layout != layout:
        upgrade = getattr(type(sub), "_upgrade_checkpoint", None)
        upgraded = upgrade(saved_layout, dict(params), dict(arrays)) if upgrade is not None else None
        if upgraded is None:
            raise CheckpointError(f"{path} holds a model of {algo} in state layout {saved_layout}, from another "
                                  f"version; this version uses layout {layout} and cannot continue it: "
                                  "start a new model")
        params, arrays = upgraded
        sub = create(algo, **params)
    shape = meta.get("frame_shape")
    if shape is not None:
        try:
            H, W = (int(v) for v in shape)
            C = int(meta["channels"])
        except (TypeError, ValueError, KeyError):
            raise CheckpointError(f"{path}: frame size {shape!r} or channels is not valid") from None
        if H < 1 or W < 1 or C not in (1, 3):
            raise CheckpointError(f"{path}: frame size {W}x{H} with {C} channel(s) is not valid")
        sub._allocate(H, W, C)
        for name in array_names:
            fresh = getattr(sub, name, None)
            if name not in arrays:
                if fresh is not None:
                    raise CheckpointError(f"{path} lacks the state array {name!r} of {algo}")
                continue
            saved = arrays[name]
            if fresh is not None and (saved.shape != fresh.shape or saved.dtype != fresh.dtype):
                raise CheckpointError(
                    f"{path}: state {name!r} is {saved.dtype}{list(saved.shape)}, but {algo} with these "
                    f"parameters at {W}x{H}x{C} needs {fresh.dtype}{list(fresh.shape)}")
            setattr(sub, name, np.ascontiguousarray(saved).copy())
    elif arrays:
        raise CheckpointError(f"{path}: state arrays without a frame size")
    scalars = meta.get("scalars", {})
    for name in scalar_names:
        if name not in scalars:
            if saved_layout != layout or name in getattr(type(sub), "_ADDED_SCALARS", ()):
                continue  # a value that joined the state after that file was written: its initial value
            raise CheckpointError(f"{path} lacks the state value {name!r} of {algo}")
        current = getattr(sub, name, None)
        setattr(sub, name, scalars[name] if current is None else type(current)(scalars[name]))
    gen = (meta.get("random_state") or {}).get("generator")
    if gen is not None and isinstance(getattr(sub, "_rng", None), np.random.Generator):
        sub._rng.bit_generator.state = gen
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
