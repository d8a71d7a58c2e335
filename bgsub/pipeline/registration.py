"""Whole-pixel registration of frames to a reference: the shift behind ``stabilise="match"``.

A shaking camera moves the whole picture by a few pixels from frame to frame.
:class:`ShiftEstimator` keeps the gradient magnitude of a reference frame (the
stream's first) and finds, for every new frame, the integer shift ``(dx, dy)``,
``|dx|, |dy| <= max_shift``, that best aligns the new frame's gradient magnitude
with it (normalised cross-correlation, :func:`ncc_map`): the
reference's centre, cropped by ``max_shift`` on every side, is the template.
Gradients rather than intensities, because edges stay where the camera puts
them while a moving car or a change of light alters intensities over large
areas: on the jittered dev sequences whose camera does not move by itself it
finds 99.4 % of the shifts, phase correlation against the same reference 27 %
(``benchmarks/stabiliser_accuracy.py``, ``docs/parameters.md``).

The gradient of a uint8 frame is one jitted, separable pass into a buffer the estimator
keeps (a 320x240 frame: 0.03 against 0.11 ms for OpenCV's Sobel and the numpy sums around
it; integer sums, so the same values; float32 frames still take OpenCV's). The correlation
runs template row by template row, each row's sums for every offset while the row is in
cache, each offset's sums the same as offset by offset and added in the same order, so the
same values bit for bit (a 1280x720 frame's refining level: 0.07 against 0.11 ms). Both run
on one thread: shared among numba's two threads (each pixel's and each offset's sums still
on one thread), a 1280x720 estimate took 0.86 against 0.65 ms, interleaved.
``benchmarks/stabiliser_exactness.py`` compares every estimate with another revision's: on
the dev sequences, plain, jittered and with illumination steps, each at its own size and
upscaled to 1280 pixels wide (24 636 estimates), none differed from those of OpenCV's
gradient and the offset-by-offset correlation, and an estimate took 0.46 against 0.87 ms
(means). The pyramid stays ``cv2.pyrDown``: halving by area averaging, in a quarter of the
time, changed 1 104 of those shifts.

Frames wider than :data:`COARSE_WIDTH` are searched coarse to fine: every
shift is tried on a pyramid level at most that wide, and each finer level only
checks the eight neighbours of twice the coarser shift, on its central region
at most :data:`REFINE_WIDTH` wide, so a 1080p frame costs little more than a
320x240 one.

A camera that holds still (most of them, most of the time) keeps its shift from frame to
frame, so each frame first checks the last shift found: on the finest level, the
correlation at the last shift and its eight neighbours (what the search's last step
computes). When the last shift is the maximum of the nine by at least
:data:`KEEP_SHARPNESS`, it is kept without searching the coarser levels. On the 16 dev
sequences, plain, jittered and with illumination steps, each at its own size and
upscaled to 1280 pixels wide (22 920 frames), every shift was the full search's, and
84 % of the plain sequences' frames kept theirs (highway at 320x240: 0.14 against 0.33
ms a frame; the shaking and the upscaled frames took as long as before). A frame where
the last shift is not kept is searched in full, and the next :data:`KEEP_BACKOFF`
frames are searched without the check, twice as many after each further miss (a
shaking camera would otherwise pay for the check on every frame, and so would frames
too smooth for it: on frames upscaled from 320x240 to 1280 pixels wide the peak is a
few pixels wide and the last shift is almost never kept).

Convention: ``frame[y + dy, x + dx] ~ reference[y, x]``; moving the frame by
``(-dx, -dy)`` registers it to the reference.

This module imports only numpy, numba and OpenCV (its pyramid, and its Sobel filter for float32 frames).
"""

from __future__ import annotations

import math

import cv2
import numpy as np
from numba import njit

__all__ = ["COARSE_WIDTH", "KEEP_BACKOFF", "KEEP_BACKOFF_MAX", "KEEP_SHARPNESS", "REFINE_WIDTH", "ShiftEstimator",
           "gradient_magnitude", "gradient_region", "ncc_map", "translate"]

