"""The Lifter between depth frames: a planted foot keeps its place along the line of sight while the body
walks away from the camera (realtime/rig/lift.py, step 4)."""

from __future__ import annotations

import numpy as np

from realtime.rig.lift import Lifter
from tests.ground_synthetic import CENTRE, FOCAL, walk
from tests.mocap_synthetic import NAMES

LEFT_FOOT = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]


def _pixels(points: np.ndarray) -> np.ndarray:
    return FOCAL * points[:, :2] / points[:, 2:] + CENTRE


def _walk_away(planted, camera_motion=None, shift=(0.0, 0.0, 0.0), swing=(0.0, 0.0, 0.0)):
    """A depth frame, then 4 frames of the body moving 5 cm a frame straight away from the camera with its left
    foot still (in the camera frame, or `shift` a frame in it: a camera moving by -shift) or moving by `swing` a
    frame; the lifted left foot's largest error and its depth's change from the depth frame."""
    start, shift, swing = walk(1).camera[0], np.asarray(shift), np.asarray(swing)
    lifter = Lifter(NAMES)
    lifter.update(_pixels(start), start)
    errors = []
    for t in range(1, 5):
        body = start + np.array([0.0, 0.0, 0.05 * t]) + shift * t
        body[LEFT_FOOT] = start[LEFT_FOOT] + (shift + swing) * t
        out = lifter.update(_pixels(body), None, None, planted, camera_motion)
        errors.append(float(np.abs(out[LEFT_FOOT] - body[LEFT_FOOT]).max()))
    return errors, float(np.mean(out[LEFT_FOOT, 2] - start[LEFT_FOOT, 2]))


def test_a_planted_foot_stays_where_it_is_while_the_body_walks_away():
    assert max(_walk_away([True, False])[0]) < 1e-6
    # not yet known to be planted, but still in the image (slower than 0.6 m/s across the line of sight): held too
    assert max(_walk_away(None)[0]) < 1e-6


def test_a_foot_moving_across_the_line_of_sight_is_carried_with_the_body():
    """3 cm a frame sideways (0.9 m/s, faster than a still foot): not held, its depth offset from the root carried (5 cm
    a frame)."""
    _, depth_change = _walk_away(None, swing=(0.03, 0.0, 0.0))
    assert depth_change > 0.15  # with the root (20 cm, from the torso's image size); held it would be 0


def test_a_planted_foot_is_held_in_the_world_when_the_camera_moves():
    shift = np.array([0.0, 0.0, -0.03])  # the camera dollies 3 cm a frame toward the person
    motion = np.eye(4)
    motion[:3, 3] = shift  # this frame's camera from the last frame's
    assert max(_walk_away([True, False], motion, shift)[0]) < 1e-6
    assert _walk_away([True, False], None, shift)[0][-1] > 0.1  # held in the camera frame: off by the camera's motion


def test_a_heel_lifting_off_with_its_toes_down_is_held_along_the_line_of_sight():
    """Heel-off: the heel and ankle rise 3 cm a frame (faster than a still foot), the toes stay down, the body walks away
    5 cm a frame and the detector has not called the foot planted. The still toes hold the foot along the line of
    sight; carried with the root instead, the whole foot drifted 5 cm a frame away and jumped back on the next
    depth frame."""
    start = walk(1).camera[0]
    lifter = Lifter(NAMES)
    lifter.update(_pixels(start), start)
    for t in range(1, 5):
        body = start + np.array([0.0, 0.0, 0.05 * t])
        body[LEFT_FOOT] = start[LEFT_FOOT]
        body[LEFT_FOOT[:2]] += np.array([0.0, -0.03 * t, 0.0])  # ankle and heel up (camera y points down)
        out = lifter.update(_pixels(body), None, None, None, None)
        assert np.abs(out[LEFT_FOOT[2:]] - body[LEFT_FOOT[2:]]).max() < 1e-6  # the toes where they are
        assert np.abs(out[LEFT_FOOT[:2]] - body[LEFT_FOOT[:2]]).max() < 0.01  # the heel's rise from the image


