"""nu-NORMA background subtractor: one NORMA novelty detector per pixel.

Each pixel runs NORMA's novelty rule with the nu-trick (Kivinen et al. 2004,
eq. 16; ``learners.steps.norma_novelty_update``): old coefficients decay by
``1 - eta*lam`` every step; when ``f(x) < rho`` the pixel value becomes a new
term with coefficient ``eta`` and ``rho -= eta (1 - nu)``, otherwise
``rho += eta nu``. So ``rho`` tracks the nu-quantile of ``f`` over recent
frames.

Score ``rho - f(x)``; positive = novelty = foreground.
"""

from __future__ import annotations

import numpy as np

from bgsub.models import _frame_kernels as fk
from bgsub.models import _norma_frame as nf
from bgsub.models import _norma_planes as _planes
from bgsub.models import _state
from bgsub.models.base import (COMMON_PARAMS, FEEDBACK_PARAMS, REMOVED_PARAMS, PixelKernelSubtractor, from_preset,
                               on_device, with_defaults)
from bgsub.registry import AlgorithmInfo, ParamSpec, register
from learners.kernels import gaussian_f32_args
from learners.steps import norma_decay

__all__ = ["NORMASubtractor", "createNORMA", "NORMA_PARAMS", "NORMA_PRESETS"]

NORMA_PARAMS = (
    ParamSpec("width", float, 40.0, "Gaussian kernel width p in k(x,y) = exp(-||x-y||^2/p^2)",
              "pixel value 0-255", 0.5, 255.0),
    ParamSpec("eta", float, 0.001, "learning rate: coefficient of a new term and step of rho", "", 1e-9, 1.0),
    ParamSpec("lam", float, 0.0001, "regularisation: old coefficients decay by 1 - eta*lam per step", "",
              0.0, 1e3),
    ParamSpec("nu", float, 0.1, "target fraction of novel steps (rho tracks the nu-quantile of f)", "",
              0.0, 1.0),
    ParamSpec("init_rho", str, "quantile",
              "first-frame bootstrap (init=neighbours): 'quantile' stores the B neighbour values with coefficient "
              "eta and sets rho to the nu-quantile of f over them; 'steps' runs B ordinary nu-NORMA steps "
              "(keeps only a few values)", "", choices=("quantile", "steps"), live=False),
) + with_defaults(FEEDBACK_PARAMS, blink_gain=0.5) + with_defaults(COMMON_PARAMS, update_prob=1.0,
                                                                     fg_update_prob=0.05, update_mask="post",
                                                                     stabilise="match", illumination="gain")

NORMA_PRESETS = {
    "paper": {"width": 10.0, "eta": 0.001, "lam": 0.0001, "nu": 0.1, "budget": 20, "color": "bgr",
              "init": "empty", "update_prob": 1.0, "fg_update_prob": 1.0, "update_mask": "raw",
              "median": 0, "min_area": 0, "init_radius": 1, "init_rho": "steps",
              "blink_gain": 0.0, "stabilise": "off", "illumination": "off"},
}


