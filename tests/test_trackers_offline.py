"""Offline smoothing of one track: RTS (equal to filterpy's), Savitzky-Golay, zero-phase Butterworth."""

import numpy as np
import pytest
from filterpy.common import Q_continuous_white_noise
from filterpy.kalman import KalmanFilter as FilterpyKalman
from filterpy.kalman import rts_smoother

from realtime.errors import UserError
from trackers.kalman import initial_covariance, spectral_density, transition
from trackers.offline import OFFLINE_METHODS, covered_frames, smooth_track


@pytest.mark.parametrize("method", OFFLINE_METHODS)
@pytest.mark.parametrize("dim", [2, 3])
def test_constant_signal_stays_constant(method, dim):
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.02, 0.05, 80))
    point = rng.uniform(-2, 2, (6, dim))  # metres for dim 3
    z = np.broadcast_to(point, (80, 6, dim)).copy()
    out = smooth_track(t, z, np.full((80, 6), 0.9), method)
    np.testing.assert_allclose(out, z, atol=1e-9)


@pytest.mark.parametrize("method, bound", [("rts", 0.05), ("savgol", 0.12), ("butterworth", 0.10)])
def test_step_overshoot_is_bounded(method, bound):
    t = np.arange(90) / 30.0
    z = np.zeros((90, 1, 2))
    z[t >= 1.5, 0, 0] = 100.0
    x = smooth_track(t, z, None, method)[:, 0, 0]
    assert x.max() <= 100 * (1 + bound) and x.min() >= -100 * bound
    assert abs(x[-1] - 100) < 0.01 and abs(x[0]) < 0.01  # far from the step: barely touched


@pytest.mark.parametrize("method", OFFLINE_METHODS)
def test_gaps_are_bridged_up_to_the_limit_and_nan_beyond(method):
    t = np.arange(150) / 30.0
    truth = np.stack([40 * np.sin(t), 30 * np.cos(0.7 * t)], axis=1)[:, None, :]
    z = truth.copy()
    z[:5] = np.nan  # person not there yet
    z[30:36] = np.nan  # 6 missing frames: a 0.23 s gap, bridged
    z[60:90] = np.nan  # 1 s gap, kept
    z[145:] = np.nan  # gone at the end
    out = smooth_track(t, z, None, method, max_gap_seconds=0.5)
    assert np.isnan(out[:5]).all() and np.isnan(out[60:90]).all() and np.isnan(out[145:]).all()
    inside = np.r_[5:60, 90:145]
    assert np.isfinite(out[inside]).all()
    assert np.abs(out[30:36] - truth[30:36]).max() < 1.0  # the bridged frames follow the motion
    assert np.abs(out[inside] - truth[inside]).max() < 1.0


def test_low_score_points_are_ignored_and_scores_count_as_gaps():
    t = np.arange(60) / 30.0
    z = np.zeros((60, 2, 2))
    scores = np.ones((60, 2))
    z[20, 0] = 300.0  # outlier, low score: ignored
    scores[20, 0] = 0.1
    scores[:, 1] = 0.1  # keypoint 1 never trusted: nothing to output
    for method in OFFLINE_METHODS:
        out = smooth_track(t, z, scores, method, min_score=0.3)
        np.testing.assert_allclose(out[:, 0], 0.0, atol=1e-9)
        assert np.isnan(out[:, 1]).all()


@pytest.mark.parametrize("method", OFFLINE_METHODS)
@pytest.mark.parametrize("length", [1, 2, 3, 5, 12])
def test_short_segments_are_handled(method, length):
    t = np.arange(40) / 30.0
    z = np.full((40, 1, 2), np.nan)
    z[10 : 10 + length, 0] = np.linspace(0, 10, length)[:, None]
    out = smooth_track(t, z, None, method)
    seg = out[10 : 10 + length]
    assert np.isfinite(seg).all() and np.isnan(out[: 10]).all() and np.isnan(out[10 + length :]).all()
    assert np.abs(seg - z[10 : 10 + length]).max() <= 10.0 / 2


