"""Frame sources: cameras, video files, image folders and CDnet sequences.

Every source is opened with :func:`open_source` and read through one interface,
:class:`FrameSource`: a context manager and an iterable of :class:`Frame`::

    from bgsub.sources import open_source

    with open_source("clip.mp4") as source:          # or 0, "frames/", "highway/"
        for frame in source:
            mask = subtractor.apply(frame.image)      # BGR uint8 (H, W, 3)

What ``spec`` may be:

* an ``int`` or a string of digits: a camera index (``0`` is the default camera);
  a digit string that names an existing file or folder is read as that path;
* a video file anything OpenCV's FFmpeg back-end decodes (``.mp4``, ``.avi``,
  ``.mkv``, ``.mov``, ...), or a stream URL (``rtsp://...``, ``http://...``);
* a folder of images (``.png``, ``.jpg``, ``.bmp``, ``.tif``, ...), read in
  natural order (``img2.png`` before ``img10.png``);
* a CDnet-layout sequence folder (``input/in%06d.jpg``, optional
  ``groundtruth/``, ``ROI.bmp``, ``temporalROI.txt``): frames carry their ground
  truth and region of interest, for scoring.

Problems the user can fix (missing path, empty or non-video file, a folder
without images, a camera that does not open) raise :class:`SourceError`, a
``ValueError`` whose message says what was wrong and what to do.

Bad frames in the middle of a stream follow one policy for every source:

* a frame that cannot be decoded (corrupt stretch of a video, damaged or empty
  image file) is **skipped and counted**: ``decode_errors`` says how many were
  lost, frame numbers keep the gap, and :meth:`FrameSource.summary` says it in
  words; a truncated video simply ends early (``incomplete``);
* grey, colour, BGRA and 16-bit frames are all delivered as 8-bit BGR, so a
  switch between them is not an error;
* a frame whose size differs from the first frame's **stops the source** with
  :class:`BadFrameError` (a :class:`SourceError`), which carries the frame's
  ``index`` and both sizes: a model of one size cannot go on with another.

:meth:`FrameSource.close` may be called from another thread than the one
reading, and returns at once even while a camera's or stream's read is blocked:
the device is released when that read returns.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import cv2
import numpy as np

from bgsub.cdnet import CDnetSequence, is_cdnet_sequence, load_sequence

# FFmpeg's own messages ("[mjpeg @ 0x...] invalid len") would interleave with
# progress bars; lost frames are counted and reported by the sources instead.
# Set OPENCV_FFMPEG_LOGLEVEL yourself to see them.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")

__all__ = [
    "Frame",
    "FrameSource",
    "SourceError",
    "BadFrameError",
    "StartPastEndError",
    "CameraSource",
    "VideoSource",
    "ImageFolderSource",
    "CDnetSource",
    "open_source",
    "list_cameras",
    "natural_sort_key",
    "is_video_file",
    "VIDEO_EXTENSIONS",
    "IMAGE_EXTENSIONS",
]

#: File name endings treated as videos when searching folders (``bgsub batch``).
VIDEO_EXTENSIONS = (
    ".mp4", ".avi", ".mkv", ".mov", ".m4v", ".webm", ".wmv", ".flv", ".mpg", ".mpeg",
    ".ts", ".mts", ".m2ts", ".3gp", ".ogv", ".mjpeg", ".mjpg", ".y4m",
)
#: File name endings read by image-folder sources.
IMAGE_EXTENSIONS = (
    ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp", ".ppm", ".pgm", ".pbm",
    ".pnm", ".jp2", ".exr", ".hdr", ".sr", ".ras",
)

# Consecutive failed reads tolerated inside a video before it is taken as ended
# (a corrupt stretch of a file); beyond the container's frame count no retries.
_MAX_CONSECUTIVE_FAILURES = 50
# Consecutive failed reads before a camera is taken as gone.
_CAMERA_MAX_FAILURES = 30


class SourceError(ValueError):
    """A source cannot be opened or read; the message says what to do."""


class BadFrameError(SourceError):
    """A frame in the middle of a stream that the source cannot deliver (its size changed).

    Attributes
    ----------
    index : int
        The frame's number (as :attr:`Frame.index` would have been).
    size, expected : tuple of int
        ``(width, height)`` of this frame and of the earlier ones.
    """

    def __init__(self, index: int, size: tuple[int, int], expected: tuple[int, int], where: str) -> None:
        self.index = int(index)
        self.size = tuple(size)
        self.expected = tuple(expected)
        super().__init__(
            f"frame {index} of {where} is {size[0]}x{size[1]} but the earlier frames are "
            f"{expected[0]}x{expected[1]}: every frame of a sequence must have the same size"
        )


class StartPastEndError(SourceError):
    """The first frame asked for (``start``, plus ``skip`` frames) is past the end of the source.

    Attributes
    ----------
    available : int
        Frames (positions or numbers) the source has.
    """

    def __init__(self, message: str, available: int) -> None:
        self.available = int(available)
        super().__init__(message)


@dataclass
class Frame:
    """One frame of a source.

    Attributes
    ----------
    index : int
        1-based frame number. CDnet sequences keep their ``in%06d`` numbers;
        other sources count frames as they are read (image folders: position of
        the file in natural order), so a mask written as ``bin%06d.png`` with
        this number lines up with CDnet's numbering.
    image : ndarray of uint8, shape (H, W, 3)
        The frame, BGR (OpenCV's order). Grey sources are expanded to 3 channels.
    groundtruth : ndarray of uint8, shape (H, W), or None
        CDnet labels (0 static, 50 shadow, 85 outside ROI, 170 unknown,
        255 motion) when the source has ground truth for this frame.
    roi : ndarray of bool, shape (H, W), or None
        Region of interest of a CDnet sequence (all True without ``ROI.bmp``);
        None for other sources.
    """

    index: int
    image: np.ndarray
    groundtruth: np.ndarray | None = None
    roi: np.ndarray | None = None


def natural_sort_key(name: str) -> list:
    """Sort key putting ``img2`` before ``img10`` (case-insensitive)."""
    return [int(tok) if tok.isdigit() else tok.lower() for tok in re.split(r"(\d+)", name)]


def is_video_file(path: str | os.PathLike) -> bool:
    """True when ``path`` is a file whose name ends like a video (see VIDEO_EXTENSIONS)."""
    p = Path(path)
    return p.suffix.lower() in VIDEO_EXTENSIONS and p.is_file()


def _as_bgr(image: np.ndarray) -> np.ndarray:
    """Any decoded image as contiguous BGR uint8 (H, W, 3)."""
    if image.dtype != np.uint8:
        if image.dtype == np.uint16:
            image = (image >> 8).astype(np.uint8)
        else:
            image = np.clip(image, 0, 255).astype(np.uint8)
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    elif image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    elif image.shape[2] == 1:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    return np.ascontiguousarray(image)


class FrameSource:
    """Base of every source: a context manager and an iterable of :class:`Frame`.

    Iterating a file-backed source (video, images, CDnet) starts from its first
    frame each time; a camera continues where it is. Stop early with ``break``;
    call :meth:`close` (or use ``with``) to release the device or file.

    Attributes
    ----------
    name : str
        Short name for display and output folders (file stem, folder name,
        ``camera0``).
    kind : str
        ``"camera"``, ``"video"``, ``"images"`` or ``"cdnet"``.
    path : Path or None
        The file or folder read (None for cameras).
    is_live : bool
        True for cameras and network streams: frames arrive in real time and
        there is no end.
    fps : float or None
        Frame rate reported by the container or camera (None when unknown;
        image folders and CDnet sequences have none).
    frame_count : int or None
        Number of frames the source expects to deliver, after ``start`` and
        ``max_frames`` (None for live sources; for video files the container's
        figure, which a damaged file may not reach).
    sequence : CDnetSequence or None
        The indexed sequence of a CDnet source.
    frames_read : int
        Frames delivered by the current (or last) pass.
    decode_errors : int
        Frames that could not be decoded and were skipped in the current (or
        last) pass.
    size : tuple of int or None
        ``(width, height)`` of the frames, once known.
    """

    kind: str = ""
    is_live: bool = False

    def __init__(self, name: str, path: Path | None = None) -> None:
        self.name = name
        self.path = path
        self.fps: float | None = None
        self.frame_count: int | None = None
        self.sequence: CDnetSequence | None = None
        self.frames_read = 0
        self.decode_errors = 0
        self.size: tuple[int, int] | None = None
        self.closed = False
        # close() may come from another thread than the one iterating (a GUI
        # closing a camera read by a worker). The lock guards the capture handle,
        # never a read: close() must return even while a read hangs.
        self._lock = threading.RLock()
        self._reading = False
        #: Record each frame's time stamp (``_stamp``, ms) as it is read: video files, to find lost frames.
        self._want_stamps = False
        self._stamp = 0.0
        #: Frames passed over before the first one delivered (``skip``), and the number of the last of them.
        self.skip = 0
        self.skipped_to: int | None = None

    def _read(self, cap) -> tuple[bool, np.ndarray | None] | None:
        """``cap.read()`` without holding the lock; None when the source was closed.

        A :meth:`close` during the read does not wait for it: it leaves releasing
        the capture to this reader, which does it as soon as the read returns.
        """
        with self._lock:
            if self.closed or self._cap is not cap:
                return None
            self._reading = True
        try:
            ok, image = cap.read()
            if self._want_stamps and ok:
                get = getattr(cap, "get", None)
                self._stamp = get(cv2.CAP_PROP_POS_MSEC) if get is not None else None
        finally:
            with self._lock:
                self._reading = False
                orphaned = self._cap is not cap
            if orphaned:  # closed (or reopened) while reading: this handle is ours to release
                cap.release()
        return None if orphaned else (ok, image)

    def _release_capture(self) -> None:
        """Drop the capture handle; release it now unless a read is under way (see :meth:`_read`)."""
        with self._lock:
            cap, self._cap = getattr(self, "_cap", None), None
            if cap is not None and not self._reading:
                cap.release()

    def _check_size(self, index: int, image: np.ndarray) -> None:
        """Raise :class:`BadFrameError` when ``image`` differs in size from the earlier frames."""
        size = (image.shape[1], image.shape[0])
        if self.size is not None and size != self.size:
            raise BadFrameError(index, size, self.size, self.describe())
        self.size = size

    # -- iteration ---------------------------------------------------------
    def __iter__(self) -> Iterator[Frame]:
        if self.closed:
            raise SourceError(f"{self.describe()} is closed; open it again with open_source()")
        self.frames_read = 0
        self.decode_errors = 0
        for frame in self._frames():
            self.frames_read += 1
            yield frame

    def _frames(self) -> Iterator[Frame]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- lifetime ----------------------------------------------------------
    def close(self) -> None:
        """Release the device or file. Safe to call twice, and from another thread than the reader's."""
        if getattr(self, "_lock", None) is None:  # __init__ failed before setting up
            return
        with self._lock:
            self.closed = True
            self._release_capture()

    def __enter__(self) -> "FrameSource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- reporting ---------------------------------------------------------
    def describe(self) -> str:
        """One line: what this source is."""
        where = str(self.path) if self.path is not None else self.name
        return f"{self.kind} {where}"

    @property
    def incomplete(self) -> bool:
        """True when the last pass lost frames (decode errors or a short file)."""
        if self.decode_errors:
            return True
        return (
            not self.is_live
            and self.frame_count is not None
            and self.frames_read < self.frame_count
            and self._finished
        )

    _finished = False

    def summary(self) -> str:
        """One line on the last pass: frames read, and any frames lost."""
        text = f"{self.frames_read} frame{'s' if self.frames_read != 1 else ''} read from {self.describe()}"
        lost = []
        if self.frame_count is not None and self._finished and self.frames_read < self.frame_count:
            lost.append(f"expected {self.frame_count}")
        if self.decode_errors:
            lost.append(f"{self.decode_errors} could not be decoded")
        if lost:
            text += " (" + "; ".join(lost) + f": {self._loss_reason})"
        return text

    #: What lost frames mean for this kind of source, for :meth:`summary`.
    _loss_reason = "the file is truncated or partly corrupt"

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.describe()!r} fps={self.fps} "
            f"frame_count={self.frame_count} frames_read={self.frames_read}>"
        )


