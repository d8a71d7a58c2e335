"""Post-processing: connected components, a minimum area, and frame-to-frame tracks.

:func:`find_objects` labels the foreground of a mask (8-connected), drops the
components smaller than ``min_area`` pixels from the mask, and describes the
others. :class:`Tracker` gives each object a track id that it keeps from frame
to frame while its box overlaps (or, for small fast objects, is near) the box
it had in one of the last ``max_missed`` frames.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import cv2
import numpy as np

__all__ = ["DetectedObject", "find_objects", "Tracker", "OBJECT_FIELDS"]

#: Fields of one object, in the order of the CSV columns.
OBJECT_FIELDS = ("frame", "track", "x", "y", "width", "height", "area", "cx", "cy")


@dataclass
class DetectedObject:
    """One connected foreground component of a frame.

    Attributes
    ----------
    frame : int
        Frame number.
    track : int
        Track id (from 1; 0 when no tracker ran).
    x, y, width, height : int
        Bounding box in input pixels (``x``, ``y`` top-left).
    area : int
        Foreground pixels of the component.
    cx, cy : float
        Centroid.
    """

    frame: int
    track: int
    x: int
    y: int
    width: int
    height: int
    area: int
    cx: float
    cy: float

    def as_dict(self) -> dict:
        return asdict(self)


def find_objects(mask: np.ndarray, min_area: int = 0, frame: int = 0) -> tuple[np.ndarray, list[DetectedObject]]:
    """The components of ``mask`` of at least ``min_area`` pixels.

    Returns
    -------
    mask : ndarray of uint8
        ``mask`` without the smaller components (the same array when none was dropped).
    objects : list of DetectedObject
        Largest first, ``track`` 0.
    """
    n, labels, stats, centroids = cv2.connectedComponentsWithStats((mask > 0).view(np.uint8), connectivity=8)
    keep = [k for k in range(1, n) if stats[k, cv2.CC_STAT_AREA] >= min_area]
    if len(keep) < n - 1:
        lut = np.zeros(n, np.uint8)
        lut[keep] = 255
        mask = lut[labels]
    objects = [
        DetectedObject(int(frame), 0, int(stats[k, cv2.CC_STAT_LEFT]), int(stats[k, cv2.CC_STAT_TOP]),
                       int(stats[k, cv2.CC_STAT_WIDTH]), int(stats[k, cv2.CC_STAT_HEIGHT]),
                       int(stats[k, cv2.CC_STAT_AREA]), round(float(centroids[k, 0]), 2),
                       round(float(centroids[k, 1]), 2))
        for k in keep
    ]
    objects.sort(key=lambda o: -o.area)
    return mask, objects


def _iou(a: DetectedObject, b: DetectedObject) -> float:
    ix = min(a.x + a.width, b.x + b.width) - max(a.x, b.x)
    iy = min(a.y + a.height, b.y + b.height) - max(a.y, b.y)
    if ix <= 0 or iy <= 0:
        return 0.0
    inter = ix * iy
    return inter / (a.width * a.height + b.width * b.height - inter)


class Tracker:
    """Greedy frame-to-frame association of boxes into tracks.

    Each new object takes the id of the unmatched track whose last box it
    overlaps most (intersection over union); without overlap, of the nearest
    track whose centroid lies within the larger side of the two boxes. Tracks
    unseen for more than ``max_missed`` frames end; ids are never reused.

    Parameters
    ----------
    max_missed : int
        Frames a track survives without a match.
    """

    def __init__(self, max_missed: int = 5) -> None:
        self.max_missed = int(max_missed)
        self._tracks: dict[int, tuple[DetectedObject, int]] = {}  # id -> (last box, frames missed)
        self._next = 1

    def update(self, objects: list[DetectedObject]) -> list[DetectedObject]:
        """Set ``track`` on each of ``objects`` (in place) and return them."""
        pairs = []
        for i, o in enumerate(objects):
            for tid, (last, _) in self._tracks.items():
                iou = _iou(o, last)
                if iou > 0:
                    pairs.append((1.0 + iou, i, tid))
                else:
                    reach = max(o.width, o.height, last.width, last.height)
                    d = float(np.hypot(o.cx - last.cx, o.cy - last.cy))
                    if d <= reach:
                        pairs.append((1.0 - d / (reach + 1.0), i, tid))
        pairs.sort(reverse=True)
        taken_obj: set[int] = set()
        taken_track: set[int] = set()
        for _, i, tid in pairs:
            if i in taken_obj or tid in taken_track:
                continue
            objects[i].track = tid
            taken_obj.add(i)
            taken_track.add(tid)
        for i, o in enumerate(objects):
            if i not in taken_obj:
                o.track = self._next
                self._next += 1
        seen = {o.track for o in objects}
        tracks = {tid: (last, missed + 1) for tid, (last, missed) in self._tracks.items()
                  if tid not in seen and missed + 1 <= self.max_missed}
        tracks.update({o.track: (o, 0) for o in objects})
        self._tracks = tracks
        return objects
