"""nu-NORMA's frames: serial kernels over bands of rows.

The score pass is :func:`bgsub.models._frame_kernels.score_frame`'s (``offset = 0``), the frames step with the
frame kernels' per-pixel helpers (:func:`bgsub.models._frame_kernels._norma_step`, the diffusion, the draws), so
the same arithmetic in the same order as the ``prange`` loops they replaced: the same scores, masks, offsets,
blink accumulators and model state, bit for bit. Each kernel is a serial ``nogil`` loop over the rows ``rows = (start, stop)`` of a band,
which :func:`bgsub.models._bands.run_bands` runs on its threads (one band per thread), with every
array a view without a reference count (:func:`bgsub.models._frame_kernels._unref`). Measured against the
``prange`` kernels on the same state (2 threads, a loaded 2-core machine): the score pass 0-8 % faster, the
update pass 10-15 % slower, a whole frame the same within the measurements' noise (a few per cent); the
default's two kernels compile from an empty cache in 10-20 % less time (77 s against 87 s, 85 s against 106 s).

Every pixel sums its expansion in full. The decisions cannot be read from a bound: nu-NORMA's offset
tracks the ``nu``-quantile of the pixel's own ``f``, and a background pixel's ``f`` stays within a
fraction of one term of its offset (``docs/performance.md``), so a partial sum or a bound from a
reference value settles few of them.

The score pass writes ``f`` (float64) for the update pass and, unlike ``score_frame``, not the share of the
term a full buffer evicts: nu-NORMA's step does not read it. Once every buffer is full (``full``), the score
pass sums every slot in storage order without reading the ring (:func:`learners.expansion.full_sum_lut`, the
sum a full buffer gets anyway): the pass 1.08-1.11x as fast from 320x240 to 1920x1080, the same bits
(``docs/performance.md``). (Passing the update only the pixels' own decisions, one byte instead of eight, saved
less in the score pass than it cost the update pass, measured.)

The score map is exact (every pixel's full sum, as ``score_frame``'s). The subtractor's score pass runs over row
planes with the Gaussian computed in float32 (:mod:`bgsub.models._norma_planes`) wherever the update pass keeps
them (``update_mask="post"``, the default); :func:`norma_score` serves the frames that do not learn under
``update_mask="raw"``, whose fused frame (:func:`norma_frame`) sums with the table.

This module imports only numpy, numba, the learners' rules, the frame loops' helpers and the bands' thread pool.
"""

import numpy as np
from numba import njit

from bgsub.models._bands import run_bands
from bgsub.models._norma_planes import decide_row, mirror_slot
from bgsub.models._prefetch import PREFETCH_AHEAD, prefetch_state
from bgsub.models._frame_kernels import (_emit, _layout, _level, _norma_novelty_rho, _norma_step, _pixel_sum, _selected,
                                         _unref, _vec, _views)
from learners.expansion import expansion_newest, full_sum_lut

__all__ = ["score", "update", "frame"]


def score(frame, state, scale, lut, out, feedback, full=False):
    """:func:`norma_score` over bands of the frame's rows, one band per thread."""
    run_bands(norma_score, frame, state, scale, lut, out, feedback, full)


def update(frame, state, scale, lut, rule, f_in, mask, policy, stepped, full=False, planes=None):
    """:func:`norma_update` over bands of the frame's rows, one band per thread; ``planes``: the row planes the
    steps keep up to date (:mod:`bgsub.models._norma_planes`), None for none."""
    planes = NO_PLANES if planes is None else planes
    run_bands(norma_update, frame, state, scale, lut, rule, f_in, mask, policy, stepped, full, planes)


def frame(frame, state, scale, lut, rule, policy, feedback, out):
    """:func:`norma_frame` over bands of the frame's rows, one band per thread."""
    run_bands(norma_frame, frame, state, scale, lut, rule, policy, feedback, out)