def _check_limits(start: int, max_frames: int | None, skip: int = 0) -> None:
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)) or start < 1:
        raise SourceError(f"start must be a frame number >= 1, got {start!r}")
    if isinstance(skip, bool) or not isinstance(skip, (int, np.integer)) or skip < 0:
        raise SourceError(f"skip must be a number of frames >= 0, got {skip!r}")
    if max_frames is not None and (
        isinstance(max_frames, bool) or not isinstance(max_frames, (int, np.integer)) or max_frames < 1
    ):
        raise SourceError(f"max_frames must be an integer >= 1 or None, got {max_frames!r}")


def _quiet_opencv():
    """Silence OpenCV's own warnings while probing (they are replaced by ours)."""
    try:
        level = cv2.utils.logging.getLogLevel()
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        return level
    except Exception:  # pragma: no cover - very old OpenCV
        return None


def _restore_opencv(level) -> None:
    if level is not None:
        try:
            cv2.utils.logging.setLogLevel(level)
        except Exception:  # pragma: no cover
            pass


# --------------------------------------------------------------------------
# Cameras
# --------------------------------------------------------------------------


def _open_camera(index: int, api: int = cv2.CAP_ANY) -> cv2.VideoCapture | None:
    level = _quiet_opencv()
    try:
        cap = cv2.VideoCapture(index, api)
        if not cap.isOpened():
            cap.release()
            return None
        return cap
    finally:
        _restore_opencv(level)


