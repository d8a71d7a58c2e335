"""The bundled sample clip: a synthetic street scene with exact ground truth.

The repository ships it in ``videos/``: ``videos/sample/`` (CDnet layout:
``input/``, ``groundtruth/``, ``ROI.bmp``, ``temporalROI.txt``) and
``videos/sample.mp4`` (the same frames as a video file). Where the repository's
``videos/`` is not at hand (an installed wheel), the clip is rendered again,
deterministically, by :mod:`bgsub.synthetic` into a cache folder:
``$BGSUB_CACHE_DIR``, else ``$XDG_CACHE_HOME/bgsub``, else ``~/.cache/bgsub``.

::

    from bgsub.sample import sample_sequence, sample_video
    with open_source(sample_sequence()) as src: ...
"""

from __future__ import annotations

import os
from pathlib import Path

from bgsub.synthetic import SceneConfig, SyntheticScene, write_sequence, write_video

__all__ = ["SAMPLE_CONFIG", "SAMPLE_JPEG_QUALITY", "sample_sequence", "sample_video", "cache_dir", "repo_videos_dir"]

#: The scene of the bundled clip (320x240, 300 frames, seed 0; scored 101-300).
SAMPLE_CONFIG = SceneConfig()
#: JPEG quality of ``videos/sample/input/in%06d.jpg``.
SAMPLE_JPEG_QUALITY = 75
_VERSION = "v1"


def repo_videos_dir() -> Path:
    """``videos/`` of the source checkout this package was imported from."""
    return Path(__file__).resolve().parents[1] / "videos"


def cache_dir() -> Path:
    """Where a re-rendered sample goes when the checkout's ``videos/`` is absent."""
    env = os.environ.get("BGSUB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "bgsub"


def _complete_sequence(p: Path) -> bool:
    if not (p / "temporalROI.txt").is_file() or not (p / "ROI.bmp").is_file():
        return False
    n = SAMPLE_CONFIG.frames
    return (p / "input" / f"in{n:06d}.jpg").is_file() and (p / "groundtruth" / f"gt{n:06d}.png").is_file()


def sample_sequence() -> Path:
    """The bundled sample as a CDnet-layout folder (with ground truth).

    Returns ``videos/sample`` of the checkout when present, else renders the
    same scene into the cache folder once (about 5 s) and returns that.
    """
    bundled = repo_videos_dir() / "sample"
    if _complete_sequence(bundled):
        return bundled
    cached = cache_dir() / f"sample-{_VERSION}" / "sample"
    if not _complete_sequence(cached):
        write_sequence(SyntheticScene(SAMPLE_CONFIG), cached, jpeg_quality=SAMPLE_JPEG_QUALITY)
    return cached


def sample_video() -> Path:
    """The bundled sample as a video file (``sample.mp4``).

    Returns ``videos/sample.mp4`` of the checkout when present, else renders it
    into the cache folder once and returns that.
    """
    bundled = repo_videos_dir() / "sample.mp4"
    if bundled.is_file() and bundled.stat().st_size > 0:
        return bundled
    cached = cache_dir() / f"sample-{_VERSION}" / "sample.mp4"
    if not cached.is_file():
        write_video(SyntheticScene(SAMPLE_CONFIG), cached)
    return cached