#: Widest pyramid level on which every shift is tried (pixels).
COARSE_WIDTH = 200
#: Finer levels check the neighbours of the coarser shift on their central region at most this wide (and
#: three quarters as high).
REFINE_WIDTH = 400
#: The last shift is kept without a search when its correlation on the finest level exceeds each of its eight
#: neighbours' by at least this much (normalised cross-correlation). On the dev sequences, plain and jittered
#: (7 640 frames, checked on every frame), 0.01 kept in 2 frames a shift the full search did not find, 0.02 in none.
KEEP_SHARPNESS = 0.02
#: After a frame that did not keep the last shift, this many frames are searched in full without checking it;
#: twice as many after each further frame that did not keep it, up to :data:`KEEP_BACKOFF_MAX`.
KEEP_BACKOFF = 8
KEEP_BACKOFF_MAX = 64
#: Smallest size, in each dimension, that the template keeps after its margins are cropped.
MIN_TEMPLATE = 48


def translate(img: np.ndarray, dx: int, dy: int, border: int, value: float) -> np.ndarray:
    """``img`` moved by ``(dx, dy)`` whole pixels (``cv2.warpAffine``, nearest); uncovered pixels by ``border``."""
    if dx == 0 and dy == 0:
        return img
    h, w = img.shape[:2]
    m = np.float32([[1, 0, dx], [0, 1, dy]])
    return cv2.warpAffine(img, m, (w, h), flags=cv2.INTER_NEAREST, borderMode=border, borderValue=value)


def gradient_region(img: np.ndarray, y0: int, y1: int, x0: int, x1: int, out: np.ndarray | None = None
                    ) -> np.ndarray:
    """``|d/dx| + |d/dy|`` (3x3 Sobel, replicated border) of the grey image ``img`` (2-D, uint8 or float32)
    over ``[y0, y1) x [x0, x1)``, float32 ``(y1 - y0, x1 - x0)`` (written to ``out`` where given): the pixels
    around the region enter as in the whole image's gradient.

    uint8 images: a jitted pass (:func:`_sobel_l1`, integer values, so exactly OpenCV's); float32 images:
    OpenCV's Sobel on the region and a one-pixel ring around it (where the image has one)."""
    if out is None:
        out = np.empty((y1 - y0, x1 - x0), np.float32)
    if img.dtype == np.uint8:
        _sobel_l1(np.ascontiguousarray(img), y0, y1, x0, x1, out)
        return out
    H, W = img.shape
    a0, a1, b0, b1 = max(y0 - 1, 0), min(y1 + 1, H), max(x0 - 1, 0), min(x1 + 1, W)
    around = img[a0:a1, b0:b1]
    gx = cv2.Sobel(around, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REPLICATE)
    gy = cv2.Sobel(around, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REPLICATE)
    inside = (slice(y0 - a0, y1 - a0), slice(x0 - b0, x1 - b0))
    np.add(np.abs(gx[inside]), np.abs(gy[inside]), out=out)
    return out


@njit(cache=True, nogil=True)
def _sobel_l1(img, y0, y1, x0, x1, out):
    """:func:`gradient_region` of a C-contiguous uint8 image into ``out``, separably: per row, the vertical
    parts (``up + 2 centre + down`` and ``down - up``) over the columns the region needs, the first and last
    replicated, then the horizontal ones. The sums are of small integers, so float32 holds them exactly."""
    H, W = img.shape
    c0 = max(x0 - 1, 0)  # the image's columns [c0, c1) enter
    c1 = min(x1 + 1, W)
    n = c1 - c0
    vs = np.empty(n + 2, np.float32)  # [k]: column c0 + k - 1, k in [1, n]; [0] and [n + 1] replicate the ends
    vd = np.empty(n + 2, np.float32)
    k0 = x0 - c0  # vs[k0 + j + 1] is column x0 + j
    m = x1 - x0
    for y in range(y0, y1):
        r0 = img[max(y - 1, 0), c0:c1]
        r1 = img[y, c0:c1]
        r2 = img[min(y + 1, H - 1), c0:c1]
        s = vs[1:n + 1]
        d = vd[1:n + 1]
        for j in range(n):  # indices from 0, so that the loops vectorise
            up = np.float32(r0[j])
            down = np.float32(r2[j])
            s[j] = up + np.float32(2.0) * np.float32(r1[j]) + down
            d[j] = down - up
        vs[0], vd[0], vs[n + 1], vd[n + 1] = vs[1], vd[1], vs[n], vd[n]
        sl = vs[k0:k0 + m + 2]
        dl = vd[k0:k0 + m + 2]
        o = out[y - y0]
        for j in range(m):
            o[j] = abs(sl[j + 2] - sl[j]) + abs(dl[j] + np.float32(2.0) * dl[j + 1] + dl[j + 2])


def gradient_magnitude(grey: np.ndarray) -> np.ndarray:
    """:func:`gradient_region` of the whole image."""
    return gradient_region(grey, 0, grey.shape[0], 0, grey.shape[1])