def list_cameras(max_index: int = 8) -> list[int]:
    """Indices below ``max_index`` of cameras that open and deliver a frame."""
    found = []
    for index in range(max_index):
        cap = _open_camera(index)
        if cap is None:
            continue
        try:
            ok, _ = cap.read()
            if ok:
                found.append(index)
        finally:
            cap.release()
    return found


class CameraSource(FrameSource):
    """A camera by index, read live (``kind == "camera"``).

    Parameters
    ----------
    index : int
        Camera index (0 is the system's default camera).
    width, height : int, optional
        Resolution to ask the camera for (it may choose another).
    fps : float, optional
        Frame rate to ask the camera for.
    max_frames : int, optional
        Stop after this many frames.
    """

    kind = "camera"
    is_live = True
    _loss_reason = "failed reads: the camera stopped delivering frames or was unplugged"

    def __init__(
        self,
        index: int,
        *,
        width: int | None = None,
        height: int | None = None,
        fps: float | None = None,
        max_frames: int | None = None,
        api: int = cv2.CAP_ANY,
    ) -> None:
        super().__init__(f"camera{index}")
        _check_limits(1, max_frames)
        if index < 0:
            raise SourceError(f"camera index must be >= 0, got {index}")
        self.index = index
        self.max_frames = max_frames
        cap = _open_camera(index, api)
        if cap is None:
            others = [i for i in list_cameras() if i != index]
            if others:
                hint = (
                    f"cameras that do open: {', '.join(map(str, others))}; "
                    f"pick one with e.g. `bgsub run {others[0]}`"
                )
            else:
                hint = (
                    "no camera opens on this machine (indices 0-7 tried); check that one is "
                    "connected and not in use by another program, or read a video file instead"
                )
            raise SourceError(f"camera {index} could not be opened: {hint}")
        if width:
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
        if height:
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        if fps:
            cap.set(cv2.CAP_PROP_FPS, fps)
        self._cap = cap
        reported = cap.get(cv2.CAP_PROP_FPS)
        self.fps = float(reported) if reported and reported > 0 else None
        w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        self.size = (w, h) if w > 0 and h > 0 else None
        self._next_index = 1

    def describe(self) -> str:
        return f"camera {self.index}"

    def _frames(self) -> Iterator[Frame]:
        failures = 0
        delivered = 0
        while self.max_frames is None or delivered < self.max_frames:
            cap = self._cap
            if self.closed or cap is None:
                return
            read = self._read(cap)
            if read is None:
                return
            ok, image = read
            if not ok or image is None:
                failures += 1
                self.decode_errors += 1
                if failures >= _CAMERA_MAX_FAILURES:
                    self._finished = True
                    return
                time.sleep(0.01)
                continue
            failures = 0
            image = _as_bgr(image)
            if self._next_index == 1:
                self.size = None  # the camera may not deliver the size it reported
            self._check_size(self._next_index, image)
            frame = Frame(self._next_index, image)
            self._next_index += 1
            delivered += 1
            yield frame


