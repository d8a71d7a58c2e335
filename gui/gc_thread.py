"""Collect Python's reference cycles in the GUI thread only.

Python's cyclic garbage collector runs in whichever thread happens to allocate
when a generation fills up: in this app often the session's worker thread or a
camera's reader thread. A cycle that holds a Qt object of the GUI thread (a
closed window, a widget with a timer) is then destroyed in the wrong thread: Qt
cannot stop that object's timers from there, leaves them registered, and the GUI
thread's event loop later delivers a timer event to freed memory (SIGSEGV in
``QCoreApplication::notifyInternal2`` from ``QTimerInfoList::activateTimers``;
this crashed the GUI tests now and then).

:func:`collect_in_gui_thread` turns automatic collection off and collects on a
timer of the GUI thread instead, with pyqtgraph's
:class:`~pyqtgraph.util.garbage_collector.GarbageCollector`; on exit it collects
once more, in this thread, and restores automatic collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collect_in_gui_thread"]


@contextmanager
def collect_in_gui_thread(interval_s: float = 1.0) -> Iterator[None]:
    """Within the block, cycles are collected only by a timer of the calling (GUI) thread.

    Parameters
    ----------
    interval_s : float
        How often the timer checks the collector's thresholds, in seconds.

    A ``QApplication`` (or ``QCoreApplication``) must exist, and the calling thread must run its
    event loop for collections to happen.
    """
    from pyqtgraph.util.garbage_collector import GarbageCollector

    was_enabled = gc.isenabled()
    collector = GarbageCollector(interval=interval_s)  # disables automatic collection
    try:
        yield
    finally:
        collector.timer.stop()
        gc.collect()
        if was_enabled:
            gc.enable()
