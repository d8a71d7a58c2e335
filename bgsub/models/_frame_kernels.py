"""Jitted frame loops: one step of every pixel's learner, ``prange`` over rows.

State is structure-of-arrays over the image, passed to the kernels as one tuple
``state = (samples, coef, ring, rho)``:

- ``samples`` : uint8 ``(H, W, B, C)`` support vectors (pixel values);
- ``coef`` : float32 ``(H, W, B)`` stored coefficients;
- ``ring`` : int64 ``(H, W, 2)`` ``[start, count]`` of each pixel's ring buffer;
- ``rho`` : float64 ``(H, W)`` offsets;

with ``scale``, one float shared by all pixels (see :mod:`learners.expansion`), and ``lut``, the
Gaussian table. The other groups of arguments are tuples too (built by
:mod:`bgsub.models._state`):

- ``rule``: olkn's ``(r, nu, C, rho_rule, rho_eta, rho_nu, rho_lo, rho_hi)``, norma's ``(eta, lam, nu)``;
- ``policy = (p_bg, p_fg, p_diff, radius, seed, frame_no)``: the update policy's probabilities (out of
  :data:`PROB_ONE`), the diffusion's radius and the draws' seed and frame;
- ``feedback = (blink, prev, post, gain, up, down)``: the blink accumulators float32 ``(H, W)``, the
  previous raw and output masks uint8 ``(H, W)`` and the feedback's constants (:func:`_emit`);
- ``out = (score, mask, stepped)``: float32 ``(H, W)``, uint8 ``(H, W)``, int64 ``(H,)`` outputs;
- ``texture = (lam, tframe, tsamples, inter, tpattern, tthr)`` (the texture features; ``None``: off, and
  the kernels are compiled without their code): the weight, the frame's LBSP words uint16 ``(H, W, C)``
  and every sample's uint16 ``(H, W, B, C)``, slot for slot with ``samples`` (:func:`_sum_at`,
  :func:`_store_texture`); ``inter, tpattern, tthr``: the inter-frame descriptor (olkn's
  ``texture_mode="inter"``): the frame's 16 pattern points uint8 ``(H, W, C, 16)`` and the thresholds by
  centre value uint8 ``(256,)`` (:func:`bgsub.models._texture.patterns`,
  :func:`bgsub.models._texture.thresholds`).

Plain tuples, not named ones: numba types a namedtuple argument in Python on every call (about 3 us
each, measured), a plain tuple in its C fast path. The kernels take their arrays out of the tuples
once, before their loops, by index (``state[3]``; at most three in one assignment, which Python makes
without a tuple), never by unpacking (``a, b = out``): numba 0.68's parallel loops drop the writes to an
array unpacked from an argument tuple as dead code (its alias analysis does not follow the unpacking),
and an array taken out of a tuple inside a loop costs an atomic reference count per pixel, which
contends between threads (measured: the bounded frame about 2x slower on two threads). Scalars and the
views built in the loops may be unpacked.

A frame is one parallel region (:func:`olkn_frame`; nu-NORMA's frames are in
:mod:`bgsub.models._norma_frame`): every
pixel evaluates ``f_t(x)`` with :func:`learners.expansion.expansion_sum` (the
Gaussian read from a table over integer squared distances), writes its score
(OLK_N ``1 + rho - f``, nu-NORMA ``rho - f``) and raw mask (``score > 0``), and,
when the update policy selects it, applies the very update function the scalar
estimators use (:func:`learners.steps.olk_n_update`,
:func:`learners.steps.norma_novelty_update`). With every pixel selected this is
exactly ``olk_n_step`` (``norma_novelty_step``) per pixel. Random selection uses
a counter-based hash of ``(seed, frame, pixel)``, so results do not depend on the
thread schedule. :func:`score_frame` scores without learning (``learningRate=0``).

One region per frame matters: on the loaded 2-core dev machine each parallel
region costs a thread wake-up (~0.5 ms measured at 64x48), and a separate update
pass (plus numba turning ``np.zeros``/``sum`` into parallel loops of their own)
tripled it.

Per-pixel views. Slicing ``samples[i, j]`` inside a ``prange`` loop makes numba
increment and decrement the parent array's reference count atomically for every
view; with several threads on the same array those atomics contend and a frame
runs slower on two threads than on one (measured: 31 ms vs 34 ms on one thread
per 320x240 score pass, the view-free version 18 ms). :func:`_row_view` and
friends build the same views from raw addresses with ``numba.carray`` (no
reference count), so every pixel still calls the learners' functions on plain
C-contiguous arrays. All state arrays must be C-contiguous (the driver allocates
them so).

This module imports only numpy, numba, the learners' jitted core and the bands' thread pool (:mod:`bgsub.models._bands`).
"""

import numpy as np
from numba import carray, njit, prange, types
from numba.extending import intrinsic

from learners.expansion import (expansion_newest, expansion_push, expansion_sum_lut,
                                expansion_sum_inter_texture, expansion_sum_inter_texture_until, expansion_sum_texture,
                                expansion_sum_texture_until)
from bgsub.models._bands import run_bands
from learners.steps import (RHO_QUANTILE, blink_accumulate, feedback_level, norma_novelty_rho, norma_novelty_update,
                            olk_n_quantile_rho, olk_n_update)

#: Probabilities are compared with 24-bit hashes.
PROB_ONE = 1 << 24