# --------------------------------------------------------------------------
# Video files and streams
# --------------------------------------------------------------------------


def _is_url(spec: str) -> bool:
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", spec))


class VideoSource(FrameSource):
    """A video file (or network stream) decoded by OpenCV/FFmpeg (``kind == "video"``).

    Parameters
    ----------
    path : str or Path
        The file, or a stream URL (``rtsp://``, ``http://``...; read live).
    start : int
        First frame to deliver (1-based); earlier frames are skipped.
    max_frames : int, optional
        Deliver at most this many frames.
    skip : int
        Pass over this many frames that decode, from ``start`` on, before the
        first one delivered (continuing after a checkpoint of ``skip`` frames:
        the numbers of the frames lost before them are kept).

    Frame numbers are positions in the file: a frame that does not decode
    leaves a gap. Besides the reads that fail, a frame the demuxer or decoder
    drops without an error (an empty or unreadable packet) is found by its time
    stamp: a file at a constant frame rate whose next frame comes ``k`` frame
    durations after the previous one lost ``k - 1`` frames (counted in
    ``decode_errors``).
    """

    kind = "video"

    def __init__(self, path: str | os.PathLike, *, start: int = 1, max_frames: int | None = None,
                 skip: int = 0) -> None:
        text = str(path)
        self.url = text if _is_url(text) else None
        p = None if self.url else Path(path)
        super().__init__(self._name_for(text, p), p)
        _check_limits(start, max_frames, skip)
        self.start = int(start)
        self.skip = int(skip)
        self.max_frames = max_frames
        self.is_live = self.url is not None
        self._want_stamps = not self.is_live
        #: Frames consumed from the container in the last pass, decoded or not (where it ended).
        self.positions = 0
        self._cap: cv2.VideoCapture | None = None
        self._first: np.ndarray | None = None
        if p is not None:
            _check_video_file(p)
        cap = self._open()
        self._cap = cap
        fps = cap.get(cv2.CAP_PROP_FPS)
        self.fps = float(fps) if fps and 0 < fps < 1000 else None
        w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        self.size = (w, h) if w > 0 and h > 0 else None
        count = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.container_frame_count = count if count > 0 and not self.is_live else None
        self._stamp_fps = float(fps) if fps and fps > 0 and not self.is_live else None
        if self.container_frame_count is not None:
            n = max(0, self.container_frame_count - (self.start - 1) - self.skip)
            self.frame_count = n if max_frames is None else min(n, max_frames)
        # Probe: a file that opens but yields no frame is not a usable video.
        ok, image = cap.read()
        self._first_stamp = cap.get(cv2.CAP_PROP_POS_MSEC) if ok and self._want_stamps else 0.0
        if not ok or image is None:
            cap.release()
            self._cap = None
            where = self.url or str(p)
            raise SourceError(
                f"{where} opened but no frame could be decoded from it: the file is damaged, "
                "empty, or in a codec this OpenCV build cannot decode (try converting it, e.g. "
                "`ffmpeg -i IN -c:v libx264 OUT.mp4`)"
            )
        self._first = image
        self.size = (image.shape[1], image.shape[0])

    @staticmethod
    def _name_for(text: str, p: Path | None) -> str:
        if p is not None:
            return p.stem or p.name
        tail = re.sub(r"[^A-Za-z0-9_.-]+", "_", text.split("://", 1)[-1]).strip("_")
        return tail[:60] or "stream"

    def describe(self) -> str:
        return f"video {self.url or self.path}"

    def _open(self) -> cv2.VideoCapture:
        level = _quiet_opencv()
        try:
            target = self.url or str(self.path)
            cap = cv2.VideoCapture(target, cv2.CAP_FFMPEG)
            if not cap.isOpened():
                cap.release()
                cap = cv2.VideoCapture(target)
        finally:
            _restore_opencv(level)
        if not cap.isOpened():
            cap.release()
            if self.url:
                raise SourceError(
                    f"the stream {self.url} could not be opened: check the address and that the "
                    "camera or server is reachable"
                )
            raise SourceError(
                f"{self.path} could not be opened as a video: it is not a video file OpenCV/FFmpeg "
                "can read (or it is damaged); give a video file (.mp4, .avi, .mkv, ...), an image "
                "folder, a CDnet sequence folder or a camera index"
            )
        return cap

    def _frames(self) -> Iterator[Frame]:
        self._finished = False
        with self._lock:
            pending, self._first = self._first, None
            if self._cap is None or pending is None:
                # A second pass: reopen from the start.
                self._release_capture()
                self._cap = self._open()
            cap = self._cap
        expected = self.container_frame_count
        position = 0  # frames consumed from the container, decoded or not
        delivered = 0
        skipped = 0
        failures = 0  # current streak of failed reads
        previous: float | None = None  # time stamp of the last frame decoded
        self.positions = 0
        while self.max_frames is None or delivered < self.max_frames:
            if pending is not None:
                image, pending = pending, None
                self._stamp = self._first_stamp
            else:
                read = self._read(cap)
                if read is None:  # closed while iterating
                    return
                ok, image = read
                if not ok or image is None:
                    if self.is_live:
                        failures += 1
                        if failures >= _CAMERA_MAX_FAILURES:
                            break
                        time.sleep(0.01)
                        continue
                    if expected is None or position + failures >= expected:
                        break  # the end of the file
                    failures += 1
                    if failures >= _MAX_CONSECUTIVE_FAILURES:
                        break  # the rest of the file does not decode
                    continue
            lost = self._lost_by_stamp(previous, self._stamp, position, failures, expected)
            previous = self._stamp
            if failures or lost:
                # A corrupt stretch inside the file: those frames are lost.
                position += failures + lost
                self.decode_errors += failures + lost
                failures = 0
            position += 1
            self.positions = position
            if position < self.start:
                continue
            if skipped < self.skip:
                skipped += 1
                self.skipped_to = position
                self.decode_errors = 0  # those before the frames passed over were reported by their run
                continue
            image = _as_bgr(image)
            self._check_size(position, image)
            delivered += 1
            yield Frame(position, image)
        self._finished = True

    def _lost_by_stamp(self, previous: float | None, stamp: float, position: int, failures: int,
                       expected: int | None) -> int:
        """Frames lost without a failed read before the frame stamped ``stamp`` (ms), judged by time stamps.

        Only a whole number of frame durations counts (within a tenth of one), so
        that a file whose frame rate varies is not taken for a damaged one; and
        never past the container's frame count.
        """
        fps = self._stamp_fps
        if fps is None or stamp is None or not np.isfinite(stamp):
            return 0
        if previous is None:  # frames lost at the very start: the first stamp counts from the stream's start
            steps, before = stamp * fps / 1000.0, position + failures
        else:
            steps, before = (stamp - previous) * fps / 1000.0 - 1.0, failures
        k = round(steps)
        if abs(steps - k) > 0.1 or k <= before:
            return 0
        lost = k - before
        if expected is not None and position + failures + lost + 1 > expected:
            return 0
        return lost

    def close(self) -> None:
        super().close()
        self._first = None  # the frame kept from opening the file


