"""Leave-one-group-out cross-validation of tuning results over sequence groups (cdnet, sbi, ucsd).

Reads the JSON lines written by ``benchmarks/bgsub_tune.py grid`` and, for each
group, picks the configuration with the best mean F on the two other groups and
reports its mean F on the held-out group (and in-sample on all 16)::

    python benchmarks/bgsub_tune.py grid --algo oem ... --out /tmp/oem.jsonl
    python benchmarks/oem_cv.py /tmp/oem.jsonl --algo oem
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bgsub_tune import cross_validate, load_results  # noqa: E402

GROUPS = {
    "cdnet": ("highway",),
    "sbi": ("Board", "CAVIAR2", "CaVignal", "Foliage", "IBMtest2", "Snellen"),
    "ucsd": ("birds", "boats", "chopper", "flock", "freeway", "ocean", "peds", "traffic", "zodiac"),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results")
    p.add_argument("--algo", default=None)
    args = p.parse_args(argv)
    table = load_results(args.results, args.algo)
    rep = cross_validate(table, folds=tuple(GROUPS.values()))
    for fold, name in zip(rep["folds"], GROUPS):
        fold["group"] = name
    print(json.dumps(rep, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
