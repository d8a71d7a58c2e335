"""Refuse to run on a Qt binding known to crash the app.

PySide6 6.12.0 under Python 3.11 returns ``None`` from every void method without
taking a reference to it. ``None`` is not immortal before Python 3.12, so its
reference count falls by one per Qt call until the interpreter aborts with
"Fatal Python error: none_dealloc" (after a few thousand calls: seconds of a
playing video). :func:`check_qt_binding` measures this directly instead of
trusting version numbers, and fails with a message that says what to install.
"""

from __future__ import annotations

import sys

__all__ = ["none_refcount_leak", "check_qt_binding", "QtBindingError"]

_PROBE_CALLS = 64


class QtBindingError(RuntimeError):
    """The installed Qt binding is broken in a way that would crash the app."""


def none_refcount_leak(calls: int = _PROBE_CALLS) -> int:
    """References to ``None`` lost over ``calls`` void Qt calls (0 on a sound binding)."""
    if sys.version_info >= (3, 12):  # None is immortal: nothing can be lost
        return 0
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(calls):
        probe.setObjectName("bgsub-gui-probe")
    lost = before - sys.getrefcount(None)
    if lost > 0:
        # Give the references back, so that the probe itself does no harm.
        for _ in range(lost):
            _incref_none()
    return max(lost, 0)


_KEEP: list = []


def _incref_none() -> None:
    _KEEP.append(None)


def check_qt_binding() -> None:
    """Raise :class:`QtBindingError` when Qt calls lose references to ``None``."""
    lost = none_refcount_leak()
    if lost >= _PROBE_CALLS // 2:
        import PySide6

        raise QtBindingError(
            f"PySide6 {PySide6.__version__} loses a reference to None on every call under "
            f"Python {sys.version_info.major}.{sys.version_info.minor}, which crashes the app "
            "after a few seconds; install a sound version: "
            "python -m pip install 'PySide6-Essentials>=6.5,<6.12'"
        )
