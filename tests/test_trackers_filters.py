"""Causal filters: One Euro and the batched Kalman filter (checked against filterpy itself)."""

import numpy as np
import pytest
from filterpy.common import Q_continuous_white_noise
from filterpy.kalman import KalmanFilter as FilterpyKalman

from realtime.data import keypoint_groups
from realtime.errors import UserError
from trackers.kalman import KalmanFilter, initial_covariance, process_noise, spectral_density, transition
from trackers.one_euro import OneEuroFilter, one_euro_parameters
from trackers.regions import per_keypoint


def _run(filt, t, z, scores=None, sizes=None):
    """Feed (T, N, K, D) frames; returns (outputs (T, N, K, D), predicted (T, N, K))."""
    outs, preds = [], []
    for i, ti in enumerate(t):
        sc = None if scores is None else scores[i]
        o, p = filt(ti, z[i], sizes=sizes, scores=sc)  # every live filter takes the same arguments
        outs.append(o)
        preds.append(p)
    return np.array(outs), np.array(preds)


FILTERS = {
    "one_euro": lambda: OneEuroFilter(min_cutoff=0.5, beta=10.0),
    "kalman_cv": lambda: KalmanFilter(cutoff_hz=2.5),
    "kalman_ca": lambda: KalmanFilter(cutoff_hz=2.5, order="acceleration"),
}


@pytest.mark.parametrize("name", FILTERS)
def test_constant_signal_stays_constant(name):
    rng = np.random.default_rng(0)
    point = rng.uniform(0, 500, (2, 5, 2))
    t = np.cumsum(rng.uniform(0.01, 0.05, 60))
    z = np.broadcast_to(point, (60, 2, 5, 2))
    out, pred = _run(FILTERS[name](), t, z, sizes=np.array([300.0, 100.0]))
    np.testing.assert_allclose(out, z, atol=1e-9)
    assert not pred.any()


@pytest.mark.parametrize("name, bound", [("one_euro", 0.0), ("kalman_cv", 0.20), ("kalman_ca", 0.35)])
def test_step_is_followed_without_overshoot_beyond_bound(name, bound):
    t = np.arange(90) / 30.0
    z = np.zeros((90, 1, 1, 2))
    z[t >= 1.0, ..., 0] = 100.0  # 100 px step at t = 1 s (a quarter of a 400 px person)
    out, _ = _run(FILTERS[name](), t, z, sizes=np.array([400.0]))
    x = out[:, 0, 0, 0]
    assert x.max() <= 100.0 * (1 + bound) + 1e-9
    assert x.min() >= -1e-9
    assert abs(x[-1] - 100.0) < 0.5  # settled two seconds later
    assert np.all(out[:, 0, 0, 1] == 0.0)  # the other axis is untouched


def test_one_euro_first_sample_passes_through_and_reset():
    f = OneEuroFilter(min_cutoff=0.5, beta=10.0)
    z0 = np.array([[[10.0, 20.0], [30.0, 40.0]]])
    out, _ = f(0.0, z0, sizes=np.array([100.0]))
    np.testing.assert_array_equal(out, z0)
    out, _ = f(1 / 30, z0 + 5.0, sizes=np.array([100.0]))
    assert np.all((out > z0) & (out < z0 + 5.0))  # smoothed, between old and new
    f.reset()
    out, _ = f(2 / 30, z0 + 50.0, sizes=np.array([100.0]))
    np.testing.assert_array_equal(out, z0 + 50.0)