def test_a_foot_not_seen_is_carried_without_warnings():
    """Heel and toes below the score threshold (NaN pixels) on a lifted frame: the foot is not held, nothing warns
    (a live run would print it every frame)."""
    import warnings

    start = walk(1).camera[0]
    lifter = Lifter(NAMES)
    lifter.update(_pixels(start), start)
    scores = np.full(len(NAMES), 0.9)
    scores[LEFT_FOOT[1:]] = 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = lifter.update(_pixels(start), None, scores, None, None)
    assert not np.isfinite(out[LEFT_FOOT[1:]]).all(axis=1).any() and np.isfinite(out[LEFT_FOOT[0]]).all()


def test_the_root_follows_the_walk_along_the_line_of_sight_between_depth_frames():
    """A body walking straight away at 1.2 m/s (4 cm a frame), 1 px of noise on its 2D and 1.5 cm on its 3D, depth
    every 5th frame: between depth frames the root's depth follows the line through the last depth frames' root
    depths. From the torso's image size alone (before) it was 5.5 cm off on average and up to 26 cm."""
    rng = np.random.default_rng(0)
    start, root = walk(1).camera[0], NAMES.index("left_hip")
    lifter, errors = Lifter(NAMES), []
    for t in range(60):
        body = start + np.array([0.0, 0.0, 0.04 * t])
        depth = body + rng.normal(0.0, 0.015, body.shape) if t % 5 == 0 else None
        out = lifter.update(_pixels(body) + rng.normal(0.0, 1.0, (len(NAMES), 2)), depth, timestamp=t / 30)
        if depth is None and t > 10:  # once three depth frames are in
            errors.append(abs(out[root, 2] - body[root, 2]))
    assert np.mean(errors) < 0.025 and max(errors) < 0.08


def test_a_source_that_starts_over_does_not_extend_the_old_walk():
    """Timestamps going back (a source started over, the body back where it began): the line through the old walk's
    depth frames is dropped, not extended backwards in time."""
    start, root = walk(1).camera[0], NAMES.index("left_hip")
    lifter = Lifter(NAMES)
    for t in range(30):  # walking away 4 cm a frame for a second
        body = start + np.array([0.0, 0.0, 0.04 * t])
        lifter.update(_pixels(body), body if t % 5 == 0 else None, timestamp=t / 30)
    errors = []
    for t in range(5):  # from the start again, standing
        out = lifter.update(_pixels(start), start if t == 0 else None, timestamp=t / 30)
        errors.append(abs(out[root, 2] - start[root, 2]))
    assert max(errors) < 0.02


def test_a_tracks_first_depth_frames_root_depth_steps_little_before_the_second():
    """A track's first 1/6 s, before its second depth frame (no line through depth frames yet): a body standing, walking
    (1.4 m/s) or running (3.5 m/s) towards or away from the camera at 4 m, 1 px of noise on its 2D and 1.5 cm on its
    first depth frame's 3D, at 24, 30 and 60 fps. The root's depth moves with the body, not with each frame's torso
    size: its error steps less than 5 cm per 1/30 s from frame to frame (2.6-3.9 cm), and is under 4 cm on average.
    Held at the depth frame's depth it stepped 6.5 cm (the runs' own motion); from each frame's torso size alone
    (before) it stepped 3.1, 3.7 and 7.7 cm per 1/30 s at 24, 30 and 60 fps."""
    start, root = walk(1).camera[0], NAMES.index("left_hip")
    for fps in (24.0, 30.0, 60.0):
        steps, errors = [], []
        for speed in (-3.5, -1.4, 0.0, 1.4, 3.5):
            for seed in range(6):
                rng = np.random.default_rng(seed)
                lifter, last = Lifter(NAMES), None
                for t in range(round(fps / 6)):  # the depth frame, then the frames up to the second one
                    body = start + np.array([0.0, 0.0, speed * t / fps])
                    depth = body + rng.normal(0.0, 0.015, body.shape) if t == 0 else None
                    out = lifter.update(_pixels(body) + rng.normal(0.0, 1.0, (len(NAMES), 2)), depth, timestamp=t / fps)
                    error = out[root, 2] - body[root, 2]
                    if last is not None:
                        steps.append(abs(error - last) * fps / 30)
                        errors.append(abs(error))
                    last = error
        assert np.mean(steps) < 0.05, (fps, np.mean(steps))
        assert np.mean(errors) < 0.04, (fps, np.mean(errors))
