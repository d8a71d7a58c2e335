"""Averages over seeds, text tables, JSON and PNG output for the benchmarks."""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def mean_std(values):
    """Mean and sample standard deviation (ddof=1; 0 for one value), ignoring NaN."""
    a = np.asarray(values, dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return math.nan, math.nan
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def fmt(mean, std=None, digits=3):
    """``"0.081 ± 0.010"``, or ``"n/a"`` for NaN."""
    if mean is None or not np.isfinite(mean):
        return "n/a"
    if std is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def fmt_g(mean, std=None):
    """Like :func:`fmt` with a precision suited to the magnitude (seconds, counts)."""
    if mean is None or not np.isfinite(mean):
        return "n/a"
    digits = 0 if abs(mean) >= 100 else 1 if abs(mean) >= 1 else 3 if abs(mean) >= 0.01 else 5
    return fmt(mean, std, digits)


def table(header, rows):
    """A plain-text table with aligned columns (markdown-compatible pipes)."""
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for k, r in enumerate(cells):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


class Timer:
    """``with Timer() as t: ...``; then ``t.seconds``."""

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._t0
        return False


def plots_dir(path):
    """Create the plot folder; ValueError with a clear message if it cannot be."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create the plot folder {p}: {exc.strerror}") from exc
    if not os.access(p, os.W_OK):
        raise ValueError(f"the plot folder {p} is not writable")
    return p


def save_figure(fig, path):
    """Write ``fig`` as PNG to ``path`` atomically (temporary file, then rename)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=path.stem + ".", suffix=".png.tmp", dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=90, bbox_inches="tight")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def finish_figure(fig, path, title=None):
    """Give ``fig`` its ``title`` (when given), lay it out, save it to ``path`` (:func:`save_figure`) and close
    it; returns ``[path]``, the list an example's ``plot`` returns."""
    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    path = save_figure(fig, path)
    pyplot().close(fig)
    return [path]


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def band(ax, x, runs, label, **kw):
    """Plot the mean over runs (rows) with a +-1 standard-deviation band."""
    runs = np.asarray(runs, dtype=np.float64)
    m = np.nanmean(runs, axis=0)
    s = np.nanstd(runs, axis=0, ddof=1) if runs.shape[0] > 1 else np.zeros_like(m)
    (line,) = ax.plot(x, m, label=label, **kw)
    ax.fill_between(x, m - s, m + s, color=line.get_color(), alpha=0.15, linewidth=0)
    return line


def curve_table(grid, available, runs, digits=3):
    """A table of one curve per method against the number of learning points: a row per grid point with
    each method's mean over seeds of ``runs[name]`` (one row per seed, one column per grid point)."""
    rows = [[str(g)] + [fmt(np.nanmean(np.asarray(runs[m.name])[:, i]), digits=digits) for m in available]
            for i, g in enumerate(grid)]
    return table(["n"] + [m.name for m in available], rows)


def curve_panel(ax, grid, available, runs, ylabel, title, label=None, **kw):
    """One :func:`band` per method of ``runs[name]`` (one row per seed) against the number of learning points;
    ``label(method)`` names its line (the method's name by default)."""
    for m in available:
        band(ax, grid, runs[m.name], m.name if label is None else label(m), **kw)
    ax.set(xlabel="number of learning points", ylabel=ylabel, title=title)


def fit_time_bars(ax, available, seconds, title):
    """Bars of each method's mean fit time (``seconds[name]``: one per seed) with +-1 sd, log scale."""
    names = [m.name for m in available]
    stats = [mean_std(seconds[n]) for n in names]
    ax.bar(names, [s[0] for s in stats], yerr=[s[1] for s in stats], color="tab:gray")
    ax.set_yscale("log")
    ax.set(ylabel="seconds", title=title)
    ax.tick_params(axis="x", rotation=30, labelsize=8)


def report_text(lines, unavailable):
    """An example's report: its ``lines``, then a line naming each method that was not run
    (``unavailable``: ``{name: reason}``) and why."""
    for name, reason in unavailable.items():
        lines += ["", f"{name}: not run ({reason})"]
    return "\n".join(lines)