def _check_video_file(p: Path) -> None:
    if not p.exists():
        parent = p.parent if str(p.parent) else Path(".")
        hint = ""
        if parent.is_dir():
            close = sorted(
                (e.name for e in os.scandir(parent) if e.name.lower().startswith(p.stem[:3].lower())),
                key=natural_sort_key,
            )[:5]
            if close:
                hint = f"; similar names there: {', '.join(close)}"
        raise SourceError(f"{p} does not exist{hint}")
    if p.is_dir():
        raise SourceError(f"{p} is a folder, not a video file")
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise SourceError(f"cannot read {p}: {exc.strerror}") from None
    if size == 0:
        raise SourceError(f"{p} is empty (0 bytes): not a video; was it copied or written completely?")
    if not os.access(p, os.R_OK):
        raise SourceError(f"cannot read {p}: permission denied")


# --------------------------------------------------------------------------
# Image folders
# --------------------------------------------------------------------------


def _list_images(folder: Path) -> list[Path]:
    try:
        entries = list(os.scandir(folder))
    except PermissionError:
        raise SourceError(f"cannot read the folder {folder}: permission denied") from None
    except OSError as exc:
        raise SourceError(f"cannot read the folder {folder}: {exc.strerror or exc}") from None
    files = []
    for e in entries:
        try:
            if e.is_file() and Path(e.name).suffix.lower() in IMAGE_EXTENSIONS and not e.name.startswith("."):
                files.append(Path(e.path))
        except OSError:
            continue
    files.sort(key=lambda q: natural_sort_key(q.name))
    return files


