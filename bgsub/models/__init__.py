"""Per-pixel kernel background subtractors (OLK_N, nu-NORMA, SVMD); importing registers them."""

import os

# The frame loops are numba ``prange`` loops on the OpenMP threading layer. With
# OpenMP's default (active, spinning) wait policy a frame on a loaded machine
# waits for a descheduled spinning thread; measured on the 2-core dev machine
# under load, OLK_N at 320x240 ran at 0.11-0.29x OpenCV KNN's fps with the default
# and 0.33-0.40x with the passive policy. Set before numba loads OpenMP; an
# explicit OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# A frame's temporary arrays freed every frame made glibc give its heap's top back every frame and fault it in
# again at the next (bgsub.models._heap): keep it, unless the environment tunes the heap itself.
from bgsub.models._heap import keep_heap  # noqa: E402

keep_heap()

from bgsub.models.norma import NORMASubtractor, createNORMA  # noqa: F401,E402
from bgsub.models.olkn import OLKNSubtractor, createOLKN  # noqa: F401,E402
from bgsub.models.oem import OEMSubtractor, createOEM  # noqa: F401,E402
from bgsub.models.svmd import SVMDSubtractor, createSVMD  # noqa: F401,E402

__all__ = ["OLKNSubtractor", "createOLKN", "NORMASubtractor", "createNORMA", "OEMSubtractor", "createOEM",
           "SVMDSubtractor", "createSVMD"]
