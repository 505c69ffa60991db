"""The pointmap's per-frame scale, stabilised against the person's own bone lengths
(`realtime.rig.scale`, run by the lifter of the ground stage): a still person no longer
breathes in and out, and a real change of distance passes through on the frame it happens."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.lift import Lifter
from realtime.rig.robust import nanmedian
from realtime.rig.scale import MIN_HISTORY, FloorDistanceScale, ScaleFilter
from tests.ground_synthetic import CENTRE, FOCAL, walk
from tests.mocap_synthetic import NAMES

FRAMES, JITTER = 120, 0.02


def _still(noise_m: float, seed: int = 0, step_at: int | None = None, step: float = 1.5):
    """A person standing still (the walker's first pose) seen FRAMES times: (truth (T, K, 3), measured 3D, pixels)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(walk(1).camera, FRAMES, axis=0)
    if step_at is not None:
        truth[step_at:] += [0.0, 0.0, step]  # stepped back along the view
    pixels = FOCAL * truth[..., :2] / truth[..., 2:] + CENTRE + rng.normal(0, 1.0, truth[..., :2].shape)
    measured = truth * (1 + rng.normal(0, JITTER, (FRAMES, 1, 1))) + rng.normal(0, noise_m, truth.shape)
    return truth, measured, pixels


def _run(measured: np.ndarray, pixels: np.ndarray, stabilise: bool) -> np.ndarray:
    lifter = Lifter(NAMES, stabilise_scale=stabilise)
    return np.stack([lifter.update(p, m) for p, m in zip(pixels, measured)])


def _height(points: np.ndarray) -> np.ndarray:
    """Nose above the ankles' midpoint, metres."""
    ankles = points[:, [NAMES.index("left_ankle"), NAMES.index("right_ankle")]].mean(axis=1)
    return np.linalg.norm(points[:, NAMES.index("nose")] - ankles, axis=1)


def _scale_error(points: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each frame's least-squares scale against the truth, minus 1."""
    known = np.isfinite(truth[0]).all(axis=1)
    p, q = points[:, known], truth[:, known]
    return (p * q).sum(axis=(1, 2)) / (q * q).sum(axis=(1, 2)) - 1


def test_a_still_person_does_not_breathe():
    truth, measured, pixels = _still(noise_m=0.005)
    raw, steady = _run(measured, pixels, False), _run(measured, pixels, True)
    warm = slice(10, None)  # the bones' running medians learn the person over the first depth frames
    root = NAMES.index("left_hip")
    # frame-to-frame std, bench/RESULTS.md: height 4.5 -> 1.2 cm, the root's distance 11.6 -> 2.2 cm (seed 0)
    for measure, factor in ((_height, 3.0), (lambda p: p[:, root, 2], 3.5)):  # the person's height; the root's distance
        raw_std, steady_std = np.diff(measure(raw)[warm]).std(), np.diff(measure(steady)[warm]).std()
        assert steady_std < raw_std / factor, (raw_std, steady_std)
    assert _scale_error(raw[warm], truth[warm]).std() > 0.015
    assert _scale_error(steady[warm], truth[warm]).std() < 0.006  # 0.40 % measured


def test_with_the_bench_noise_the_scale_error_drops_by_more_than_half():
    truth, measured, pixels = _still(noise_m=0.015, seed=1)  # bench/rig.py's 1.5 cm per point
    raw, steady = _run(measured, pixels, False), _run(measured, pixels, True)
    warm = slice(10, None)
    assert _scale_error(steady[warm], truth[warm]).std() < _scale_error(raw[warm], truth[warm]).std() / 2.5  # x3.0 measured


def test_a_real_step_back_is_followed_on_the_frame_it_happens():
    truth, measured, pixels = _still(noise_m=0.005, step_at=60)
    steady = _run(measured, pixels, True)
    root = NAMES.index("left_hip")
    error = np.abs(steady[:, root, 2] - truth[:, root, 2])
    # 1.5 m further at once: on the step's own frame the error is the steady one (3.1 cm measured; a filter with
    # latency would be off by a large part of 1.5 m), and after it about a third of the raw jitter's
    assert error[60] < 0.08 and error[60:].max() < 0.12
    raw = np.abs(measured[:, root, 2] - truth[:, root, 2])
    assert error[61:].mean() < raw[61:].mean() / 2  # 2.6 vs 8.2 cm measured


def test_the_first_frame_passes_and_a_bone_seen_end_on_is_left_out():
    scale = ScaleFilter(NAMES)
    points = walk(1).camera[0]
    np.testing.assert_array_equal(scale.update(points), points)
    assert scale.scale == 1.0
    end_on = points.copy()
    knee, ankle = NAMES.index("left_knee"), NAMES.index("left_ankle")
    end_on[ankle] = end_on[knee] + [0.0, 0.0, 0.46]  # the shin straight along the view
    lengths = scale.bone_lengths(end_on)
    assert np.isnan(lengths[1]) and np.isfinite(np.delete(lengths, 1)).all()


def test_the_gain_takes_out_jitter_only_where_there_is_some():
    points = walk(1).camera[0]
    exact, steady = ScaleFilter(NAMES), ScaleFilter(NAMES)
    jitter = 1 + np.random.default_rng(3).normal(0, 0.05, 30)
    for t, s in enumerate(jitter):  # bones measured exactly: all of the jitter is the pointmap's
        out = exact.update(points * s)
        assert steady.update(points) is not None and steady.gain() == 0.0  # never jittered: nothing to take out
        if t < 10:
            assert exact.gain() == 0.0  # not before MIN_HISTORY measured frames
    assert exact.gain() == 1.0
    # the frame's scale against the running median of the ones before: the output keeps that median's scale
    assert exact.scale == pytest.approx(jitter[-1] / np.median(jitter[:-1]), abs=1e-12)
    np.testing.assert_allclose(out, points * np.median(jitter[:-1]), atol=1e-9)


def test_bone_length_medians_are_nanmedians():  # the (frames, bones) windows ScaleFilter takes medians of
    rng = np.random.default_rng(0)
    for rows in (1, 2, 5, 90):
        values = rng.normal(size=(rows, 12))
        values[rng.random(values.shape) < 0.3] = np.nan
        values[:, 3] = np.nan  # a bone never measured
        with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
            expected = np.nanmedian(values, axis=0)
        np.testing.assert_allclose(nanmedian(values), expected, equal_nan=True)


def test_a_still_cameras_frame_scale_is_its_floor_distance_against_its_first_frames():
    """The floor's distance from a still camera changes only with the frame's scale: from the fourth
    frame on each frame's scale is its distance over the median of the ones before, up to the MIN_HISTORY-th; from
    then on over the median of those first MIN_HISTORY, however the later frames' jitter falls (the world's floor is
    fitted once, in that metre); a distance 20 % off is another surface (a step): no scale from it, and it does not
    move the usual distance."""
    floor = FloorDistanceScale()
    jitter = 1 + np.random.default_rng(5).normal(0, JITTER, 40)
    scales = [floor.update(1.5 * s) for s in jitter]
    assert scales[:3] == [1.0, 1.0, 1.0]
    for t in range(3, MIN_HISTORY):
        assert scales[t] == pytest.approx(jitter[t] / np.median(jitter[:t]), rel=1e-12)
    usual = np.median(jitter[:MIN_HISTORY])
    for t in range(MIN_HISTORY, 40):
        assert scales[t] == pytest.approx(jitter[t] / usual, rel=1e-12)
    assert floor.update(1.5 * 1.2 * usual) == 1.0
    assert floor.update(1.5 * 1.05 * usual) == pytest.approx(1.05, rel=1e-12)  # the step left no trace
    floor.reset()
    assert floor.update(3.0) == 1.0
