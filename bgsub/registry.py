"""Every background subtractor by name, with its parameters described.

``create(algo, **params)`` builds a subtractor by name; ``param_specs(algo)``
describes its parameters (default, unit, range, whether changing it needs a model
reset) for command-line ``--set key=value`` parsing, TOML configs and the GUI.
Each subtractor module registers itself with :func:`register`.

The OpenCV peers (``knn``, ``mog2``) live here too, wrapped so that they share the
interface of the kernel subtractors: ``apply(image, fgmask=None, learningRate=-1) -> mask``,
``getBackgroundImage()``, ``getScoreMap()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import cv2
import numpy as np

__all__ = [
    "ParamSpec",
    "AlgorithmInfo",
    "register",
    "algorithms",
    "algorithm_info",
    "param_specs",
    "default_params",
    "create",
    "parse_assignments",
    "validate_params",
]


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of a subtractor.

    Attributes
    ----------
    name : str
        Keyword argument name of the factory.
    type : type
        ``int``, ``float``, ``bool`` or ``str``.
    default : Any
        Value used when the parameter is not given.
    doc : str
        One sentence: what it does.
    unit : str
        Unit of the value (``"pixel value 0-255"``, ``"frames"``, ``""``).
    low, high : float or None
        Inclusive accepted range for numbers (None: unbounded).
    choices : tuple of str
        Accepted values for ``str`` parameters.
    live : bool
        True when a change can be applied to a running model; False when the
        model must be reset (e.g. buffer size).
    """

    name: str
    type: type
    default: Any
    doc: str
    unit: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    live: bool = True

    def parse(self, text: str) -> Any:
        """Parse a ``--set`` string into this parameter's type, then check it."""
        if self.type is bool:
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                value: Any = True
            elif low in ("0", "false", "no", "off"):
                value = False
            else:
                raise ValueError(f"{self.name} must be true or false, got {text!r}")
        elif self.type is int:
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"{self.name} must be an integer, got {text!r}") from None
        elif self.type is float:
            try:
                value = float(text)
            except ValueError:
                raise ValueError(f"{self.name} must be a number, got {text!r}") from None
        else:
            value = text
        return self.check(value)

    def check(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type, or raise ValueError."""
        if self.type is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{self.name} must be true or false, got {value!r}")
            return bool(value)
        if self.type in (int, float):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValueError(f"{self.name} must be a number, got {value!r}")
            # finite and in range before any conversion (int(inf) overflows; a huge int is no float)
            if isinstance(value, (float, np.floating)) and not math.isfinite(value):
                raise ValueError(f"{self.name} must be finite, got {value!r}{self._range()}")
            if self.type is int and isinstance(value, (float, np.floating)) and not float(value).is_integer():
                raise ValueError(f"{self.name} must be an integer, got {value!r}")
            if self.low is not None and value < self.low:
                raise ValueError(f"{self.name} must be >= {self.low:g}, got {value!r}{self._range()}")
            if self.high is not None and value > self.high:
                raise ValueError(f"{self.name} must be <= {self.high:g}, got {value!r}{self._range()}")
            try:
                value = self.type(value)
            except OverflowError:
                value = math.inf
            if not math.isfinite(value):
                raise ValueError(f"{self.name} must be finite, got {value!r}{self._range()}")
            return value
        value = str(value)
        if self.choices and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {', '.join(self.choices)}; got {value!r}")
        return value

    def _range(self) -> str:
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        unit = f" {self.unit}" if self.unit else ""
        return f" (accepted range [{lo}, {hi}]{unit})"


@dataclass(frozen=True)
class AlgorithmInfo:
    name: str
    factory: Callable[..., Any]
    params: tuple[ParamSpec, ...]
    doc: str = ""
    presets: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Place in :func:`algorithms` after olkn, norma, knn and mog2 (ties by name).
    rank: int = 9


_REGISTRY: dict[str, AlgorithmInfo] = {}


def register(info: AlgorithmInfo) -> None:
    """Make an algorithm available to :func:`create` under ``info.name``."""
    _REGISTRY[info.name] = info


def _ensure_loaded() -> None:
    # The kernel subtractors register themselves on import.
    import bgsub  # noqa: F401


def algorithms() -> tuple[str, ...]:
    """Names accepted by :func:`create`: the kernel subtractors, OpenCV's peers, then BGSLibrary's."""
    _ensure_loaded()
    order = {"olkn": 0, "norma": 1, "knn": 2, "mog2": 3}
    return tuple(sorted(_REGISTRY, key=lambda n: (order.get(n, _REGISTRY[n].rank), n)))


def _info(algo: str) -> AlgorithmInfo:
    _ensure_loaded()
    try:
        return _REGISTRY[algo]
    except KeyError:
        raise ValueError(
            f"unknown algorithm {algo!r}; choose one of {', '.join(algorithms())}"
        ) from None


def algorithm_info(algo: str) -> AlgorithmInfo:
    """Everything registered for ``algo``: factory, parameters, one-line doc, presets."""
    return _info(algo)


def param_specs(algo: str) -> tuple[ParamSpec, ...]:
    """The parameters of ``algo``, in display order."""
    return _info(algo).params


def default_params(algo: str, preset: str | None = None) -> dict[str, Any]:
    """Default values of ``algo``'s parameters (optionally a named preset's)."""
    info = _info(algo)
    values = {p.name: p.default for p in info.params}
    if preset is not None:
        if preset not in info.presets:
            names = ", ".join(info.presets) or "none"
            raise ValueError(f"unknown preset {preset!r} for {algo}; presets: {names}")
        values.update(info.presets[preset])
    return values


def validate_params(algo: str, params: dict[str, Any]) -> dict[str, Any]:
    """Check names and values of ``params`` for ``algo``; return them converted."""
    specs = {p.name: p for p in param_specs(algo)}
    out = {}
    for key, value in params.items():
        if key not in specs:
            raise ValueError(
                f"{algo} has no parameter {key!r}; its parameters are {', '.join(specs)}"
            )
        out[key] = specs[key].check(value)
    return out


def parse_assignments(algo: str, assignments: list[str] | None) -> dict[str, Any]:
    """Parse ``["key=value", ...]`` (``--set`` options) into checked parameters."""
    specs = {p.name: p for p in param_specs(algo)}
    out: dict[str, Any] = {}
    for item in assignments or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set takes key=value, got {item!r}")
        if key not in specs:
            raise ValueError(
                f"{algo} has no parameter {key!r}; its parameters are {', '.join(specs)}"
            )
        out[key] = specs[key].parse(text.strip())
    return out


def create(algo: str, device: str = "cpu", **params: Any):
    """Build the subtractor ``algo`` with ``params`` (others take their defaults); ``device="cuda"`` runs olkn's
    and norma's learners on an NVIDIA GPU (:mod:`bgsub.models._cuda_engine`)."""
    info = _info(algo)
    checked = validate_params(algo, params)
    if device == "cpu":
        return info.factory(**checked)
    from bgsub.models._cuda_engine import check_device, to_device

    check_device(device)
    return to_device(info.factory(**checked), device)