@pytest.mark.parametrize("method, options",
                         [("rts", {}), ("rts", {"order": "acceleration"}), ("savgol", {}), ("butterworth", {})])
def test_variable_dt_and_dropped_frames(method, options):
    """Irregular timestamps (jitter + 20 % dropped) of a noisy smooth motion: the smoothing removes noise."""
    rng = np.random.default_rng(4)
    t = np.sort(rng.choice(np.arange(300) / 60.0, 240, replace=False)) + rng.uniform(-0.003, 0.003, 240)
    truth = np.stack([100 * np.sin(2 * t), 50 * np.cos(3 * t)], axis=1)[:, None, :]
    z = truth + rng.normal(0, 2.0, truth.shape)
    out = smooth_track(t, z, None, method, **options)
    err_raw = np.abs(z - truth)[10:-10].mean()
    err = np.abs(out - truth)[10:-10].mean()
    assert err < 0.6 * err_raw


def test_rts_equals_filterpy_rts_smoother():
    rng = np.random.default_rng(5)
    T = 60
    t = np.cumsum(rng.uniform(0.02, 0.05, T))
    z = (100 * np.sin(3 * t))[:, None, None] + rng.normal(0, 2, (T, 1, 2))
    scores = rng.uniform(0.4, 1.0, (T, 1))
    ours = smooth_track(t, z, scores, "rts", min_score=0.0, cutoff_hz=3.0)
    q = spectral_density(3.0, 2)
    for axis in range(2):
        kf = FilterpyKalman(dim_x=2, dim_z=1)
        kf.H = np.array([[1.0, 0.0]])
        kf.x = np.array([z[0, 0, axis], 0.0])
        kf.P = initial_covariance(np.array(1 / scores[0, 0] ** 2), 2)
        xs, ps, fs, qs = [kf.x.copy()], [kf.P.copy()], [], []
        for i in range(1, T):
            dt = t[i] - t[i - 1]
            F, Q = transition(dt, 2), Q_continuous_white_noise(2, dt, q)
            kf.predict(F=F, Q=Q)
            kf.update(z[i, 0, axis], R=1 / scores[i, 0] ** 2)
            xs.append(kf.x.copy()), ps.append(kf.P.copy()), fs.append(F), qs.append(Q)
        fs.append(np.eye(2)), qs.append(np.zeros((2, 2)))  # filterpy's Fs[k] maps k to k+1; the last is unused
        smoothed, _, _, _ = rts_smoother(np.array(xs), np.array(ps), fs, qs)
        np.testing.assert_allclose(ours[:, 0, axis], smoothed[:, 0], atol=1e-9)


def test_covered_frames():
    t = np.arange(10) * 0.1
    valid = np.array([0, 1, 0, 0, 1, 0, 0, 0, 0, 1], bool)[:, None]
    covered = covered_frames(t, valid, max_gap_seconds=0.3)[:, 0]
    assert covered.tolist() == [False, True, True, True, True, False, False, False, False, True]


@pytest.mark.parametrize("method", OFFLINE_METHODS)
def test_empty_and_single_frame_tracks(method):
    assert smooth_track(np.zeros(0), np.zeros((0, 308, 2)), None, method).shape == (0, 308, 2)
    one = np.full((1, 308, 3), 2.0)
    np.testing.assert_array_equal(smooth_track(np.zeros(1), one, None, method), one)


def test_user_errors():
    t = np.arange(10) / 30.0
    z = np.zeros((10, 3, 2))
    with pytest.raises(UserError, match="rts, savgol, butterworth"):
        smooth_track(t, z, None, "median")
    with pytest.raises(UserError, match="half the frame rate"):
        smooth_track(t, z, None, "butterworth", cutoff_hz=20.0)
    with pytest.raises(UserError, match="strictly increasing"):
        smooth_track(t[::-1], z, None, "rts")