# The learners' update rules that take the pixel's arrays, compiled again from the very same Python
# functions to be inlined into the frame loops: called as separately compiled functions they cost about
# 25 ns a step there (their arguments are passed as array structures through numba's calling
# convention), their arithmetic about 4 ns. Both are fastmath functions, so inlining them into these
# fastmath loops leaves their arithmetic as it is (the loops' results are bit-identical to the calls',
# which the tests against the scalar steps check).
_olk_n_update = njit(fastmath=True, inline="always")(olk_n_update.py_func)
_norma_novelty_update = njit(fastmath=True, inline="always")(norma_novelty_update.py_func)
_norma_novelty_rho = njit(fastmath=True, inline="always")(norma_novelty_rho.py_func)


@intrinsic
def _as_pointer(typingctx, address, like):
    """``address`` (an integer) as a pointer to ``like``'s dtype."""
    sig = types.CPointer(like.dtype)(address, like)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return sig, codegen


@njit(cache=True, inline="always")
def _vec(arr, base, index, n):
    """``arr.reshape(-1, n)[index]`` as a reference-count-free (n,) view; ``base = arr.ctypes.data``."""
    return carray(_as_pointer(base + index * n * arr.itemsize, arr), (n,))


@njit(cache=True, inline="always")
def _unref(arr):
    """``arr`` (C-contiguous) as a view without a reference count: the serial kernels' arrays, so that passing them
    to the inlined helpers inside the loops costs no atomic reference counts per pixel (numba counts every array
    bound to an inlined function's argument; in a ``prange`` loop its gufunc's arguments are not counted)."""
    return carray(_as_pointer(arr.ctypes.data, arr), arr.shape)


@njit(cache=True, inline="always")
def _mat(arr, base, index, n, m):
    """``arr.reshape(-1, n, m)[index]`` as a reference-count-free (n, m) view."""
    return carray(_as_pointer(base + index * n * m * arr.itemsize, arr), (n, m))


@njit(cache=True, inline="always")
def _expansion_layout(frame, samples, coef, ring):
    """``H, W, B, C`` and the base addresses (for :func:`_vec`/:func:`_mat`) of a frame and the per-pixel
    expansions ``samples`` (H, W, B, C), ``coef`` (H, W, B), ``ring`` (H, W, 2)."""
    return (frame.shape[0], frame.shape[1], samples.shape[2], samples.shape[3],
            frame.ctypes.data, samples.ctypes.data, coef.ctypes.data, ring.ctypes.data)


@njit(cache=True, inline="always")
def _expansion_views(samples, coef, ring, sb, cb, rb, p, B, nc):
    """Pixel ``p``'s expansion as reference-count-free views ``(sv, cf, rg)``: samples (B, C), coefficients (B,)
    and ring ``[start, count]``; ``sb, cb, rb`` from :func:`_expansion_layout`."""
    return _mat(samples, sb, p, B, nc), _vec(coef, cb, p, B), _vec(ring, rb, p, 2)


@njit(cache=True, inline="always")
def _hash24(seed, frame_no, index):
    """A uniform 24-bit integer from ``(seed, frame_no, index)`` (splitmix64 finaliser)."""
    z = (np.uint64(seed) + np.uint64(frame_no) * np.uint64(0x9E3779B97F4A7C15)
         + np.uint64(index) * np.uint64(0xD1B54A32D192ED03))
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z >> np.uint64(40))


@njit(cache=True, inline="always")
def _sum_at(x, sv, cf, rg, lut, texture, value_at, model_at):
    """Unscaled sum and evicted share (:func:`learners.expansion.expansion_sum`) of the value ``x`` of the
    frame's pixel ``value_at`` (flat index) under pixel ``model_at``'s expansion ``sv, cf, rg``, kernel

    ``texture = (lam, descriptors, sample_descriptors, inter, patterns, thresholds)`` (olkn's ``texture``;
    ``lam = 0``: off, the rest unread): with ``lam > 0`` the kernel is the product of colour and texture,
    :func:`learners.expansion.expansion_sum_texture` over the frame's descriptor at ``value_at``
    (uint16 (H, W, C)) and ``model_at``'s sample descriptors (uint16 (H, W, B, C)); with ``inter``,
    :func:`learners.expansion.expansion_sum_inter_texture` over the frame's pattern points at ``value_at``
    (uint8 (H, W, C, 16)), each sample's descriptor recomputed around the sample's centre. ``texture = None``
    (off) compiles the kernels without the texture code (numba prunes the branch)."""
    if texture is None:
        return expansion_sum_lut(x, sv, cf, rg, lut)
    if texture[0] > 0.0:
        return _textured_sum(x, sv, cf, rg, lut, texture, value_at, model_at)
    return expansion_sum_lut(x, sv, cf, rg, lut)


@njit(cache=True, fastmath=True, nogil=True)
def _textured_sum(x, sv, cf, rg, lut, texture, value_at, model_at):
    """:func:`_sum_at` with texture features on: called, not inlined, so that a kernel holds one call per place
    instead of a copy of both textured sums (the textured frame compiled in a fraction of the time; each
    textured sum costs far more than the call)."""
    lam = texture[0]
    tframe = texture[1]
    tsamples = texture[2]
    nc = tframe.shape[2]
    tsv = _mat(tsamples, tsamples.ctypes.data, model_at, sv.shape[0], nc)
    if texture[3]:
        tpattern = texture[4]
        pat = _mat(tpattern, tpattern.ctypes.data, value_at, nc, 16)
        return expansion_sum_inter_texture(x, pat, sv, tsv, cf, rg, texture[5], lam, 1.0, lut)
    tx = _vec(tframe, tframe.ctypes.data, value_at, nc)
    return expansion_sum_texture(x, tx, sv, tsv, cf, rg, lam, 1.0, lut)


