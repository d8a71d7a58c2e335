"""Where a frame kernel's time goes, instruction by instruction (Linux ``perf`` and ``objdump``).

numba's machine code has no symbols ``perf`` can read, so this script finds the kernel's address itself: it
runs ``apply`` on the bench's highway frames (resized; the synthetic clip without the data), takes the entry of
the kernel's compiled function from numba (``library.get_pointer_to_function``), copies ``--span`` bytes of
code from there, samples its own process with ``perf record -p`` while it keeps applying frames, and counts the
samples by offset into that code (``objdump -D -b binary`` disassembles the copy). Prints the kernel's share of
the samples, the shares of its hottest blocks of 512 bytes, and its hottest instructions with the lines before
them (a sample lands just after the instruction that stalled). Usage::

    python benchmarks/kernel_perf.py                               # olkn's bounded frame at 1920x1080
    python benchmarks/kernel_perf.py --kernel norma_score_planes --algo norma --size 1280x720
    python benchmarks/kernel_perf.py --kernel olkn_bootstrap    # the first frame's bootstrap: new subtractors

Needs ``perf`` (and permission to sample one's own process: ``kernel.perf_event_paranoid`` <= 2) and
``objdump`` (binutils).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The kernels this script can find: name -> (module, function).
KERNELS = {"olkn_frame_bounded": ("bgsub.models._bounded_frame", "olkn_frame_bounded"),
           "norma_score_planes": ("bgsub.models._norma_planes", "norma_score_planes"),
           "norma_update": ("bgsub.models._norma_frame", "norma_update"),
           "olkn_bootstrap": ("bgsub.models._frame_kernels", "olkn_bootstrap")}
#: Kernels that run on a model's first frame only: sampled on new subtractors' first frames.
FIRST_FRAME = {"olkn_bootstrap"}


def function_code(dispatcher, span: int) -> tuple[int, bytes]:
    """The address of ``dispatcher``'s first compiled function and ``span`` bytes of code from there."""
    cres = next(iter(dispatcher.overloads.values()))
    addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    return addr, ctypes.string_at(addr, span)


def count_offsets(ips: list[int], base: int, span: int) -> tuple[collections.Counter, int]:
    """Samples by offset into ``[base, base + span)``, and the number of samples in all."""
    return collections.Counter(ip - base for ip in ips if 0 <= ip - base < span), len(ips)


def disassemble(code: bytes) -> dict[int, str]:
    """``objdump``'s text of each instruction of ``code`` by its offset."""
    with tempfile.NamedTemporaryFile(suffix=".bin") as f:
        f.write(code)
        f.flush()
        out = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", f.name], capture_output=True,
                             text=True, check=True).stdout
    text = {}
    for line in out.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\s+(?:[0-9a-f]{2} )+\s*(.*)", line)
        if m and m.group(2).strip():  # (a long instruction's second line holds only bytes)
            text[int(m.group(1), 16)] = m.group(2).strip()
    return text


def report(counts: collections.Counter, total: int, text: dict[int, str], top: int = 12, before: int = 3) -> str:
    """The kernel's share, its hottest 512-byte blocks and its hottest instructions (with ``before`` lines of
    context), as text."""
    lines = [f"samples: {total}, in the kernel's code: {sum(counts.values())} "
             f"({100 * sum(counts.values()) / max(total, 1):.1f} %)", "", "hottest 512-byte blocks:"]
    blocks = collections.Counter()
    for off, k in counts.items():
        blocks[off // 512 * 512] += k
    for off, k in blocks.most_common(8):
        lines.append(f"  +0x{off:05x}  {100 * k / total:5.1f} %")
    offsets = sorted(text)
    lines += ["", "hottest instructions (the sample's instruction last):"]
    for off, k in counts.most_common(top):
        lines.append(f"  {100 * k / total:5.2f} %")
        i = offsets.index(off) if off in text else None
        for o in (offsets[max(0, i - before):i + 1] if i is not None else []):
            lines.append(f"      +0x{o:05x}  {100 * counts.get(o, 0) / total:5.2f}  {text[o]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", choices=sorted(KERNELS), default="olkn_frame_bounded")
    ap.add_argument("--algo", default="olkn", help="the subtractor whose frames run the kernel (default olkn)")
    ap.add_argument("--size", default="1920x1080", help="WxH (default 1920x1080)")
    ap.add_argument("--seconds", type=float, default=5.0, help="sampled seconds (default 5)")
    ap.add_argument("--span", type=int, default=65536, help="bytes of code counted from the kernel's entry")
    a = ap.parse_args(argv)
    missing = [tool for tool in ("perf", "objdump") if shutil.which(tool) is None]
    if missing:
        ap.error(f"needs {' and '.join(missing)} on the PATH (Debian: apt install linux-perf binutils)")
    if a.seconds <= 0 or a.span <= 0:
        ap.error(f"--seconds and --span must be > 0, got {a.seconds} and {a.span}")
    import importlib

    import cv2

    import bgsub
    from bgsub.commands.bench import load_frames

    w, h = (int(v) for v in a.size.lower().split("x"))
    src, origin = load_frames(100)
    frames = [cv2.resize(f, (w, h), interpolation=cv2.INTER_LINEAR) for f in src]
    sub = bgsub.create(a.algo)
    for f in frames[:60]:
        sub.apply(f)
    module, name = KERNELS[a.kernel]
    base, code = function_code(getattr(importlib.import_module(module), name), a.span)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "4000", "-o", str(data), "-p", str(os.getpid()),
                                 "--", "sleep", str(a.seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        n, t0 = 0, time.perf_counter()
        while perf.poll() is None:
            if a.kernel in FIRST_FRAME:
                bgsub.create(a.algo).apply(frames[n % 40])
            else:
                sub.apply(frames[60 + n % 40])
            n += 1
        ms = 1e3 * (time.perf_counter() - t0) / max(n, 1)
        if perf.returncode != 0:
            print(f"kernel_perf: error: perf record failed: {perf.stderr.read().decode().strip()[-300:]}",
                  file=sys.stderr)
            return 1
        ips = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip"], capture_output=True, text=True,
                             check=True).stdout.split()
    counts, total = count_offsets([int(x, 16) for x in ips], base, a.span)
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?")
    print(f"{a.algo} at {w}x{h} ({origin}); {a.kernel}; {n} frames sampled, {ms:.1f} ms a frame; CPU {cpu}\n")
    print(report(counts, total, disassemble(code)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
