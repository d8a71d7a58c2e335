"""The bands of rows the serial frame kernels run in: balanced by time, covering every row once."""

import threading
import time

import numba
import numpy as np
import pytest

from bgsub.models import _bands


def _covers(bounds, rows):
    assert bounds[0] == 0 and bounds[-1] == rows
    assert all(b > a for a, b in zip(bounds, bounds[1:]))  # every band at least one row


@pytest.mark.parametrize("n", [2, 3, 4])
def test_split_moves_rows_to_the_faster_band_until_balanced(n):
    rows = 120
    per_row = np.ones(rows)
    per_row[: rows // 3] = 4.0  # the top third costs four times as much a row
    split = _bands._Split(rows, n)
    _covers(split.bounds, rows)
    for _ in range(60):
        times = [per_row[a:b].sum() for a, b in split.bands()]
        split.update(times)
        _covers(split.bounds, rows)
    times = [per_row[a:b].sum() for a, b in split.bands()]
    assert max(times) / min(times) < 1.2, times
    equal = [per_row[rows * k // n: rows * (k + 1) // n].sum() for k in range(n)]
    assert max(times) < 0.8 * max(equal)  # the frame's time is its slowest band's


def _rebalanced(cost, bounds, seconds):
    """The split's update in plain numpy: each band's rows rescaled, the cuts where the running sum first reaches
    each share (``searchsorted``), at least one row a band."""
    cost = cost.copy()
    n = len(seconds)
    for k, t in enumerate(seconds):
        band = cost[bounds[k]:bounds[k + 1]]
        now = band.sum()
        if now > 0.0 and t > 0.0:
            band *= (1.0 - _bands.SPLIT_SMOOTHING) + _bands.SPLIT_SMOOTHING * (t / now)
    total = np.cumsum(cost)
    cuts = np.searchsorted(total, total[-1] * np.arange(1, n) / n)
    out = [0]
    for k, c in enumerate(cuts.tolist()):
        out.append(min(max(int(c), out[-1] + 1), len(cost) - (n - 1 - k)))
    return cost, out + [len(cost)]


@pytest.mark.parametrize("seed", range(20))
def test_split_update_is_the_plain_transcription(seed):
    rng = np.random.default_rng(seed)
    rows, n = int(rng.integers(2, 300)), int(rng.integers(2, 5))
    n = min(n, rows)
    split = _bands._Split(rows, n)
    split.cost[:] = rng.random(rows) * (rng.random(rows) < 0.9)  # some rows cost nothing
    for _ in range(5):
        seconds = (rng.random(n) * (rng.random(n) < 0.8)).tolist()  # some bands report no time
        cost, bounds = _rebalanced(split.cost, split.bounds.tolist(), seconds)
        split.update(seconds)
        assert split.bounds.tolist() == bounds
        np.testing.assert_allclose(split.cost, cost, rtol=1e-12)  # (numpy sums a band pairwise)
        _covers(bounds, rows)


def test_split_keeps_a_row_per_band_and_ignores_zero_times():
    split = _bands._Split(3, 3)
    for _ in range(20):
        split.update([1.0, 0.0, 1e-9])
        _covers(split.bounds, 3)


def test_run_bands_runs_every_row_once_and_keeps_a_split_per_thread():
    seen = []
    lock = threading.Lock()

    def kernel(frame, out, rows):
        with lock:
            seen.append(rows)
        out[rows[0]:rows[1]] += 1

    frame = np.zeros((37, 2 * _bands.MIN_BAND_PIXELS // 37 + 1), np.uint8)  # enough pixels for two bands
    out = np.zeros(37, np.int64)
    for _ in range(5):
        _bands.run_bands(kernel, frame, out)
    assert (out == 5).all()
    n = _bands.band_count(37, frame.size)
    assert n == min(2, numba.get_num_threads())
    assert len(seen) == 5 * n
    if n > 1:
        assert (kernel, 37) in _bands._local.splits
        other = {}

        def elsewhere():
            other["has"] = (kernel, 37) in getattr(_bands._local, "splits", {})

        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        assert other["has"] is False


@pytest.mark.parametrize("shape", [(1, 1), (24, 32), (60, 80), (72, 113)])
def test_small_frames_run_in_the_calling_thread_alone(shape):
    threads = []

    def kernel(frame, rows):
        threads.append((threading.get_ident(), rows))

    _bands.run_bands(kernel, np.zeros(shape, np.uint8))
    assert threads == [(threading.get_ident(), (0, shape[0]))]
    assert _bands.band_count(shape[0], shape[0] * shape[1]) == 1


def test_bands_per_frame_size():
    t = numba.get_num_threads()
    assert _bands.band_count(100, 2 * _bands.MIN_BAND_PIXELS - 1) == 1
    assert _bands.band_count(100, 2 * _bands.MIN_BAND_PIXELS) == min(t, 2)
    assert _bands.band_count(100, 100 * _bands.MIN_BAND_PIXELS) == min(t, 100)
    assert _bands.band_count(3, 100 * _bands.MIN_BAND_PIXELS) == min(t, 3)  # at most a band a row


def test_a_band_error_reaches_the_caller():
    def kernel(frame, rows):
        if rows[0] > 0:
            raise ValueError("band failed")

    frame = np.zeros((10, _bands.MIN_BAND_PIXELS), np.uint8)
    if _bands.band_count(10, frame.size) > 1:
        with pytest.raises(ValueError, match="band failed"):
            _bands.run_bands(kernel, frame)


def test_threads_calling_at_once_each_get_every_row_once():
    frame = np.zeros((64, 2 * _bands.MIN_BAND_PIXELS // 64 + 1), np.uint8)
    outs = [np.zeros(64, np.int64) for _ in range(3)]

    def kernel(frame, out, rows):
        out[rows[0]:rows[1]] += 1

    def stream(out):
        for _ in range(50):
            _bands.run_bands(kernel, frame, out)

    threads = [threading.Thread(target=stream, args=(out,)) for out in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for out in outs:
        assert (out == 50).all()


def test_a_helper_ends_after_the_thread_it_served(monkeypatch):
    if numba.get_num_threads() < 2:
        pytest.skip("one numba thread: no helper threads")
    monkeypatch.setattr(_bands, "HELPER_IDLE_CHECK", 0.02)
    frame = np.zeros((8, _bands.MIN_BAND_PIXELS), np.uint8)
    made = []

    def stream():
        _bands.run_bands(lambda frame, rows: None, frame)
        made.extend(_bands._local.helpers)

    t = threading.Thread(target=stream)
    t.start()
    t.join()
    assert made
    deadline = time.monotonic() + 5.0
    while any(h.thread.is_alive() for h in made) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(h.thread.is_alive() for h in made)
