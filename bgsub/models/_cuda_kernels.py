"""The GPU engine's kernels, compiled for CUDA from the CPU engine's own functions.

One truth for the mathematics: nothing here restates a rule. The per-pixel
pieces -- the expansion's sum and push (:mod:`learners.expansion`), the update
rules and offsets (:func:`learners.steps.olk_n_update`,
:func:`learners.steps.norma_novelty_update`, :func:`learners.steps.olk_n_quantile_rho`, through the
frame loops' ``_olkn_update`` and ``_quantile_rho``), the blink feedback, the update policy's hash
draws and the neighbour diffusion (:mod:`bgsub.models._frame_kernels`, olkn's rule as its
tuple) -- are the jitted CPU functions' Python
sources (``.py_func``) compiled again by numba-cuda as device functions
(:func:`device_function`: every jitted function a source calls is converted the
same way). What is written here is only the frame loop around them, which on the
CPU is a ``prange`` over rows (:func:`bgsub.models._frame_kernels.olkn_frame` and
its siblings): the same calls in the same order for every pixel, so the same
decisions from the same seed and draws.

State layout on the device: planes across pixels, so that neighbouring threads
(neighbouring pixels of a row) read neighbouring bytes:

- ``samples`` uint8 ``(B, C, H, W)``; a pixel's support vectors are the strided view
  ``samples[:, :, i, j]`` (``(B, C)``, what the expansion functions take);
- ``coef`` float32 ``(B, H, W)``, ``ring`` int32 ``(2, H, W)`` (``[start, count]``);
- ``rho`` float64, ``blink`` float32, the masks uint8, all ``(H, W)``;
- the frame uint8 ``(H, W, C)`` as it is uploaded.

One block per image row (:data:`ROW_THREADS` threads striding over it), so that a
block counts its row's stepped pixels (``syncthreads_count``) into ``stepped[i]``
without atomics, as the CPU loops fill ``stepped``. No texture features (the
engine refuses them).

This module imports numba.cuda only in :func:`kernels` (numba-cuda is an optional
extra, :mod:`bgsub.models._cuda_engine` says what is missing).
"""

from __future__ import annotations

import math
import types as _pytypes
import warnings

import numpy as np
from numba.core.registry import CPUDispatcher

from bgsub.models._frame_kernels import _diffusion_source, _emit, _level, _olkn_update, _quantile_rho, _selected
from learners.expansion import expansion_sum
from learners.kernels import GAUSSIAN_LUT
from learners.steps import RHO_QUANTILE, norma_novelty_update

__all__ = ["kernels", "device_function", "ROW_THREADS", "launch"]

#: Threads of a block (one block per image row, striding over its pixels); fewer for narrow frames.
ROW_THREADS = 256

_cuda = None  # numba.cuda once imported (:func:`kernels`)
_DEVICE: dict = {}  # python function -> its CUDA device function
_KERNELS = None


def _device(fn):
    """Mark a function of this module as a device function (compiled by :func:`device_function`)."""
    fn._cuda_device = True
    return fn


def _convertible(value) -> bool:
    return isinstance(value, CPUDispatcher) or getattr(value, "_cuda_device", False)


def _rebind(fn):
    """``fn``'s Python function with every jitted function it calls replaced by its device function, and
    ``cuda`` bound to numba.cuda."""
    py = getattr(fn, "py_func", fn)
    glb = dict(py.__globals__)
    for name in py.__code__.co_names:
        value = glb.get(name)
        if _convertible(value):
            glb[name] = device_function(value)
    glb["cuda"] = _cuda
    if glb.get("np") is np:
        glb["np"] = _NP_DEVICE
    return _pytypes.FunctionType(py.__code__, glb, py.__name__, py.__defaults__, py.__closure__)


def _numpy_for_device():
    """numpy as the device functions see it: its scalar ufuncs that numba-cuda does not lower on scalars
    (``np.exp``) as the ``math`` functions, which compute the same values."""
    mod = _pytypes.ModuleType("numpy")
    mod.__dict__.update(np.__dict__)
    mod.exp = math.exp
    return mod


_NP_DEVICE = _numpy_for_device()


