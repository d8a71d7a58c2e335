"""Reference cycles are collected in the GUI thread only (bgsub_gui.gc_thread)."""

from __future__ import annotations

import gc
import threading
import weakref

from bgsub_gui.gc_thread import collect_in_gui_thread


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_a_worker_thread_never_collects_and_leaving_collects_here(qapp):
    before = gc.isenabled()
    with collect_in_gui_thread():
        assert not gc.isenabled()
        node = _Node()
        ref = weakref.ref(node)
        del node
        # A worker that allocates enough containers to trigger every generation's threshold.
        worker = threading.Thread(target=lambda: [[i] for i in range(200_000)])
        worker.start()
        worker.join()
        assert ref() is not None  # nothing collected it in the worker thread
    assert ref() is None  # collected on leaving, in this thread
    assert gc.isenabled() == before


def test_the_gui_threads_timer_collects(qapp, qtbot):
    with collect_in_gui_thread(interval_s=0.01):
        node = _Node()
        ref = weakref.ref(node)
        del node
        junk = [[i] for i in range(5_000)]  # past generation 0's threshold
        qtbot.waitUntil(lambda: ref() is None, timeout=5000)
        del junk
