"""``learners-bench``: reproduce the OLK paper's synthetic experiments.

::

    learners-bench example1 [--seeds 20] [--grid 50,100,...,1500] [--plots DIR] [--json]
    learners-bench example2 [--seeds 20] [--grid 10,...,700] [--epsilons ...] [--plots DIR] [--json]
    learners-bench example3 [--seeds 20] [--plots DIR] [--json]
    learners-bench lecture [--seeds 5] [--plots DIR] [--json]
    learners-bench streams [--streams ...] [--models ...] [--json]   (ours vs river, see learners.bench.streams)
    learners-bench svmd-usps-binary | svmd-usps-multiclass | svmd-counting | svmd-novelty | svmd-mnist |
                   svmd-taxonomy [--json] [--plots DIR]      (the SVMD paper's section 6; learners/bench/svmd.py)

Each prints a table of mean ± standard deviation over the seeds (or, with
``--json``, one JSON object mapping each method to its final-point figures; the
table then goes to standard error), and with ``--plots DIR`` writes PNG figures.
Progress goes to standard error. Exit status 0 on success, 2 on bad options.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from learners.bench import example1, example2, example3, lecture, svmd
from learners.bench.common import add_common_arguments, check_common, resolve_methods, stderr_log
from learners.bench.report import plots_dir

EXAMPLES = {
    "example1": (example1, "classification: OLK_C vs NORMA, perceptrons, Projectron, SVM (paper Figs. 2-4)"),
    "example2": (example2, "regression: OLK_R vs NORMA, kernel perceptron, KRLS, LS-SVM (paper Figs. 1, 6)"),
    "example3": (example3, "novelty detection: ROC and AUC of OLK_N and NORMA (paper Fig. 8)"),
    "lecture": (lecture, "the lecture (seed 002): weighted-majority regret, online vs batch EM, kernel-rule width"),
}


def build_parser():
    parser = argparse.ArgumentParser(
        prog="learners-bench",
        description="Reproduce the synthetic experiments of the OLK paper (Li et al. 2013, section IV), "
        "averaged over random seeds.",
    )
    from learners import __version__

    parser.add_argument("--version", action="version", version=f"learners-bench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="EXAMPLE", required=True)
    for name, (module, help_text) in EXAMPLES.items():
        p = sub.add_parser(name, help=help_text, description=module.__doc__.strip().splitlines()[0])
        add_common_arguments(p, **getattr(module, "OPTIONS", {}))
        if hasattr(module, "add_arguments"):  # options of its own
            module.add_arguments(p)
    sub.add_parser("streams", help="prequential accuracy and us/row, ours vs river (learners.bench.streams)",
                   add_help=False)
    svmd.add_subcommands(sub)
    return parser


def _json_safe(obj):
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def main(argv=None) -> int:
    """Run one example; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["streams"]:
        from learners.bench import streams

        return streams.main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in svmd.COMMANDS:
        return svmd.main(args, stderr_log)
    module = EXAMPLES[args.command][0]
    prog = f"learners-bench {args.command}"
    try:
        getattr(module, "check", check_common)(args)
        folder = plots_dir(args.plots) if args.plots else None
        available, unavailable = resolve_methods(module.methods(), args, stderr_log)
        if not available:
            raise ValueError("none of the selected methods can run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
        result = module.run(args, available, stderr_log)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    text = module.report(result, available, unavailable)
    if args.json:
        print(text, file=sys.stderr)
        print(json.dumps(_json_safe(module.final(result))))
    else:
        print(text)
    if folder is not None:
        for path in module.plot(result, available, folder):
            stderr_log(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
