"""``bgsub-gui``: background subtraction, live, next to its ROC metrics.

A PySide6 + pyqtgraph window that plays a camera, a video file, a folder of
images or a CDnet-layout sequence through any registered subtractor (``olkn``,
``norma``, OpenCV's ``knn`` and ``mog2``) and shows, side by side and in step,
the input frame (optionally with the mask over it), the foreground mask and the
score map (colour map, level control). With ground truth (a CDnet-layout folder,
or the bundled sample) it draws the ROC curve of the frames scored so far with
its AUC and the operating point of the current threshold, and the running
F-measure, recall, precision and PWC; always the frame rate, the frame number
and the share of foreground pixels.

Layout of the package (a Qt-free model injected into the window):

* :mod:`bgsub_gui.model` -- :class:`~bgsub_gui.model.Session`: source, subtractor, metrics;
  no Qt, testable alone.
* :mod:`bgsub_gui.worker` -- runs a session on a ``QThread``; the window gets the
  newest result only, so it never lags behind.
* :mod:`bgsub_gui.views`, :mod:`bgsub_gui.panels` -- the image views, the controls and the
  metrics panel; :mod:`bgsub_gui.main_window` wires them by signals.
* :mod:`bgsub_gui.headless` -- ``--frames N --screenshot FILE.png`` runs.
* :mod:`bgsub_gui.qt_check` -- refuses a Qt binding known to crash (PySide6 6.12.0
  under Python 3.11).
* :mod:`bgsub_gui.gc_thread` -- reference cycles collected in the GUI thread only.
* :mod:`bgsub_gui.app` -- the ``bgsub-gui`` command.

Keyboard: Space play/pause, Right step one frame, R restart, O mask overlay,
0 threshold back to 0, Ctrl+O open a video, Ctrl+Shift+O open a folder, Ctrl+B
open the bundled sample, Ctrl+S save masks, Ctrl+Q quit. Files and folders can
also be dropped onto the window.
"""
