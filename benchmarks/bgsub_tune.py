"""Tune subtractor parameters on CDnet-layout sequences, and cross-validate them.

Used to choose the defaults of ``olkn`` and ``norma`` (see ``docs/tuning.md``).
Frames are decoded once per worker process and kept in memory; each (config,
sequence) pair is one job, scored the CDnet way with :mod:`bgsub.metrics`.

Usage::

    python benchmarks/bgsub_tune.py grid --algo olkn --grid width=15,20,30 --grid median=0,5 \
        --data ../shared/data/bgs --out /tmp/tune.jsonl
    python benchmarks/bgsub_tune.py cv --results /tmp/tune.jsonl     # leave-one-family-out CV
    # one command: candidates from a file, plain + jittered sequences, then the CV report
    python benchmarks/bgsub_tune.py grid --algo olkn --configs benchmarks/olkn_candidates.json \
        --augment jitter --out /tmp/olkn.jsonl --cv
    python benchmarks/bgsub_tune.py cv --results /tmp/olkn.jsonl --exclude texture_mode=inter
    # every candidate against the defaults: summary table, and two-candidate CV (candidate vs defaults)
    python benchmarks/bgsub_tune.py table --algo olkn --results /tmp/olkn.jsonl
    python benchmarks/bgsub_tune.py paired --algo olkn --results /tmp/olkn.jsonl

``--augment jitter`` adds the jittered copy of every sequence (its own rows,
named ``seq+jitter``, kept in the sequence's family for the CV).

``--max-frames`` limits each sequence (long warm-ups such as highway's 470
frames are kept: frames past the limit are dropped from the end).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

_CACHE: dict = {}


def _load(path: str, max_frames: int | None, augment: str | None = None):
    key = (path, max_frames, augment)
    if key not in _CACHE:
        from bgsub.augment import augment as augmented
        from bgsub.cdnet import load_sequence

        seq = augmented(load_sequence(path), augment)
        frames = seq.frames if max_frames is None else seq.frames[:max_frames]
        imgs = [seq.read_frame(n) for n in frames]
        gts = {n: seq.read_groundtruth(n) for n in frames if seq.is_scored(n)}
        roi = seq.roi(imgs[0].shape[:2])
        _CACHE.clear()  # one sequence at a time per worker keeps memory bounded
        _CACHE[key] = (frames, imgs, gts, roi)
    return _CACHE[key]


def run_job(job):
    """Evaluate one (algo, params, sequence); returns a list of result dicts.

    ``params["post_median"]`` (a list of apertures, 0 = none) scores several
    median post-filters of the same raw masks in one run: the update policy looks
    at the raw mask, so they share the model.
    """
    algo, params, path, max_frames = job[:4]
    aug = job[4] if len(job) > 4 else None
    import cv2

    import bgsub
    from bgsub.metrics import SequenceScorer
    from bgsub.pipeline.core import exact_scores

    params = dict(params)
    medians = params.pop("post_median", None)
    frames, imgs, gts, roi = _load(path, max_frames, aug)
    sub = bgsub.create(algo, **params)
    full = dict(sub.params)  # every parameter as run, whatever the defaults become
    variants = [None] if medians is None else list(medians)
    scorers = {v: SequenceScorer(score_range=getattr(sub, "score_range", None) if v in (None, 0) else None,
                                 keep_frames=False) for v in variants}
    if any(sc.roc is not None for sc in scorers.values()):
        exact_scores(sub)  # ROC curves need exact score maps (masks are the same either way)
    busy = 0.0
    for n, img in zip(frames, imgs):
        t0 = time.perf_counter()
        mask = sub.apply(img)
        busy += time.perf_counter() - t0
        if n in gts:
            for v, sc in scorers.items():
                m = mask if v is None else (mask if v == 0 else cv2.medianBlur(mask, v))
                sc.add(n, m, gts[n], roi, scores=sub.getScoreMap() if sc.roc is not None else None)
    out = []
    for v, sc in scorers.items():
        m = sc.metrics()
        p = dict(params) if v is None else dict(params, median=v)
        name = Path(path).name + (f"+{aug}" if aug else "")
        out.append({"algo": algo, "params": p, "resolved": full if v is None else dict(full, median=v), "seq": path,
                    "name": name, "group": group_of(path, aug), "F": m["F"],
                    "recall": m["recall"], "precision": m["precision"], "PWC": m["PWC"], "auc": m.get("auc"),
                    "fps": len(frames) / busy if busy else None})
    return out


def group_of(path, augment=None):
    """Family of a sequence for cross-validation: the data folder's name (cdnet2014 -> cdnet, sbi, ucsd).

    Augmented variants stay in their family, so holding a family out holds out its
    jittered copies too (no leak of a sequence into its own test fold).
    """
    family = Path(path).parent.name
    return "cdnet" if family.startswith("cdnet") else family


def _parse_grid(items):
    grid = {}
    for item in items:
        k, _, v = item.partition("=")
        grid[k] = [_autotype(x) for x in v.split(",")]
    return grid


def _autotype(s):
    for t in (int, float):
        try:
            return t(s)
        except ValueError:
            pass
    if s.lower() in ("true", "false"):
        return s.lower() == "true"
    return s


def cmd_grid(args):
    from concurrent.futures import ProcessPoolExecutor

    from bgsub.cdnet import find_sequences

    seqs = [str(p) for p in find_sequences(args.data)]
    if args.only:
        seqs = [s for s in seqs if any(o in s for o in args.only)]
    base = json.loads(args.base) if args.base else {}
    grid = _parse_grid(args.grid)
    keys = list(grid)
    configs = [dict(base, **dict(zip(keys, vals))) for vals in itertools.product(*[grid[k] for k in keys])]
    if args.configs:
        configs = [dict(base, **c) for c in json.load(open(args.configs))]
    # sequence-major order: a worker reuses its decoded frames across configs
    augs = [None] + [a for a in (args.augment or []) if a != "none"]
    jobs = [(args.algo, c, s, args.max_frames, a) for a in augs for s in seqs for c in configs]
    print(f"{len(configs)} configs x {len(seqs)} sequences x {len(augs)} variants", file=sys.stderr)
    with open(args.out, "a") as fh, ProcessPoolExecutor(args.workers) as ex:
        for rs in ex.map(run_job, jobs, chunksize=1):
            for r in rs:
                r["max_frames"] = args.max_frames
                fh.write(json.dumps(r) + "\n")
                print(f"{r['name']:>10} F={r['F']:.4f} {r['params']}", file=sys.stderr)
            fh.flush()
    if args.cv:
        table = exclude_configs(load_results(args.out, args.algo), args.exclude)
        print(json.dumps(logo_cross_validate(table), indent=1))
    return 0


def _key(params):
    return json.dumps(params, sort_keys=True)


def load_results(path, algo=None):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    if algo:
        rows = [r for r in rows if r["algo"] == algo]
    table: dict[str, dict[str, float]] = {}
    for r in rows:
        GROUPS[r["name"]] = r.get("group") or group_of(r["seq"])
        f = r["F"]
        # rows record every parameter as run ("resolved"); older rows only the swept ones, which
        # resolve_configs completes with the current defaults (right only while those have not changed)
        table.setdefault(_key(r.get("resolved") or r["params"]), {})[r["name"]] = 0.0 if f is None or (
            isinstance(f, float) and math.isnan(f)) else f
    return table


#: Sequence name -> family, filled by :func:`load_results`.
GROUPS: dict[str, str] = {}


def _mean(row, names):
    return float(np.mean([row[n] for n in names]))


def logo_cross_validate(table, groups=None):
    """Leave-one-group-out CV: for each family, the config best on the other families, scored on it.

    Returns a report with, per held-out family, the chosen config, its mean F on
    the training families (in-sample) and on the held-out one; the out-of-fold
    per-sequence F (each sequence scored with a config chosen without its family)
    and its means over the plain sequences and over the augmented ones.
    """
    groups = GROUPS if groups is None else groups
    names = sorted({n for v in table.values() for n in v})
    complete = {k: v for k, v in table.items() if all(n in v for n in names)}
    fams = sorted({groups[n] for n in names})
    out = {"folds": [], "oof": {}}
    for fam in fams:
        held = [n for n in names if groups[n] == fam]
        train = [n for n in names if groups[n] != fam]
        best = max(complete, key=lambda k: _mean(complete[k], train))
        out["folds"].append({"held_out": fam, "best_params": json.loads(best), "train_F": _mean(complete[best], train),
                             "test_F": _mean(complete[best], held)})
        for n in held:
            out["oof"][n] = complete[best][n]
    plain = [n for n in names if "+" not in n]
    aug = [n for n in names if "+" in n]
    best_all = max(complete, key=lambda k: _mean(complete[k], names))
    out["best_all"] = {"params": json.loads(best_all), "F_all": _mean(complete[best_all], names),
                       "F_plain": _mean(complete[best_all], plain) if plain else None,
                       "per_sequence": complete[best_all]}
    out["in_sample_F_plain"] = out["best_all"]["F_plain"]
    out["oof_F_plain"] = _mean(out["oof"], plain) if plain else None
    out["oof_F_augmented"] = _mean(out["oof"], aug) if aug else None
    out["cv_train_F"] = float(np.mean([f["train_F"] for f in out["folds"]]))
    out["n_configs"] = len(complete)
    return out


#: Fixed 2-fold split over sequences, each fold mixing CDnet, SBI and UCSD.
FOLDS = (
    ("highway", "Board", "CaVignal", "Snellen", "birds", "chopper", "freeway", "peds", "zodiac"),
    ("CAVIAR2", "Foliage", "IBMtest2", "boats", "flock", "ocean", "traffic"),
)


def cross_validate(table, folds=FOLDS):
    """For each fold: best config on the other folds, its F on this fold. Returns a report dict."""
    names = sorted({n for v in table.values() for n in v})
    complete = {k: v for k, v in table.items() if all(n in v for n in names)}
    out = {"folds": []}
    for i, held in enumerate(folds):
        train = [n for n in names if n not in held]
        test = [n for n in names if n in held]
        best = max(complete, key=lambda k: np.mean([complete[k][n] for n in train]))
        out["folds"].append({
            "held_out": test,
            "best_params": json.loads(best),
            "train_F": float(np.mean([complete[best][n] for n in train])),
            "test_F": float(np.mean([complete[best][n] for n in test])),
        })
    best_all = max(complete, key=lambda k: np.mean([complete[k][n] for n in names]))
    out["best_all"] = {"params": json.loads(best_all),
                       "F": float(np.mean([complete[best_all][n] for n in names])),
                       "per_sequence": complete[best_all]}
    out["cv_test_F"] = float(np.mean([f["test_F"] for f in out["folds"]]))
    out["cv_train_F"] = float(np.mean([f["train_F"] for f in out["folds"]]))
    out["n_configs"] = len(complete)
    return out


def exclude_configs(table, exclusions):
    """``table`` without the configs whose parameters match any ``KEY=VALUE`` of ``exclusions``."""
    drop = [(k, _autotype(v)) for k, _, v in (e.partition("=") for e in exclusions or [])]
    return {c: v for c, v in table.items() if not any(json.loads(c).get(k) == v for k, v in drop)}


def cmd_cv(args):
    table = load_results(args.results, args.algo)
    if args.algo:  # one row per configuration, however the candidate files spelled it
        table = resolve_configs(table, args.algo)
    table = exclude_configs(table, args.exclude)
    rep = logo_cross_validate(table) if args.scheme == "logo" else cross_validate(table)
    print(json.dumps(rep, indent=1))
    return 0


def cmd_top(args):
    table = load_results(args.results, args.algo)
    names = sorted({n for v in table.values() for n in v})
    rows = [(np.mean([v.get(n, 0) for n in names]), k) for k, v in table.items() if len(v) == len(names)]
    rows.sort(reverse=True)
    for f, k in rows[: args.n]:
        print(f"{f:.4f} {k}")
    return 0


def resolve_configs(table, algo):
    """``table`` re-keyed by each config's full parameter set (missing keys = ``algo``'s current defaults).

    Candidate files spell out only the swept parameters; two spellings of the same
    configuration (e.g. the defaults in two runs' files) are merged into one row.
    Rows that record ``resolved`` carry every parameter as run
    (``resolved``) and are keyed by it, so a later change of a default does not move
    them; older rows are completed with the current defaults, which is right only
    while those are the defaults they ran with.
    """
    from bgsub.registry import default_params

    defaults = default_params(algo)
    out: dict[str, dict[str, float]] = {}
    for k, row in table.items():
        out.setdefault(_key(dict(defaults, **json.loads(k))), {}).update(row)
    return out


def _complete(table):
    names = sorted({n for v in table.values() for n in v})
    return names, {k: v for k, v in table.items() if all(n in v for n in names)}


def _changes(params, reference):
    return {k: v for k, v in params.items() if reference.get(k) != v}


def summary_rows(table, reference, groups=None):
    """Per complete config: its changes from ``reference`` and mean F over the plain sequences, the
    augmented ones, all of them (the CV's selection score), highway (plain, jittered) and per family.
    Sorted by the selection score, best first."""
    groups = GROUPS if groups is None else groups
    names, complete = _complete(table)
    plain = [n for n in names if "+" not in n]
    aug = [n for n in names if "+" in n]
    rows = []
    for k, v in complete.items():
        row = {"changes": _changes(json.loads(k), reference), "plain": _mean(v, plain),
               "augmented": _mean(v, aug) if aug else None, "selection": _mean(v, names)}
        for n in ("highway", "highway+jitter"):
            row[n] = v.get(n)
        for fam in sorted({groups[n] for n in names}):
            row[fam] = _mean(v, [n for n in plain if groups[n] == fam])
        rows.append(row)
    rows.sort(key=lambda r: -r["selection"])
    return rows


def paired_cross_validate(table, reference_key, groups=None):
    """Every config against the reference alone: leave-one-group-out CV over the two of them.

    Per candidate: which folds choose it over the reference (on the other families'
    selection score), the out-of-fold means of that two-candidate CV, and the
    candidate's mean change from the reference per family (plain and augmented
    together). A candidate picked after looking at all families is favoured by this
    test; it only says whether a family, held out, would have agreed.
    """
    groups = GROUPS if groups is None else groups
    names, complete = _complete(table)
    ref = complete[reference_key]
    fams = sorted({groups[n] for n in names})
    out = []
    for k, v in complete.items():
        if k == reference_key:
            continue
        rep = logo_cross_validate({reference_key: ref, k: v}, groups)
        out.append({"params": json.loads(k), "folds_choosing": [f["held_out"] for f in rep["folds"]
                                                                 if _key(f["best_params"]) == k],
                    "oof_F_plain": rep["oof_F_plain"], "oof_F_augmented": rep["oof_F_augmented"],
                    "family_delta": {fam: float(np.mean([v[n] - ref[n] for n in names if groups[n] == fam]))
                                     for fam in fams}})
    out.sort(key=lambda r: -(r["oof_F_plain"] + (r["oof_F_augmented"] or r["oof_F_plain"])))
    return out


def _reference(args):
    from bgsub.registry import default_params

    table = resolve_configs(load_results(args.results, args.algo), args.algo)
    table = exclude_configs(table, args.exclude)
    reference = dict(default_params(args.algo), **json.loads(args.reference))
    key = _key(reference)
    if key not in table:
        raise SystemExit(f"the reference configuration is not among the results: {json.dumps(reference)}")
    return table, reference, key


def _fmt(x):
    return "–" if x is None else f"{x:.3f}"


def cmd_table(args):
    table, reference, _ = _reference(args)
    rows = summary_rows(table, reference)
    plain = [n for n in GROUPS if "+" not in n]
    size = {f: sum(GROUPS[n] == f for n in plain) for f in set(GROUPS.values())}
    fams = [k for k in rows[0] if size.get(k, 0) > 1]  # a one-sequence family is its sequence's column
    print("| changes from the reference | mean F, plain | mean F, augmented | selection | highway | "
          "highway+jitter | " + " | ".join(f"{f} ({size[f]})" for f in fams) + " |")
    print("|---" * (6 + len(fams)) + "|")
    for r in rows:
        ch = ", ".join(f"`{k} {v}`" for k, v in sorted(r["changes"].items())) or "**reference**"
        print(f"| {ch} | " + " | ".join(_fmt(r[c]) for c in ("plain", "augmented", "selection", "highway",
                                                               "highway+jitter", *fams)) + " |")
    return 0


def cmd_paired(args):
    table, reference, key = _reference(args)
    for r in paired_cross_validate(table, key):
        ch = _changes(r["params"], reference)
        deltas = " ".join(f"{f} {d:+.4f}" for f, d in r["family_delta"].items())
        print(f"oof {r['oof_F_plain']:.4f} / {_fmt(r['oof_F_augmented'])}  chosen by {r['folds_choosing']}  "
              f"change per family {deltas}  {json.dumps(ch, sort_keys=True)}")
    return 0


def _add_exclude(parser, when=""):
    parser.add_argument("--exclude", action="append", default=[], metavar="KEY=VALUE",
                        help=when + "leave out configs with this parameter value (e.g. texture_mode=inter: too slow)")


def main(argv=None):
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--algo", default="olkn")
    g.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2")
    g.add_argument("--base", default=None, help="JSON dict of fixed parameters")
    g.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "bgs"))
    g.add_argument("--only", nargs="*", default=None, help="substrings of sequence paths to keep")
    g.add_argument("--max-frames", type=int, default=None)
    g.add_argument("--augment", nargs="*", default=None, choices=("none", "jitter", "illumination", "noise"),
                   help="also run these robustness variants of every sequence (bgsub.augment)")
    g.add_argument("--workers", type=int, default=2)
    g.add_argument("--out", required=True)
    g.add_argument("--configs", default=None, metavar="JSON",
                   help="file with a JSON list of parameter dicts to run instead of the grid (merged into --base)")
    g.add_argument("--cv", action="store_true",
                   help="then print the leave-one-group-out cross-validation of everything in --out for this algo")
    _add_exclude(g, "with --cv: ")
    c = sub.add_parser("cv")
    c.add_argument("--results", required=True)
    c.add_argument("--algo", default=None)
    c.add_argument("--scheme", choices=("logo", "2fold"), default="logo",
                   help="leave-one-group-out over the families cdnet/sbi/ucsd (default), or the old fixed 2-fold split")
    _add_exclude(c)
    t = sub.add_parser("top")
    t.add_argument("--results", required=True)
    t.add_argument("--algo", default=None)
    t.add_argument("-n", type=int, default=10)
    for name, helptext in (("table", "markdown table of every config's means, against a reference"),
                           ("paired", "two-candidate CV of every config against a reference")):
        r = sub.add_parser(name, help=helptext)
        r.add_argument("--results", required=True)
        r.add_argument("--algo", required=True)
        r.add_argument("--reference", default="{}",
                       help="JSON dict of the reference's changes from the current defaults (default: the defaults)")
        _add_exclude(r)
    args = p.parse_args(argv)
    return {"grid": cmd_grid, "cv": cmd_cv, "top": cmd_top, "table": cmd_table, "paired": cmd_paired}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
