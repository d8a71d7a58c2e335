"""The published state of the art as peers: SuBSENSE, LOBSTER, PBAS and ViBe from BGSLibrary.

The kernel subtractors are measured against SuBSENSE (St-Charles et al. 2015), PBAS
(Hofmann et al. 2012), LOBSTER (St-Charles & Bilodeau 2014) and ViBe (Barnich & Van Droogenbroeck
2011), for quality and for speed. Their reference C++ implementations ship in BGSLibrary
(Sobral 2013, MIT licence), whose official Python wrapper is ``pybgs`` on PyPI. It is optional: it
builds from source against OpenCV's C++ library (``apt install libopencv-dev cmake`` on Debian, then
``pip install pybgs``, a few minutes). Where it imports, this module registers ``subsense``,
``lobster``, ``pbas`` and ``vibe``, so ``bgsub eval``, ``bgsub bench``, ``bgsub run``, the tuning
script and the desktop app compare them with ours on the same frames, scored the same way::

    bgsub eval ../shared/data/bgs/ucsd --algo olkn --algo subsense --algo vibe
    bgsub bench --algo olkn --algo knn --algo vibe --algo subsense

Each runs with its authors' published defaults (BGSLibrary's; there are no parameters to set) and
its own post-processing, and C's ``rand()`` seeded at each new model (``srand(0)``), so the same
frames give the same masks in any process. The wrapper gives them the interface of OpenCV's subtractors, like
``knn`` and ``mog2``: ``apply(image, fgmask=None, learningRate=-1) -> mask`` (0/255),
``getBackgroundImage()``, ``getScoreMap()`` (the mask as -1/1: one operating point for ROC
curves), ``clear()``. What BGSLibrary cannot do is refused with a message instead of reaching its
C++: a learning rate other than ``-1`` (they follow their own schedules), frames smaller than 5×5
(their LBSP patterns), a frame of another size or channel count than the model's (``clear()``
first), anything but uint8 images.

BGSLibrary reads and writes ``./config/<name>.xml`` when an algorithm is made, and prints its
objects' construction and destruction and some first-frame notes to the process's standard
output and error from C++; the wrapper makes each one inside a private temporary folder and makes,
starts and drops it with both file descriptors silenced (under a lock: it is process-wide for those
calls), so nothing reaches the caller's folder, terminal or piped output.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import tempfile
import threading
from typing import Any, Callable

import numpy as np

from bgsub.registry import AlgorithmInfo, register

__all__ = ["PEERS", "available", "BGSLibrarySubtractor"]

#: Our name -> (BGSLibrary's class name, one-line description).
PEERS: dict[str, tuple[str, str]] = {
    "subsense": ("SuBSENSE", "SuBSENSE (St-Charles et al. 2015), BGSLibrary's implementation (peer for comparison)"),
    "lobster": ("LOBSTER", "LOBSTER (St-Charles & Bilodeau 2014), BGSLibrary's implementation (peer for comparison)"),
    "pbas": ("PixelBasedAdaptiveSegmenter",
             "PBAS (Hofmann et al. 2012), BGSLibrary's implementation (peer for comparison)"),
    "vibe": ("ViBe", "ViBe (Barnich & Van Droogenbroeck 2011), BGSLibrary's implementation (peer for comparison)"),
}

#: Smallest frame side the LBSP-based peers accept (their 5×5 descriptor pattern).
MIN_SIDE = 5

_lock = threading.RLock()

try:  # optional: a C++ build against OpenCV's headers
    import pybgs as _pybgs
except ImportError:  # pragma: no cover - depends on the machine
    _pybgs = None


def available() -> bool:
    """True when BGSLibrary's Python wrapper (``pybgs``) imports on this machine."""
    return _pybgs is not None


@contextlib.contextmanager
def _quiet():
    """File descriptors 1 and 2 sent to /dev/null for the duration (BGSLibrary prints each object's
    construction and destruction, and first-frame notes, from C++). Process-wide, so held under a
    lock and kept to single calls into the library."""
    with _lock:
        saved = [os.dup(1), os.dup(2)]
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            for fd in (1, 2):
                os.dup2(null, fd)
            yield
        finally:
            for fd, old in zip((1, 2), saved):
                os.dup2(old, fd)
                os.close(old)
            os.close(null)


def _libc():
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:  # pragma: no cover - no C library found by name
        return None


_LIBC = _libc()


def _seed_c_rand(seed: int = 0) -> None:
    """``srand(seed)`` of the C library: ViBe, LOBSTER and SuBSENSE draw from C's one global
    ``rand()``, so without it a model's masks depend on whatever ran before it in the process (ViBe's F on
    UCSD birds was 0.346 after other sequences in the same process and 0.335 alone). Nothing where
    no C library was found."""
    if _LIBC is not None and hasattr(_LIBC, "srand"):
        _LIBC.srand(ctypes.c_uint(seed))


def _make(cls: str):
    """A new BGSLibrary ``cls``, made inside a fresh temporary folder (it writes
    ``./config/<cls>.xml`` there, and reads back its defaults); call it inside :func:`_quiet`."""
    with tempfile.TemporaryDirectory(prefix="bgslibrary-") as folder:
        os.mkdir(os.path.join(folder, "config"))
        here = os.getcwd()
        os.chdir(folder)
        try:
            return getattr(_pybgs, cls)()
        finally:
            os.chdir(here)