def device_function(fn):
    """The CUDA device function compiled from ``fn``: a numba-jitted function (its ``py_func``) or a plain
    function; the jitted functions it calls are converted alike (recursively), so a device function runs
    the very source its CPU twin runs. Precise arithmetic (no fastmath on the device: the CPU's fastmath
    only reorders its sums, which the tests' float tolerance covers)."""
    py = getattr(fn, "py_func", fn)
    dev = _DEVICE.get(py)
    if dev is None:
        opts = {} if _simulated() else {"forceinline": True}
        dev = _cuda.jit(device=True, **opts)(_rebind(py))
        _DEVICE[py] = dev
    return dev


def _simulated() -> bool:
    """Whether numba-cuda runs its CUDA simulator (``NUMBA_ENABLE_CUDASIM=1`` when it was imported)."""
    try:
        from numba.cuda.core import config
    except ImportError:
        return False
    return bool(config.ENABLE_CUDASIM)


# ---------------------------------------------------------------- per pixel (device functions)

@_device
def _pixel_sum(frame, samples, coef, ring, i, j, ii, jj, lut, scale):
    """Pixel ``(i, j)``'s expansion as views ``(sv, cf, rg)``, the value ``x`` of the frame's pixel ``(ii, jj)``,
    ``f = f_t(x)`` and the true share of the term a full buffer evicts (:func:`learners.expansion.expansion_sum`
    with the Gaussian table, as :func:`bgsub.models._frame_kernels._pixel_sum`)."""
    x = frame[ii, jj]
    sv = samples[:, :, i, j]
    cf = coef[:, i, j]
    rg = ring[:, i, j]
    total, oldest = expansion_sum(x, sv, cf, rg, GAUSSIAN_LUT, 0.0, 0.0, 0.0, lut)
    return x, sv, cf, rg, scale * total, scale * oldest


@_device
def _decide(level, f, feedback, i, j, score, mask):
    """Pixel ``(i, j)``'s score ``level - f``, its decision level lowered where it blinks
    (:func:`bgsub.models._frame_kernels._level`), written with its raw mask and blink accumulator
    (:func:`bgsub.models._frame_kernels._emit`); ``feedback = (blink, prev, post, gain, up, down)``."""
    blink, prev, post, gain, up, down = feedback
    _emit(_level(level, blink, i, j, gain) - f, blink, prev, post, i, j, gain, up, down, score, mask)


@_device
def _olkn_pixel(i, j, frame, samples, coef, ring, rho, scale, lut, rule, policy, score, mask, feedback):
    """One OLK_N pixel of :func:`bgsub.models._frame_kernels.olkn_frame` (no texture): score, raw mask and blink,
    the quantile offset, the policy's draw, and the step on its own value or a background neighbour's
    (:func:`bgsub.models._frame_kernels._olkn_step`). ``rule``, ``policy``, ``feedback``: the frame kernels'
    tuples (:mod:`bgsub.models._state`). Returns whether it stepped."""
    x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, i, j, i, j, lut, scale)
    rho0 = rho[i, j]
    _decide(1.0 + rho0, f, feedback, i, j, score, mask)
    fg = 1.0 + rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
    if rule[3] == RHO_QUANTILE:
        rho0 = _quantile_rho(f, rho0, rule)
        rho[i, j] = rho0
    sel = _selected(fg, rg[1], samples.shape[0], policy[0], policy[1], policy[4], policy[5], i * frame.shape[1] + j)
    return _olkn_learn(sel, i, j, x, f, oldest, frame, samples, coef, ring, rho, rho0, scale, lut, rule, policy,
                       feedback[1])


@_device
def _olkn_learn(selected, i, j, x, f, oldest, frame, samples, coef, ring, rho, rho0, scale, lut, rule, policy,
                nbr_mask):
    """:func:`bgsub.models._frame_kernels._olkn_step` of pixel ``(i, j)``: on its own value when ``selected``,
    else, if drawn, on a neighbour's that ``nbr_mask`` classifies background; writes the offset. Returns whether
    it stepped."""
    sv = samples[:, :, i, j]
    cf = coef[:, i, j]
    rg = ring[:, i, j]
    if not selected:
        q = _neighbour(nbr_mask, i, j, frame.shape[0], frame.shape[1], policy)
        if q < 0:
            return False
        x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, i, j, q // frame.shape[1],
                                              q % frame.shape[1], lut, scale)
    a, new_rho = _olkn_update(x, f, oldest, (sv, cf, rg), scale, rule, rho0)
    rho[i, j] = new_rho
    return True


