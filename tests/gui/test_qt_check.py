"""The installed Qt binding does not lose references to None (PySide6 6.12.0 on Python 3.11 does)."""

from __future__ import annotations

import sys

from bgsub_gui.qt_check import check_qt_binding, none_refcount_leak


def test_void_qt_calls_keep_none_alive():
    before = sys.getrefcount(None)
    lost = none_refcount_leak(calls=256)
    assert lost == 0, (
        f"the Qt binding lost {lost} references to None over 256 calls: the app would crash; "
        "install PySide6-Essentials>=6.5,<6.12"
    )
    # The probe gives back what it measured, so it is harmless even on a bad binding.
    assert sys.getrefcount(None) >= before - 2


def test_check_passes_on_the_installed_binding():
    check_qt_binding()