class NORMASubtractor(PixelKernelSubtractor):
    """Per-pixel nu-NORMA novelty detection (OpenCV-style background subtractor).

    Parameters
    ----------
    width : float
        Kernel width ``p`` in pixel values.
    eta : float
        Learning rate.
    lam : float
        Regularisation (decay ``1 - eta*lam`` per step).
    nu : float
        Fraction of novel steps.
    init_rho : {'quantile', 'steps'}
        First-frame bootstrap of the offsets.
    budget, color, update_prob, fg_update_prob, median, min_area, seed
        See :data:`bgsub.models.base.COMMON_PARAMS` and ``docs/parameters.md``; the attributes are
        :class:`bgsub.models.base.PixelKernelSubtractor`'s.

    Notes
    -----
    The score pass sums over a second copy of ``samples_`` and ``coef_`` laid out as row planes, with the Gaussian
    computed in float32 (:mod:`bgsub.models._norma_planes`; 140 bytes a pixel, 290 MB at 1920x1080); the frames
    keep it up to date. Code that writes into ``samples_``, ``coef_`` or ``ring_`` in place calls
    ``_state_changed()`` before the next frame.
    """

    _SPECS = NORMA_PARAMS
    _score_offset = 0.0
    #: 3: ``texture_`` (the samples' descriptors, while the removed ``texture`` was on) joined the state; 4: the
    #: stabiliser's reference and counter.
    _STATE_LAYOUT = 4
    _TEXTURE_LAYOUT = 3
    #: The texture features were removed: off in every default and preset; on, the dev F the same, WavingTrees
    #: lower, at 4-13x less fps (CHANGELOG.md).
    _REMOVED_PARAMS = {**REMOVED_PARAMS, "texture": 0.0}

    @classmethod
    def without_removed_params(cls, params):
        # with the texture features off, their descriptor's settings meant nothing
        if params.get("texture", 0.0) == 0.0:
            params = {k: v for k, v in params.items() if k not in ("texture_threshold", "texture_mode")}
        return super().without_removed_params(params)

    def _check(self, values):
        super()._check(values)
        if not values["eta"] * values["lam"] < 1.0:
            raise ValueError(f"eta * lam must be < 1, got eta={values['eta']} and lam={values['lam']}")

    @property
    def score_range(self) -> tuple[float, float]:
        # f lies in [0, B*eta*decay^-...]: bound by (B + 2) * eta on both sides
        R = (self.params["budget"] + 2) * self.params["eta"]
        return (-R, R)

    def _frame_kernels(self):
        score = (_planes.norma_score_planes, _planes.build_planes) if self._ROW_PLANES else (nf.norma_score,)
        frames = (nf.norma_frame,) if self._fused() else score + (nf.norma_update,)
        boot = ((fk.push_bootstrap, _planes.norma_quantile_offsets)
                if self.params["init"] == "neighbours" and self._can_bootstrap_pixelwise() else ())
        return frames + boot

    def _frame(self, img, p_bg, p_fg, p_diff, mask_out, nbr_mask):
        p = self.params
        args = (img, _state.pixel_state(self), float(self.scale_), self.lut(), _state.norma_rule(p),
                _state.policy(p_bg, p_fg, p_diff, p, self.n_frames_),
                _state.feedback(self.blink_, nbr_mask, self._blink_args()), (self._score, mask_out, self._stepped))
        nf.frame(*args)
        self._planes = None  # (it does not keep them: written anew if a score pass needs them)
        self._state_changed()

    #: Whether the score pass sums over row planes (:mod:`bgsub.models._norma_planes`) where it can (the GPU
    #: engine's host phase does not).
    _ROW_PLANES = True
    _planes = None  # (samples (H, B, C, W), coef (H, B, W)) or None
    _planes_stale = True

    def _state_changed(self):
        """The per-pixel state changed other than by the update pass's steps (an allocation, the bootstrap, a fused
        frame, a renormalisation, a move from the GPU engine): the row planes are written anew before the next score
        pass reads them. Code that writes into ``samples_``, ``coef_`` or ``ring_`` in place calls this too."""
        self._planes_stale = True

    def _row_planes(self):
        """The row planes of the state, up to date (:func:`_norma_planes.build_planes` when the state changed
        otherwise than by the update pass's steps), or None where the score pass sums over the per-pixel state:
        with ``update_mask="raw"`` (the fused frame, which does not keep them) and on the GPU engine's host."""
        if not self._ROW_PLANES or self._fused():
            self._planes = None  # (kept up to date by nobody now: written anew when they are used again)
            return None
        if self._planes is None or self._planes_stale:
            self._planes = _planes.planes_of(self.samples_, self.coef_, self.ring_, self._planes)
            self._planes_stale = False
        return self._planes

    def _allocate(self, H, W, C):
        super()._allocate(H, W, C)
        self._state_changed()

    def reset(self):
        super().reset()
        self._planes = None
        self._state_changed()

    def _on_renormalise(self, factor):
        self._state_changed()

    def _score_pass(self, img, learn):
        planes = self._row_planes()
        if planes is not None:
            _planes.score(img, planes, self.rho_, float(self.scale_), self._gauss(),
                          (self._score, self._f, self._rawmask, self._own),
                          _state.feedback(self.blink_, self.prev_mask_, self._blink_args(learn)))
            return
        nf.score(img, _state.pixel_state(self), float(self.scale_), self.lut(),
                 (self._score, self._f, self._rawmask, self._own),
                 _state.feedback(self.blink_, self.prev_mask_, self._blink_args(learn)), self._all_full())

    def _update(self, img, mask, p_bg, p_fg, p_diff):
        p = self.params
        policy = _state.policy(p_bg, p_fg, p_diff, p, self.n_frames_)
        # (the banded kernels view their arrays as C-contiguous: a filter's output is, a caller's mask may not be)
        nf.update(img, _state.pixel_state(self), float(self.scale_), self.lut(), _state.norma_rule(p), self._f,
                  np.ascontiguousarray(mask), policy, self._stepped, self._all_full(), self._row_planes())

    def _bootstrap_step(self, x, scratch):
        # nu-NORMA's own rule adds a term only when f < rho, so from rho = 0 it would keep
        # one or two of the B values: the bootstrap stores every value with coefficient eta
        if self.params["init_rho"] == "quantile":
            fk.push_frame(x, _state.pixel_state(self), float(self._bootstrap_coef(self.scale_)))
            self.n_steps_ += x.shape[0] * x.shape[1]
        else:
            super()._bootstrap_step(x, scratch)

    def _can_bootstrap_pixelwise(self):
        return self.params["init_rho"] == "quantile"

    def _bootstrap_pixelwise(self, img, draws, scales, scratch):
        values = np.array([self._bootstrap_coef(scale) for scale in scales])
        fk.push_bootstrap(img, draws, _state.pixel_state(self), values)

    def _bootstrap_coef(self, scale):
        """The stored coefficient of a bootstrap value pushed under the global scale ``scale``: ``eta`` once the
        step's decay has applied."""
        return self.params["eta"] / (scale * self._decay())

    def _bootstrap_done(self):
        self._state_changed()
        # ... and sets each pixel's rho to the nu-quantile of f over its own values, summed as the score pass sums
        # (over row planes: the subtractor's own, or written for this alone where it keeps none)
        if self.params["init_rho"] == "quantile":
            planes = self._row_planes()
            if planes is None:
                planes = _planes.planes_of(self.samples_, self.coef_, self.ring_)
            _planes.quantile_offsets(planes, self.ring_, self.rho_, float(self.scale_), self._gauss(),
                                     float(self.params["nu"]))

    def _gauss(self):
        """``(factor, cutoff)`` of the Gaussian computed in float32 (:func:`learners.kernels.gaussian_f32`)."""
        return gaussian_f32_args(float(self.params["width"]), self.lut())

    def _decay(self) -> float:
        return float(norma_decay(self.params["eta"], self.params["lam"]))


def createNORMA(preset: str | None = None, device: str = "cpu", **params) -> NORMASubtractor:
    """Build a nu-NORMA subtractor; ``preset="paper"`` starts from the paper's setting. ``device="cuda"`` runs its
    learners on an NVIDIA GPU (:mod:`bgsub.models._cuda_engine`)."""
    return on_device(from_preset(NORMASubtractor, "norma", NORMA_PRESETS, preset, params), device)


register(AlgorithmInfo(name="norma", factory=createNORMA, params=NORMA_PARAMS,
                       doc="per-pixel nu-NORMA online kernel novelty detection", presets=NORMA_PRESETS))