@njit(cache=True, inline="always")
def _store_texture(texture, value_at, model_at, rg, B):
    """After pixel ``model_at`` stored a term (the newest slot of ``rg``) on the value of the frame's pixel
    ``value_at``: that value's descriptor into the slot's sample descriptor (texture on, see :func:`_sum_at`)."""
    if texture is None:
        return
    if texture[0] > 0.0:
        tframe = texture[1]
        tsamples = texture[2]
        nc = tframe.shape[2]
        slot = expansion_newest(rg, B)
        tx = _vec(tframe, tframe.ctypes.data, value_at, nc)
        tsv = _mat(tsamples, tsamples.ctypes.data, model_at, B, nc)
        for c in range(nc):
            tsv[slot, c] = tx[c]


@njit(cache=True, inline="always")
def _layout(frame, state):
    """:func:`_expansion_layout` of a frame and the per-pixel ``state`` (module docstring)."""
    return _expansion_layout(frame, state[0], state[1], state[2])


@njit(cache=True, inline="always")
def _views(samples, coef, ring, lay, p):
    """Pixel ``p``'s expansion ``(sv, cf, rg)`` (:func:`_expansion_views`) under the layout ``lay``
    (:func:`_layout`)."""
    return _expansion_views(samples, coef, ring, lay[5], lay[6], lay[7], p, lay[2], lay[3])


@njit(cache=True, inline="always")
def _pixel_sum(frame, samples, coef, ring, lay, p, lut, scale, texture):
    """Pixel ``p``'s value ``x``, its expansion's views ``sv, cf, rg``, ``f = f_t(x)`` and the true share
    of the term a full buffer evicts (``texture``: :func:`_sum_at`)."""
    x = _vec(frame, lay[4], p, lay[3])
    sv, cf, rg = _views(samples, coef, ring, lay, p)
    total, oldest = _sum_at(x, sv, cf, rg, lut, texture, p, p)
    return x, sv, cf, rg, scale * total, scale * oldest


#: A textured sum stops early only this far past the point that decides (the full sum's rounding may differ).
EARLY_MARGIN = 1e-9


@njit(cache=True, inline="always")
def _textured_sum_until(frame, samples, coef, ring, lay, p, lut, scale, texture, limit):
    """:func:`_pixel_sum` of pixel ``p`` under texture features (full buffer, table width), stopping once
    ``f`` reaches ``limit``: every term is non-negative, so the rest can only raise it. Returns
    ``(x, sv, cf, rg, f, oldest, stopped)``; a pixel that stopped reports its partial ``f`` (at least
    ``limit``) and ``oldest = 0``, one that did not the full sum's ``f`` and ``oldest`` as
    :func:`_pixel_sum` computes them (bit for bit: the sum is done again by the same function)."""
    if texture is None:  # (never stops: no texture, no early stop)
        x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, lay, p, lut, scale, texture)
        return x, sv, cf, rg, f, oldest, False
    x = _vec(frame, lay[4], p, lay[3])
    sv, cf, rg = _views(samples, coef, ring, lay, p)
    total, stopped = _textured_sum_until_called(x, sv, cf, lut, texture, p, scale, limit)
    if stopped:
        return x, sv, cf, rg, scale * total, 0.0, True
    t, oldest = _sum_at(x, sv, cf, rg, lut, texture, p, p)
    return x, sv, cf, rg, scale * t, scale * oldest, False


@njit(cache=True, fastmath=True, nogil=True)
def _textured_sum_until_called(x, sv, cf, lut, texture, p, scale, limit):
    """The textured sum of :func:`_textured_sum_until` up to ``limit``: ``(total, stopped)``; called, not inlined
    (:func:`_textured_sum`)."""
    B = sv.shape[0]
    nc = x.shape[0]
    lam = texture[0]
    tsamples = texture[2]
    tsv = _mat(tsamples, tsamples.ctypes.data, p, B, nc)
    if texture[3]:
        tpattern = texture[4]
        return expansion_sum_inter_texture_until(x, _mat(tpattern, tpattern.ctypes.data, p, nc, 16), sv, tsv, cf,
                                                 texture[5], lam, 1.0, lut, scale, limit)
    tframe = texture[1]
    return expansion_sum_texture_until(x, _vec(tframe, tframe.ctypes.data, p, nc), sv, tsv, cf, lam, 1.0, lut,
                                       scale, limit)


@njit(cache=True, inline="always")
def _level(level, blink, i, j, gain):
    """The pixel's decision level, lowered where its decisions blink (:func:`learners.steps.feedback_level`)."""
    if gain > 0.0:
        return feedback_level(level, np.float64(blink[i, j]), gain)
    return level


