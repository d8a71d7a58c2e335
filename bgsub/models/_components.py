"""The counting and clearing loops of the component filters (``min_area``, ``fill_holes``) of 0/255 masks.

OpenCV labels the components (``cv2.connectedComponents``: 0.3–0.6 ms a 1280x720 mask on this
machine); the statistics pass of ``cv2.connectedComponentsWithStats`` costs 2.5 ms more there, and
numpy's ``mask[small[labels]] = 0`` 1.2 ms. These loops count the areas and clear the chosen
components in one pass over the labels each.

This module imports only numpy and numba.
"""

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def label_areas(labels, n):
    """Pixels of each label ``0 .. n - 1`` in ``labels`` (int32 (H, W)): int64 (n,)."""
    area = np.zeros(n, np.int64)
    for i in range(labels.shape[0]):
        for j in range(labels.shape[1]):
            area[labels[i, j]] += 1
    return area


@njit(cache=True, nogil=True)
def set_labelled(mask, labels, chosen, value):
    """``mask[i, j] = value`` wherever ``chosen[labels[i, j]]`` (uint8 (H, W), int32 (H, W), bool (n,))."""
    for i in range(labels.shape[0]):
        for j in range(labels.shape[1]):
            if chosen[labels[i, j]]:
                mask[i, j] = value
