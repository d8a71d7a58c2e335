"""Where a model's learners run: ``device`` ``"cpu"`` (numba on the CPU's cores) or ``"cuda"`` (an NVIDIA GPU,
:mod:`bgsub.models._cuda_engine`; olkn and norma), and the commands' ``--device`` option.

Imports nothing of the GPU engine until a device other than the CPU is asked for (numba-cuda is an optional
extra: ``pip install -e ".[cuda]"``).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["DEVICES", "add_device_argument", "check_device_for", "spec_device", "without_device", "with_device"]

#: The devices a model runs on.
DEVICES = ("cpu", "cuda")


def add_device_argument(parser: argparse.ArgumentParser, what: str = "") -> None:
    """``--device cpu|cuda`` (default cpu)."""
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where olkn's and norma's per-pixel learners run: cpu (default), or cuda, an NVIDIA GPU "
                             "(needs numba-cuda: pip install -e \".[cuda]\"; docs/gpu.md)" + what)


def check_device_for(algo: str, params: dict[str, Any], device: str) -> None:
    """A ValueError, one line, unless ``algo`` with ``params`` runs on ``device`` here (numba-cuda installed, a
    usable GPU, an algorithm and options the GPU engine runs); builds the subtractor once, without a frame."""
    if device == "cpu":
        return
    from bgsub.registry import create

    create(algo, device=device, **params)


def spec_device(spec: str) -> str:
    """Where an algorithm spec ``NAME[@DEVICE][:PRESET][,K=V...]`` (``bgsub bench --algo``) runs: its
    ``DEVICE``, else the CPU."""
    return spec.split(",")[0].partition(":")[0].partition("@")[2] or "cpu"


def without_device(spec: str) -> str:
    """``spec`` without its ``@DEVICE``."""
    head, sep, rest = spec.partition(",")
    name, colon, preset = head.partition(":")
    return f"{name.partition('@')[0]}{colon}{preset}{sep}{rest}"


def with_device(specs: tuple[str, ...], device: str) -> tuple[str, ...]:
    """``specs`` with, after each olkn and norma, the same on ``device`` (``NAME@DEVICE...``) when it is not the
    CPU: the GPU engine timed beside the CPU engine and the others in one run (``bgsub bench --device cuda``)."""
    if device == "cpu":
        return specs
    out = []
    for spec in specs:
        out.append(spec)
        name, rest = spec.split(",")[0].partition(":")[0], spec[len(spec.split(",")[0].partition(":")[0]):]
        if name in ("olkn", "norma"):
            out.append(f"{name}@{device}{rest}")
    return tuple(out)
