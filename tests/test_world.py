"""The world frame (`realtime.rig.world`): up from the floor, origin under the first person's start,
bones and roots moved into it, the performer's height."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.world import HeightEstimator, WorldAnchor, transform_points, world_frame
from tests.ground_synthetic import walk
from tests.mocap_synthetic import NAMES

HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]


def test_the_world_frame_puts_the_floor_at_y0_and_the_origin_under_the_hips():
    truth = walk(2)
    up = truth.up  # the world's up in the tilted camera's frame
    floor_point = truth.camera[0, NAMES.index("left_heel")] + 0.0  # heels are 1 cm above the floor
    hips = truth.camera[0, HIPS].mean(axis=0)
    frame = world_frame(up, floor_point, hips)
    moved = transform_points(frame.world_from_odometry, truth.camera[0])
    np.testing.assert_allclose(frame.world_from_odometry[:3, :3] @ up, [0, 1, 0], atol=1e-12)
    heights = moved[:, 1] - transform_points(frame.world_from_odometry, floor_point)[1]
    np.testing.assert_allclose(heights[np.isfinite(heights)],
                               (truth.world[0, :, 1] - truth.world[0, NAMES.index("left_heel"), 1])[np.isfinite(heights)],
                               atol=1e-9)
    origin_hips = moved[HIPS].mean(axis=0)
    assert origin_hips[0] == pytest.approx(0, abs=1e-9) and origin_hips[2] == pytest.approx(0, abs=1e-9)
    # z points back at the camera along the floor: the camera centre has positive z
    camera_in_world = frame.world_from_odometry[:3, 3]
    np.testing.assert_allclose(camera_in_world[[0, 2]], [1.2, 4.0], atol=1e-9)  # the walker starts 1.2 m to its left


def test_the_anchor_finds_the_world_of_a_walker_seen_by_a_tilted_camera():
    truth = walk(300)
    rng = np.random.default_rng(0)
    anchor = WorldAnchor(NAMES)
    assert not anchor.frame.grounded
    fixed_at = None
    for t in range(0, 300, 5):  # depth frames
        noisy = truth.camera[t] + rng.normal(0, 0.015, truth.camera[t].shape)
        if anchor.add(np.eye(4), noisy):
            fixed_at = t
    assert fixed_at == 145 and anchor.frame.grounded  # the 30th depth frame
    world = transform_points(anchor.frame.world_from_odometry, truth.camera)
    start = truth.world[0, HIPS].mean(axis=0) * [1, 0, 1]
    expected = truth.world - start  # the truth with its origin moved under the first hips
    # the true world is y up with the floor at y = 0: heights and horizontal distances agree (up to a turn about y)
    known = np.isfinite(expected).all(axis=-1)
    assert np.abs(world[..., 1][known] - expected[..., 1][known]).max() < 0.05
    horizontal = lambda p: np.linalg.norm(p[..., [0, 2]], axis=-1)  # noqa: E731
    assert np.abs(horizontal(world)[known] - horizontal(expected)[known]).max() < 0.05


def test_the_world_is_fixed_once_hips_are_seen_after_the_floor():
    """The floor fitted from feet alone (the hips not seen: a person cut at the waist) does not keep the world from
    being fixed when the hips come into view."""
    truth = walk(300)
    anchor = WorldAnchor(NAMES)
    fixed = []
    for t in range(0, 300, 5):
        points = truth.camera[t].copy()
        if t < 200:
            points[HIPS] = np.nan
        fixed.append(anchor.add(np.eye(4), points))
    assert fixed.index(True) == 40 and sum(fixed) == 1 and anchor.frame.grounded  # frame 200: hips first seen
    origin = transform_points(anchor.frame.world_from_odometry, truth.camera[200, HIPS].mean(axis=0))
    assert abs(origin[0]) < 1e-9 and abs(origin[2]) < 1e-9


def test_the_height_of_a_standing_person():
    truth = walk(120)
    rng = np.random.default_rng(2)
    heights = HeightEstimator(NAMES)
    assert heights.estimate() == (None, 0.0)
    for t in range(0, 120, 5):
        heights.add(truth.world[t] + rng.normal(0, 0.015, truth.world[t].shape))
    eyes = truth.world[:, [NAMES.index("left_eye"), NAMES.index("right_eye")], 1].mean()
    height, confidence = heights.estimate()
    assert height == pytest.approx(eyes / 0.936, abs=0.02)
    assert 0.4 < confidence < 1.0
    lying = truth.world[0][:, [1, 0, 2]]  # the body turned to lie along x: not upright, no sample
    count = len(heights.samples)
    heights.add(lying)
    assert len(heights.samples) == count
