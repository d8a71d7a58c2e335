"""Background subtraction on a webcam, live; or on a video file with ``--video``.

::

    python examples/webcam.py                          # camera 0: frame and mask in a window (gui extra)
    python examples/webcam.py --camera 1 --algo norma  # another camera, another subtractor
    python examples/webcam.py --video clip.mp4 --no-window --mask-video masks.mkv --max-frames 300

Every frame goes through :class:`bgsub.pipeline.Pipeline` (a camera is read on a thread of its own; frames
that arrive while one is processed are dropped, so the window stays live). Once a second it prints the frame
rate and the share of foreground pixels. Ctrl-C, or closing the window, stops cleanly.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import bgsub
from bgsub.pipeline import Callback, MaskVideo, Pipeline
from bgsub.sources import SourceError, open_source


class Status:
    """One line a second: frames, frame rate, foreground share."""

    def __init__(self) -> None:
        self.frames = 0
        self.t0 = self.t_last = time.perf_counter()

    def __call__(self, out) -> None:
        self.frames += 1
        now = time.perf_counter()
        if now - self.t_last >= 1.0:
            self.t_last = now
            fg = 100.0 * np.count_nonzero(out.mask) / out.mask.size
            print(f"frame {out.index}: {self.frames / (now - self.t0):.1f} fps, foreground {fg:.1f} %", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="webcam.py", description=__doc__.splitlines()[0])
    parser.add_argument("--camera", type=int, default=0, help="camera index (default 0)")
    parser.add_argument("--video", type=Path, default=None, help="read this video file instead of a camera")
    parser.add_argument("--algo", default="olkn", choices=bgsub.algorithms(), help="subtractor (default olkn)")
    parser.add_argument("--max-frames", type=int, default=None, metavar="N", help="stop after N frames")
    parser.add_argument("--mask-video", type=Path, default=None, metavar="FILE",
                        help="also write the masks as a video (.mkv: lossless, .mp4, .avi)")
    parser.add_argument("--no-window", action="store_true", help="no window: print the status lines only")
    args = parser.parse_args(argv)

    spec = str(args.video) if args.video is not None else args.camera
    try:
        source = open_source(spec, max_frames=args.max_frames)
    except SourceError as exc:
        print(f"webcam.py: error: {exc}", file=sys.stderr)
        return 1
    status = Status()
    with source:
        sinks = [Callback(status)]
        if args.mask_video is not None:
            sinks.append(MaskVideo(args.mask_video, source.fps or 25.0))
        if not args.no_window:
            from bgsub.pipeline.preview import Preview, display_available

            if display_available():
                try:
                    sinks.append(Preview(source.describe()))
                except ValueError as exc:  # no PySide6: say so, go on without a window
                    print(f"webcam.py: {exc}", file=sys.stderr)
            else:
                print("webcam.py: no display, running without a window", file=sys.stderr)
        print(f"{source.describe()} -> {args.algo}", flush=True)
        result = Pipeline(bgsub.create(args.algo), sinks=sinks).run(source)
    if result.error is not None:
        print(f"webcam.py: error: stopped at {result.error}", file=sys.stderr)
        return 1
    print(f"{result.frames} frames in {result.seconds:.1f} s ({result.fps:.1f} fps)")
    if args.mask_video is not None:
        print(f"mask video: {args.mask_video}")
    return 130 if result.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