@njit(cache=True, inline="always")
def _emit(sc, blink, prev, post, i, j, gain, up, down, score, mask):
    """Write score ``sc`` and the raw mask of pixel ``(i, j)``; move its blink accumulator
    (:func:`learners.steps.blink_accumulate`). A flip is a decision that differs from ``prev`` (the
    previous raw mask) where ``post`` (the previous output mask) is background: as in SuBSENSE, the
    edges of detected objects do not count as blinking. Returns whether the pixel is foreground."""
    fg = sc > 0.0
    score[i, j] = sc
    mask[i, j] = 255 if fg else 0
    if gain > 0.0 and (up > 0.0 or down > 0.0):
        flipped = (fg != (prev[i, j] != 0)) & (post[i, j] == 0)
        blink[i, j] = blink_accumulate(np.float64(blink[i, j]), flipped, up, down)
    return fg


@njit(cache=True, parallel=True, fastmath=True, nogil=True)
def score_frame(frame, state, scale, lut, offset, score, f_out, oldest_out, mask, own, feedback, texture):
    """Evaluate every pixel's expansion at the new frame (no learning: the state is read only).

    Parameters
    ----------
    frame : uint8 (H, W, C)
    state : the per-pixel state ``(samples, coef, ring, rho)`` (module docstring)
    scale : float
        Global coefficient scale in force.
    lut : float32 (n,)
        Gaussian table over integer squared distances.
    offset : float
        1.0 for OLK_N (score ``1 + rho - f``), 0.0 for nu-NORMA (``rho - f``).
    score : float32 (H, W)
        Output: novelty score, positive = foreground.
    f_out, oldest_out : float64 (H, W)
        Output: ``f_t(x)`` (own model) and the true share of the term a full buffer evicts.
    mask : uint8 (H, W)
        Output: 255 where ``score > 0``, else 0.
    own : uint8 (H, W)
        Output: the pixel's own decision, 255 where ``offset + rho - f > 0`` (without the blink
        feedback, which changes only the output: the update policy reads this).
    feedback : ``(blink, prev, post, gain, up, down)``
        Blinking accumulators: lower the decision level by ``gain`` (0: off) and, with
        ``up``/``down`` > 0, move by the flips against ``prev`` (the previous raw mask)
        outside ``post`` (the previous output mask), see :func:`_emit`.
    texture : ``(lam, tframe, tsamples, inter, tpattern, tthr)``
        Texture features (:func:`_sum_at`; ``None``: off).
    """
    samples, coef, ring = state[0], state[1], state[2]  # (arrays by index, once: module docstring)
    rho, lay = state[3], _layout(frame, state)
    blink, prev, post = feedback[0], feedback[1], feedback[2]
    gain, up, down = feedback[3], feedback[4], feedback[5]
    W = lay[1]
    for i in prange(lay[0]):
        for j in range(W):
            x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, lay, i * W + j, lut, scale, texture)
            f_out[i, j] = f
            oldest_out[i, j] = oldest
            level = offset + rho[i, j]
            own[i, j] = 255 if level - f > 0.0 else 0
            sc = _level(level, blink, i, j, gain) - f
            _emit(sc, blink, prev, post, i, j, gain, up, down, score, mask)


@njit(cache=True, inline="always")
def _selected(fg, count, B, p_bg, p_fg, seed, frame_no, index):
    """Whether a pixel steps this frame: always while its buffer fills, else by policy."""
    return _selected_drawn(fg, count, B, p_bg, p_fg, _hash24(seed, frame_no, index))


@njit(cache=True, inline="always")
def _selected_drawn(fg, count, B, p_bg, p_fg, draw):
    """:func:`_selected` with its draw ``_hash24(seed, frame_no, index)`` made beforehand (without branches, so
    that a loop over a row's pixels vectorises: the bounded frame's)."""
    p = p_fg if fg else p_bg
    return (count < B) | (p >= PROB_ONE) | ((p > 0) & (draw < p))


@njit(cache=True, parallel=True, nogil=True)
def renormalise(coef, scale):
    """Fold the global scale into the stored coefficients (``coef *= scale``)."""
    H = coef.shape[0]
    for i in prange(H):
        for j in range(coef.shape[1]):
            for b in range(coef.shape[2]):
                coef[i, j, b] = np.float32(coef[i, j, b] * scale)


@njit(cache=True, inline="always")
def _weighted_sample_sum(samples, coef, ring, i, j, acc):
    """``acc[c] = sum_k |coef_k| samples_k[c]`` over pixel ``(i, j)``'s live samples; returns ``sum_k |coef_k|``.

    ``acc / sum`` is the pixel's background estimate (coefficient-weighted mean of its samples). ``acc`` has the
    model's 1 (grey) or 3 (colour) channels.
    """
    B = samples.shape[2]
    start = ring[i, j, 0]
    count = ring[i, j, 1]
    # each sum in a local variable (the same terms in the same order): colour's four sums (grey's two) side by
    # side, so that their chains of additions overlap; summed in ``acc`` itself, every term went through memory.
    # A loop for each: one loop with the colour channels under a condition took 1.1-1.2x the time
    wsum = 0.0
    if acc.shape[0] == 3:
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        for k in range(count):
            slot = start + k
            if slot >= B:
                slot -= B
            w = abs(np.float64(coef[i, j, slot]))
            wsum += w
            a0 += w * np.float64(samples[i, j, slot, 0])
            a1 += w * np.float64(samples[i, j, slot, 1])
            a2 += w * np.float64(samples[i, j, slot, 2])
        acc[0] = a0
        acc[1] = a1
        acc[2] = a2
        return wsum
    a0 = 0.0
    for k in range(count):
        slot = start + k
        if slot >= B:
            slot -= B
        w = abs(np.float64(coef[i, j, slot]))
        wsum += w
        a0 += w * np.float64(samples[i, j, slot, 0])
    acc[0] = a0
    return wsum


