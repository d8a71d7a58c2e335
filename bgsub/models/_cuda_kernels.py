"""The GPU engine's kernels, compiled for CUDA from the CPU engine's own functions.

One truth for the mathematics: nothing here restates a rule. The per-pixel
pieces -- the expansion's sums and push (:mod:`learners.expansion`; nu-NORMA's score pass sums as the CPU
engine's over row planes, :func:`learners.expansion.expansion_sum_f32`), the update
rules and offsets (:func:`learners.steps.olk_n_update`,
:func:`learners.steps.norma_novelty_update`, :func:`learners.steps.olk_n_quantile_rho`, through the
frame loops' ``_olkn_update`` and ``_quantile_rho``), the blink feedback, the update policy's hash
draws and the neighbour diffusion (:mod:`bgsub.models._frame_kernels`) -- are the jitted CPU functions'
Python sources (``.py_func``) compiled again by numba-cuda as device functions
(:func:`device_function`: every jitted function a source calls is converted the
same way). What is written here is only the frame loop around them, which on the
CPU is a ``prange`` over rows (:func:`bgsub.models._frame_kernels.olkn_frame` and
its siblings): the same calls in the same order for every pixel, so the same
decisions from the same seed and draws.

The kernels take the CPU kernels' argument groups (:mod:`bgsub.models._state`), as tuples of device
arrays and scalars: ``state = (samples, coef, ring, rho)`` in the device's layout (below), the rule,
``policy = (p_bg, p_fg, p_diff, radius, seed, frame_no)``, ``feedback = (blink, prev, post, gain, up,
down)`` and ``out = (score, mask, stepped)``; numba-cuda passes a tuple's members as the kernel's own
parameters. No kernel takes more than eleven arguments.

State layout on the device: planes across pixels, so that neighbouring threads
(neighbouring pixels of a row) read neighbouring bytes:

- ``samples`` uint8 ``(B, C, H, W)``; a pixel's support vectors are the strided view
  ``samples[:, :, i, j]`` (``(B, C)``, what the expansion functions take);
- ``coef`` float32 ``(B, H, W)``, ``ring`` int32 ``(2, H, W)`` (``[start, count]``);
- ``rho`` float64, ``blink`` float32, the masks uint8, all ``(H, W)``;
- the frame uint8 ``(H, W, C)`` as it is uploaded.

The score passes (:func:`score_frame`, :func:`norma_score_frame`) and the learning kernels (:data:`olkn_frame`,
:data:`norma_frame`, :data:`norma_update_frame`) run a thread a pixel; the learning kernels are one row
loop (:func:`_stepping_rows`) around a pixel function. A block is a run of :data:`ROW_THREADS` pixels of
one row, a thread a pixel (the grid: :func:`frame_grid`); it counts its stepped pixels
(``syncthreads_count``) into ``stepped[i, chunk]`` without atomics, which the host sums by row into the
CPU loops' ``stepped``. (Measured on an H200 at 1920x1080: 0.49 ms an olkn frame, where one block per
row striding over it took 0.98.) No texture features (the engine refuses them).

:func:`window_pass` runs the mask filter's binary median (:func:`bgsub.pipeline.masks.binary_median`,
``cv2.medianBlur`` of a 0/255 mask) and the blink margin's dilation (``cv2.dilate`` by a square) on the
device: a window's count of set pixels, by columns then by rows (two passes), against half its size or
against 1.

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
from learners.expansion import expansion_sum, expansion_sum_f32
from learners.kernels import GAUSSIAN_LUT
from learners.steps import RHO_QUANTILE, norma_novelty_update

__all__ = ["kernels", "device_function", "ROW_THREADS", "WINDOW_THREADS", "launch", "frame_grid", "window_blocks"]

#: Threads of a frame kernel's block: a run of this many pixels of a row (fewer for narrow frames).
ROW_THREADS = 128
#: The window passes' blocks: ``(rows, columns)`` of threads, one pixel each.
WINDOW_THREADS = (8, 32)

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
    """``fn``'s Python function with every jitted function it calls (by a global name or from its closure)
    replaced by its device function, and ``cuda`` bound to numba.cuda."""
    py = getattr(fn, "py_func", fn)
    glb = dict(py.__globals__)
    for name in py.__code__.co_names:
        value = glb.get(name)
        if _convertible(value):
            glb[name] = device_function(value)
    glb["cuda"] = _cuda
    if glb.get("np") is np:
        glb["np"] = _NP_DEVICE
    closure = py.__closure__
    if closure is not None:
        closure = tuple(_pytypes.CellType(device_function(c.cell_contents)) if _convertible(c.cell_contents) else c
                        for c in closure)
    return _pytypes.FunctionType(py.__code__, glb, py.__name__, py.__defaults__, closure)


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
    """Whether numba-cuda runs its CUDA simulator: chosen once, by ``NUMBA_ENABLE_CUDASIM=1`` when numba.cuda was
    first imported. Read from the module it imported (the simulator's ``jit``), not from numba's config, which
    numba reloads from the environment later and which then says 1 over a real driver's API."""
    try:
        from numba import cuda
    except ImportError:
        return False
    return getattr(cuda.jit, "__module__", "").startswith("numba.cuda.simulator")


def _named(fn, name: str, doc: str):
    """``fn`` (a function a factory made) under ``name`` with docstring ``doc``."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# ---------------------------------------------------------------- per pixel (device functions)

@_device
def _pixel_sum(frame, state, i, j, ii, jj, lut, scale):
    """Pixel ``(i, j)``'s expansion at the frame's value ``x`` of pixel ``(ii, jj)``: ``(x, view, f, oldest)``,
    ``view = (sv, cf, rg)`` the pixel's strided views, ``f = f_t(x)`` and the true share of the term a full
    buffer evicts (:func:`learners.expansion.expansion_sum` with the Gaussian table, as
    :func:`bgsub.models._frame_kernels._pixel_sum`)."""
    x = frame[ii, jj]
    sv = state[0][:, :, i, j]
    cf = state[1][:, i, j]
    rg = state[2][:, i, j]
    total, oldest = expansion_sum(x, sv, cf, rg, GAUSSIAN_LUT, 0.0, 0.0, 0.0, lut)
    return x, (sv, cf, rg), scale * total, scale * oldest


@_device
def _decide(level, f, feedback, i, j, score, mask):
    """Pixel ``(i, j)``'s score ``level - f``, its decision level lowered where it blinks
    (:func:`bgsub.models._frame_kernels._level`), written with its raw mask and blink accumulator
    (:func:`bgsub.models._frame_kernels._emit`); ``feedback = (blink, prev, post, gain, up, down)``."""
    blink, prev, post, gain, up, down = feedback
    _emit(_level(level, blink, i, j, gain) - f, blink, prev, post, i, j, gain, up, down, score, mask)


@_device
def _draw(fg, count, B, policy, i, j, W):
    """:func:`bgsub.models._frame_kernels._selected` of pixel ``(i, j)`` under ``policy``."""
    return _selected(fg, count, B, policy[0], policy[1], policy[4], policy[5], i * W + j)


@_device
def _olkn_rho(x, f, oldest, view, scale, rule, rho0):
    """The offset after OLK_N's step (:func:`bgsub.models._frame_kernels._olkn_update`)."""
    return _olkn_update(x, f, oldest, view, scale, rule, rho0)[1]


@_device
def _norma_rho(x, f, oldest, view, scale, rule, rho0):
    """The offset after nu-NORMA's step under ``rule = (eta, lam, nu)`` (:func:`learners.steps.norma_novelty_update`,
    as :func:`bgsub.models._frame_kernels._norma_step` calls it)."""
    return norma_novelty_update(x, f, view[0], view[1], view[2], scale, rule[0], rule[1], rule[2], rho0, 0.0)[1]


def _learner(step):
    """The learning of one pixel under the rule ``step`` (:func:`_olkn_rho`, :func:`_norma_rho`), as
    :func:`bgsub.models._frame_kernels._olkn_step` and ``_norma_step``: on its own value ``x`` when
    ``selected``, else, if drawn, on a neighbour's that ``nbr_mask`` classifies background
    (:func:`bgsub.models._frame_kernels._diffusion_source`); writes the offset and returns whether it
    stepped."""

    def learn(selected, i, j, x, f, oldest, frame, state, scale, lut, rule, policy, nbr_mask, rho0):
        view = (state[0][:, :, i, j], state[1][:, i, j], state[2][:, i, j])
        if not selected:
            H, W = frame.shape[0], frame.shape[1]
            q = _diffusion_source(nbr_mask, i, j, H, W, policy[3], policy[2], policy[4], policy[5], i * W + j)
            if q < 0:
                return False
            x, view, f, oldest = _pixel_sum(frame, state, i, j, q // W, q % W, lut, scale)
        state[3][i, j] = step(x, f, oldest, view, scale, rule, rho0)
        return True

    return _device(_named(learn, f"_learn{step.__name__}", _learner.__doc__))


_olkn_learn = _learner(_olkn_rho)
_norma_learn = _learner(_norma_rho)


@_device
def _olkn_pixel(i, j, frame, state, scale, lut, rule, policy, feedback, out):
    """One OLK_N pixel of :func:`bgsub.models._frame_kernels.olkn_frame` (no texture): score, raw mask and blink,
    the quantile offset, the policy's draw and the step. Returns whether it stepped."""
    x, view, f, oldest = _pixel_sum(frame, state, i, j, i, j, lut, scale)
    rho0 = state[3][i, j]
    _decide(1.0 + rho0, f, feedback, i, j, out[0], out[1])
    fg = 1.0 + rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
    if rule[3] == RHO_QUANTILE:
        rho0 = _quantile_rho(f, rho0, rule)
        state[3][i, j] = rho0
    sel = _draw(fg, view[2][1], state[0].shape[0], policy, i, j, frame.shape[1])
    return _olkn_learn(sel, i, j, x, f, oldest, frame, state, scale, lut, rule, policy, feedback[1], rho0)


@_device
def _norma_pixel(i, j, frame, state, scale, lut, rule, policy, feedback, out):
    """One nu-NORMA pixel of :func:`bgsub.models._norma_frame.norma_frame`. Returns whether it
    stepped."""
    x, view, f, oldest = _pixel_sum(frame, state, i, j, i, j, lut, scale)
    rho0 = state[3][i, j]
    _decide(rho0, f, feedback, i, j, out[0], out[1])
    fg = rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
    sel = _draw(fg, 1 if view[2][1] > 0 else 0, 1, policy, i, j, frame.shape[1])
    return _norma_learn(sel, i, j, x, f, oldest, frame, state, scale, lut, rule, policy, feedback[1], rho0)


@_device
def _norma_update_pixel(i, j, frame, state, scale, lut, rule, policy, given, out):
    """One pixel of :func:`bgsub.models._norma_frame.norma_update`: ``given = (f, mask)``, the score
    pass's ``f`` and the mask that selects (and classifies the neighbours). Returns whether it stepped."""
    f, mask = given
    sel = _draw(mask[i, j] != 0, 1 if state[2][1, i, j] > 0 else 0, 1, policy, i, j, frame.shape[1])
    return _norma_learn(sel, i, j, frame[i, j], f[i, j], 0.0, frame, state, scale, lut, rule, policy, mask,
                        state[3][i, j])


# ---------------------------------------------------------------- kernels

def _stepping_rows(pixel):
    """A learning kernel ``(frame, state, scale, lut, rule, policy, given, out)``: pixel ``j`` of row ``i``
    (``blockIdx.x``), ``j`` in the block's run of the row (``blockIdx.y``), runs ``pixel`` (which returns whether it
    stepped); the block's count of stepped pixels goes to ``out[-1][i, blockIdx.y]``."""

    def kernel(frame, state, scale, lut, rule, policy, given, out):
        i = cuda.blockIdx.x  # noqa: F821 (bound by _rebind)
        j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x  # noqa: F821
        done = 0
        if j < frame.shape[1] and pixel(i, j, frame, state, scale, lut, rule, policy, given, out):
            done = 1
        n = cuda.syncthreads_count(done)  # noqa: F821
        if cuda.threadIdx.x == 0:  # noqa: F821
            out[-1][i, cuda.blockIdx.y] = n  # noqa: F821

    return kernel


olkn_frame = _named(_stepping_rows(_olkn_pixel), "olkn_frame",
                    ":func:`bgsub.models._frame_kernels.olkn_frame` (no texture) on the device: ``given`` is the "
                    "feedback tuple, ``out = (score, mask, stepped)`` (``stepped`` by row and block).")
norma_frame = _named(_stepping_rows(_norma_pixel), "norma_frame",
                     ":func:`bgsub.models._norma_frame.norma_frame` on the device: ``given`` is the "
                     "feedback tuple, ``out = (score, mask, stepped)`` (``stepped`` by row and block).")
norma_update_frame = _named(_stepping_rows(_norma_update_pixel), "norma_update_frame",
                            ":func:`bgsub.models._norma_frame.norma_update` on the device, the "
                            "second pass after :func:`score_frame`: ``given = (f, mask)``, ``out = (stepped,)``.")


def score_frame(frame, state, scale, lut, offset, score, f_out, oldest_out, mask, own, feedback):
    """:func:`bgsub.models._frame_kernels.score_frame` (no texture) on the device: no learning (the grid of
    :func:`frame_grid`)."""
    i = cuda.blockIdx.x  # noqa: F821
    j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x  # noqa: F821
    if j < frame.shape[1]:
        x, view, f, oldest = _pixel_sum(frame, state, i, j, i, j, lut, scale)
        f_out[i, j] = f
        oldest_out[i, j] = oldest
        level = offset + state[3][i, j]
        own[i, j] = 255 if level - f > 0.0 else 0
        _decide(level, f, feedback, i, j, score, mask)


def norma_score_frame(frame, state, scale, gauss, score, f_out, mask, own, feedback):
    """nu-NORMA's score pass on the device, as the CPU engine's over row planes (:mod:`bgsub.models._norma_planes`):
    every pixel's :func:`learners.expansion.expansion_sum_f32` (the Gaussian computed in float32, ``gauss = (factor,
    cutoff)``), its score, raw mask, own decision and blink accumulator; no learning (the grid of
    :func:`frame_grid`)."""
    i = cuda.blockIdx.x  # noqa: F821
    j = cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x  # noqa: F821
    if j < frame.shape[1]:
        total = expansion_sum_f32(frame[i, j], state[0][:, :, i, j], state[1][:, i, j], state[2][:, i, j], gauss[0],
                                  gauss[1])
        f = scale * np.float64(total)
        f_out[i, j] = f
        level = state[3][i, j]
        own[i, j] = 255 if level - f > 0.0 else 0
        _decide(level, f, feedback, i, j, score, mask)


def window_pass(src, k, vertical, at_least, out):
    """A pass of a count over a ``k x k`` window (replicated border) of a 0/255 mask. ``vertical``: ``out[i, j]``
    counts the set pixels of the mask ``src`` in the ``k`` rows around row ``i``; else ``out[i, j]`` is 255 where
    the counts ``src`` of the ``k`` columns around ``j`` sum to ``at_least`` or more, 0 elsewhere. ``at_least``
    ``k * k // 2 + 1``: the binary median; 1: the dilation by the ``k x k`` square (``cv2.dilate``'s: the
    replicated border adds only pixels the window holds already)."""
    i, j = cuda.grid(2)  # noqa: F821
    H, W = src.shape
    if i < H and j < W:
        r = k // 2
        n = 0
        for d in range(-r, r + 1):
            if vertical:
                n += 1 if src[min(max(i + d, 0), H - 1), j] != 0 else 0
            else:
                n += src[i, min(max(j + d, 0), W - 1)]
        if vertical:
            out[i, j] = n
        else:
            out[i, j] = 255 if n >= at_least else 0


def gather_grid(state, prev, rows, cols, out):
    """The state and previous raw mask of the pixels ``(rows[k], cols[k])`` in the host's layout: ``out = (samples
    (G, B, C), coef (G, B), ring (G, 2), prev (G,))`` (the illumination estimate's grid,
    :mod:`bgsub.models._illumination`)."""
    k = cuda.grid(1)  # noqa: F821
    samples, coef, ring = state[0], state[1], state[2]
    gsamples, gcoef, gring, gprev = out
    if k < rows.shape[0]:
        i = rows[k]
        j = cols[k]
        for b in range(samples.shape[0]):
            for c in range(samples.shape[1]):
                gsamples[k, b, c] = samples[b, c, i, j]
            gcoef[k, b] = coef[b, i, j]
        gring[k, 0] = ring[0, i, j]
        gring[k, 1] = ring[1, i, j]
        gprev[k] = prev[i, j]


_KERNEL_FUNCTIONS = (olkn_frame, norma_frame, norma_update_frame, score_frame, norma_score_frame, window_pass,
                     gather_grid)


def kernels(cuda_module) -> _pytypes.SimpleNamespace:
    """The compiled kernels (built on first use, with ``cuda_module`` = numba.cuda): a namespace of
    :data:`_KERNEL_FUNCTIONS` by name. Each compiles for its argument types at its first launch."""
    global _cuda, _KERNELS
    if _KERNELS is None:
        _cuda = cuda_module
        _KERNELS = _pytypes.SimpleNamespace(**{f.__name__: _cuda.jit(_rebind(f)) for f in _KERNEL_FUNCTIONS})
    return _KERNELS


def frame_grid(H: int, W: int) -> tuple[tuple[int, int], int]:
    """``(blocks, threads)`` of the frame kernels over an ``H x W`` frame: ``(H, runs)`` blocks of
    :data:`ROW_THREADS` threads, or fewer (a multiple of 32) for a narrow frame (under the simulator, where every
    thread is a Python thread, no more than the row's pixels)."""
    threads = min(ROW_THREADS, W) if _simulated() else min(ROW_THREADS, max(32, -(-W // 32) * 32))
    return (H, -(-W // threads)), threads


def window_blocks(H: int, W: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(blocks, threads)`` of the window passes over an ``H x W`` mask."""
    th = WINDOW_THREADS
    return (-(-H // th[0]), -(-W // th[1])), th


def launch(kernel, blocks, threads, stream, *args) -> None:
    """``kernel[blocks, threads, stream](*args)`` (``stream`` 0: the default stream); under the simulator the
    64-bit hash's wrap-around (which numpy scalars report as an overflow) is not a warning."""
    if _simulated():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
            kernel[blocks, threads, stream](*args)
    else:
        kernel[blocks, threads, stream](*args)


def signatures() -> dict[str, tuple]:
    """The argument types each kernel is launched with (:mod:`bgsub.models._cuda_engine`), a list by kernel:
    C-contiguous device arrays, Python ints (int64), floats (float64) and bools, and tuples of them."""
    from numba import types as nt

    def a(dtype, ndim):
        return nt.Array(dtype, ndim, "C")

    def t(*members):
        return nt.Tuple(members)

    u8, f32, f64, i32, i64 = nt.uint8, nt.float32, nt.float64, nt.int32, nt.int64
    head = (a(u8, 3), t(a(u8, 4), a(f32, 3), a(i32, 3), a(f64, 2)), f64, a(f32, 1))  # frame, state, scale, lut
    olkn = t(f64, f64, f64, i64, f64, f64, f64, f64)  # r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi
    norma = t(f64, f64, f64)  # eta, lam, nu
    policy = t(*(i64,) * 6)  # p_bg, p_fg, p_diff, radius, seed, frame_no
    feedback = t(a(f32, 2), a(u8, 2), a(u8, 2), f64, f64, f64)  # blink, prev, post, gain, up, down
    out = t(a(f32, 2), a(u8, 2), a(i64, 2))  # score, mask, stepped (by row and block)
    return {
        "olkn_frame": [head + (olkn, policy, feedback, out)],
        "norma_frame": [head + (norma, policy, feedback, out)],
        "norma_update_frame": [head + (norma, policy, t(a(f64, 2), a(u8, 2)), t(a(i64, 2)))],
        "score_frame": [head + (f64, a(f32, 2), a(f64, 2), a(f64, 2), a(u8, 2), a(u8, 2), feedback)],
        "norma_score_frame": [head[:3] + (t(f64, f64), a(f32, 2), a(f64, 2), a(u8, 2), a(u8, 2), feedback)],
        "window_pass": [(a(u8, 2), i64, nt.boolean, i64, a(i32, 2)), (a(i32, 2), i64, nt.boolean, i64, a(u8, 2))],
        "gather_grid": [(head[1], a(u8, 2), a(i64, 1), a(i64, 1), t(a(u8, 3), a(f32, 2), a(i32, 2), a(u8, 1)))],
    }


def compile_ptx_all(cc: tuple[int, int] = (9, 0)) -> dict[str, int]:
    """Compile every kernel to PTX for compute capability ``cc`` (numba-cuda and its NVVM, no GPU needed: a check
    that the CPU engine's functions compile for the device); returns each kernel's PTX size in bytes (of all its
    signatures)."""
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
            for sig in signatures()[f.__name__]:
                ptx, _ = cuda.compile_ptx(_rebind(f), sig, cc=cc)
                sizes[f.__name__] = sizes.get(f.__name__, 0) + len(ptx)
        return sizes
    finally:
        dispatcher.get_current_device = current
        _DEVICE.clear()  # compiled for ``cc``, not for this machine's device
