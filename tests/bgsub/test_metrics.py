"""CDnet scoring and the streaming ROC, checked against direct counting."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bgsub.metrics import (
    METRIC_NAMES,
    ConfusionCounts,
    SequenceScorer,
    StreamingROC,
    frame_counts,
    mean_metrics,
)


def _brute_counts(mask, gt, roi):
    tp = fp = fn = tn = 0
    for m, g, r in zip(mask.ravel(), gt.ravel(), roi.ravel()):
        if not r or g in (85, 170):
            continue
        pred = m == 255
        pos = g == 255
        tp += pred and pos
        fp += pred and not pos
        fn += (not pred) and pos
        tn += (not pred) and not pos
    return ConfusionCounts(tp, fp, fn, tn)


def _random_frame(rng, shape=(23, 31)):
    gt = rng.choice(np.array([0, 50, 85, 170, 255], dtype=np.uint8), size=shape)
    mask = rng.choice(np.array([0, 127, 255], dtype=np.uint8), size=shape)
    roi = rng.random(shape) > 0.2
    return mask, gt, roi


def test_frame_counts_match_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(5):
        mask, gt, roi = _random_frame(rng)
        assert frame_counts(mask, gt, roi) == _brute_counts(mask, gt, roi)
        assert frame_counts(mask, gt) == _brute_counts(mask, gt, np.ones_like(roi))


def test_cdnet_rules_on_a_hand_made_frame():
    gt = np.array([[255, 255, 0, 50, 85, 170]], dtype=np.uint8)
    mask = np.array([[255, 0, 255, 255, 255, 255]], dtype=np.uint8)
    c = frame_counts(mask, gt)
    # 85 and 170 are ignored; shadow (50) predicted foreground is a false positive
    assert c == ConfusionCounts(tp=1, fp=2, fn=1, tn=0)
    # shadow label 127 in a mask is not foreground
    c2 = frame_counts(np.array([[127, 127, 0, 0, 0, 0]], np.uint8), gt)
    assert c2 == ConfusionCounts(tp=0, fp=0, fn=2, tn=2)


def test_metrics_formulas():
    c = ConfusionCounts(tp=30, fp=10, fn=20, tn=940)
    m = c.metrics()
    assert set(m) == set(METRIC_NAMES)
    re_, pr = 30 / 50, 30 / 40
    assert m["recall"] == pytest.approx(re_)
    assert m["precision"] == pytest.approx(pr)
    assert m["specificity"] == pytest.approx(940 / 950)
    assert m["FPR"] == pytest.approx(10 / 950)
    assert m["FNR"] == pytest.approx(20 / 50)
    assert m["PWC"] == pytest.approx(100 * 30 / 1000)
    assert m["F"] == pytest.approx(2 * pr * re_ / (pr + re_))


def test_metrics_undefined_are_nan_and_sum_adds():
    m = ConfusionCounts(0, 0, 0, 100).metrics()
    assert math.isnan(m["recall"]) and math.isnan(m["F"]) and m["specificity"] == 1.0
    assert ConfusionCounts(0, 5, 5, 0).metrics()["F"] == 0.0
    total = sum([ConfusionCounts(1, 2, 3, 4), ConfusionCounts(10, 20, 30, 40)])
    assert total == ConfusionCounts(11, 22, 33, 44)


def test_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="does not match"):
        frame_counts(np.zeros((4, 5), np.uint8), np.zeros((5, 4), np.uint8))


def _exact_auc(scores, labels):
    # probability that a positive outscores a negative (ties count half)
    pos = np.sort(scores[labels])
    neg = np.sort(scores[~labels])
    less = np.searchsorted(neg, pos, side="left")
    leq = np.searchsorted(neg, pos, side="right")
    return float(np.sum(less + leq) / 2) / (len(pos) * len(neg))


def test_streaming_roc_matches_exact_counts_and_auc():
    rng = np.random.default_rng(1)
    roc = StreamingROC(-1.0, 1.0, n_bins=256)
    all_s, all_l = [], []
    for _ in range(6):
        gt = rng.choice(np.array([0, 50, 85, 255], np.uint8), size=(20, 30))
        roi = rng.random(gt.shape) > 0.1
        # quantise scores to the bin edges so the histogram is exact
        s = np.round(rng.normal(0.0, 0.4, gt.shape) + 0.5 * (gt == 255), 3).astype(np.float32)
        s = np.round(s * 128) / 128
        roc.update(s, gt, roi)
        keep = roi & (gt != 85) & (gt != 170)
        all_s.append(np.clip(s[keep], -1.0 - 1 / 128, 1.0 + 1 / 128))
        all_l.append(gt[keep] == 255)
    s = np.concatenate(all_s)
    lab = np.concatenate(all_l)
    assert roc.positives == lab.sum() and roc.negatives == (~lab).sum()
    for t in (-0.5, 0.0, 0.25):
        fpr, tpr = roc.operating_point(t)
        assert tpr == pytest.approx(np.mean(s[lab] > t))
        assert fpr == pytest.approx(np.mean(s[~lab] > t))
    assert roc.auc() == pytest.approx(_exact_auc(s, lab), abs=1e-9)
    fpr, tpr, thr = roc.curve()
    assert fpr[0] == 0 and tpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == 1
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0) and np.all(np.diff(thr) < 0)


def test_roc_of_mask_scores_agrees_with_frame_counts():
    rng = np.random.default_rng(2)
    mask, gt, roi = _random_frame(rng)
    scores = np.where(mask == 255, 0.5, -0.5).astype(np.float32)
    roc = StreamingROC(-1, 1, 1024)
    roc.update(scores, gt, roi)
    m = frame_counts(mask, gt, roi).metrics()
    fpr, tpr = roc.operating_point(0.0)
    assert tpr == pytest.approx(m["recall"]) and fpr == pytest.approx(m["FPR"])


def test_roc_memory_is_constant_and_bad_range_rejected():
    roc = StreamingROC(0, 1, 64)
    n = roc.pos_hist.nbytes + roc.neg_hist.nbytes
    for _ in range(50):
        roc.update(np.random.rand(8, 8), np.full((8, 8), 255, np.uint8))
    assert roc.pos_hist.nbytes + roc.neg_hist.nbytes == n
    assert math.isnan(roc.auc())  # no negatives seen
    with pytest.raises(ValueError, match="lo < hi"):
        StreamingROC(1, 1)


def test_sequence_scorer_and_mean():
    rng = np.random.default_rng(3)
    sc = SequenceScorer(score_range=(-1, 1))
    expect = ConfusionCounts()
    for n in range(4):
        mask, gt, roi = _random_frame(rng)
        sc.add(n + 1, mask, gt, roi, scores=np.where(mask == 255, 1.0, -1.0))
        expect = expect + _brute_counts(mask, gt, roi)
    assert sc.counts == expect and len(sc.frames) == 4
    m = sc.metrics()
    assert m["F"] == pytest.approx(expect.metrics()["F"]) and 0 <= m["auc"] <= 1
    mean = mean_metrics([{"F": 0.5, "x": 1.0}, {"F": math.nan, "x": 3.0}])
    assert mean == {"F": 0.5, "x": 2.0}
