"""Command-line options and the seed loop shared by the three examples."""

from __future__ import annotations

import sys

from learners.bench.methods import apply_overrides, select
from learners.bench.protocol import check_grid


def int_list(text):
    """``"50,100,200"`` -> [50, 100, 200]."""
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise ValueError(f"expected comma-separated integers, got {text!r}") from exc


def float_list(text):
    """``"0,0.001,0.01"`` -> [0.0, 0.001, 0.01]."""
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise ValueError(f"expected comma-separated numbers, got {text!r}") from exc




def nonnegative_values(text, flag):
    """The numbers of a comma-separated option; raises ValueError when one is negative."""
    values = float_list(text)
    if any(v < 0 for v in values):
        raise ValueError(f"{flag} must be >= 0, got {text}")
    return values


def each_seed(args, name, log):
    """The seeds of an example's run (``--seed-offset`` on, ``--seeds`` of them), logging each one done."""
    for s in range(args.seeds):
        seed = args.seed_offset + s
        yield seed
        log(f"{name}: seed {seed} done ({s + 1}/{args.seeds})")


def warm_up(available, *data):
    """Fit every method once on ``data``, so that numba compilation and imports are not timed later."""
    for m in available:
        m.build().fit(*data)


def add_common_arguments(parser, *, grid=None, n_test=None, sweep=None):
    """Options every example takes; ``sweep = (flag, values, help)``: the option of the parameter values an example
    sweeps (comma-separated numbers >= 0, ``values`` by default; :func:`check_common` puts them in
    ``args.sweep_values``)."""
    parser.add_argument("--seeds", type=int, default=20, help="number of random seeds to average over (default 20)")
    parser.add_argument("--seed-offset", type=int, default=0, help="first seed (seeds are offset .. offset+seeds-1)")
    if grid is not None:
        parser.add_argument(
            "--grid",
            type=str,
            default=",".join(map(str, grid)),
            help="comma-separated numbers of learning points to evaluate at (default %(default)s)",
        )
    if n_test is not None:
        parser.add_argument("--n-test", type=int, default=n_test, help="test-set size (default %(default)s)")
    if sweep is not None:
        flag, values, help_text = sweep
        parser.add_argument(flag, dest="sweep", type=str, default=",".join(map(str, values)), help=help_text)
        parser.set_defaults(sweep_flag=flag)
    parser.add_argument("--methods", type=str, default="", help="comma-separated subset of the methods to run")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="METHOD.PARAM=VALUE",
        help="override a method's parameter, e.g. --set OLK_C.C=2 (repeatable)",
    )
    parser.add_argument("--plots", metavar="DIR", help="write PNG plots into DIR")
    parser.add_argument("--json", action="store_true", help="print one JSON object of final-point figures")


def check_common(args):
    """Validate the shared options; raises ValueError with a clear message."""
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    if getattr(args, "n_test", None) is not None and args.n_test < 1:
        raise ValueError(f"--n-test must be >= 1, got {args.n_test}")
    if getattr(args, "grid", None) is not None:
        args.grid_points = check_grid(int_list(args.grid))
    if getattr(args, "sweep", None) is not None:
        args.sweep_values = nonnegative_values(args.sweep, args.sweep_flag)


def resolve_methods(all_methods, args, log):
    """Apply ``--methods`` and ``--set``; split into available methods and skipped ones.

    Returns
    -------
    available : list of Method
    unavailable : dict name -> reason
    """
    names = [n.strip() for n in args.methods.split(",") if n.strip()]
    methods = apply_overrides(select(all_methods, names), args.overrides)
    available, unavailable = [], {}
    for m in methods:
        reason = m.unavailable_reason()
        if reason is None:
            available.append(m)
        else:
            unavailable[m.name] = reason
            log(f"note: {m.name} unavailable: {reason}")
    return available, unavailable


def stderr_log(message):
    print(message, file=sys.stderr, flush=True)