@njit(cache=True, fastmath=True, nogil=True)
def ncc_map(img, tpl, out):
    """Normalised cross-correlation of ``tpl`` (float32 (h, w)) with ``img`` (float32, at least
    ``(h + ry - 1, w + rx - 1)``) at every offset ``(a, b)`` of ``out`` (float64 (ry, rx)):
    ``sum tpl * img[a:a+h, b:b+w] / sqrt(sum tpl^2 * sum img[a:a+h, b:b+w]^2)`` (OpenCV's
    ``TM_CCORR_NORMED``; 0 where either is all zero)."""
    _ncc(img, tpl, _energy(tpl), out)


@njit(cache=True, fastmath=True, nogil=True)
def _energy(tpl):
    """``sum tpl^2`` as :func:`ncc_map` adds it up (float32 rows, their float64 sum): the estimator keeps its
    templates' energies."""
    h, w = tpl.shape
    tt = 0.0
    for y in range(h):
        acc = np.float32(0.0)
        for x in range(w):
            acc += tpl[y, x] * tpl[y, x]
        tt += acc
    return tt


@njit(cache=True, fastmath=True, nogil=True)
def _ncc(img, tpl, tt, out):
    """:func:`ncc_map` with the template's energy ``tt`` (:func:`_energy`) given."""
    ry, rx = out.shape
    h, w = tpl.shape
    # Template row by template row, every offset's row sums while the row is in cache (a row of the image
    # serves ry * rx offsets); each offset's sums add up in the order of the rows.
    s = np.zeros((ry, rx))
    e = np.zeros((ry, rx))
    for y in range(h):
        t = tpl[y]
        for a in range(ry):
            src = img[a + y]
            for b in range(rx):
                row = src[b:b + w]
                sa = np.float32(0.0)
                ea = np.float32(0.0)
                for x in range(w):
                    v = row[x]
                    sa += v * t[x]
                    ea += v * v
                s[a, b] += sa
                e[a, b] += ea
    for a in range(ry):
        for b in range(rx):
            out[a, b] = s[a, b] / np.sqrt(e[a, b] * tt) if e[a, b] > 0.0 and tt > 0.0 else 0.0


def _pyramid(grey: np.ndarray, levels: int) -> list[np.ndarray]:
    """``grey`` and its ``levels - 1`` successive halvings (``cv2.pyrDown``), finest first."""
    out = [grey]
    for _ in range(levels - 1):
        out.append(cv2.pyrDown(out[-1]))
    return out


def _best(img: np.ndarray, tpl: np.ndarray, tt: float, ry: int, rx: int) -> tuple[int, int]:
    """``(b, a)``: the offset of :func:`ncc_map`'s maximum over ``ry x rx`` offsets (the first of equals);
    ``tt``: the template's :func:`_energy`."""
    res = np.empty((ry, rx))
    _ncc(img, tpl, tt, res)
    a, b = divmod(int(np.argmax(res)), rx)
    return b, a