def _decode_file(path: Path, flags: int) -> np.ndarray | None:
    """The image in ``path`` decoded by OpenCV with ``flags``; None when it cannot be read or decoded."""
    try:
        data = np.fromfile(str(path), dtype=np.uint8)
    except OSError:
        return None
    if data.size == 0:
        return None
    return cv2.imdecode(data, flags)


def _read_image(path: Path) -> np.ndarray | None:
    image = _decode_file(path, cv2.IMREAD_UNCHANGED)
    if image is None:
        return None
    return _as_bgr(image)


class _ImageFilesSource(FrameSource):
    """Base of the sources with one image file per frame: image folders and CDnet sequences.

    Parameters
    ----------
    folder : str or Path
        The folder.
    start : int
        First frame to deliver: a 1-based position in an image folder, a frame
        number in a CDnet sequence.
    max_frames : int, optional
        Deliver at most this many frames.
    skip : int
        Pass over this many frames that decode, from ``start`` on, before the
        first one delivered (continuing after a checkpoint of ``skip`` frames).

    Raises
    ------
    StartPastEndError
        When no frame is left at ``start`` (after ``skip`` frames).
    """

    def __init__(self, folder: str | os.PathLike, *, start: int = 1, max_frames: int | None = None,
                 skip: int = 0) -> None:
        p = Path(folder)
        super().__init__(p.resolve().name or str(p), p)
        _check_limits(start, max_frames, skip)
        self.start = int(start)
        self.skip = int(skip)
        self.max_frames = max_frames
        self._index(p)

    def _index(self, folder: Path) -> None:  # pragma: no cover - abstract
        """Find the frames' files, set ``frame_count`` and ``size``; raise :class:`SourceError` if unusable."""
        raise NotImplementedError

    def _decoded(self, numbered: Iterable[tuple[int, Path]], limit: int | None = None
                 ) -> Iterator[tuple[int, np.ndarray]]:
        """``(number, image)`` for each decodable file of ``numbered``, at most ``limit`` of them.

        The pass of the sources with one image file per frame: an unreadable file is
        skipped and counted in ``decode_errors``; a size change raises
        :class:`BadFrameError`.
        """
        self._finished = False
        delivered = 0
        skipped = 0
        for n, path in numbered:
            if limit is not None and delivered >= limit:
                break
            image = _read_image(path)
            if image is None:
                self.decode_errors += 1
                continue
            self._check_size(n, image)
            if skipped < self.skip:
                skipped += 1
                self.skipped_to = n
                self.decode_errors = 0  # those before the frames passed over were reported by their run
                continue
            delivered += 1
            yield n, image
        self._finished = True