class BGSLibrarySubtractor:
    """One BGSLibrary algorithm behind OpenCV's background-subtractor interface.

    Parameters
    ----------
    name : str
        Our name of the peer (a key of :data:`PEERS`).

    Attributes
    ----------
    score_range : (float, float)
        ``(-1, 1)``: the range of :meth:`getScoreMap`.
    """

    def __init__(self, name: str) -> None:
        if name not in PEERS:
            raise ValueError(f"unknown BGSLibrary peer {name!r}; choose one of {', '.join(PEERS)}")
        if _pybgs is None:
            raise ValueError(f"{name} needs BGSLibrary's Python wrapper, which is not installed: "
                             "apt install libopencv-dev cmake (Debian/Ubuntu), then pip install pybgs")
        self.name = name
        self._impl = None
        self._shape: tuple[int, ...] | None = None
        self._mask: np.ndarray | None = None
        #: (low, high) of getScoreMap values, for ROC histograms.
        self.score_range = (-1.0, 1.0)

    def _drop(self) -> None:
        impl, self._impl = self._impl, None
        if impl is not None and _pybgs is not None:
            with _quiet():
                del impl

    def __del__(self) -> None:
        try:
            self._drop()
        except Exception:  # interpreter shutdown: os or the lock may be gone
            pass

    def apply(self, image: np.ndarray, fgmask: np.ndarray | None = None, learningRate: float = -1) -> np.ndarray:
        """The foreground mask of ``image`` (uint8 0/255, written into ``fgmask`` when given).

        ``learningRate`` must be ``-1``: BGSLibrary's algorithms follow their own update schedules.
        """
        if learningRate != -1:
            raise ValueError(f"{self.name} follows its own update schedule (BGSLibrary has no learning rate): "
                             f"learningRate must be -1, got {learningRate!r}")
        image = np.asarray(image)
        if image.dtype != np.uint8 or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (1, 3)):
            raise ValueError(f"{self.name} takes uint8 images of shape (H, W) or (H, W, 3), got {image.dtype} "
                             f"{image.shape}")
        if image.ndim == 3 and image.shape[2] == 1:
            image = image[:, :, 0]
        if min(image.shape[:2]) < MIN_SIDE:
            raise ValueError(f"{self.name} needs frames of at least {MIN_SIDE}×{MIN_SIDE} pixels, got "
                             f"{image.shape[1]}×{image.shape[0]}")
        if self._shape is not None and image.shape != self._shape:
            raise ValueError(f"{self.name}'s model is for frames of shape {self._shape}, got {image.shape}; "
                             "call clear() to start a model for the new size")
        if fgmask is not None and not (isinstance(fgmask, np.ndarray) and fgmask.dtype == np.uint8
                                       and fgmask.shape == image.shape[:2]):
            raise ValueError(f"fgmask must be None or a uint8 array of shape {image.shape[:2]}, got "
                             f"{getattr(fgmask, 'dtype', type(fgmask).__name__)} {getattr(fgmask, 'shape', '')}")
        if self._impl is None:
            with _quiet():  # made, and initialised by the first frame, printing as they go
                self._impl = _make(PEERS[self.name][0])
                self._shape = image.shape
                _seed_c_rand(0)  # the same masks for the same frames, whatever ran before (PBAS seeds its own)
                raw = self._impl.apply(np.ascontiguousarray(image))
        else:
            raw = self._impl.apply(np.ascontiguousarray(image))
        mask = np.where(np.asarray(raw) > 127, np.uint8(255), np.uint8(0))
        self._mask = mask
        if fgmask is None:
            return mask.copy()
        np.copyto(fgmask, mask)
        return fgmask

    def getBackgroundImage(self) -> np.ndarray | None:
        """The peer's background model image (None before the first frame)."""
        if self._impl is None:
            return None
        background = self._impl.getBackgroundModel()
        return None if background is None or background.size == 0 else np.asarray(background)

    def getScoreMap(self) -> np.ndarray | None:
        """The last mask as float32 -1 (background) / 1 (foreground); None before the first frame."""
        if self._mask is None:
            return None
        return self._mask.astype(np.float32) / np.float32(127.5) - np.float32(1.0)

    def clear(self) -> None:
        """Forget the model: the next frame starts a fresh one (of any size)."""
        self._drop()
        self._shape = None
        self._mask = None

    def empty(self) -> bool:
        """OpenCV's ``Algorithm.empty``: False (the object is usable)."""
        return False

    def getDefaultName(self) -> str:
        """``"BackgroundSubtractor_<BGSLibrary class>"``, as OpenCV names its subtractors."""
        return f"BackgroundSubtractor_{PEERS[self.name][0]}"

    def save(self, path) -> None:
        """BGSLibrary keeps its model in C++: it cannot be saved (raises CheckpointError)."""
        from learners._persist import CheckpointError
        raise CheckpointError(f"{self.name} keeps its model inside BGSLibrary and cannot be saved; "
                              "use olkn or norma to save and resume a model")


def _factory(name: str) -> Callable[..., Any]:
    def create() -> BGSLibrarySubtractor:
        return BGSLibrarySubtractor(name)

    create.__doc__ = f"{PEERS[name][1]}, with its published defaults."
    return create


if _pybgs is not None:
    for _rank, (_name, (_cls, _doc)) in enumerate(PEERS.items(), start=10):  # after ours and OpenCV's
        register(AlgorithmInfo(name=_name, factory=_factory(_name), params=(), doc=_doc, rank=_rank))