@_device
def _neighbour(nbr_mask, i, j, H, W, policy):
    """:func:`bgsub.models._frame_kernels._diffusion_source` of pixel ``(i, j)`` under ``policy = (p_bg, p_fg,
    p_diff, radius, seed, frame_no)``: the flat index of the neighbour whose value it learns, or -1."""
    return _diffusion_source(nbr_mask, i, j, H, W, policy[3], policy[2], policy[4], policy[5], i * W + j)


@_device
def _norma_pixel(i, j, frame, samples, coef, ring, rho, scale, lut, rule, policy, score, mask, feedback):
    """One nu-NORMA pixel of :func:`bgsub.models._frame_kernels.norma_frame` (no texture). Returns whether it
    stepped."""
    x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, i, j, i, j, lut, scale)
    rho0 = rho[i, j]
    _decide(rho0, f, feedback, i, j, score, mask)
    fg = rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
    sel = _selected(fg, 1 if rg[1] > 0 else 0, 1, policy[0], policy[1], policy[4], policy[5], i * frame.shape[1] + j)
    return _norma_learn(sel, i, j, x, f, frame, samples, coef, ring, rho, rho0, scale, lut, rule, policy, feedback[1])


@_device
def _norma_learn(selected, i, j, x, f, frame, samples, coef, ring, rho, rho0, scale, lut, rule, policy, nbr_mask):
    """:func:`bgsub.models._frame_kernels._norma_step` of pixel ``(i, j)`` under ``rule = (eta, lam, nu)``; writes
    the offset. Returns whether it stepped."""
    sv = samples[:, :, i, j]
    cf = coef[:, i, j]
    rg = ring[:, i, j]
    if not selected:
        q = _neighbour(nbr_mask, i, j, frame.shape[0], frame.shape[1], policy)
        if q < 0:
            return False
        x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, i, j, q // frame.shape[1],
                                              q % frame.shape[1], lut, scale)
    alpha, new_rho = norma_novelty_update(x, f, sv, cf, rg, scale, rule[0], rule[1], rule[2], rho0, 0.0)
    rho[i, j] = new_rho
    return True


# ---------------------------------------------------------------- kernels (one block per row)

def olkn_frame(frame, samples, coef, ring, rho, scale, lut, r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi,
               p_bg, p_fg, p_diff, radius, seed, frame_no, score, mask, nbr_mask, stepped, blink, post, gain, up,
               down):
    """:func:`bgsub.models._frame_kernels.olkn_frame` (no texture) on the device: row ``blockIdx.x``."""
    rule = (r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi)
    policy = (p_bg, p_fg, p_diff, radius, seed, frame_no)
    feedback = (blink, nbr_mask, post, gain, up, down)
    i = cuda.blockIdx.x  # noqa: F821 (bound by _rebind)
    W = frame.shape[1]
    n = 0
    for j0 in range(0, W, cuda.blockDim.x):  # noqa: F821
        j = j0 + cuda.threadIdx.x  # noqa: F821
        done = 0
        if j < W and _olkn_pixel(i, j, frame, samples, coef, ring, rho, scale, lut, rule, policy, score, mask,
                                 feedback):
            done = 1
        n += cuda.syncthreads_count(done)  # noqa: F821
    if cuda.threadIdx.x == 0:  # noqa: F821
        stepped[i] = n


def norma_frame(frame, samples, coef, ring, rho, scale, lut, eta, lam, nu, p_bg, p_fg, p_diff, radius, seed,
                frame_no, score, mask, nbr_mask, stepped, blink, post, gain, up, down):
    """:func:`bgsub.models._frame_kernels.norma_frame` (no texture) on the device: row ``blockIdx.x``."""
    rule = (eta, lam, nu)
    policy = (p_bg, p_fg, p_diff, radius, seed, frame_no)
    feedback = (blink, nbr_mask, post, gain, up, down)
    i = cuda.blockIdx.x  # noqa: F821
    W = frame.shape[1]
    n = 0
    for j0 in range(0, W, cuda.blockDim.x):  # noqa: F821
        j = j0 + cuda.threadIdx.x  # noqa: F821
        done = 0
        if j < W and _norma_pixel(i, j, frame, samples, coef, ring, rho, scale, lut, rule, policy, score, mask,
                                  feedback):
            done = 1
        n += cuda.syncthreads_count(done)  # noqa: F821
    if cuda.threadIdx.x == 0:  # noqa: F821
        stepped[i] = n


