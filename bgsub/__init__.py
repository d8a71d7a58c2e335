"""Real-time background subtraction with per-pixel online kernel novelty detectors.

Subtractors follow OpenCV's interface::

    import bgsub
    sub = bgsub.create("olkn")          # or bgsub.createOLKN(width=10)
    mask = sub.apply(frame)             # uint8 (H, W), 0 background / 255 foreground

``bgsub.create(name, **params)`` builds any registered algorithm (``olkn``,
``norma``, and OpenCV's ``knn`` and ``mog2`` for comparison; BGSLibrary's ``subsense``,
``lobster``, ``pbas`` and ``vibe`` where its wrapper ``pybgs`` is installed).

As OpenCV's subtractors, they take grey, BGR and BGRA frames of uint8, uint16 (read as
``v >> 8``) or float32 (on the 0-255 scale of 8-bit frames, as OpenCV's MOG2 reads them);
a frame of another size starts a new model with one :class:`NewModelWarning`; and
``learningRate`` is negative for automatic, 0 for none, 1 or more for a new model.
``sub.save("model.npz")`` and ``bgsub.load("model.npz")`` keep a model in an ``.npz`` checkpoint.
"""

# First: importing learners stamps every jitted function's cache with all the project's jitted sources
# (learners._numba_cache), before bgsub's kernels are decorated.
import learners  # noqa: F401,E402

from bgsub.registry import (  # noqa: F401
    ParamSpec,
    algorithms,
    create,
    createKNN,
    createMOG2,
    default_params,
    param_specs,
)

# Importing the models registers "olkn" and "norma".
from bgsub.models import createNORMA, createOLKN  # noqa: F401,E402

from bgsub.checkpoint import CheckpointError  # noqa: F401,E402
from bgsub.models.opencv_api import NewModelWarning  # noqa: F401,E402

# BGSLibrary's SuBSENSE, LOBSTER, PBAS and ViBe register themselves where pybgs is installed.
import bgsub.bgslibrary  # noqa: F401,E402

__version__ = "0.1.0"


def load(path, algorithm=None, device="cpu"):
    """The subtractor saved in ``path`` by ``sub.save(path)``, ready for the next frame
    (:func:`bgsub.checkpoint.load`); ``device="cuda"``: on the GPU (either engine's checkpoints load on either).

    ``path`` is an ``.npz`` checkpoint; a name in one of OpenCV's storage formats (``.yml``, ``.yaml``,
    ``.xml``, ``.json``, ``.gz``) is refused with a :class:`CheckpointError`, as the file would not be one.
    ``algorithm`` (e.g. ``"olkn"``) refuses a checkpoint of any other algorithm.
    """
    from bgsub import checkpoint
    from bgsub.models.opencv_api import check_checkpoint_name

    check_checkpoint_name(path, writing=False)
    sub = checkpoint.load(path, algorithm)
    if device == "cpu":
        return sub
    from bgsub.models._cuda_engine import check_device, to_device

    return to_device(sub, check_device(device))
