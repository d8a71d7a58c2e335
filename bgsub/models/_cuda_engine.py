"""The GPU engine of olkn and norma: the per-pixel state on an NVIDIA GPU (numba-cuda).

``bgsub.create("olkn", device="cuda")`` (or :func:`to_device` of a model) gives a
:class:`CudaOLKNSubtractor` (:class:`CudaNORMASubtractor` for norma): the same
subtractor -- parameters, presets, checkpoints, ``apply``/``getScoreMap``/
``getBackgroundImage``/``reset`` -- whose per-pixel learners run on the GPU. Each
frame goes up, the raw mask comes back; the per-pixel state (``samples_``,
``coef_``, ``ring_``, ``rho_``, ``blink_``) stays on the GPU in planes across
pixels (:mod:`bgsub.models._cuda_kernels`, whose kernels are compiled from the
CPU engine's own step functions).

What stays on the CPU: the stages around the model (reading and scaling frames,
the stabiliser, the illumination gain -- estimated from the ~1,000 grid pixels'
state, downloaded for it --, the clutter count, the component filters, and the
blink feedback's dilation of an output mask the component filters changed, which
then goes up at the next frame) and the first frame's bootstrap (run by the CPU
engine, then uploaded). The median, and the blink margin's dilation of an output
mask the device holds, run on the GPU. A model's kernels and copies run on one
CUDA stream; what comes back every frame lands in page-locked buffers.

The host's state arrays are kept current on demand: reading one of them from
outside ``apply`` (a checkpoint's ``save``, ``getBackgroundImage``, user code)
downloads the state first, and the next frame uploads it again (the reader may
have written into it); assigning one uploads it at the next frame. Checkpoints are
the CPU engine's, array for array: either engine loads the other's.

Without numba-cuda, or without a usable GPU and driver, asking for ``"cuda"``
raises :class:`DeviceError` (a ValueError) with one line saying what is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bgsub.devices import DEVICES
from bgsub.models import _cuda_kernels as ck
from bgsub.models import _illumination, _state
from bgsub.models.base import BLINK_MARGIN
from bgsub.models.norma import NORMASubtractor
from bgsub.models.olkn import OLKNSubtractor
from learners.expansion import needs_renormalise

__all__ = ["DEVICES", "DeviceError", "CudaEngine", "CudaOLKNSubtractor", "CudaNORMASubtractor", "to_device",
           "device_of", "check_device", "cuda_runtime", "INSTALL_HINT"]

#: How to install the GPU engine's dependency (the project's optional extra).
INSTALL_HINT = 'pip install -e ".[cuda]" (or pip install "numba-cuda[cu12]")'


class DeviceError(ValueError):
    """The device asked for cannot run here (numba-cuda missing, no usable GPU or driver, an algorithm or option
    the GPU engine does not run); the message says what is missing and what to do."""


def check_device(device: Any) -> str:
    """``device`` if it is one of :data:`DEVICES`, else a ValueError naming them."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(map(repr, DEVICES))}, got {device!r}")
    return device


def device_of(sub: Any) -> str:
    """Where ``sub``'s learners run: ``"cuda"`` for the GPU engine, else ``"cpu"``."""
    return getattr(sub, "device", "cpu")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()).strip(" :") or type(exc).__name__
    return text[:300]


def cuda_runtime():
    """numba.cuda, ready to run kernels (or its simulator, under ``NUMBA_ENABLE_CUDASIM=1``); a
    :class:`DeviceError` saying what is missing when numba-cuda does not import or finds no usable GPU."""
    try:
        from numba import cuda
    except ImportError as exc:
        raise DeviceError(f"device 'cuda' needs numba-cuda, which is not installed ({_one_line(exc)}): install it "
                          f"with {INSTALL_HINT}, or run on the CPU (device 'cpu')") from None
    except Exception as exc:  # noqa: BLE001 - e.g. a numba-cuda built for another numpy
        raise DeviceError(f"device 'cuda': numba-cuda fails to import ({type(exc).__name__}: {_one_line(exc)}); "
                          f"reinstall it with {INSTALL_HINT} against this numpy, or run on the CPU (device 'cpu')"
                          ) from None
    if getattr(cuda, "implementation", "") != "NVIDIA":  # numba's own deprecated CUDA target, not numba-cuda
        raise DeviceError(f"device 'cuda' needs numba-cuda (numba's built-in CUDA target is not used): install it "
                          f"with {INSTALL_HINT}, or run on the CPU (device 'cpu')")
    if ck._simulated():
        return cuda
    try:
        available = cuda.is_available()
    except Exception:  # noqa: BLE001
        available = False
    if not available:
        try:
            cuda.current_context()
            reason = "no CUDA device"
        except Exception as exc:  # noqa: BLE001 - the driver's own words
            reason = _one_line(exc)
        raise DeviceError(f"device 'cuda' found no usable NVIDIA GPU ({reason}); run on the CPU (device 'cpu'), "
                          "or on a machine with an NVIDIA GPU and its driver") from None
    return cuda