class ImageFolderSource(_ImageFilesSource):
    """A folder of images read in natural order (``kind == "images"``).

    Frame ``index`` is the 1-based position of the file in natural order, so an
    unreadable image leaves a gap (counted in ``decode_errors``) instead of
    shifting later numbers. All images must have the same size.

    Parameters
    ----------
    folder : str or Path
        The folder.
    start : int
        First position to deliver (1-based).
    max_frames : int, optional
        Deliver at most this many frames.
    """

    kind = "images"
    _loss_reason = "damaged or unreadable image files were skipped"

    def _index(self, p: Path) -> None:
        if not p.exists():
            raise SourceError(f"{p} does not exist")
        if not p.is_dir():
            raise SourceError(f"{p} is not a folder")
        self.files = _list_images(p)
        if not self.files:
            subdirs = []
            try:
                subdirs = sorted(e.name for e in os.scandir(p) if e.is_dir())[:5]
            except OSError:
                pass
            hint = f" (it has sub-folders: {', '.join(subdirs)}; use `bgsub batch` for a tree)" if subdirs else ""
            raise SourceError(
                f"{p} holds no images ({', '.join(e.lstrip('.') for e in IMAGE_EXTENSIONS[:5])}, ...) "
                f"and is not a CDnet sequence{hint}"
            )
        n = len(self.files) - (self.start - 1)
        if n <= 0:
            raise StartPastEndError(f"frame {self.start} is past the end of {self.describe()}: it has "
                                    f"{len(self.files)} images", len(self.files))
        if n - self.skip <= 0:
            raise StartPastEndError(f"{self.describe()} has no frame after the {self.skip} frames from frame "
                                    f"{self.start} on: it has {len(self.files)} images", len(self.files))
        n -= self.skip
        self.frame_count = n if self.max_frames is None else min(n, self.max_frames)
        # The first image that decodes fixes the frame size.
        for f in self.files[self.start - 1:]:
            image = _read_image(f)
            if image is not None:
                self.size = (image.shape[1], image.shape[0])
                break
        else:
            raise SourceError(
                f"none of the {len(self.files)} image files in {p} could be decoded: they are "
                "damaged or not images"
            )

    def describe(self) -> str:
        return f"image folder {self.path}"

    def _frames(self) -> Iterator[Frame]:
        numbered = enumerate(self.files[self.start - 1:], start=self.start)
        for position, image in self._decoded(numbered, self.max_frames):
            yield Frame(position, image)


# --------------------------------------------------------------------------
# CDnet sequences
# --------------------------------------------------------------------------