def score_frame(frame, samples, coef, ring, rho, scale, lut, offset, score, f_out, oldest_out, mask, own, blink, prev,
                post, gain, up, down):
    """:func:`bgsub.models._frame_kernels.score_frame` (no texture) on the device: no learning."""
    feedback = (blink, prev, post, gain, up, down)
    i = cuda.blockIdx.x  # noqa: F821
    W = frame.shape[1]
    for j0 in range(0, W, cuda.blockDim.x):  # noqa: F821
        j = j0 + cuda.threadIdx.x  # noqa: F821
        if j < W:
            x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, i, j, i, j, lut, scale)
            f_out[i, j] = f
            oldest_out[i, j] = oldest
            level = offset + rho[i, j]
            own[i, j] = 255 if level - f > 0.0 else 0
            _decide(level, f, feedback, i, j, score, mask)


def olkn_update_frame(frame, samples, coef, ring, rho, scale, lut, r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi,
                      f_in, oldest_in, mask, p_bg, p_fg, p_diff, radius, seed, frame_no, stepped):
    """:func:`bgsub.models._frame_kernels.olkn_update_frame` (no texture) on the device: the pixels ``mask``
    selects step (the second pass after :func:`score_frame`)."""
    rule = (r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi)
    policy = (p_bg, p_fg, p_diff, radius, seed, frame_no)
    i = cuda.blockIdx.x  # noqa: F821
    W = frame.shape[1]
    n = 0
    for j0 in range(0, W, cuda.blockDim.x):  # noqa: F821
        j = j0 + cuda.threadIdx.x  # noqa: F821
        done = 0
        if j < W:
            rho0 = rho[i, j]
            if rho_rule == RHO_QUANTILE:
                rho0 = _quantile_rho(f_in[i, j], rho0, rule)
                rho[i, j] = rho0
            sel = _selected(mask[i, j] != 0, ring[1, i, j], samples.shape[0], p_bg, p_fg, seed, frame_no, i * W + j)
            if _olkn_learn(sel, i, j, frame[i, j], f_in[i, j], oldest_in[i, j], frame, samples, coef, ring, rho, rho0,
                           scale, lut, rule, policy, mask):
                done = 1
        n += cuda.syncthreads_count(done)  # noqa: F821
    if cuda.threadIdx.x == 0:  # noqa: F821
        stepped[i] = n


def norma_update_frame(frame, samples, coef, ring, rho, scale, lut, eta, lam, nu, f_in, mask, p_bg, p_fg, p_diff,
                       radius, seed, frame_no, stepped):
    """:func:`bgsub.models._frame_kernels.norma_update_frame` (no texture) on the device."""
    rule = (eta, lam, nu)
    policy = (p_bg, p_fg, p_diff, radius, seed, frame_no)
    i = cuda.blockIdx.x  # noqa: F821
    W = frame.shape[1]
    n = 0
    for j0 in range(0, W, cuda.blockDim.x):  # noqa: F821
        j = j0 + cuda.threadIdx.x  # noqa: F821
        done = 0
        if j < W:
            sel = _selected(mask[i, j] != 0, 1 if ring[1, i, j] > 0 else 0, 1, p_bg, p_fg, seed, frame_no, i * W + j)
            if _norma_learn(sel, i, j, frame[i, j], f_in[i, j], frame, samples, coef, ring, rho, rho[i, j], scale, lut,
                            rule, policy, mask):
                done = 1
        n += cuda.syncthreads_count(done)  # noqa: F821
    if cuda.threadIdx.x == 0:  # noqa: F821
        stepped[i] = n


def gather_grid(samples, coef, ring, rows, cols, gsamples, gcoef, gring):
    """The state of the pixels ``(rows[k], cols[k])`` in the host's layout: ``gsamples`` (G, B, C), ``gcoef``
    (G, B), ``gring`` (G, 2) (the illumination estimate's grid, :mod:`bgsub.models._illumination`)."""
    k = cuda.grid(1)  # noqa: F821
    if k < rows.shape[0]:
        i = rows[k]
        j = cols[k]
        for b in range(samples.shape[0]):
            for c in range(samples.shape[1]):
                gsamples[k, b, c] = samples[b, c, i, j]
            gcoef[k, b] = coef[b, i, j]
        gring[k, 0] = ring[0, i, j]
        gring[k, 1] = ring[1, i, j]