class _DeviceBacked:
    """A per-pixel state array of a GPU model: the host's copy is brought up to date when read from outside
    ``apply``, and marked for upload when read (it may be written into) or assigned."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        d = obj.__dict__
        if d.get("_dev") is not None and not d.get("_internal", False):
            if d.get("_dev_ahead", False):
                obj._download_state()
            d["_host_ahead"] = True
        return d.get(self.name)

    def __set__(self, obj, value):
        d = obj.__dict__
        if d.get("_dev") is not None:
            if d.get("_dev_ahead", False) and not d.get("_internal", False):
                obj._download_state()  # the other arrays' device state first
            d["_host_ahead"] = True
            d["_dev_ahead"] = False
        d[self.name] = value


class _DeviceState:
    """The device arrays of one model (:mod:`bgsub.models._cuda_kernels`'s layout), its transfers and the
    median.

    Every kernel and copy of the model runs on one CUDA stream (:meth:`run`, :meth:`up`, :meth:`down`), in the
    order issued; the host waits for it only where it reads what came back (:meth:`wait`). What comes back every
    frame -- the median's output, the rows' step counts, the illumination grid's state -- lands in page-locked
    (pinned) host buffers kept from frame to frame, which the GPU copies into directly; the median's buffer is
    the mask the component filters read (the subtractor's ``apply`` returns a copy)."""

    def __init__(self, cuda, H: int, W: int, B: int, C: int) -> None:
        e = cuda.device_array
        self.cuda = cuda
        self.stream = cuda.stream()
        self.kernels = ck.kernels(cuda)
        self.shape = (H, W, B, C)
        self.frame = e((H, W, C), np.uint8)
        #: the kernels' ``state`` tuple: samples, coef, ring, rho
        self.state = (e((B, C, H, W), np.uint8), e((B, H, W), np.float32), e((2, H, W), np.int32),
                      e((H, W), np.float64))
        self.blink = e((H, W), np.float32)
        self.prev = e((H, W), np.uint8)  # the previous learning frame's raw mask (host: prev_mask_)
        self.mask = e((H, W), np.uint8)  # this frame's raw mask
        self.raw = None  # the one of the two that holds the last raw mask
        self.post = e((H, W), np.uint8)  # host: post_mask_
        self.ext = e((H, W), np.uint8)  # a mask given from the host (norma's post-processed mask)
        self.own = e((H, W), np.uint8)
        self.score = e((H, W), np.float32)
        self.f = e((H, W), np.float64)
        self.oldest = e((H, W), np.float64)
        self.blocks, self.threads = ck.frame_grid(H, W)
        self.stepped = e(self.blocks, np.int64)  # stepped pixels by row and block
        self.stepped_host = cuda.pinned_array(self.blocks, np.int64)
        self.counts = e((H, W), np.int32)  # the median's column counts
        self.median_out = e((H, W), np.uint8)
        self.median_pinned = cuda.pinned_array((H, W), np.uint8)  # where the median's output comes back
        self.median_host = None  # median_pinned while it holds the last median of the current raw mask
        self._lut_host = None
        self.lut = None
        self._grid = None

    def run(self, kernel, blocks, threads, *args) -> None:
        """Launch ``kernel`` on the model's stream."""
        ck.launch(kernel, blocks, threads, self.stream, *args)

    def up(self, device_array, host: np.ndarray) -> None:
        """Copy ``host`` into ``device_array`` on the model's stream (a pageable ``host`` may be reused as soon
        as this returns: the driver has staged it)."""
        device_array.copy_to_device(host, stream=self.stream)

    def down(self, device_array, host: np.ndarray | None = None, wait: bool = True):
        """Copy ``device_array`` into ``host`` (None: a new array) on the model's stream; ``wait``: return once it
        is there."""
        out = device_array.copy_to_host(host, stream=self.stream)
        if wait:
            self.wait()
        return out

    def wait(self) -> None:
        """Until everything issued on the model's stream has run."""
        self.stream.synchronize()

    def upload(self, h: dict) -> None:
        """The host's state (``h``: the model's ``__dict__``) to the device."""
        samples, coef, ring, rho = self.state
        self.up(samples, np.ascontiguousarray(h["samples_"].transpose(2, 3, 0, 1)))
        self.up(coef, np.ascontiguousarray(h["coef_"].transpose(2, 0, 1)))
        self.up(ring, np.ascontiguousarray(h["ring_"].transpose(2, 0, 1), dtype=np.int32))
        self.up(rho, np.ascontiguousarray(h["rho_"]))
        self.up(self.blink, np.ascontiguousarray(h["blink_"]))
        self.up(self.prev, np.ascontiguousarray(h["prev_mask_"]))
        self.up(self.post, np.ascontiguousarray(h["post_mask_"]))
        self.raw = None

    def download(self, h: dict) -> None:
        """The device's state into the host's arrays (in place: references to them stay valid)."""
        samples, coef, ring, rho = self.state
        s, c, r = self.down(samples, wait=False), self.down(coef, wait=False), self.down(ring, wait=False)
        self.down(rho, h["rho_"], wait=False)
        self.down(self.blink, h["blink_"])
        h["samples_"][...] = s.transpose(2, 3, 0, 1)
        h["coef_"][...] = c.transpose(1, 2, 0)
        h["ring_"][...] = r.transpose(1, 2, 0)

    def download_grid(self, h: dict) -> None:
        """The state and previous raw mask of the illumination estimate's grid pixels
        (:func:`bgsub.models._illumination.grid_ratios`) into the host's arrays, at those pixels only: gathered
        on the GPU, four copies into pinned buffers, one wait."""
        H, W, B, C = self.shape
        if self._grid is None:
            s = _illumination.grid_step(H, W)
            rows, cols = np.meshgrid(np.arange(s // 2, H, s), np.arange(s // 2, W, s), indexing="ij")
            rows, cols = rows.ravel(), cols.ravel()
            G = rows.size
            e, pinned = self.cuda.device_array, self.cuda.pinned_array
            shapes = (((G, B, C), np.uint8), ((G, B), np.float32), ((G, 2), np.int32), (G, np.uint8))
            self._grid = (rows, cols, self.cuda.to_device(rows, stream=self.stream),
                          self.cuda.to_device(cols, stream=self.stream), tuple(e(*a) for a in shapes),
                          tuple(pinned(*a) for a in shapes))
        rows, cols, drows, dcols, dev, host = self._grid
        self.run(self.kernels.gather_grid, -(-rows.size // 128), 128, self.state, self.prev, drows, dcols, dev)
        for d, hbuf in zip(dev, host):
            self.down(d, hbuf, wait=False)
        self.wait()
        gs, gc, gr, gm = host
        h["samples_"][rows, cols] = gs
        h["coef_"][rows, cols] = gc
        h["ring_"][rows, cols] = gr
        h["prev_mask_"][rows, cols] = gm

    def device_lut(self, lut: np.ndarray):
        """The Gaussian table on the device (uploaded again when the model's table changes)."""
        if lut is not self._lut_host:
            self.lut = self.cuda.to_device(lut, stream=self.stream)
            self._lut_host = lut
        return self.lut

    def given(self, mask: np.ndarray, host_own: np.ndarray):
        """The device's copy of a host mask given to a kernel: the pixels' own decisions (``host_own``), the last
        median (unchanged since), or ``mask`` uploaded."""
        if mask is host_own:
            return self.own
        if mask is self.median_host:
            return self.median_out
        self.up(self.ext, np.ascontiguousarray(mask))
        return self.ext

    def wrote_raw(self) -> None:
        """After a kernel wrote the raw mask (into ``mask``)."""
        self.raw = self.mask
        self.median_host = None

    def learned(self) -> None:
        """After a learning frame: its raw mask is the next frame's previous mask (as the host copies it)."""
        self.prev, self.mask = self.mask, self.prev

    def _window(self, src, k: int, at_least: int, out) -> None:
        """``out``: 255 where the ``k x k`` window around a pixel of the 0/255 mask ``src`` holds ``at_least`` set
        pixels (:func:`bgsub.models._cuda_kernels.window_pass`, two passes through ``counts``)."""
        blocks, threads = ck.window_blocks(*self.shape[:2])
        self.run(self.kernels.window_pass, blocks, threads, src, k, True, at_least, self.counts)
        self.run(self.kernels.window_pass, blocks, threads, self.counts, k, False, at_least, out)

    def median(self, k: int) -> np.ndarray:
        """The binary median of the last raw mask with a ``k x k`` window (:func:`bgsub.pipeline.masks.binary_median`,
        the same result), downloaded into the pinned buffer (which the next median overwrites)."""
        self._window(self.raw, k, k * k // 2 + 1, self.median_out)
        self.median_host = self.down(self.median_out, self.median_pinned)
        return self.median_host

    def holding(self, mask: np.ndarray, host_raw: np.ndarray):
        """The device array that holds the host mask ``mask`` as it is, or None: the last median's output while
        ``mask`` is its download, the raw mask while ``mask`` is the host's raw mask ``host_raw`` (downloaded)."""
        if mask is self.median_host:
            return self.median_out
        if mask is host_raw and self.raw is not None:
            return self.raw
        return None

    def dilate_into_post(self, src, k: int) -> None:
        """``post``: the device mask ``src`` dilated by the ``k x k`` square (``cv2.dilate``'s result)."""
        self._window(src, k, 1, self.post)


#: Instance attributes of the GPU engine (not the model's): dropped when a model moves to the CPU.
_ENGINE_KEYS = ("_cuda", "_dev", "_dev_ahead", "_host_ahead", "_internal", "_score_stale", "_raw_stale", "_prev_stale",
                "_post_stale", "_host_phase")


class CudaEngine:
    """The GPU engine's part of a subtractor (mixed in before the CPU class: :class:`CudaOLKNSubtractor`).

    Subclasses name their learning kernel (``_FRAME_KERNEL``) and its rule's argument tuple (``_rule``, from
    :mod:`bgsub.models._state`).

    Attributes
    ----------
    device : str
        ``"cuda"``.
    """

    device = "cuda"
    samples_ = _DeviceBacked()
    coef_ = _DeviceBacked()
    ring_ = _DeviceBacked()
    rho_ = _DeviceBacked()
    blink_ = _DeviceBacked()
    prev_mask_ = _DeviceBacked()
    post_mask_ = _DeviceBacked()
    _FRAME_KERNEL = ""

    def __init__(self, **params: Any) -> None:
        self.__dict__.update(_fresh_engine(cuda_runtime()))
        super().__init__(**params)

    def _rule(self) -> tuple:
        raise NotImplementedError

    # ------------------------------------------------------------------ what the GPU does not run
    def _check(self, values: dict[str, Any]) -> None:
        super()._check(values)
        if values.get("texture", 0.0) > 0.0:
            raise DeviceError("texture features (texture > 0) run on the CPU engine only: use device 'cpu', or "
                              "texture=0 on the GPU")

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        super().reset()
        d = self.__dict__
        d["_dev"] = None
        d["_dev_ahead"] = d["_host_ahead"] = d["_score_stale"] = d["_raw_stale"] = d["_prev_stale"] = False
        d["_post_stale"] = False

    def _allocate(self, H: int, W: int, C: int) -> None:
        super()._allocate(H, W, C)
        d = self.__dict__
        d["_dev"] = None  # allocated (and the host's state uploaded) at the next frame
        d["_dev_ahead"] = d["_score_stale"] = d["_raw_stale"] = d["_prev_stale"] = d["_post_stale"] = False
        d["_host_ahead"] = True
        raw = d["_cuda"].pinned_array((H, W), np.uint8)  # the raw mask comes back into page-locked memory
        raw[...] = 0
        d["_rawmask"] = raw

    def _download_state(self) -> None:
        """The device's per-pixel state, raw masks and score map into the host's arrays."""
        d = self.__dict__
        if d.get("_dev") is not None and d.get("_dev_ahead", False):
            d["_dev"].download(d)
            d["_dev_ahead"] = False
        self._sync_raw()
        if d.get("_prev_stale", False):
            d["_dev"].down(d["_dev"].prev, d["prev_mask_"])
            d["_prev_stale"] = False
        if d.get("_post_stale", False):
            d["_dev"].down(d["_dev"].post, d["post_mask_"])
            d["_post_stale"] = False
        self._sync_score()

    def _sync_raw(self) -> None:
        """The last raw mask into the host's ``_rawmask`` (downloaded only when read: the median runs on the
        device)."""
        d = self.__dict__
        if d.get("_raw_stale", False):
            d["_dev"].down(d["_dev"].raw, d["_rawmask"])
            d["_raw_stale"] = False

    def _sync_score(self) -> None:
        d = self.__dict__
        if d.get("_dev") is not None and d.get("_score_stale", False):
            d["_dev"].down(d["_dev"].score, d["_score"])
            d["_score_stale"] = False

    def _ready(self, img: np.ndarray) -> _DeviceState:
        """The device state for a frame: allocated, the host's state uploaded when it is newer, the frame and
        (blink feedback on) the previous output mask uploaded."""
        d = self.__dict__
        dev = d["_dev"]
        H, W, C = img.shape
        if dev is None or dev.shape != (H, W, self.params["budget"], C):
            dev = d["_dev"] = _DeviceState(d["_cuda"], H, W, self.params["budget"], C)
            d["_host_ahead"] = True
        if d["_host_ahead"]:
            dev.upload(d)
            d["_host_ahead"] = False
        elif self.params.get("blink_gain", 0.0) > 0.0 and not d["_post_stale"]:
            dev.up(dev.post, d["post_mask_"])  # the host dilated the last output mask
        dev.up(dev.frame, img)
        return dev

    def _ran(self) -> None:
        """After a kernel wrote the device's state."""
        d = self.__dict__
        d["_dev_ahead"] = d["_score_stale"] = True

    def _on_host(self) -> bool:
        """Whether the CPU engine runs this step (the first frame's bootstrap, on the host's state)."""
        return self.__dict__.get("_host_phase", False)

    # ------------------------------------------------------------------ frames
    def apply(self, image: np.ndarray, fgmask: np.ndarray | None = None, learningRate: float = -1) -> np.ndarray:
        d = self.__dict__
        d["_internal"] = True  # the base class's own reads of the state arrays: no transfers
        try:
            return super().apply(image, fgmask, learningRate)
        finally:
            d["_internal"] = False

    def _init_from_neighbours(self, img: np.ndarray) -> None:
        # the first frame's bootstrap by the CPU engine (the same draws), then uploaded
        d = self.__dict__
        d["_host_phase"] = True
        try:
            super()._init_from_neighbours(img)
        finally:
            d["_host_phase"] = False
        d["_host_ahead"] = True
        d["_dev_ahead"] = False

    def _estimate_gain(self, img: np.ndarray) -> float | None:
        d = self.__dict__
        if d.get("_dev") is not None and d.get("_dev_ahead", False):
            d["_dev"].download_grid(d)  # the host's arrays hold the device's state at the grid, all it reads
        return super()._estimate_gain(img)

    def _advance_scale(self) -> None:
        d = self.__dict__
        if d.get("_dev_ahead", False) and needs_renormalise(self.scale_ * self._decay_factor()):
            # the coefficients are renormalised on the host (once in many thousand frames)
            self._download_state()
            d["_host_ahead"] = True
        super()._advance_scale()

    def _head(self, dev: _DeviceState) -> tuple:
        """The kernels' first arguments: ``frame, state, scale, lut``."""
        return (dev.frame, dev.state, float(self.scale_), dev.device_lut(self.lut()))

    def _policy(self, p_bg: int, p_fg: int, p_diff: int) -> tuple:
        return _state.policy(p_bg, p_fg, p_diff, self.params, self.n_frames_)

    def _feedback(self, dev: _DeviceState, prev, learn: bool = True) -> tuple:
        """The kernels' ``feedback`` tuple (:func:`bgsub.models._state.feedback`) on the device."""
        return _state.feedback(dev.blink, prev, (dev.post, *self._blink_args(learn)[1:]))

    def _score_pass(self, img: np.ndarray, learn: bool) -> None:
        if self._on_host():
            return super()._score_pass(img, learn)
        dev = self._ready(img)
        dev.run(dev.kernels.score_frame, dev.blocks, dev.threads, *self._head(dev), float(self._score_offset),
                  dev.score, dev.f, dev.oldest, dev.mask, dev.own, self._feedback(dev, dev.prev, learn))
        self._wrote_raw(dev)
        self._ran()

    def _frame(self, img, p_bg, p_fg, p_diff, mask_out, nbr_mask):
        if self._on_host():
            return super()._frame(img, p_bg, p_fg, p_diff, mask_out, nbr_mask)
        dev = self._ready(img)
        nbr = dev.prev if nbr_mask is self.prev_mask_ else dev.given(nbr_mask, self._own)
        dev.run(getattr(dev.kernels, self._FRAME_KERNEL), dev.blocks, dev.threads, *self._head(dev), self._rule(),
                  self._policy(p_bg, p_fg, p_diff), self._feedback(dev, nbr), (dev.score, dev.mask, dev.stepped))
        self._wrote_raw(dev)
        if mask_out is not self.__dict__["_rawmask"]:  # (the model's frames write _rawmask, read when asked)
            dev.down(dev.raw, mask_out)
        self._stepped_on_device(dev, nbr is dev.prev)

    def _remember_raw(self) -> None:
        # the device keeps the previous raw mask itself (_stepped_on_device); the host's copy is downloaded when read
        if not self.__dict__.get("_prev_stale", False):
            self._sync_raw()
            super()._remember_raw()

    def _remember_output(self, mask: np.ndarray) -> None:
        # the blink margin dilated on the device where the output mask is one the device holds (the median's output,
        # or the raw mask, that no component filter changed): nothing goes up at the next frame
        d = self.__dict__
        dev = d.get("_dev")
        src = None if dev is None or self._on_host() else dev.holding(mask, d["_rawmask"])
        if src is None:
            super()._remember_output(mask)
            d["_post_stale"] = False
        else:
            dev.dilate_into_post(src, BLINK_MARGIN)
            d["_post_stale"] = True

    def _wrote_raw(self, dev: _DeviceState) -> None:
        """After a kernel wrote the raw mask on the device (the host's copy is downloaded when read)."""
        dev.wrote_raw()
        self.__dict__["_raw_stale"] = True

    def _stepped_on_device(self, dev: _DeviceState, learned: bool) -> None:
        """After a learning kernel: the rows' step counts downloaded; ``learned``: the raw mask becomes the
        previous one (the host's ``prev_mask_``, downloaded when read)."""
        dev.down(dev.stepped, dev.stepped_host)
        np.sum(dev.stepped_host, axis=1, out=self._stepped)
        if learned:
            dev.learned()
            self.__dict__["_prev_stale"] = True
        self._ran()

    def _postprocess(self, raw: np.ndarray) -> np.ndarray:
        """The mask filters with the median on the GPU (of the raw mask there); the component filters on the
        CPU."""
        dev = self.__dict__.get("_dev")
        if dev is None or dev.raw is None or raw is not self._rawmask or self._on_host():
            return super()._postprocess(raw)
        if self.params.get("median", 0) < 3:
            self._sync_raw()  # the component filters read the raw mask itself
            return super()._postprocess(raw)
        return self._filters.apply(raw, self.params, lambda _, k: dev.median(k))

    # ------------------------------------------------------------------ outputs
    def getScoreMap(self) -> np.ndarray | None:
        self._sync_score()
        return super().getScoreMap()

    def getRawMask(self) -> np.ndarray | None:
        self._sync_raw()
        return super().getRawMask()

    def getBackgroundImage(self) -> np.ndarray | None:
        return self._reading(super().getBackgroundImage)

    def save(self, path):
        """Write the model to ``path`` (an ``.npz`` checkpoint of the CPU engine's arrays, which either engine
        loads)."""
        return self._reading(super().save, path)

    def _reading(self, method, *args):
        """``method(*args)``, which only reads the state: downloaded first, not uploaded again after."""
        d = self.__dict__
        self._download_state()
        internal = d.get("_internal", False)
        d["_internal"] = True
        try:
            return method(*args)
        finally:
            d["_internal"] = internal

    @classmethod
    def load(cls, path):
        """The subtractor saved in ``path`` (either engine's checkpoint), on the GPU."""
        return to_device(super().load(path), "cuda")


def _fresh_engine(cuda) -> dict:
    return {"_cuda": cuda, "_dev": None, "_dev_ahead": False, "_host_ahead": True, "_internal": False,
            "_score_stale": False, "_raw_stale": False, "_prev_stale": False, "_post_stale": False,
            "_host_phase": False}


class CudaOLKNSubtractor(CudaEngine, OLKNSubtractor):
    """:class:`bgsub.models.olkn.OLKNSubtractor` on the GPU (:mod:`bgsub.models._cuda_engine`): its exact engine
    (every pixel's full sum, so exact score maps whatever ``score_map`` says), without texture features."""

    _FRAME_KERNEL = "olkn_frame"

    def _rule(self):
        return _state.olkn_rule(self.params)


class CudaNORMASubtractor(CudaEngine, NORMASubtractor):
    """:class:`bgsub.models.norma.NORMASubtractor` on the GPU (:mod:`bgsub.models._cuda_engine`), without
    texture features; its default ``update_mask="post"`` runs a score pass, the mask filters and an update
    pass."""

    _FRAME_KERNEL = "norma_frame"
    _ROW_PLANES = False  # (the host runs only the first frame's bootstrap)

    def _state_changed(self):
        self._planes = None  # (the GPU engine keeps no row planes)
        super()._state_changed()

    def _score_pass(self, img, learn):
        if self._on_host():
            return super()._score_pass(img, learn)
        dev = self._ready(img)
        # the CPU engine's sums over row planes, pixel by pixel (the Gaussian computed in float32)
        dev.run(dev.kernels.norma_score_frame, dev.blocks, dev.threads, dev.frame, dev.state, float(self.scale_),
                  self._gauss(), dev.score, dev.f, dev.mask, dev.own, self._feedback(dev, dev.prev, learn))
        self._wrote_raw(dev)
        self._ran()

    def _rule(self):
        return _state.norma_rule(self.params)

    def _update(self, img, mask, p_bg, p_fg, p_diff):
        if self._on_host():
            return super()._update(img, mask, p_bg, p_fg, p_diff)
        dev = self._dev
        dev.run(dev.kernels.norma_update_frame, dev.blocks, dev.threads, *self._head(dev), self._rule(),
                  self._policy(p_bg, p_fg, p_diff), (dev.f, dev.given(mask, self._own)), (dev.stepped,))
        self._stepped_on_device(dev, True)


#: The GPU class of each CPU class.
_ON_CUDA = {OLKNSubtractor: CudaOLKNSubtractor, NORMASubtractor: CudaNORMASubtractor}


def to_device(sub: Any, device: str) -> Any:
    """``sub`` with its learners on ``device`` (``"cpu"`` or ``"cuda"``): ``sub`` itself when it is there, else a
    new object of the other engine's class holding the same model (parameters, state, counters), which moves with
    it: use the returned object from then on.

    Only olkn and norma run on ``"cuda"`` (without texture features); anything else is a :class:`DeviceError`, as
    are a missing numba-cuda and a machine without a usable GPU."""
    check_device(device)
    if device_of(sub) == device:
        return sub
    if device == "cuda":
        cls = _ON_CUDA.get(type(sub))
        if cls is None:
            name = getattr(type(sub), "__name__", "this subtractor")
            raise DeviceError(f"device 'cuda' runs olkn and norma; {name} runs on the CPU only (device 'cpu')")
        if sub.params.get("texture", 0.0) > 0.0:
            raise DeviceError("texture features (texture > 0) run on the CPU engine only: use device 'cpu', or "
                              "texture=0 on the GPU")
        runtime = cuda_runtime()
        new = cls.__new__(cls)
        new.__dict__.update(sub.__dict__)
        new.__dict__.update(_fresh_engine(runtime))
        new._state_changed()  # (a copy derived from the CPU's state is not carried)
        return new
    sub._download_state()
    cpu = next(c for c in type(sub).__mro__[1:] if c in _ON_CUDA)
    new = cpu.__new__(cpu)
    new.__dict__.update({k: v for k, v in sub.__dict__.items() if k not in _ENGINE_KEYS})
    new._on_params_changed()  # (olkn: the bounded engine's cache was not kept while on the GPU)
    new._state_changed()  # (norma: its row planes are written anew from the state the GPU learnt)
    return new