# --------------------------------------------------------------------------
# OpenCV peers
# --------------------------------------------------------------------------


class _OpenCVSubtractor:
    """An OpenCV background subtractor behind the project's interface.

    ``apply`` returns a 0/255 mask (OpenCV's shadow label 127 counts as
    background, as CDnet scores hard shadows as static). ``getScoreMap`` returns
    OpenCV's raw output scaled to [-1, 1] (255 -> 1, shadow -> 0, background -> -1),
    so an ROC curve over it has three operating points.
    """

    def __init__(self, impl, factory: Callable[[], Any] | None = None) -> None:
        self._impl = impl
        self._factory = factory
        self._raw: np.ndarray | None = None
        self._shape: tuple[int, ...] | None = None
        #: (low, high) of getScoreMap values, for ROC histograms.
        self.score_range = (-1.0, 1.0)

    def apply(self, image: np.ndarray, fgmask: np.ndarray | None = None, learningRate: float = -1) -> np.ndarray:
        """OpenCV's ``apply(image[, fgmask[, learningRate]])``, shadows mapped to 0 (written into ``fgmask``).

        Frames are read as the kernel subtractors read them (:func:`bgsub.models.opencv_api.frame_as_8bit`: uint8,
        uint16 as ``v >> 8``, float on the 0-255 scale, BGRA without alpha), so KNN, which reads the bytes of
        a 16-bit or float frame as 8-bit values, gets the frame's values. A frame of another size or channel
        count restarts OpenCV's model (OpenCV does) with one :class:`bgsub.NewModelWarning`; ``learningRate``
        goes to OpenCV as it is (negative: automatic, 1 or more: a new model).
        """
        from bgsub.models.opencv_api import NewModelWarning, _warn_if_unit_scale, frame_as_8bit

        img = frame_as_8bit(image)
        shape = img.shape if img.ndim == 3 and img.shape[2] != 1 else img.shape[:2]
        if self._shape is None and image.dtype.kind == "f":
            _warn_if_unit_scale(image)
        elif self._shape is not None and shape != self._shape:
            import warnings

            warnings.warn(f"frame of shape {shape} after {self._shape}: a new model starts from this frame, as "
                          "OpenCV's subtractors do (use one subtractor per stream to keep each model)",
                          NewModelWarning, stacklevel=2)
        self._shape = shape
        raw = self._impl.apply(img, learningRate=learningRate)
        self._raw = raw
        mask = np.where(raw == 255, np.uint8(255), np.uint8(0))
        if fgmask is None:
            return mask
        if not isinstance(fgmask, np.ndarray):
            raise TypeError(f"fgmask must be None or a numpy array, got {type(fgmask).__name__}")
        if fgmask.dtype != np.uint8 or fgmask.shape != raw.shape or not fgmask.flags.writeable:
            return mask  # as OpenCV's output arrays: one that does not fit is left alone, a new mask returned
        np.copyto(fgmask, mask)
        return fgmask

    def clear(self) -> None:
        """Forget the model: a fresh OpenCV object with the same parameters (OpenCV's own
        ``clear()`` keeps KNN's and MOG2's models)."""
        self._impl = self._factory() if self._factory is not None else self._impl
        self._impl.clear()
        self._raw = None
        self._shape = None

    def empty(self) -> bool:
        """OpenCV's ``Algorithm.empty``."""
        return bool(self._impl.empty())

    def getDefaultName(self) -> str:
        """The wrapped object's name, e.g. ``"BackgroundSubtractor_MOG2"``."""
        return self._impl.getDefaultName()

    def getBackgroundImage(self) -> np.ndarray | None:
        return self._impl.getBackgroundImage()

    def getScoreMap(self) -> np.ndarray | None:
        if self._raw is None:
            return None
        return self._raw.astype(np.float32) / np.float32(127.5) - np.float32(1.0)

    @property
    def impl(self):
        """The wrapped OpenCV object."""
        return self._impl

    def save(self, path) -> None:
        """OpenCV keeps this model inside OpenCV: it cannot be saved (raises CheckpointError)."""
        from learners._persist import CheckpointError
        raise CheckpointError("OpenCV's knn and mog2 keep their model inside OpenCV and cannot be saved; "
                              "use olkn or norma to save and resume a model")


