"""Real-time background subtraction with per-pixel online kernel novelty detectors.

Subtractors follow OpenCV's interface::

    import bgsub
    sub = bgsub.create("olkn")          # or bgsub.createOLKN(width=10)
    mask = sub.apply(frame)             # uint8 (H, W), 0 background / 255 foreground

``bgsub.create(name, **params)`` builds any registered algorithm (``olkn``,
``norma``, and OpenCV's ``knn`` and ``mog2`` for comparison; BGSLibrary's ``subsense``,
``lobster``, ``pbas`` and ``vibe`` where its wrapper ``pybgs`` is installed).
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

from bgsub.checkpoint import CheckpointError, load  # noqa: F401,E402

# BGSLibrary's SuBSENSE, LOBSTER, PBAS and ViBe register themselves where pybgs is installed.
import bgsub.bgslibrary  # noqa: F401,E402

__version__ = "0.1.0"