_KERNEL_FUNCTIONS = (olkn_frame, norma_frame, score_frame, olkn_update_frame, norma_update_frame, gather_grid)


def kernels(cuda_module) -> _pytypes.SimpleNamespace:
    """The compiled kernels (built on first use, with ``cuda_module`` = numba.cuda): a namespace of
    :data:`_KERNEL_FUNCTIONS` by name. Each compiles for its argument types at its first launch."""
    global _cuda, _KERNELS
    if _KERNELS is None:
        _cuda = cuda_module
        _KERNELS = _pytypes.SimpleNamespace(**{f.__name__: _cuda.jit(_rebind(f)) for f in _KERNEL_FUNCTIONS})
    return _KERNELS


def row_threads(W: int) -> int:
    """Threads of a row's block: :data:`ROW_THREADS`, or fewer (a multiple of 32) for a narrow frame (under the
    simulator, where every thread is a Python thread, no more than the row's pixels)."""
    if _simulated():
        return min(ROW_THREADS, W)
    return min(ROW_THREADS, max(32, -(-W // 32) * 32))


def launch(kernel, blocks: int, threads: int, *args) -> None:
    """``kernel[blocks, threads](*args)``; under the simulator the 64-bit hash's wrap-around (which numpy
    scalars report as an overflow) is not a warning."""
    if _simulated():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
            kernel[blocks, threads](*args)
    else:
        kernel[blocks, threads](*args)


def signatures() -> dict[str, tuple]:
    """The argument types every kernel is launched with (:mod:`bgsub.models._cuda_engine`): C-contiguous device
    arrays, Python ints (int64) and floats (float64)."""
    from numba import types as nt

    def a(dtype, ndim):
        return nt.Array(dtype, ndim, "C")

    u8, f32, f64, i32, i64 = nt.uint8, nt.float32, nt.float64, nt.int32, nt.int64
    state = (a(u8, 3), a(u8, 4), a(f32, 3), a(i32, 3), a(f64, 2), f64, a(f32, 1))  # frame .. lut
    olkn = (f64, f64, f64, i64, f64, f64, f64, f64)  # r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi
    norma = (f64, f64, f64)  # eta, lam, nu
    policy = (i64,) * 6  # p_bg, p_fg, p_diff, radius, seed, frame_no
    blink = (a(f32, 2), a(u8, 2), f64, f64, f64)  # blink, post, gain, up, down
    outputs = (a(f32, 2), a(u8, 2), a(u8, 2), a(i64, 1))  # score, mask, nbr_mask, stepped
    return {
        "olkn_frame": state + olkn + policy + outputs + blink,
        "norma_frame": state + norma + policy + outputs + blink,
        "score_frame": state + (f64, a(f32, 2), a(f64, 2), a(f64, 2), a(u8, 2), a(u8, 2), a(f32, 2), a(u8, 2),
                                a(u8, 2), f64, f64, f64),
        "olkn_update_frame": state + olkn + (a(f64, 2), a(f64, 2), a(u8, 2)) + policy + (a(i64, 1),),
        "norma_update_frame": state + norma + (a(f64, 2), a(u8, 2)) + policy + (a(i64, 1),),
        "gather_grid": (a(u8, 4), a(f32, 3), a(i32, 3), a(i64, 1), a(i64, 1), a(u8, 3), a(f32, 2), a(i32, 2)),
    }


def compile_ptx_all(cc: tuple[int, int] = (9, 0)) -> dict[str, int]:
    """Compile every kernel to PTX for compute capability ``cc`` (numba-cuda and its NVVM, no GPU needed: a check
    that the CPU engine's functions compile for the device); returns each kernel's PTX size in bytes."""
    global _cuda
    from numba import cuda
    from numba.cuda import dispatcher

    _cuda = cuda
    # the device functions compile for the current device; without one, for ``cc``
    current = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _pytypes.SimpleNamespace(compute_capability=cc)
    try:
        sizes = {}
        for f in _KERNEL_FUNCTIONS:
            ptx, _ = cuda.compile_ptx(_rebind(f), signatures()[f.__name__], cc=cc)
            sizes[f.__name__] = len(ptx)
        return sizes
    finally:
        dispatcher.get_current_device = current
        _DEVICE.clear()  # compiled for ``cc``, not for this machine's device