@njit(cache=True, parallel=True, nogil=True)
def background_image(samples, coef, ring, out):
    """Coefficient-weighted mean of each pixel's live samples, as uint8 ``(H, W, C)``.

    A pixel without samples reads 0.
    """
    H = samples.shape[0]
    W = samples.shape[1]
    C = samples.shape[3]
    for i in prange(H):
        acc = np.zeros(C, dtype=np.float64)
        for j in range(W):
            wsum = _weighted_sample_sum(samples, coef, ring, i, j, acc)
            for c in range(C):
                v = acc[c] / wsum if wsum > 0.0 else 0.0
                out[i, j, c] = np.uint8(min(255.0, max(0.0, v + 0.5)))


@njit(cache=True, inline="always")
def _diffusion_source(nbr_mask, i, j, H, W, radius, p_diff, seed, frame_no, index):
    """Flat index of the neighbour whose value pixel ``(i, j)`` learns this frame, or -1.

    Neighbour diffusion (ViBe, SuBSENSE) in its pull form, so that every pixel
    writes only its own state: with probability ``p_diff`` the pixel picks a
    uniform neighbour in the ``(2 radius + 1)^2`` square (replicated border) and,
    when ``nbr_mask`` classifies that neighbour background, learns its value.
    Equivalent in distribution to a background pixel pushing its value into a
    random neighbour's model. Two extra hashes of ``(seed, frame, pixel)``.
    """
    if p_diff <= 0 or radius <= 0 or not _diffuses(p_diff, radius, _diffusion_draw(seed, frame_no, index)):
        return -1  # (no draw made where diffusion is off: norma's default, every pixel every frame)
    return _diffusion_neighbour(nbr_mask, i, j, H, W, radius, seed, frame_no, index)


@njit(cache=True, inline="always")
def _diffusion_draw(seed, frame_no, index):
    """The 24-bit draw that decides whether pixel ``index`` learns a neighbour's value this frame."""
    return _hash24(seed + 7919, frame_no, index)


@njit(cache=True, inline="always")
def _diffuses(p_diff, radius, draw):
    """Whether a pixel whose :func:`_diffusion_draw` is ``draw`` learns a neighbour's value this frame (without
    branches, as :func:`_selected_drawn`)."""
    return (p_diff > 0) & (radius > 0) & (draw < p_diff)