def test_one_euro_is_scale_normalised():
    """Scaling positions and person size together scales the output: one beta fits near and far people."""
    rng = np.random.default_rng(1)
    t = np.arange(60) / 30.0
    z = np.cumsum(rng.normal(0, 3, (60, 1, 4, 2)), axis=0)
    near, _ = _run(OneEuroFilter(0.5, 10.0), t, z, sizes=np.array([400.0]))
    far, _ = _run(OneEuroFilter(0.5, 10.0), t, z / 4, sizes=np.array([100.0]))
    np.testing.assert_allclose(far * 4, near, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", FILTERS)
def test_variable_dt_matches_the_motion(name):
    """A ramp sampled at irregular times with dropped frames is tracked with small error and no NaN."""
    rng = np.random.default_rng(2)
    t = np.sort(rng.uniform(0, 3, 70))
    z = np.zeros((70, 1, 3, 2))
    z[..., 0] = (50 * t)[:, None, None]  # 50 px/s
    z = z + rng.normal(0, 0.5, z.shape)
    out, _ = _run(FILTERS[name](), t, z, sizes=np.array([400.0]))
    assert np.isfinite(out).all()
    late = t > 1.0
    err = np.abs(out[late, ..., 0] - (50 * t[late])[:, None, None])
    assert err.mean() < (6.0 if name == "one_euro" else 1.5)  # One Euro lags a ramp by design; Kalman does not


@pytest.mark.parametrize("name", FILTERS)
def test_low_score_and_missing_points_are_predicted_not_measured(name):
    t = np.arange(20) / 30.0
    z = np.zeros((20, 1, 3, 2))
    z[..., 0] = (30 * t)[:, None, None]
    scores = np.ones((20, 1, 3))
    z[10, 0, 1] = 500.0  # an outlier with a low score
    scores[10, 0, 1] = 0.1
    z[11, 0, 2] = np.nan  # a missing measurement
    out, pred = _run(FILTERS[name](), t, z, scores=scores, sizes=np.array([400.0]))
    assert pred[10, 0, 1] and pred[11, 0, 2] and pred.sum() == 2
    assert np.isfinite(out).all()
    # The 500 px outlier left no trace: the point stays within a frame's motion (1 px) of its neighbour.
    assert np.abs(out[10:13, 0, 1, 0] - out[10:13, 0, 0, 0]).max() < 2.0
    assert np.abs(out[11:14, 0, 2, 0] - out[11:14, 0, 0, 0]).max() < 2.0


def test_kalman_matches_filterpy_kalman_filter():
    """The batched predict/update equal filterpy's KalmanFilter with the same F, Q, R at every step."""
    rng = np.random.default_rng(3)
    T = 50
    t = np.cumsum(rng.uniform(0.02, 0.06, T))
    z = (100 * np.sin(3 * t))[:, None, None, None] + rng.normal(0, 2, (T, 1, 1, 2))
    scores = rng.uniform(0.4, 1.0, (T, 1, 1))
    ours, _ = _run(KalmanFilter(cutoff_hz=3.0, min_score=0.0), t, z, scores=scores)
    q = spectral_density(3.0, 2)
    for axis in range(2):
        kf = FilterpyKalman(dim_x=2, dim_z=1)
        kf.H = np.array([[1.0, 0.0]])
        kf.x = np.array([z[0, 0, 0, axis], 0.0])
        kf.P = initial_covariance(np.array(1 / scores[0, 0, 0] ** 2), 2)
        ref = [kf.x[0]]
        for i in range(1, T):
            dt = t[i] - t[i - 1]
            kf.predict(F=transition(dt, 2), Q=Q_continuous_white_noise(2, dt, q))
            kf.update(z[i, 0, 0, axis], R=1 / scores[i, 0, 0] ** 2)
            ref.append(kf.x[0])
        np.testing.assert_allclose(ours[:, 0, 0, axis], ref, atol=1e-9)


@pytest.mark.parametrize("dim", [2, 3])
def test_process_noise_and_transition_match_filterpy(dim):
    dts = np.array([0.001, 1 / 30, 0.25, 2.0])
    for dt, q in zip(dts, process_noise(dts, dim)):
        np.testing.assert_allclose(q, Q_continuous_white_noise(dim, dt), rtol=1e-12, atol=1e-15)
    F = transition(np.array(0.1), dim)
    expected = np.array([[1, 0.1, 0.005], [0, 1, 0.1], [0, 0, 1]])[:dim, :dim]
    np.testing.assert_allclose(F, expected)


def test_rows_keep_persons_apart_and_state_grows_only_to_the_rows_used():
    f = KalmanFilter(cutoff_hz=2.5)
    a = np.full((1, 4, 2), 10.0)
    b = np.full((1, 4, 2), 300.0)
    f(0.0, a, rows=np.array([3]))
    assert f.num_rows == 4
    out_b, _ = f(0.0, b, rows=np.array([1]))
    out_a, _ = f(1 / 30, a, rows=np.array([3]))
    np.testing.assert_allclose(out_a, a)
    np.testing.assert_allclose(out_b, b)


def test_region_parameters_cover_the_308_keypoints():
    min_cutoff, beta = one_euro_parameters(0.5)
    assert min_cutoff.shape == beta.shape == (308,) and np.all(min_cutoff > 0)
    values = per_keypoint({"body": 1, "foot": 2, "left_hand": 3, "right_hand": 4, "extra": 5, "face": 6})
    for value, region in enumerate(["body", "foot", "left_hand", "right_hand", "extra", "face"], start=1):
        assert np.all(values[keypoint_groups()[region]] == value)
    light, _ = one_euro_parameters(0.0)
    heavy, _ = one_euro_parameters(1.0)
    assert np.all(light > min_cutoff) and np.all(heavy < min_cutoff)
    with pytest.raises(UserError, match="between 0 and 1"):
        one_euro_parameters(1.5)
