"""LiveSmoother: one filter state per track ID, dead tracks dropped, returns restart cleanly."""

import numpy as np
import pytest

from realtime.errors import UserError
from trackers.live import LiveSmoother

K = 308


def _frame(rng, n, centre=200.0):
    return rng.normal(centre, 2.0, (n, K, 2)), rng.uniform(0.5, 1.0, (n, K)), np.full(n, 400.0)


@pytest.mark.parametrize("method", ["one_euro", "kalman"])
def test_dead_tracks_are_dropped_and_state_does_not_grow(method):
    rng = np.random.default_rng(0)
    smoother = LiveSmoother(method, max_gap_seconds=0.5)
    for i in range(300):  # 300 frames, a new ID every 10 frames, two people at a time
        t = i / 30.0
        ids = np.array([i // 10, i // 10 + 1000])
        kp, sc, sz = _frame(rng, 2)
        out, pred = smoother.update(t, ids, kp, sc, sz)
        assert out.shape == (2, K, 2) and out.dtype == np.float32 and pred.shape == (2, K)
        assert np.isfinite(out).all()
    # 60 IDs were seen. Tracks unseen for > 0.5 s are gone and their rows reused, so the state
    # holds only the people seen within the last 0.5 s: this and the two previous generations.
    assert set(smoother.track_ids) <= {27, 28, 29, 1027, 1028, 1029}
    assert smoother.num_rows <= 6


@pytest.mark.parametrize("method", ["one_euro", "kalman"])
def test_return_after_long_gap_restarts_cleanly(method):
    rng = np.random.default_rng(1)
    smoother = LiveSmoother(method, max_gap_seconds=1.0)
    for i in range(30):
        smoother.update(i / 30.0, [5], *_frame(rng, 1, centre=100.0))
    kp, sc, sz = _frame(rng, 1, centre=600.0)
    out, _ = smoother.update(3.0, [5], kp, sc, sz)  # 2 s later, somewhere else
    np.testing.assert_allclose(out, kp.astype(np.float32))  # first sample of a new track passes through


@pytest.mark.parametrize("method", ["one_euro", "kalman"])
def test_short_gap_continues_without_jump_or_nan(method):
    """A person missing for 0.3 s returns where it moved to: the output follows, never overshoots the move."""
    smoother = LiveSmoother(method, max_gap_seconds=1.0)
    sz = np.array([400.0])
    sc = np.ones((1, K))
    outs = []
    for i in range(60):
        t = i / 30.0
        if 30 <= i < 39:
            continue  # absent
        kp = np.full((1, K, 2), 100.0 + (20.0 if i >= 39 else 0.0))
        out, pred = smoother.update(t, [1], kp, sc, sz)
        assert not pred.any()
        outs.append(out[0, 0, 0])
    outs = np.array(outs)
    assert np.isfinite(outs).all()
    assert outs.min() >= 100.0 - 1e-4 and outs.max() <= 120.0 * 1.0 + 5.0
    assert abs(outs[-1] - 120.0) < 1.0
    # No jump: the first frame after the gap does not teleport beyond the new position.
    assert outs[30] <= 120.0 + 1e-3


def test_low_scores_are_flagged_predicted_and_other_people_unaffected():
    rng = np.random.default_rng(2)
    smoother = LiveSmoother("kalman", min_score=0.3)
    for i in range(10):
        kp, sc, sz = _frame(rng, 2)
        sc[0, :50] = 0.1
        _, pred = smoother.update(i / 30.0, [3, 4], kp, sc, sz)
        assert pred[0, :50].all() and not pred[0, 50:].any() and not pred[1].any()


def test_order_of_ids_in_a_frame_does_not_matter():
    rng = np.random.default_rng(3)
    a, b = LiveSmoother("one_euro"), LiveSmoother("one_euro")
    for i in range(10):
        kp, sc, sz = _frame(rng, 2)
        out_a, _ = a.update(i / 30.0, [1, 2], kp, sc, sz)
        out_b, _ = b.update(i / 30.0, [2, 1], kp[::-1], sc[::-1], sz[::-1])
        np.testing.assert_array_equal(out_a, out_b[::-1])


def test_clock_going_backwards_restarts_tracks():
    rng = np.random.default_rng(4)
    smoother = LiveSmoother("kalman")
    for i in range(10):
        smoother.update(5.0 + i / 30.0, [1], *_frame(rng, 1))
    kp, sc, sz = _frame(rng, 1, centre=50.0)
    out, _ = smoother.update(0.0, [1], kp, sc, sz)  # a new source starting at 0
    np.testing.assert_allclose(out, kp.astype(np.float32))
    smoother.reset()
    assert smoother.track_ids == []
    kp, sc, sz = _frame(rng, 1, centre=80.0)
    out, _ = smoother.update(1 / 30.0, [1], kp, sc, sz)
    np.testing.assert_allclose(out, kp.astype(np.float32))


def test_empty_frames_and_bad_arguments():
    smoother = LiveSmoother()
    out, pred = smoother.update(0.0, np.zeros(0, int), np.zeros((0, K, 2)), np.zeros((0, K)), np.zeros(0))
    assert out.shape == (0, K, 2) and pred.shape == (0, K)
    with pytest.raises(ValueError, match="unique"):
        smoother.update(0.1, [1, 1], np.zeros((2, K, 2)), np.ones((2, K)), np.ones(2))
    with pytest.raises(UserError, match="one_euro, kalman"):
        LiveSmoother("median")
    with pytest.raises(UserError, match="between 0 and 1"):
        LiveSmoother(smoothness=-0.1)


def test_smoothness_knob_orders_the_amount_of_smoothing():
    rng = np.random.default_rng(5)
    t = np.arange(60) / 30.0
    truth = np.full((60, 1, K, 2), 200.0)
    noisy = truth + rng.normal(0, 3.0, truth.shape)
    residual = []
    for smoothness in (0.0, 0.5, 1.0):
        smoother = LiveSmoother("one_euro", smoothness=smoothness)
        out = np.array([smoother.update(ti, [0], noisy[i], np.ones((1, K)), np.array([400.0]))[0] for i, ti in enumerate(t)])
        residual.append(np.abs(np.diff(out[20:], axis=0)).mean())
    assert residual[0] > residual[1] > residual[2]


@pytest.mark.parametrize("method", ["one_euro", "kalman"])
def test_missing_people_data_never_produces_nan(method):
    """NaN sizes, a person whose keypoints are all NaN for a while, zero scores: outputs stay finite once seen."""
    rng = np.random.default_rng(6)
    smoother = LiveSmoother(method)
    for i in range(40):
        kp, sc, sz = _frame(rng, 2)
        sz[0] = np.nan if i % 3 == 0 else 0.0
        if 10 <= i < 20:
            kp[1] = np.nan
        if 20 <= i < 25:
            sc[1] = 0.0
        out, pred = smoother.update(i / 30.0, [0, 1], kp, sc, sz)
        assert np.isfinite(out).all()
        assert pred[1].all() == (10 <= i < 25)