@njit(cache=True, inline="always")
def _diffusion_neighbour(nbr_mask, i, j, H, W, radius, seed, frame_no, index):
    """:func:`_diffusion_source` after its first draw passed: the neighbour, or -1 where ``nbr_mask`` classifies
    it foreground."""
    side = 2 * radius + 1
    k = _hash24(seed + 104729, frame_no, index) % (side * side - 1)
    if k >= (side * side) // 2:
        k += 1  # skip the centre
    ii = min(max(i + k // side - radius, 0), H - 1)
    jj = min(max(j + k % side - radius, 0), W - 1)
    if nbr_mask[ii, jj] != 0:
        return -1
    return ii * W + jj


@njit(cache=True, inline="always")
def _neighbour_value(frame, lay, nbr_mask, pix, view, lut, scale, policy, texture):
    """The neighbour value pixel ``pix = (i, j, p)`` learns this frame (:func:`_diffusion_source`) with ``f`` and
    the evicted term's share of its expansion ``view = (sv, cf, rg)`` at it: ``(q, x_q, f, f_oldest)``,
    ``q = -1`` when none is drawn (with ``texture``, the neighbour's descriptor counts: :func:`_sum_at`)."""
    i, j, p = pix
    sv, cf, rg = view
    _, _, p_diff, radius, seed, frame_no = policy
    q = _diffusion_source(nbr_mask, i, j, lay[0], lay[1], radius, p_diff, seed, frame_no, p)
    xq = _vec(frame, lay[4], max(q, 0), lay[3])
    if q < 0:
        return q, xq, 0.0, 0.0
    total, oldest = _sum_at(xq, sv, cf, rg, lut, texture, q, p)
    return q, xq, scale * total, scale * oldest


@njit(cache=True, inline="always")
def _olkn_update(x, f, f_oldest, view, scale, rule, rho0):
    """:func:`learners.steps.olk_n_update` of the expansion ``view = (sv, cf, rg)`` under olkn's ``rule``
    (module docstring). Returns ``(a, rho)``."""
    sv, cf, rg = view
    return _olk_n_update(x, f, f_oldest, sv, cf, rg, scale, rule[0], rule[1], rule[2], rho0, rule[3], 1.0, 0.0)


@njit(cache=True, inline="always")
def _quantile_rho(f, rho0, rule):
    """:func:`learners.steps.olk_n_quantile_rho` under olkn's ``rule``."""
    return olk_n_quantile_rho(f, rho0, rule[4], rule[5], rule[6], rule[7])


@njit(cache=True, inline="always")
def _step_value(selected, x, f, f_oldest, frame, lay, nbr_mask, pix, view, lut, scale, policy, texture):
    """The value pixel ``pix = (i, j, p)`` learns this frame: its own ``x`` (with ``f`` and ``f_oldest``) when the
    policy ``selected`` it, else, if drawn, a background neighbour's (:func:`_neighbour_value`). Returns
    ``(at, x, f, f_oldest)``, ``at`` the flat index of the value's pixel, -1 when there is none."""
    if selected:
        return pix[2], x, f, f_oldest
    return _neighbour_value(frame, lay, nbr_mask, pix, view, lut, scale, policy, texture)


@njit(cache=True, inline="always")
def _olkn_step(selected, x, f, f_oldest, frame, lay, nbr_mask, pix, view, lut, scale, rule, rho0, policy, texture):
    """OLK_N step of pixel ``pix`` on the value of :func:`_step_value`; with ``texture`` the new sample keeps the
    value's descriptor (:func:`_store_texture`). Returns ``(stepped, rho)``."""
    at, x, f, f_oldest = _step_value(selected, x, f, f_oldest, frame, lay, nbr_mask, pix, view, lut, scale, policy,
                                     texture)
    if at < 0:
        return False, rho0
    a, new_rho = _olkn_update(x, f, f_oldest, view, scale, rule, rho0)
    _store_texture(texture, at, pix[2], view[2], lay[2])
    return True, new_rho


@njit(cache=True, inline="always")
def _norma_step(selected, x, f, frame, lay, nbr_mask, pix, view, lut, scale, rule, rho0, policy):
    """nu-NORMA step of pixel ``pix`` under ``rule = (eta, lam, nu)`` (see :func:`_olkn_step`; no texture
    features). Returns ``(stepped, rho)``."""
    at, x, f, _ = _step_value(selected, x, f, 0.0, frame, lay, nbr_mask, pix, view, lut, scale, policy, None)
    if at < 0:
        return False, rho0
    new_rho = _norma_novelty_update(x, f, view[0], view[1], view[2], scale, rule[0], rule[1], rule[2], rho0, 0.0)[1]
    return True, new_rho


@njit(cache=True, parallel=True, fastmath=True, nogil=True)
def olkn_frame(frame, state, scale, lut, rule, policy, feedback, out, texture, early):
    """One OLK_N frame in one pass: score every pixel, then step the selected ones.

    Equivalent to :func:`score_frame` (``offset = 1``) followed by an update of the
    pixels the raw mask selects, in a single parallel region (one thread wake-up per
    frame instead of two, each pixel's state read once).
    Under the quantile offset rule every pixel's offset moves by
    :func:`learners.steps.olk_n_quantile_rho` at every frame. A pixel the policy
    does not select may learn a neighbour's value instead (:func:`_diffusion_source`,
    the neighbours classified by ``feedback``'s ``prev``, the previous frame's raw mask).
    ``out = (score, mask, stepped)``: ``stepped[i]`` receives the number of pixels of row ``i`` that stepped.
    ``feedback``'s ``gain > 0`` lowers the decision level of blinking pixels (as in :func:`score_frame`).
    ``texture`` (:func:`_sum_at`): the product kernel of colour and texture; every stored sample keeps
    its value's descriptor (:func:`_store_texture`).
    ``early`` (texture features at the table's width): a pixel with a full
    buffer stops its textured sum once ``f`` passes both its decision level and the point where the
    multiplier saturates at ``nu`` (:func:`_textured_sum_until`): its decisions, offset and step are the
    full sum's, its score ``level - f`` is of the same sign and no lower.
    """
    samples, coef, ring = state[0], state[1], state[2]  # (arrays by index, once: module docstring)
    rho, lay = state[3], _layout(frame, state)
    blink, nbr_mask, post = feedback[0], feedback[1], feedback[2]
    gain, up, down = feedback[3], feedback[4], feedback[5]
    score, mask, stepped = out[0], out[1], out[2]
    W, B = lay[1], lay[2]
    p_bg, p_fg, _, _, seed, frame_no = policy
    quantile = rule[3] == RHO_QUANTILE
    a_hi = 1.0 + rule[0] - rule[1]  # f >= a_hi: a = nu
    for i in prange(lay[0]):
        n = 0
        for j in range(W):
            p = i * W + j
            rho0 = rho[i, j]
            if early and ring[i, j, 1] == B:
                x, sv, cf, rg, f, oldest, _ = _textured_sum_until(frame, samples, coef, ring, lay, p, lut, scale,
                                                                  texture, max(1.0 + rho0, a_hi) + EARLY_MARGIN)
            else:
                x, sv, cf, rg, f, oldest = _pixel_sum(frame, samples, coef, ring, lay, p, lut, scale, texture)
            _emit(_level(1.0 + rho0, blink, i, j, gain) - f, blink, nbr_mask, post, i, j, gain, up, down, score, mask)
            fg = 1.0 + rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
            if quantile:
                rho0 = _quantile_rho(f, rho0, rule)
                rho[i, j] = rho0
            sel = _selected(fg, rg[1], B, p_bg, p_fg, seed, frame_no, p)
            done, new_rho = _olkn_step(sel, x, f, oldest, frame, lay, nbr_mask, (i, j, p), (sv, cf, rg), lut, scale,
                                       rule, rho0, policy, texture)
            if done:
                rho[i, j] = new_rho
                n += 1
        stepped[i] = n


#: Added to the seed of the bootstrap's draws, so that they are not the update policy's (:func:`_hash24`).
BOOTSTRAP_SALT = 104729
#: Pixels of a row whose bootstrap sums run side by side (:func:`olkn_bootstrap`).
BOOTSTRAP_LANES = 8
#: Margin by which a bootstrap sum passes the point where its step saturates before the rest of its terms are
#: left out (:func:`olkn_bootstrap`; the floating-point evaluation of the step's comparisons).
BOOTSTRAP_MARGIN = 1e-9


@njit(cache=True, inline="always")
def bootstrap_offset(seed, radius, b, axis, index):
    """The offset in ``[-radius, radius]`` along ``axis`` (0: rows, 1: columns) of the neighbour whose value
    pixel ``index`` learns at bootstrap step ``b >= 1``: a counter-based hash of ``(seed, b, axis, index)``, as
    the update policy's draws, so that no array of draws is made and the split into bands changes nothing."""
    h = _hash24(seed + BOOTSTRAP_SALT, 2 * b + axis, index)
    return ((h * (2 * radius + 1)) >> 24) - radius


@njit(cache=True, inline="always")
def _bootstrap_source(draws, b, i, j, H, W):
    """Flat index of the value pixel ``(i, j)`` learns at bootstrap step ``b``: itself at ``b = 0``, else the
    neighbour at the offsets :func:`bootstrap_offset` draws (replicated border); ``draws = (seed, radius)``."""
    p = i * W + j
    if b == 0:
        return p
    ii = min(max(i + bootstrap_offset(draws[0], draws[1], b, 0, p), 0), H - 1)
    jj = min(max(j + bootstrap_offset(draws[0], draws[1], b, 1, p), 0), W - 1)
    return ii * W + jj


@njit(cache=True, nogil=True)
def bootstrap_sources(draws, b, rows, cols):
    """The rows and columns (int64 ``(H, W)``, written in place) of the values the pixels learn at bootstrap step
    ``b``, as :func:`_bootstrap_source` (the frame-by-frame bootstrap's)."""
    H, W = rows.shape
    for i in range(H):
        for j in range(W):
            q = _bootstrap_source(draws, b, i, j, H, W)
            rows[i, j] = q // W
            cols[i, j] = q % W


#: :func:`olkn_bootstrap`'s fastmath flags: fastmath without ``reassoc`` and ``contract``, so that its sums add as
#: :func:`learners.expansion.filling_sum_lut` does (the learners' rules it calls are compiled on their own).
BOOTSTRAP_FLAGS = {"nnan", "ninf", "nsz", "arcp", "afn"}


def bootstrap_olkn(frame, draws, state, scales, lut, rule):
    """:func:`olkn_bootstrap` over bands of the frame's rows, one band per thread
    (:func:`bgsub.models._bands.run_bands`)."""
    run_bands(olkn_bootstrap, frame, draws, state, scales, lut, rule)


@njit(cache=True, fastmath=BOOTSTRAP_FLAGS, nogil=True)
def olkn_bootstrap(frame, draws, state, scales, lut, rule, rows):
    """The first-frame bootstrap of olkn (``init="neighbours"``) pixel by pixel over the rows
    ``rows = (start, stop)`` (:func:`bootstrap_olkn` runs the bands in parallel): ``len(scales)`` learner
    steps of every pixel, step ``b`` on the value at :func:`_bootstrap_source` under the global scale
    ``scales[b]``. Every buffer must start empty and hold ``len(scales)`` terms or more (a new model's).

    The model it leaves is the one ``len(scales)`` calls of :func:`olkn_frame` leave, call ``b`` on the frame of
    those values with every pixel selected and no diffusion, the scale advanced between calls (the scales must
    not cross a renormalisation): the same arithmetic in the same order for each pixel, so the same bits. Their
    decisions (scores, masks, blink accumulators) are not written: the bootstrap's are not the stream's (the
    driver scores the first frame after it and clears the accumulators). Each pixel's state stays in cache
    through its steps, and no frame of neighbour values is gathered. No texture (the driver runs the frames
    there). A serial kernel over a band, not a ``prange`` loop: numba compiles it without its parallel-loop
    passes.

    The pixels of a row go by blocks of :data:`BOOTSTRAP_LANES`: their steps' values first, then step by step
    the block's sums side by side (each lane's terms added in the order of
    :func:`learners.expansion.filling_sum_lut`, which the frames run on a filling buffer) and each pixel's
    update. The sums' loops then run across the lanes, vectorised, instead of over one buffer's few terms. A
    block's sums stop once every lane's partial sum is past its pixel's level and the point where the multiplier
    saturates (every term is non-negative, so each full sum is past them too, and the step is the one it would
    be): on a 1920x1080 highway frame 60 % of the terms are added.
    """
    # every array as a view without a reference count (:func:`_unref`), taken out of its tuple by index, once
    frame, scales, lut = _unref(frame), _unref(scales), _unref(lut)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho = _unref(state[3])
    lay = _expansion_layout(frame, samples, coef, ring)
    H = lay[0]
    W = lay[1]
    nc = lay[3]
    fb = lay[4]
    quantile = rule[3] == RHO_QUANTILE
    a_hi = 1.0 + rule[0] - rule[1]  # f >= a_hi: a = nu
    steps = scales.shape[0]
    B = lay[2]
    # each block of BOOTSTRAP_LANES pixels of a row: their steps' values, then step by step the block's sums side
    # by side and each pixel's update
    src = np.empty((steps, BOOTSTRAP_LANES), np.int64)  # step b's value of each lane: its flat index in the frame
    values = np.zeros((steps, nc, BOOTSTRAP_LANES), np.int32)
    coefs = np.zeros((steps, BOOTSTRAP_LANES))  # the stored coefficient of each lane's step b
    totals = np.empty(BOOTSTRAP_LANES)
    floors = np.empty(BOOTSTRAP_LANES)  # each lane's f past which its step no longer depends on the sum
    d2 = np.empty(BOOTSTRAP_LANES, np.int64)
    n_lut = lut.shape[0]
    for i in range(rows[0], rows[1]):
        for j0 in range(0, W, BOOTSTRAP_LANES):
            lanes = min(BOOTSTRAP_LANES, W - j0)  # (lanes past the row's end compute on stale values, unused)
            for b in range(steps):
                for lane in range(lanes):
                    q = _bootstrap_source(draws, b, i, j0 + lane, H, W)
                    src[b, lane] = q
                    x = _vec(frame, fb, q, nc)
                    for c in range(nc):
                        values[b, c, lane] = np.int32(x[c])
            for b in range(steps):
                scale = scales[b]
                # the block's sums at its step-b values, side by side: :func:`learners.expansion.filling_sum_lut` of
                # each lane's buffer, the same products added in the same order (BOOTSTRAP_FLAGS: neither reordered
                # nor fused), in loops across the lanes that vectorise. Written out here: an inlined function would
                # count references to its array arguments at every call (the kernel 1.08-1.11x its time)
                for lane in range(BOOTSTRAP_LANES):
                    totals[lane] = 0.0
                # every term is >= 0, so once each lane's partial sum (times the scale) is past its pixel's level
                # 1 + rho and the point where the multiplier saturates at nu, so is its full sum: the pixel's step is
                # not novel and adds a = nu, and under olkn's offset rules (quantile and paper) nothing else of it
                # depends on f. The block's sums stop there, checked every fourth term (every term: no faster)
                for lane in range(BOOTSTRAP_LANES):
                    floors[lane] = max(1.0 + rho[i, j0 + lane], a_hi) + BOOTSTRAP_MARGIN if lane < lanes else -1.0
                for k in range(b):
                    if nc == 3:  # colour: the channels unrolled, one loop across the lanes
                        for lane in range(BOOTSTRAP_LANES):
                            e0 = values[k, 0, lane] - values[b, 0, lane]
                            e1 = values[k, 1, lane] - values[b, 1, lane]
                            e2 = values[k, 2, lane] - values[b, 2, lane]
                            dd = e0 * e0 + e1 * e1 + e2 * e2
                            total = totals[lane] + coefs[k, lane] * np.float64(lut[min(dd, n_lut - 1)])
                            totals[lane] = total if dd < n_lut else totals[lane]  # a select, not a branch
                    else:
                        for lane in range(BOOTSTRAP_LANES):
                            d2[lane] = 0
                        for c in range(nc):
                            for lane in range(BOOTSTRAP_LANES):
                                e = values[k, c, lane] - values[b, c, lane]
                                d2[lane] += e * e
                        for lane in range(BOOTSTRAP_LANES):
                            total = totals[lane] + coefs[k, lane] * np.float64(lut[min(d2[lane], n_lut - 1)])
                            totals[lane] = total if d2[lane] < n_lut else totals[lane]
                    if (k & 3) == 3:  # (f >= 0 > -1: lanes past the row's end never hold the block back)
                        settled = True
                        for lane in range(BOOTSTRAP_LANES):
                            settled &= scale * totals[lane] >= floors[lane]
                        if settled:
                            break
                for lane in range(lanes):
                    j = j0 + lane
                    sv, cf, rg = _views(samples, coef, ring, lay, i * W + j)
                    x = _vec(frame, fb, src[b, lane], nc)
                    f = scale * totals[lane]
                    rho0 = rho[i, j]
                    if quantile:
                        rho0 = _quantile_rho(f, rho0, rule)
                        rho[i, j] = rho0
                    _, new_rho = _olkn_update(x, f, 0.0, (sv, cf, rg), scale, rule, rho0)  # (no term evicted)
                    rho[i, j] = new_rho
                    coefs[b, lane] = np.float64(cf[expansion_newest(rg, B)])


@njit(cache=True, parallel=True, nogil=True)
def push_frame(frame, state, value):
    """Append ``frame[i, j]`` with stored coefficient ``value`` to every pixel's expansion (nu-NORMA's bootstrap
    frame by frame)."""
    samples = state[0]
    coef = state[1]
    ring = state[2]
    for i in prange(frame.shape[0]):
        for j in range(frame.shape[1]):
            expansion_push(frame[i, j], value, samples[i, j], coef[i, j], ring[i, j])


@njit(cache=True, parallel=True, nogil=True)
def push_bootstrap(frame, draws, state, values):
    """:func:`push_frame` of every bootstrap step in one pass, pixel by pixel: step ``b`` appends the value
    at :func:`_bootstrap_source` with stored coefficient ``values[b]`` (no texture)."""
    samples, coef, ring = state[0], state[1], state[2]  # (arrays by index, once: module docstring)
    lay = _layout(frame, state)
    H = lay[0]
    W = lay[1]
    for i in prange(H):
        for j in range(W):
            sv, cf, rg = _views(samples, coef, ring, lay, i * W + j)
            for b in range(values.shape[0]):
                expansion_push(_vec(frame, lay[4], _bootstrap_source(draws, b, i, j, H, W), lay[3]), values[b], sv,
                               cf, rg)
