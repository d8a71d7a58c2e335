"""SVMD background subtractor: one SVMD novelty detector per pixel, each with its own step size.

Each pixel runs the SVMD novelty rule with the nu-trick (Vishwanathan,
Schraudolph & Smola 2006, Table 1 and eq. 53-58; ``learners.svmd_steps``): the
online SVM ``f <- (1 - eta c) f + eta k(x, .)`` on margin errors, with the step
size eta adapted by stochastic meta-descent (eq. 33) and the margin eps learnt in
log space so that about a fraction nu of the pixel's steps are margin errors. A
pixel whose background starts changing (water, leaves, a camera move) sees its
``<g, v>`` turn negative and raises its own eta; a still pixel anneals it.

Score ``eps - f(x)``; positive = novelty = foreground. The Gaussian kernel
``exp(-||x - y||^2 / width^2)`` acts on pixel values (0-255).
"""

from __future__ import annotations

import math

import numpy as np

from bgsub.models import _state, _svmd_frame
from bgsub.models.base import COMMON_PARAMS, PixelKernelSubtractor, with_defaults
from bgsub.registry import AlgorithmInfo, ParamSpec, register
from learners import svmd_steps as S

__all__ = ["SVMDSubtractor", "createSVMD", "SVMD_PARAMS"]

SVMD_PARAMS = (
    ParamSpec("width", float, 40.0, "Gaussian kernel width p in k(x,y) = exp(-||x-y||^2/p^2)",
              "pixel value 0-255", 0.5, 255.0, live=False),
    ParamSpec("eta0", float, 0.1, "initial step size of every pixel (SMD adapts it from there)", "", 1e-6, 10.0,
              live=False),
    ParamSpec("mu", float, 0.1, "meta-step size of the step-size adaptation (0: fixed step size)", "", 0.0, 100.0,
              live=False),
    ParamSpec("decay", float, 0.99, "SMD decay lambda (0: single-step adaptation; 1: stationary)", "", 0.0, 1.0,
              live=False),
    ParamSpec("lam", float, 0.01, "regulariser c: old coefficients shrink by 1 - eta*c per step", "", 0.0, 10.0,
              live=False),
    ParamSpec("nu", float, 0.01, "target fraction of margin errors (the margin eps is learnt)", "", 1e-4, 0.99,
              live=False),
) + with_defaults(COMMON_PARAMS, update_prob=1.0, fg_update_prob=0.05, update_mask="post")


