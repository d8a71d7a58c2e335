"""Kernel functions, jitted.

Kernels are chosen by an integer id so that jitted code can branch on them without
Python objects. ``width`` is the length scale ``p`` in the units of the inputs.

=============  ====================================  ======================
id             k(x, y)                               k(x, x)
=============  ====================================  ======================
GAUSSIAN       ``exp(-||x - y||^2 / width^2)``       1
LAPLACIAN      ``exp(-||x - y|| / width)``           1
POLYNOMIAL     ``(<x, y> + coef0) ** degree``        ``(||x||^2 + coef0) ** degree``
LINEAR         ``<x, y>``                            ``||x||^2``
GAUSSIAN_LUT   Gaussian read from a table indexed    1
               by the integer squared distance
               (integer-valued inputs such as
               uint8 pixels)
CAUCHY         ``1 / (1 + ||u||^(D + 1))``,          1
               ``u = (x - y) / width``, D = len(x)
EPANECHNIKOV   ``max(0, 1 - ||u||^2)``,              1
               ``u = (x - y) / width``
=============  ====================================  ======================

The Gaussian follows the OLK paper (``exp(-||x-y||^2/p^2)``); SVMD's
``exp(-||x-y||^2/(2 sigma^2))`` is ``width = sqrt(2) * sigma``.

The same Gaussian *computed* in float32 (:func:`gaussian_f32`, no kernel id: only nu-NORMA's per-pixel score
pass uses it, where it vectorises across pixels) agrees with the table within 2e-5 (relative).

Texture (bgsub's olkn ``texture``): a product of the table's Gaussian over colours and
``exp(-lam h / p^2)`` over the Hamming distance ``h`` of two binary descriptors (one
uint16 word per channel, :func:`hamming_distance`), i.e. the table read at the effective
squared distance ``d2 + lam h`` (:func:`texture_lut_value`). It takes two arrays per side,
so it has no kernel id here; :func:`learners.expansion.expansion_sum_texture` sums it.

Cauchy and Epanechnikov are the lecture's smoothing kernels for the kernel rule
(seed 002). Neither is positive definite in every dimension (Epanechnikov is not
in general; ``1/(1 + r^a)`` is only for ``a <= 2``, i.e. ``D = 1``): the kernel
machines accept them, but their convergence theory assumes a positive-definite
kernel.

This module imports only numpy, numba and :mod:`learners._arrays` (numpy alone).
"""

import math

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from learners._arrays import jit_array

GAUSSIAN = 0
LAPLACIAN = 1
POLYNOMIAL = 2
LINEAR = 3
GAUSSIAN_LUT = 4
CAUCHY = 5
EPANECHNIKOV = 6

#: Kernel names accepted by the estimators, mapped to their ids.
KERNELS = {"gaussian": GAUSSIAN, "laplacian": LAPLACIAN, "polynomial": POLYNOMIAL, "linear": LINEAR,
           "cauchy": CAUCHY, "epanechnikov": EPANECHNIKOV}

#: Kernels with k(x, x) = 1 for every x.
NORMALISED = (GAUSSIAN, LAPLACIAN, GAUSSIAN_LUT, CAUCHY, EPANECHNIKOV)


@njit(cache=True, fastmath=True, inline="always")
def _sum_of_squares(x, y, cast, zero):
    """``zero + sum_c (cast(x[c]) - cast(y[c]))^2``: the squared distance in the arithmetic of the number type
    ``cast`` (inlined, it compiles to the loop written out for that type)."""
    s = zero
    for c in range(x.shape[0]):
        d = cast(x[c]) - cast(y[c])
        s += d * d
    return s


@njit(cache=True, fastmath=True)
def squared_distance(x, y):
    """``||x - y||^2`` as float64 (safe for unsigned integer inputs)."""
    return _sum_of_squares(x, y, np.float64, 0.0)


@njit(cache=True, fastmath=True, inline="always")
def int_squared_distance(x, y):
    """``||x - y||^2`` in integer arithmetic, for integer-valued inputs."""
    return _sum_of_squares(x, y, np.int64, np.int64(0))


@njit(cache=True, fastmath=True, inline="always")
def lut_value(lut, d2):
    """The table ``lut[k] = exp(-k / p^2)`` (:func:`gaussian_lut`) at the integer squared distance ``d2``; 0
    past the table's end."""
    if d2 < lut.shape[0]:
        return np.float64(lut[d2])
    return 0.0


