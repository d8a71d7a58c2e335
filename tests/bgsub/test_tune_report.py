"""The tuning script's reports (benchmarks/bgsub_tune.py): configurations merged across
spellings, the summary rows, and the two-candidate cross-validation against a reference."""

from __future__ import annotations

import json

import pytest
from tests._scripts import load_benchmark

tune = load_benchmark("bgsub_tune")

GROUPS = {"highway": "cdnet", "highway+jitter": "cdnet", "Board": "sbi", "Board+jitter": "sbi",
          "birds": "ucsd", "birds+jitter": "ucsd"}


def _row(hw, board, birds):
    return {"highway": hw, "highway+jitter": hw - 0.1, "Board": board, "Board+jitter": board - 0.1,
            "birds": birds, "birds+jitter": birds - 0.1}


def test_resolve_merges_two_spellings_of_the_defaults():
    table = {json.dumps({}): {"highway": 0.9}, json.dumps({"width": 18.0}): {"Board": 0.8},
             json.dumps({"width": 30.0}): {"highway": 0.5}}
    out = tune.resolve_configs(table, "olkn")
    assert len(out) == 2
    merged = [v for k, v in out.items() if json.loads(k)["width"] == 18.0]
    assert merged == [{"highway": 0.9, "Board": 0.8}]
    assert all(json.loads(k)["rho_rule"] == "quantile" for k in out)  # completed with the defaults


def test_summary_rows_and_paired_cv():
    ref, better, worse_on_sbi = (json.dumps({"w": w}, sort_keys=True) for w in (1, 2, 3))
    table = {ref: _row(0.9, 0.6, 0.3), better: _row(0.92, 0.62, 0.31), worse_on_sbi: _row(0.95, 0.4, 0.35)}
    rows = tune.summary_rows(table, {"w": 1}, GROUPS)
    assert [r["changes"] for r in rows] == [{"w": 2}, {}, {"w": 3}]
    assert rows[0]["plain"] == pytest.approx((0.92 + 0.62 + 0.31) / 3)
    assert rows[0]["sbi"] == pytest.approx(0.62) and rows[0]["highway+jitter"] == pytest.approx(0.82)
    paired = {json.dumps(r["params"], sort_keys=True): r for r in tune.paired_cross_validate(table, ref, GROUPS)}
    assert paired[better]["folds_choosing"] == ["cdnet", "sbi", "ucsd"]
    assert paired[better]["family_delta"]["sbi"] == pytest.approx(0.02)
    # better on cdnet and ucsd, much worse on sbi: only the fold that holds sbi out (trained on the
    # other two) chooses it, and that is where it loses
    w3 = paired[worse_on_sbi]
    assert w3["folds_choosing"] == ["sbi"]
    assert w3["oof_F_plain"] == pytest.approx((0.9 + 0.4 + 0.3) / 3)
    assert w3["oof_F_augmented"] == pytest.approx((0.8 + 0.3 + 0.2) / 3)


def test_rows_that_record_every_parameter_keep_them_when_a_default_changes(tmp_path):
    import bgsub

    ran_with = dict(bgsub.create("olkn").params, init_radius=3)  # as a run before olkn's default became 8
    rows = [{"algo": "olkn", "params": {}, "resolved": ran_with, "name": "highway", "seq": "x/highway",
             "group": "cdnet", "F": 0.9},
            {"algo": "olkn", "params": {}, "name": "Board", "seq": "x/Board", "group": "sbi", "F": 0.8}]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tune.resolve_configs(tune.load_results(path, "olkn"), "olkn")
    by_radius = {json.loads(k)["init_radius"]: v for k, v in out.items()}
    # the row that recorded its parameters keeps them; the old-style row is completed with today's defaults
    assert by_radius == {3: {"highway": 0.9}, bgsub.create("olkn").params["init_radius"]: {"Board": 0.8}}
