"""Per-pixel kernel background subtractors (OLK_N, nu-NORMA); importing registers them."""

import os

# The frame loops are numba ``prange`` loops on the OpenMP threading layer. With
# OpenMP's default (active, spinning) wait policy a frame on a loaded machine
# waits for a descheduled spinning thread; measured on the 2-core dev machine
# under load, OLK_N at 320x240 ran at 0.11-0.29x OpenCV KNN's fps with the default
# and 0.33-0.40x with the passive policy. Set before numba loads OpenMP; an
# explicit OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from bgsub.models.norma import NORMASubtractor, createNORMA  # noqa: F401,E402
from bgsub.models.olkn import OLKNSubtractor, createOLKN  # noqa: F401,E402
from bgsub.models.oem import OEMSubtractor, createOEM  # noqa: F401,E402

__all__ = ["OLKNSubtractor", "createOLKN", "NORMASubtractor", "createNORMA", "OEMSubtractor", "createOEM"]