def createKNN(history: int = 500, dist2Threshold: float = 400.0, detectShadows: bool = True):
    """OpenCV's KNN subtractor (Zivkovic & van der Heijden 2006), OpenCV defaults."""
    def make():
        return cv2.createBackgroundSubtractorKNN(
            history=history, dist2Threshold=dist2Threshold, detectShadows=detectShadows
        )

    return _OpenCVSubtractor(make(), make)


def createMOG2(history: int = 500, varThreshold: float = 16.0, detectShadows: bool = True):
    """OpenCV's MOG2 subtractor (Zivkovic 2004), OpenCV defaults."""
    def make():
        return cv2.createBackgroundSubtractorMOG2(
            history=history, varThreshold=varThreshold, detectShadows=detectShadows
        )

    return _OpenCVSubtractor(make(), make)


def _register_opencv(name: str, factory, title: str, threshold: ParamSpec) -> None:
    history = ParamSpec("history", int, 500, "frames the model remembers", "frames", 1, 100000, live=False)
    shadows = ParamSpec("detectShadows", bool, True, "label shadows (scored as background)", live=False)
    register(AlgorithmInfo(name=name, factory=factory, doc=f"OpenCV {title} (peer for comparison)",
                           params=(history, threshold, shadows)))


_register_opencv("knn", createKNN, "KNN", ParamSpec(
    "dist2Threshold", float, 400.0, "squared distance threshold to a sample", "(pixel value)^2", 0.0, 195075.0,
    live=False))
_register_opencv("mog2", createMOG2, "MOG2", ParamSpec(
    "varThreshold", float, 16.0, "squared Mahalanobis distance threshold", "", 0.0, 10000.0, live=False))