@njit(cache=True, fastmath=True, inline="always")
def scaled_lut_value(lut, d2, factor):
    """``exp(-d2 / (factor p)^2)`` from the table ``lut[k] = exp(-k / p^2)`` (:func:`gaussian_lut`).

    The Gaussian of width ``factor * p`` at the squared distance ``d2`` is the
    table's Gaussian at ``d2 / factor^2``: the entry at that index rounded to the
    nearest integer (a relative error of at most ``1 - exp(-0.5 / p^2)``, 3e-4 at
    ``p = 40``), 0 past the table's end. ``factor = 1`` reads ``lut[d2]`` exactly.
    """
    u = np.float64(d2) / (factor * factor) + 0.5
    if u < lut.shape[0]:
        return np.float64(lut[np.int64(u)])
    return 0.0


@intrinsic
def _ctpop64(typingctx, v):
    """Number of set bits of the int64 ``v``: LLVM's ``ctpop`` (one POPCNT instruction where the CPU has it)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [ir.IntType(64)])
        return builder.call(fn, [args[0]])

    return sig, codegen


@njit(cache=True, inline="always")
def popcount16(v):
    """Number of set bits of the 16-bit word ``v``."""
    return _ctpop64(np.int64(v) & np.int64(0xFFFF))


@njit(cache=True, inline="always")
def hamming_distance(a, b):
    """Hamming distance of two binary descriptors, one uint16 word per channel: the number of bits in
    which ``a`` and ``b`` differ, summed over the channels (``popcount(a XOR b)``)."""
    h = 0
    for c in range(a.shape[0]):
        h += popcount16(np.int64(a[c]) ^ np.int64(b[c]))
    return h


@njit(cache=True, fastmath=True, inline="always")
def texture_lut_value(lut, d2, h, lam, factor):
    """The product kernel of colour and texture, ``exp(-(d2 + lam h) / (factor p)^2)``, from the table
    ``lut[k] = exp(-k / p^2)``: the colour Gaussian at the squared distance ``d2`` times
    ``exp(-lam h / (factor p)^2)`` at the Hamming distance ``h``, one Gaussian of the effective squared
    distance ``d2 + lam h`` (:func:`scaled_lut_value`; ``factor`` 1 without per-pixel widths). ``lam``:
    squared grey levels per differing bit; ``lam = 0`` reads the colour kernel alone."""
    return scaled_lut_value(lut, np.float64(d2) + lam * np.float64(h), factor)


@njit(cache=True, fastmath=True)
def dot(x, y):
    s = 0.0
    for c in range(x.shape[0]):
        s += np.float64(x[c]) * np.float64(y[c])
    return s


@njit(cache=True, fastmath=True)
def kernel_value(kind, x, y, width, degree, coef0, lut):
    """``k(x, y)`` for the kernel ``kind``.

    Parameters
    ----------
    kind : int
        Kernel id (GAUSSIAN, LAPLACIAN, POLYNOMIAL, LINEAR, GAUSSIAN_LUT, CAUCHY,
        EPANECHNIKOV).
    x, y : 1-D arrays of equal length
    width : float
        Length scale (> 0) for GAUSSIAN, LAPLACIAN, CAUCHY and EPANECHNIKOV.
    degree, coef0 : float
        POLYNOMIAL parameters.
    lut : 1-D float array
        GAUSSIAN_LUT table (see :func:`gaussian_lut`); ignored by other kernels.
    """
    if kind == GAUSSIAN:
        return math.exp(-squared_distance(x, y) / (width * width))
    if kind == GAUSSIAN_LUT:
        return lut_value(lut, int_squared_distance(x, y))
    if kind == LAPLACIAN:
        return math.exp(-math.sqrt(squared_distance(x, y)) / width)
    if kind == POLYNOMIAL:
        return (dot(x, y) + coef0) ** degree
    if kind == CAUCHY:
        u2 = squared_distance(x, y) / (width * width)
        return 1.0 / (1.0 + u2 ** (0.5 * (x.shape[0] + 1)))
    if kind == EPANECHNIKOV:
        u2 = squared_distance(x, y) / (width * width)
        return 1.0 - u2 if u2 < 1.0 else 0.0
    return dot(x, y)


@njit(cache=True, fastmath=True)
def self_kernel(kind, x, width, degree, coef0, lut):
    """``k(x, x)``: 1 for the normalised kernels, computed otherwise."""
    if kind == GAUSSIAN or kind == LAPLACIAN or kind == GAUSSIAN_LUT or kind == CAUCHY or kind == EPANECHNIKOV:
        return 1.0
    return kernel_value(kind, x, x, width, degree, coef0, lut)


def gaussian_lut(width, max_squared_distance, tol=1e-7, dtype=np.float32):
    """Table ``exp(-d2 / width^2)`` for integer ``d2 = 0 .. n-1``.

    The table stops where the kernel falls below ``tol`` (values past its end
    read as 0) or at ``max_squared_distance``, whichever comes first. For uint8
    pixels with ``C`` channels ``max_squared_distance = C * 255**2``.
    """
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width}")
    cutoff = int(math.ceil(-math.log(tol) * width * width)) + 1
    n = int(min(cutoff, max_squared_distance + 1))
    d2 = np.arange(n, dtype=np.float64)
    return np.exp(-d2 / (width * width)).astype(dtype)


EMPTY_LUT = np.zeros(0, dtype=np.float64)

#: :func:`gaussian_f32` computes ``exp(-u)`` as ``exp(-u / 2^GAUSSIAN_F32_SQUARINGS)`` squared that many times.
GAUSSIAN_F32_SQUARINGS = 8


def gaussian_f32_args(width, lut):
    """``(factor, cutoff)`` of :func:`gaussian_f32` for the Gaussian of ``width`` with the support of its table
    ``lut`` (:func:`gaussian_lut`): ``factor = 1 / (width^2 2^GAUSSIAN_F32_SQUARINGS)``, ``cutoff`` the table's
    length."""
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width}")
    return 1.0 / (width * width * 2.0 ** GAUSSIAN_F32_SQUARINGS), float(lut.shape[0])


@njit(cache=True, fastmath=True, inline="always")
def gaussian_f32(d2, factor, cutoff):
    """The Gaussian ``exp(-d2 / width^2)`` computed in float32 (``d2`` float32, ``(factor, cutoff)`` from
    :func:`gaussian_f32_args`): ``exp(-v)`` at ``v = d2 factor`` by its Taylor polynomial of degree 4, squared
    :data:`GAUSSIAN_F32_SQUARINGS` times; 0 from the cutoff on, as the table. ``v`` is taken at the cutoff there
    (the value is not used), so that it stays under about 0.1, where the polynomial's relative error is under 1e-7
    and its powers stay normal floats (evaluated at the distance itself they fall into float32's subnormal range,
    whose arithmetic is slow: nu-NORMA's score pass took 1.07x its time). The float32 roundings, multiplied by the
    squarings, leave the result within 2e-5 of ``exp`` (relative; at most 1.7e-5 measured, widths 0.5 to 255).
    Only comparisons, multiplications and additions: a loop over many distances vectorises, which the table's
    reads do not (they gather). nu-NORMA's score pass sums it over row planes (:mod:`bgsub.models._norma_planes`)."""
    v = min(d2, cutoff) * factor
    one = np.float32(1.0)
    y = one - v * (one - v * (np.float32(0.5) - v * (np.float32(1.0 / 6.0) - v * np.float32(1.0 / 24.0))))
    y = y * y
    y = y * y
    y = y * y
    y = y * y
    y = y * y
    y = y * y
    y = y * y
    y = y * y
    return y if d2 < cutoff else np.float32(0.0)



@njit(cache=True, fastmath=True, parallel=True)
def _gram_parallel(kind, X, Y, width, degree, coef0, lut, out):
    for i in prange(X.shape[0]):
        for j in range(Y.shape[0]):
            out[i, j] = kernel_value(kind, X[i], Y[j], width, degree, coef0, lut)


@njit(cache=True, fastmath=True)
def _gram_serial(kind, X, Y, width, degree, coef0, lut, out):
    for i in range(X.shape[0]):
        for j in range(Y.shape[0]):
            out[i, j] = kernel_value(kind, X[i], Y[j], width, degree, coef0, lut)


#: Below this many kernel evaluations, starting threads costs more than it saves.
_PARALLEL_MIN_EVALUATIONS = 1 << 16


def gram(X, Y=None, kernel="gaussian", width=1.0, degree=3.0, coef0=1.0, lut=None):
    """Kernel matrix ``K[i, j] = k(X[i], Y[j])``, shape ``(len(X), len(Y))``.

    ``kernel`` is a name from :data:`KERNELS` or an id.
    """
    kind = KERNELS[kernel] if isinstance(kernel, str) else int(kernel)
    X = jit_array(np.atleast_2d(X))
    Y = X if Y is None else jit_array(np.atleast_2d(Y))
    out = np.empty((X.shape[0], Y.shape[0]), dtype=np.float64)
    fill = _gram_parallel if X.shape[0] * Y.shape[0] * X.shape[1] >= _PARALLEL_MIN_EVALUATIONS else _gram_serial
    fill(kind, X, Y, float(width), float(degree), float(coef0), EMPTY_LUT if lut is None else lut, out)
    return out
