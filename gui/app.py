"""``bgsub-gui``: the desktop app.

Usage::

    bgsub-gui [SOURCE] [--algo NAME] [--preset NAME] [--set KEY=VALUE ...] [--threshold T]
              [--roi MASK.png] [--scale S] [--min-area N] [--boxes]
              [--save-masks DIR] [--overlay FILE.mp4] [--objects FILE.jsonl|.csv]
    bgsub-gui SOURCE --frames N --screenshot FILE.png     # headless, then exit

SOURCE is a camera index (``0``), a video file, a folder of images, a
CDnet-layout sequence folder, or ``sample`` (the bundled sample with ground
truth; also what opens when SOURCE is left out).

With ``--screenshot`` the app runs offscreen (``QT_QPA_PLATFORM=offscreen``
unless set otherwise), processes ``--frames`` frames, saves a picture of the
whole window and exits: 0 when the picture was written and the source played,
1 when the source could not be opened (the picture then shows the error).
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
from pathlib import Path

from bgsub.options import add_frame_arguments, parse_size

__all__ = ["main", "build_parser"]

SAMPLE = "sample"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bgsub-gui",
        description="Background subtraction, live: input frame, foreground mask and score map "
        "next to ROC metrics, on a camera, a video file or a sequence folder.",
        epilog="Keys: Space play/pause, Right step, R restart, O mask overlay, 0 threshold to 0, "
        "A auto score levels, B object boxes, Ctrl+O open a video, Ctrl+Shift+O open a folder, Ctrl+B the sample, "
        "Ctrl+S save masks, Ctrl+Q quit. Drop a file or folder onto the window to open it. "
        "Example: QT_QPA_PLATFORM=offscreen bgsub-gui sample --frames 120 --screenshot gui.png",
    )
    from bgsub import __version__
    from bgsub.registry import algorithms

    p.add_argument("--version", action="version", version=f"bgsub-gui {__version__}")
    p.add_argument(
        "source",
        nargs="?",
        default=SAMPLE,
        metavar="SOURCE",
        help="camera index, video file, image folder, CDnet-layout folder, or 'sample' "
        "(the bundled sample with ground truth; the default)",
    )
    p.add_argument("--algo", default=None, metavar="NAME",
                   help=f"algorithm: {', '.join(algorithms())} (default: olkn when available)")
    p.add_argument("--preset", default=None, metavar="NAME",
                   help="start from a named parameter set of the algorithm (e.g. paper)")
    p.add_argument(
        "--set",
        dest="assignments",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a parameter of the algorithm (repeatable)",
    )
    p.add_argument("--threshold", type=float, default=0.0, help="score threshold of the mask (default 0)")
    add_frame_arguments(p)
    p.add_argument("--paused", action="store_true", help="open the source without starting to play")
    p.add_argument("--frames", type=int, default=None, metavar="N", help="pause after N frames")
    p.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        metavar="FILE.png",
        help="process --frames frames (default 100) offscreen, save a picture of the window, exit",
    )
    p.add_argument("--size", default="1400x880", metavar="WxH", help="window size (default 1400x880)")
    p.add_argument("--save-masks", type=Path, default=None, metavar="DIR", help="write masks as bin%%06d.png")
    p.add_argument("--boxes", action="store_true",
                   help="draw the objects (bounding boxes with track ids) over the input frame")
    p.add_argument("--overlay", type=Path, default=None, metavar="FILE.mp4",
                   help="record the input with the mask tinted and the objects boxed (.mp4, .avi, .mkv)")
    p.add_argument("--objects", type=Path, default=None, metavar="FILE.jsonl|FILE.csv",
                   help="save every frame's objects: frame, track id, box, area, centroid")
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="with --screenshot: give up after S seconds (default 300)",
    )
    return p


def _display_available() -> bool:
    """False on a Unix without X11 or Wayland (where Qt would abort), unless a platform is forced."""
    if os.environ.get("QT_QPA_PLATFORM") or sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _source_spec(text: str):
    if text == SAMPLE:
        return SAMPLE
    return int(text) if text.isdigit() else text


def main(argv: list[str] | None = None) -> int:
    """Run the app; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        size = parse_size(args.size, "--size", 200, "1400x880")
    except ValueError as exc:
        parser.error(str(exc))
    if args.frames is not None and args.frames < 1:
        parser.error(f"--frames must be >= 1, got {args.frames}")
    for option, path, suffixes in (("--overlay", args.overlay, (".mp4", ".avi", ".mkv")),
                                   ("--objects", args.objects, (".jsonl", ".csv"))):
        if path is not None and path.suffix.lower() not in suffixes:
            parser.error(f"{option} {path.name}: end the name in {' or '.join(suffixes)}")
    headless = args.screenshot is not None
    if headless:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        if args.frames is None:
            args.frames = 100

    elif not _display_available():
        print(
            "bgsub-gui: no display to open a window on ($DISPLAY and $WAYLAND_DISPLAY are unset); "
            "run it in a desktop session, or headless with --frames N --screenshot FILE.png",
            file=sys.stderr,
        )
        return 2

    # Qt is imported only now, after QT_QPA_PLATFORM is settled.
    from PySide6.QtWidgets import QApplication

    from bgsub import registry
    from .gc_thread import collect_in_gui_thread
    from .headless import ScreenshotRun, quiet_offscreen_warnings
    from .main_window import MainWindow
    from .model import Session
    from .qt_check import QtBindingError, check_qt_binding

    try:
        check_qt_binding()
    except QtBindingError as exc:
        print(f"bgsub-gui: {exc}", file=sys.stderr)
        return 2

    try:
        algo = args.algo
        if algo is not None and algo not in registry.algorithms():
            raise ValueError(f"unknown algorithm {algo!r}; choose one of {', '.join(registry.algorithms())}")
        from bgsub.pipeline import load_roi

        roi = load_roi(args.roi) if args.roi is not None else None
        session = Session(algo=algo, threshold=args.threshold, roi=roi, scale=args.scale, min_area=args.min_area)
        params = registry.default_params(session.algo, args.preset) if args.preset else {}
        params.update(registry.parse_assignments(session.algo, args.assignments))
        if params:
            session.set_algorithm(session.algo, params)
        lo, hi = session.score_range
        if not lo <= args.threshold <= hi:
            raise ValueError(
                f"--threshold must lie in the score range [{lo:g}, {hi:g}] of {session.algo}, "
                f"got {args.threshold:g}"
            )
    except ValueError as exc:
        parser.error(str(exc))

    if headless and os.environ.get("QT_QPA_PLATFORM") == "offscreen":
        quiet_offscreen_warnings()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("bgsub-gui")
    app.setOrganizationName("olk-bgsub")
    # From here on threads run: the worker's, and a camera's reader (see bgsub_gui.gc_thread).
    with collect_in_gui_thread():
        window = MainWindow(session)
        window.resize(*size)
        window.show()
        if args.save_masks is not None:
            window.set_save_folder(args.save_masks)
        if args.frames is not None:
            window.controller.set_frame_limit(args.frames)

        run = ScreenshotRun(app, window, args.screenshot, args.timeout) if headless else None
        if args.boxes:
            window.set_show_objects(True)
        if args.source == SAMPLE:
            window.open_sample()
        else:
            window.open_source(_source_spec(args.source))
        # After the source: a recording belongs to one source (opening another one finishes it).
        if args.overlay is not None:
            window.set_overlay_video(args.overlay)
        if args.objects is not None:
            window.set_objects_file(args.objects)
        if run is not None and window.last_error:  # the sample could not be found
            print(f"bgsub-gui: {window.last_error}", file=sys.stderr)
            run.finish(1)
        elif not args.paused or headless:
            window.play()
        code = app.exec()
        stopped = window.shutdown()
    code = run.exit_code if run is not None else code
    if not stopped:
        _exit_without_the_worker(code)
    return code


def _exit_without_the_worker(code: int) -> None:
    """The worker thread did not stop: it is inside a call that cannot be interrupted (numba compiling the
    kernels, a read that never returns). Qt aborts the process when a running thread is destroyed, as it
    would be when the interpreter exits; so say so, and at exit end the process with ``code`` before that."""
    print("bgsub-gui: the worker thread is still busy (compiling or reading); exiting without it",
          file=sys.stderr, flush=True)

    def _exit() -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    atexit.register(_exit)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
