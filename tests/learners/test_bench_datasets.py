"""The OLK paper's synthetic data (Examples 1-3) follow its description."""

import numpy as np
import pytest

from learners.datasets import example2_function, make_example1, make_example2, make_example3


def test_example1_two_gaussians():
    X, y, Xt, yt = make_example1(20000, n_test=500, random_state=0)
    assert X.shape == (20000, 2) and y.shape == (20000,) and Xt.shape == (500, 2) and yt.shape == (500,)
    assert set(np.unique(y)) == {-1, 1}
    assert abs(np.mean(y == 1) - 0.5) < 0.02
    for label, mean in ((1, 1.0), (-1, -1.0)):
        Z = X[y == label]
        np.testing.assert_allclose(Z.mean(axis=0), [mean, mean], atol=0.04)
        np.testing.assert_allclose(np.cov(Z.T), np.eye(2), atol=0.05)


def test_example1_is_reproducible_and_seeded():
    a = make_example1(50, 10, random_state=3)
    b = make_example1(50, 10, random_state=3)
    c = make_example1(50, 10, random_state=4)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])


def test_example2_noisy_sine():
    X, y, Xt, yt = make_example2(20000, n_test=300, random_state=1)
    assert X.shape == (20000, 1) and Xt.shape == (300, 1)
    assert X.min() >= -np.pi and X.max() <= np.pi
    noise = y - (0.2 * np.sin(5 * X[:, 0]) + 0.5 * np.sin(X[:, 0]))
    assert noise.min() >= -0.5 and noise.max() <= 0.5
    assert abs(noise.mean()) < 0.01 and noise.std() == pytest.approx(1 / np.sqrt(12), rel=0.03)
    np.testing.assert_allclose(yt, example2_function(Xt[:, 0]))  # test targets are noise-free


def test_example3_novelty_fraction_and_clusters():
    X, y = make_example3(random_state=2)
    assert X.shape == (100, 2)
    X, y = make_example3(40000, random_state=2)
    assert np.mean(y == -1) == pytest.approx(0.05, abs=0.005)
    np.testing.assert_allclose(X[y == 1].mean(axis=0), [2, 2], atol=0.03)
    np.testing.assert_allclose(X[y == -1].mean(axis=0), [-2, -2], atol=0.1)


def test_bad_sizes():
    with pytest.raises(ValueError, match="n must be an integer >= 1, got 0"):
        make_example1(0)
    with pytest.raises(ValueError, match="n_test"):
        make_example2(10, n_test=-1)