class CDnetSource(_ImageFilesSource):
    """A CDnet-layout sequence folder (``kind == "cdnet"``).

    Frames keep their ``in%06d`` numbers and carry the ground truth (when
    ``groundtruth/gt%06d.png`` exists) and the ROI; ``sequence`` gives the
    temporal ROI and ``is_scored(n)``.

    Parameters
    ----------
    folder : str or Path
        The sequence folder (the one holding ``input/``).
    start : int
        First frame number to deliver.
    max_frames : int, optional
        Deliver at most this many frames.
    """

    kind = "cdnet"
    _loss_reason = "damaged or unreadable input frames were skipped"

    def _index(self, p: Path) -> None:
        try:
            seq = load_sequence(p)
        except PermissionError:
            raise SourceError(f"cannot read the sequence folder {p}: permission denied") from None
        except (OSError, ValueError) as exc:
            raise SourceError(str(exc)) from None
        self.name = seq.name
        self.sequence = seq
        self.numbers = [n for n in seq.frames if n >= self.start]
        last = seq.frames[-1] if len(seq.frames) else 0
        if not self.numbers:
            raise StartPastEndError(f"{p} has no frames numbered {self.start} or later (its last is {last})", last)
        if len(self.numbers) <= self.skip:
            raise StartPastEndError(f"{p} has no frame after the {self.skip} frames from frame {self.start} on "
                                    f"(its last is {last})", last)
        count = len(self.numbers) - self.skip
        self.frame_count = count if self.max_frames is None else min(count, self.max_frames)
        first = _read_image(seq.input_paths[self.numbers[0]])
        if first is not None:
            self.size = (first.shape[1], first.shape[0])

    def describe(self) -> str:
        return f"CDnet sequence {self.path}"

    def _frames(self) -> Iterator[Frame]:
        seq = self.sequence
        for n, image in self._decoded(((n, seq.input_paths[n]) for n in self.numbers), self.max_frames):
            size = self.size
            gt = None
            gt_path = seq.gt_paths.get(n)
            if gt_path is not None:
                data = _read_image_gray(gt_path)
                if data is None:
                    raise SourceError(f"cannot decode the ground truth {gt_path}: not a readable image")
                if data.shape != image.shape[:2]:
                    raise SourceError(
                        f"{gt_path} is {data.shape[1]}x{data.shape[0]} but the frame is {size[0]}x{size[1]}"
                    )
                gt = data
            try:
                roi = seq.roi(image.shape[:2])
            except (OSError, ValueError) as exc:
                raise SourceError(str(exc)) from None
            yield Frame(n, image, gt, roi)


def _read_image_gray(path: Path) -> np.ndarray | None:
    return _decode_file(path, cv2.IMREAD_GRAYSCALE)


# --------------------------------------------------------------------------
# Opening by spec
# --------------------------------------------------------------------------


def open_source(spec, **opts) -> FrameSource:
    """Open a camera, video file, image folder or CDnet sequence.

    Parameters
    ----------
    spec : int, str or Path
        Camera index (``0``, ``"1"``), video file or stream URL, image folder,
        or CDnet sequence folder. A digit string naming an existing path is read
        as that path.
    **opts
        ``start`` (first frame, 1-based), ``skip`` (frames that decode to pass
        over from ``start`` on, as after a checkpoint) and ``max_frames`` for
        every file source; ``width``, ``height``, ``fps`` (requested) for cameras.

    Returns
    -------
    FrameSource

    Raises
    ------
    SourceError
        With a message saying what was wrong and what to do.
    """
    camera_opts = {k: opts.pop(k) for k in ("width", "height", "fps", "api") if k in opts}
    unknown = set(opts) - {"start", "max_frames", "skip"}
    if unknown:
        raise TypeError(f"open_source() got unknown options {', '.join(sorted(unknown))}")
    if isinstance(spec, bool):
        raise SourceError(f"not a source: {spec!r}")
    if isinstance(spec, (int, np.integer)):
        opts.pop("start", None)
        opts.pop("skip", None)
        return CameraSource(int(spec), **camera_opts, **opts)
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        raise SourceError(
            f"not a source: {spec!r}; give a camera index, a video file, an image folder or a "
            "CDnet sequence folder"
        )
    text = spec.strip()
    if not text:
        raise SourceError("the source is empty; give a camera index, a video file or a folder")
    if text.isdigit() and not Path(text).exists():
        opts.pop("start", None)
        opts.pop("skip", None)
        return CameraSource(int(text), **camera_opts, **opts)
    if _is_url(text) and not text.lower().startswith("file://"):
        return VideoSource(text, **opts)
    if text.lower().startswith("file://"):
        text = text[7:]
    p = Path(text).expanduser()
    if not p.exists():
        if not p.parent.exists() and str(p.parent) not in ("", "."):
            raise SourceError(f"{p} does not exist (nor does its folder {p.parent})")
        # Let the video checks give the detailed message (similar names).
        _check_video_file(p)
    if p.is_dir():
        if not os.access(p, os.R_OK | os.X_OK):
            raise SourceError(f"cannot read the folder {p}: permission denied")
        try:
            cdnet = is_cdnet_sequence(p)
        except PermissionError:
            raise SourceError(f"cannot read the folder {p}: permission denied") from None
        if cdnet:
            return CDnetSource(p, **opts)
        return ImageFolderSource(p, **opts)
    if p.suffix.lower() in IMAGE_EXTENSIONS:
        raise SourceError(
            f"{p} is a single image; give the folder that holds the frames ({p.parent}) instead"
        )
    return VideoSource(p, **opts)