class ShiftEstimator:
    """Integer shift of frames against a fixed reference frame.

    Parameters
    ----------
    reference : ndarray (H, W) of uint8 or float32
        The grey reference frame.
    max_shift : int
        Largest ``|dx|`` and ``|dy|`` searched (pixels, >= 1).

    Attributes
    ----------
    shape : tuple of int
        ``(H, W)`` of the frames it registers.
    levels : int
        Pyramid levels: 1 where ``W <= COARSE_WIDTH`` (every shift tried on the frame itself).
    usable : bool
        False where the frame is too small for the search (``H`` or ``W`` under
        ``2 max_shift + MIN_TEMPLATE``): :meth:`estimate` then returns ``(0, 0)``.
    kept : int
        Frames whose shift was the last one kept without a search (see the module docstring).
    """

    def __init__(self, reference: np.ndarray, max_shift: int) -> None:
        if reference.ndim != 2:
            raise ValueError(f"the reference must be a 2-D grey image, got shape {reference.shape}")
        if max_shift < 1:
            raise ValueError(f"max_shift must be >= 1, got {max_shift}")
        self.shape = reference.shape
        self.max_shift = int(max_shift)
        H, W = reference.shape
        self.usable = min(H, W) >= 2 * self.max_shift + MIN_TEMPLATE
        levels = 1
        while W > COARSE_WIDTH and min(H, W) // 2 >= 2 * self._margin(levels) + MIN_TEMPLATE:
            H, W = H // 2, W // 2
            levels += 1
        self.levels = levels
        self.kept = 0
        self._last = None  # the last shift found, while it is inside the finest level's margin
        self._wait = 0  # frames left without checking it
        self._backoff = KEEP_BACKOFF  # frames without the check after the next miss
        # per level: (y0, y1, x0, x1) of the region compared, its template's gradient and that gradient's _energy
        self._regions = []
        self._windows = []  # per level: a buffer for the frame's gradient at the nine shifts around one
        self._top = None  # a buffer for the coarsest level's whole gradient (the search's first step)
        if not self.usable:
            return
        for level, img in enumerate(_pyramid(np.ascontiguousarray(reference), levels)):
            h, w = img.shape
            if level == levels - 1:
                y0, y1, x0, x1 = 0, h, 0, w
            else:
                cw, ch = min(w, REFINE_WIDTH), min(h, REFINE_WIDTH * 3 // 4)
                y0, x0 = (h - ch) // 2, (w - cw) // 2
                y1, x1 = y0 + ch, x0 + cw
            m = self._margin(level)
            tpl = gradient_region(img, y0 + m, y1 - m, x0 + m, x1 - m)
            self._regions.append(((y0, y1, x0, x1), tpl, _energy(tpl)))
            self._windows.append(np.empty((y1 - y0 - 2 * m + 2, x1 - x0 - 2 * m + 2), np.float32))
        self._top = np.empty((h, w), np.float32)

    def _margin(self, level: int) -> int:
        return math.ceil(self.max_shift / 2 ** level)

    def _around(self, level: int, img: np.ndarray, dx: int, dy: int) -> tuple[int, int, np.ndarray]:
        """Correlations of ``img`` (level ``level`` of the frame) at the nine shifts around ``(dx, dy)``
        (kept one pixel inside the level's margin): ``(dx, dy, ncc)``, ``ncc`` (3, 3) indexed by ``(v, u)``,
        the shift ``(dx + u - 1, dy + v - 1)``."""
        m = self._margin(level)
        (y0, y1, x0, x1), tpl, tt = self._regions[level]
        dx = min(max(dx, 1 - m), m - 1)
        dy = min(max(dy, 1 - m), m - 1)
        window = gradient_region(img, y0 + m + dy - 1, y1 - m + dy + 1, x0 + m + dx - 1, x1 - m + dx + 1,
                                 self._windows[level])
        res = np.empty((3, 3))
        _ncc(window, tpl, tt, res)
        return dx, dy, res

    def _keeps_last(self, grey: np.ndarray) -> bool:
        """Whether the last shift is still the frame's (the module docstring's check)."""
        res = self._around(0, grey, *self._last)[2]
        centre = res[1, 1]
        res[1, 1] = -np.inf
        return centre - res.max() >= KEEP_SHARPNESS

    def estimate(self, grey: np.ndarray) -> tuple[int, int]:
        """``(dx, dy)`` of ``grey`` (the reference's shape and dtype) against the reference."""
        if grey.shape != self.shape:
            raise ValueError(f"frame of shape {grey.shape} against a reference of shape {self.shape}")
        if not self.usable:
            return 0, 0
        grey = np.ascontiguousarray(grey)
        if self._last is not None:
            if self._wait > 0:
                self._wait -= 1
            elif self._keeps_last(grey):
                self.kept += 1
                self._backoff = KEEP_BACKOFF
                return self._last
            else:
                self._wait = self._backoff
                self._backoff = min(2 * self._backoff, KEEP_BACKOFF_MAX)
        dx, dy = self._search(grey)
        m = self._margin(0)
        self._last = (dx, dy) if max(abs(dx), abs(dy)) <= m - 1 else None
        return dx, dy

    def _search(self, grey: np.ndarray) -> tuple[int, int]:
        """The full coarse-to-fine search."""
        frames = _pyramid(grey, self.levels)
        top = self.levels - 1
        m = self._margin(top)
        _, tpl, tt = self._regions[top]
        h, w = frames[top].shape
        u, v = _best(gradient_region(frames[top], 0, h, 0, w, self._top), tpl, tt, 2 * m + 1, 2 * m + 1)
        dx, dy = u - m, v - m
        for level in range(top - 1, -1, -1):
            # twice the coarser shift, kept one pixel inside the margin so that +-1 stays in the frame
            dx, dy, res = self._around(level, frames[level], 2 * dx, 2 * dy)
            v, u = divmod(int(np.argmax(res)), 3)
            dx += u - 1
            dy += v - 1
        return int(dx), int(dy)