@njit(cache=True, fastmath=True, nogil=True)
def norma_score(frame, state, scale, lut, out, feedback, full, rows):
    """Score the rows ``rows = (start, stop)`` without learning (:func:`bgsub.models._frame_kernels.score_frame`
    with ``offset = 0`` and no texture features).

    ``state = (samples, coef, ring, rho)`` and ``feedback = (blink, prev, post, gain, up, down)`` as the frame
    kernels take them; ``out = (score, f, mask, own)``: the score ``level - f`` float32 (H, W), ``f`` float64
    (H, W), the raw mask and the pixel's own decision (``rho - f > 0``, without the blink feedback) uint8 (H, W).
    ``full``: every pixel's buffer holds its budget of samples (the ring is not read).
    """
    # every array as a view without a reference count, taken out of its tuple by index, once
    frame, lut = _unref(frame), _unref(lut)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho = _unref(state[3])
    score, f_out, mask, own = _unref(out[0]), _unref(out[1]), _unref(out[2]), _unref(out[3])
    feedback = (_unref(feedback[0]), _unref(feedback[1]), _unref(feedback[2]), feedback[3], feedback[4], feedback[5])
    lay = _layout(frame, (samples, coef, ring, rho))
    W = lay[1]
    for i in range(rows[0], rows[1]):
        for j in range(W):
            p = i * W + j
            if full:  # every slot live: the full buffer's sum, as expansion_sum_lut's
                sv, cf, _ = _views(samples, coef, ring, lay, p)
                f = scale * full_sum_lut(_vec(frame, lay[4], p, lay[3]), sv, cf, lut)
            else:
                _, _, _, _, f, _ = _pixel_sum(frame, samples, coef, ring, lay, p, lut, scale, None)
            f_out[i, j] = f
        # the row's decisions in a loop of their own (each array read once, stores without conditions: it vectorises;
        # the pass 0.86-0.95x its time at 1280x720 and 1920x1080 against the decisions made beside each sum)
        decide_row(i, f_out[i], 1.0, rho, feedback, (score, f_out, mask, own))  # (f_out rewritten: the same values)


#: ``planes`` of an update pass that keeps none.
NO_PLANES = (np.zeros((0, 0, 0, 0), np.uint8), np.zeros((0, 0, 0), np.float32))

#: A pixel the update pass's second loop visits: its column, tagged.
_PUSH = 1 << 28  # selected, and its value novel: the step adds a term
_DIFFUSE = 1 << 29  # not selected: it may learn a neighbour's value
_COLUMN = (1 << 28) - 1


