"""The bench's truth at a rate whose instants fall midway between a clip's own frames (60 fps of a 30 fps clip, 24 fps
of a 30 or 60 fps one): such an instant is in contact only where both frames about it are (`bench.corpus.Truth.at`,
`midway="both"`), so a contact begins and ends on the clip's own frames and not half a frame before it began, where
the foot is still coming down (bench/RESULTS.md, issue 51, eleventh stop: on the project's 30 fps run at 60 fps that
half frame carried most of the avatar's measured slide). `bench.motion.measure` judges so above the clip's own rate
only: below it (24 fps) the clip's frames are dropped, and the nearest frame keeps a contact one clip frame long."""

from __future__ import annotations

import io

import numpy as np

from bench import corpus
from bench import motion as bench


def _edges(track: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and last frame of each stretch of True in (T,) `track`."""
    padded = np.concatenate([[False], track, [False]]).astype(int)
    change = np.diff(padded)
    return np.flatnonzero(change == 1), np.flatnonzero(change == -1) - 1


def test_a_30_fps_runs_contacts_at_60_fps_begin_and_end_on_its_own_frames():
    motion = corpus.project_motions(["cmu_35_24"])[0]
    truth = corpus.true_contacts(motion)
    at_60 = corpus.resample(motion, 60.0)
    both, later = truth.at(at_60.times, midway="both"), truth.at(at_60.times)
    early = 0
    for name in ("contact", "heel", "toes", "airborne"):
        own = getattr(truth, name)
        np.testing.assert_array_equal(getattr(both, name)[::2], own)  # the clip's own instants as they are
        np.testing.assert_array_equal(getattr(later, name)[::2], own)
        np.testing.assert_array_equal(getattr(both, name)[1::2], own[:-1] & own[1:])  # midway: where both are
        if name == "airborne":
            continue
        for side in range(2):
            starts, ends = _edges(getattr(both, name)[:, side])
            assert len(starts) and (starts % 2 == 0).all() and (ends % 2 == 0).all()
            early += int((_edges(getattr(later, name)[:, side])[0] % 2 == 1).sum())
    assert early >= 10  # the later frame's truth began the run's contacts half a frame early


def test_24_fps_midway_instants_of_a_30_fps_walk_are_in_contact_only_where_both_frames_are():
    motion = corpus.project_motions(["cmu_07_04"])[0]
    truth = corpus.true_contacts(motion)
    at_24 = corpus.resample(motion, 24.0)
    both = truth.at(at_24.times, midway="both")
    position = at_24.times * motion.fps
    midway = np.isclose(position % 1.0, 0.5)
    assert midway.sum() >= 20  # every fourth 24 fps frame
    lower = np.floor(position[midway]).astype(int)
    np.testing.assert_array_equal(both.contact[midway], truth.contact[lower] & truth.contact[lower + 1])
    nearest = np.rint(position[~midway]).astype(int)
    np.testing.assert_array_equal(both.contact[~midway], truth.contact[nearest])


def _bench_and_both_truths(fps: float, view: str) -> tuple[dict, dict]:
    """The project's 30 fps run cmu_35_24 at `fps` from `view`, seed 0: what `bench.motion.measure` gives, and the same
    run judged by each midway truth ({"both": ..., "later": ...})."""
    motion = corpus.project_motions(["cmu_35_24"])[0]
    pools = bench.measure([motion], [fps], [view], [0], log=io.StringIO())["pools"]
    at_rate = corpus.resample(motion, fps)
    truth = corpus.true_contacts(motion)
    expected = {}
    for midway in ("both", "later"):
        pool = bench.Pool()
        pool.add(bench.run_clip(at_rate, view, 0, truth.at(at_rate.times, midway=midway)))
        expected[midway] = pool.measures()
    return pools[("cmu_35_24", view, fps)].measures(), expected


def test_the_bench_judges_a_60_fps_run_of_a_30_fps_clip_by_contacts_begun_on_the_clips_frames():
    measured, expected = _bench_and_both_truths(60.0, "front")
    assert abs(expected["later"]["slide_mm"] - expected["both"]["slide_mm"]) > 1.0  # the half frame is the landing
    for name in ("slide_mm", "precision", "recall", "float_cm", "penetration_cm"):
        np.testing.assert_allclose(measured[name], expected["both"][name], equal_nan=True)


def test_the_bench_judges_a_24_fps_run_of_a_30_fps_clip_by_the_nearest_frame():
    measured, expected = _bench_and_both_truths(24.0, "side")
    assert expected["later"]["slide_mm"] != expected["both"]["slide_mm"]  # the two truths differ on this run
    for name in ("slide_mm", "precision", "recall", "float_cm", "penetration_cm"):
        np.testing.assert_allclose(measured[name], expected["later"][name], equal_nan=True)