class SVMDSubtractor(PixelKernelSubtractor):
    """Per-pixel SVMD novelty detection (OpenCV-style background subtractor).

    Parameters
    ----------
    width : float
        Kernel width ``p`` in pixel values.
    eta0, mu, decay, lam, nu : float
        SVMD's initial step size, meta-step size, SMD decay (lambda), regulariser
        ``c`` and nu (see :mod:`learners.svmd`).
    budget, color, update_prob, fg_update_prob, median, min_area, seed
        See :data:`bgsub.models.base.COMMON_PARAMS` and ``docs/parameters.md``.

    Attributes
    ----------
    alpha_, beta_ : ndarray (H, W, B, 1) of float64
        Coefficients of each pixel's ``f`` and of its SMD companion ``v``.
    state_ : ndarray (H, W, STATE_SIZE) of float64
        Per-pixel scalars (:mod:`learners.svmd_steps`): step size, ``<f, v>``,
        ``||f||^2``, margin, the margin's step size and companion, steps taken.
    offset_ : ndarray (H, W, 3, 1) of float64
        Offset slots of the SVMD state (pixels learn no offset).
    eta_ : ndarray (H, W)
        View of every pixel's current step size.
    samples_, ring_
        As in :class:`bgsub.models.base.PixelKernelSubtractor`. ``coef_`` and
        ``rho_`` are views of ``alpha_`` and of the margins (``score = rho_ - f``).
    """

    _SPECS = SVMD_PARAMS
    _score_offset = 0.0
    #: Every per-pixel state array (what a checkpoint must save and restore).
    _STATE_ARRAYS = ("samples_", "alpha_", "beta_", "ring_", "state_", "offset_", "stabilise_reference_")
    #: Its own state (the kernel subtractors' layout changes do not apply). 2: the stabiliser's reference and
    #: counter (``stabilise``).
    _STATE_LAYOUT = 2

    @classmethod
    def _upgrade_checkpoint(cls, layout, params, arrays):
        """A layout-1 checkpoint (before the stabiliser's state was saved) as layout 2: a stabiliser that takes its
        reference at the next frame; the parameters of that time (``warmup_frames`` did not exist: 0)."""
        if layout != 1:
            return None
        return {"warmup_frames": 0, **params}, arrays

    _RESTORED_RANGES = tuple((name, -math.inf, math.inf) for name in ("alpha_", "beta_", "state_", "offset_"))

    def _check_restored_state(self) -> None:
        """:meth:`PixelKernelSubtractor._check_restored_state`, and SMD's step sizes positive, its step counts
        whole numbers >= 0."""
        super()._check_restored_state()
        if self.state_ is None:
            return
        for index, name in ((S.ETA, "step size"), (S.ETA_EPS, "margin's step size")):
            if not (self.state_[..., index] > 0.0).all():
                raise ValueError(f"state 'state_' holds a {name} <= 0")
        if not (self.offset_[:, :, 1] > 0.0).all():
            raise ValueError("state 'offset_' holds an offset step size <= 0")
        steps = self.state_[..., S.STEPS]
        if not ((steps >= 0) & (steps == np.floor(steps))).all():
            raise ValueError("state 'state_' holds a step count that is not a whole number >= 0")

    # coef_ and rho_ are derived views, so a restored alpha_/state_ cannot go stale
    @property
    def coef_(self):
        alpha = getattr(self, "alpha_", None)
        return None if alpha is None else alpha.reshape(alpha.shape[:3])

    @coef_.setter
    def coef_(self, value):
        pass  # the base class's float32 coefficients are replaced by alpha_

    @property
    def rho_(self):
        state = getattr(self, "state_", None)
        return None if state is None else state[..., S.EPS]

    @rho_.setter
    def rho_(self, value):
        pass  # the margins live in state_

    @property
    def eta_(self):
        state = getattr(self, "state_", None)
        return None if state is None else state[..., S.ETA]

    @property
    def score_range(self) -> tuple[float, float]:
        R = max(self.params["budget"] * self.params["eta0"], 1.0) + 1.0
        return (-R, R)

    def reset(self) -> None:
        self.alpha_ = self.beta_ = self.state_ = self.offset_ = None
        super().reset()

    def _allocate(self, H: int, W: int, C: int) -> None:
        super()._allocate(H, W, C)
        p = self.params
        B = p["budget"]
        self.alpha_ = np.zeros((H, W, B, 1), dtype=np.float64)
        self.beta_ = np.zeros((H, W, B, 1), dtype=np.float64)
        self.state_ = np.ascontiguousarray(np.broadcast_to(S.new_state(p["eta0"]), (H, W, S.STATE_SIZE)))
        self.offset_ = np.ascontiguousarray(np.broadcast_to(S.new_offset(1, p["eta0"]), (H, W, 3, 1)))

    def _svmd_params(self):
        p = self.params
        return S.make_params(p["lam"], p["mu"], p["decay"], nu=p["nu"])

    def _run(self, img, p_bg, p_fg, external, mask_out):
        _svmd_frame.svmd_frame(img, self._model(), np.eye(1), self._svmd_params(), float(self.params["width"]),
                               _state.policy(p_bg, p_fg, 0, self.params, self.n_frames_), external,
                               (self._score, mask_out, self._stepped))

    def _can_bootstrap_pixelwise(self):
        return True

    def _bootstrap_pixelwise(self, img, draws, scales, scratch):
        _svmd_frame.svmd_bootstrap(img, draws, self._model(), np.eye(1), self._svmd_params(),
                                   float(self.params["width"]), len(scales), self._score, scratch)

    def _model(self):
        """The per-pixel learners' arrays as the kernels' tuple (:mod:`bgsub.models._svmd_frame`)."""
        return (self.samples_, self.alpha_, self.beta_, self.ring_, self.state_, self.offset_)

    # Neighbour diffusion (p_diff, nbr_mask) is not implemented for svmd: a pixel learns only its own values.
    def _frame(self, img, p_bg, p_fg, p_diff, mask_out, nbr_mask):
        self._run(img, p_bg, p_fg, np.zeros((0, 0), np.uint8), mask_out)

    def _update(self, img, mask, p_bg, p_fg, p_diff):
        self._run(img, p_bg, p_fg, np.ascontiguousarray(mask), self._rawmask)

    def _decay(self) -> float:
        return 1.0  # coefficients are stored true (no global scale)


def createSVMD(**params) -> SVMDSubtractor:
    """Build a per-pixel SVMD subtractor."""
    return SVMDSubtractor(**params)


register(AlgorithmInfo(name="svmd", factory=createSVMD, params=SVMD_PARAMS,
                       doc="per-pixel SVMD novelty detection (online SVM with adaptive step sizes)"))