@njit(cache=True, fastmath=True, nogil=True)
def norma_update(frame, state, scale, lut, rule, f_in, mask, policy, stepped, full, planes, rows):
    """Step the pixels of the rows ``rows = (start, stop)`` that ``mask`` (the post-processed mask) selects, after
    the score pass: ``rule = (eta, lam, nu)``, ``f_in`` the score pass's ``f``, ``policy`` as the frame kernels take
    it; ``stepped[i]`` receives the number of pixels of row ``i`` that stepped; ``full``: every pixel's buffer holds
    its budget of samples, so none is empty and the policy reads no count (the pass 0.59-0.66x its time at 1920x1080
    against reading every pixel's ring); ``planes``: row planes (:mod:`bgsub.models._norma_planes`) into which each
    step copies the slot it wrote (empty arrays: none; at 1920x1080 the pass takes 1.3x its time with them).

    Each row runs two loops. The first draws every pixel's selection and moves the offset of each selected pixel
    (:func:`learners.steps.norma_novelty_rho`, the offset of its step), without branches, so that it vectorises;
    it tags the pixels whose step adds a term (about one in nine on a road) and, with diffusion on, those not
    selected. The second runs the step of the tagged pixels (:func:`bgsub.models._frame_kernels._norma_step`,
    from their old offset): the update pass 0.73-0.87x its time at 1280x720 and 0.78x at 1920x1080 against one
    loop of steps (the same bits). The second loop prefetches the state of the pixel :data:`PREFETCH_AHEAD` entries
    on, whose lines its steps write: the pass 0.84x its time at 1920x1080 and 0.90x at 1280x720 (no difference at
    640x480 and, in `apply`, at 320x240)."""
    frame, lut, f_in, mask = _unref(frame), _unref(lut), _unref(f_in), _unref(mask)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho, stepped = _unref(state[3]), _unref(stepped)
    ps, pc = _unref(planes[0]), _unref(planes[1])
    mirror = ps.shape[0] > 0
    lay = _layout(frame, (samples, coef, ring, rho))
    p_bg, p_fg, p_diff, radius, seed, frame_no = policy
    eta, nu = rule[0], rule[2]
    diffusion = p_diff > 0 and radius > 0
    W = lay[1]
    old_rho = np.empty(W)  # the row's offsets before the first loop
    tags = np.empty(W, np.int32)
    todo = np.empty(W, np.int32)
    for i in range(rows[0], rows[1]):
        n = 0
        for j in range(W):
            filled = 1 if full or ring[i, j, 1] > 0 else 0  # an empty buffer always learns
            sel = _selected(mask[i, j] != 0, filled, 1, p_bg, p_fg, seed, frame_no, i * W + j)
            rho0 = rho[i, j]
            f = f_in[i, j]
            old_rho[j] = rho0
            rho[i, j] = _norma_novelty_rho(f, rho0, eta, nu) if sel else rho0
            n += sel
            tags[j] = (_PUSH if f < rho0 else 0) if sel else (_DIFFUSE if diffusion else 0)
        n_todo = 0
        for j in range(W):  # every pixel written, the untagged overwritten by the next
            todo[n_todo] = j | tags[j]
            n_todo += tags[j] != 0
        for k in range(n_todo):
            if k + PREFETCH_AHEAD < n_todo:  # (the state's lines the steps write: they are cold in a large frame)
                prefetch_state(lay[5], lay[6], lay[7], i * W + (todo[k + PREFETCH_AHEAD] & _COLUMN), lay[2], lay[3])
            tag = todo[k]
            j = tag & _COLUMN
            p = i * W + j
            sv, cf, rg = _views(samples, coef, ring, lay, p)
            done, new_rho = _norma_step((tag & _PUSH) != 0, _vec(frame, lay[4], p, lay[3]), f_in[i, j], frame, lay,
                                        mask, (i, j, p), (sv, cf, rg), lut, scale, rule, old_rho[j], policy)
            if done:
                rho[i, j] = new_rho
                n += (tag & _DIFFUSE) != 0
                if mirror:  # the slot the step wrote (its newest; unchanged when it added no term)
                    mirror_slot((ps, pc), sv, cf, i, j, expansion_newest(rg, lay[2]))
        stepped[i] = n


@njit(cache=True, fastmath=True, nogil=True)
def norma_frame(frame, state, scale, lut, rule, policy, feedback, out, rows):
    """One nu-NORMA frame over the rows ``rows = (start, stop)`` in one pass (``update_mask="raw"``): score, then
    the selected pixels step, neighbour diffusion as in :func:`bgsub.models._frame_kernels.olkn_frame`
    (``out = (score, mask, stepped)``)."""
    frame, lut = _unref(frame), _unref(lut)
    samples, coef, ring = _unref(state[0]), _unref(state[1]), _unref(state[2])
    rho = _unref(state[3])
    blink, nbr_mask, post = _unref(feedback[0]), _unref(feedback[1]), _unref(feedback[2])
    gain, up, down = feedback[3], feedback[4], feedback[5]
    score, mask, stepped = _unref(out[0]), _unref(out[1]), _unref(out[2])
    lay = _layout(frame, (samples, coef, ring, rho))
    p_bg, p_fg, _, _, seed, frame_no = policy
    W = lay[1]
    for i in range(rows[0], rows[1]):
        n = 0
        for j in range(W):
            p = i * W + j
            x, sv, cf, rg, f, _ = _pixel_sum(frame, samples, coef, ring, lay, p, lut, scale, None)
            rho0 = rho[i, j]
            _emit(_level(rho0, blink, i, j, gain) - f, blink, nbr_mask, post, i, j, gain, up, down, score, mask)
            fg = rho0 - f > 0.0  # the policy reads the pixel's own decision, without the feedback
            sel = _selected(fg, 1 if rg[1] > 0 else 0, 1, p_bg, p_fg, seed, frame_no, p)
            done, new_rho = _norma_step(sel, x, f, frame, lay, nbr_mask, (i, j, p), (sv, cf, rg), lut, scale, rule,
                                        rho0, policy)
            if done:
                rho[i, j] = new_rho
                n += 1
        stepped[i] = n
