"""The floor's tilt from the pointmap's background (`realtime.rig.floor_scene`) and its use by the ground
stage: the floor found among walls, tables and people, a leaning body's floor level, and without a
pointmap the feet-only floor exactly as before."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bench import rig as bench
from realtime.frames import Frame, Person
from realtime.rig.floor import foot_centres, foot_indices
from realtime.rig.floor_scene import ScenePlanes, background_points, scene_floor
from realtime.stages import GroundStage
from tests.ground_synthetic import camera_pose, walk
from tests.mocap_synthetic import NAMES
from tests.scene_person import HIPS, degrees, person_frames, standing_leaning


def _feet_and_hips(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return foot_centres(points, foot_indices(NAMES))[None], points[HIPS].mean(axis=0)[None]


def test_the_floor_is_found_in_a_noisy_pointmap_with_a_wall_and_a_person():
    truth = walk(30)
    rng = np.random.default_rng(0)
    person = truth.camera[0]
    maps = bench.scene_maps(bench.scene_background(), person, 1.03, rng)  # 3 % off scale, 1.5 cm per point
    seg = maps.seg > 0
    assert seg.sum() > 50  # the person is drawn (and masked)
    points = background_points(maps.pointmap, seg)
    assert len(points) == (~seg).sum()  # every pixel but the person's (the map is under GRID_PIXELS)
    feet, hips = _feet_and_hips(person * 1.03)
    body_up = person[NAMES.index("neck")] - hips[0]
    floor, inliers = scene_floor(points, body_up, feet, hips, rng)
    assert degrees(floor.normal, truth.up) < 0.3
    assert abs(floor.height(feet[0]).min()) < 0.05  # the plane the feet stand on, on the map's scale
    wall = (bench.scene_background() @ camera_pose()[0])[..., 2] + camera_pose()[1][2] > bench.WALL_Z - 1e-6
    assert wall.sum() > 500 and inliers < len(points) - 500  # the back wall is in view, and not on the floor


def _patch(rng, corner, along, across, count, noise=0.01):
    """(count, 3) points on the rectangle corner + [0, 1] along + [0, 1] across, with noise."""
    u, v = rng.uniform(0, 1, (2, count, 1))
    return corner + u * along + v * across + rng.normal(0, noise, (count, 3))


def test_walls_tables_and_ceilings_do_not_win():
    """Camera frame, camera level 1.5 m up (y down): the floor up to the back wall, a table top beside the
    person at hip height with more points, a wall and a ceiling with four times as many: the floor wins."""
    rng = np.random.default_rng(3)
    up = np.array([0.0, -1.0, 0.0])
    floor = _patch(rng, [-1.5, 1.5, 2.0], [3.0, 0, 0], [0, 0, 4.0], 600)
    table = _patch(rng, [0.8, 0.75, 2.0], [1.0, 0, 0], [0, 0, 1.5], 900)  # 0.75 m above the floor
    wall = _patch(rng, [-3.0, 1.5, 6.0], [6.0, 0, 0], [0, -4.0, 0], 2500)
    ceiling = _patch(rng, [-3.0, -2.5, 2.0], [6.0, 0, 0], [0, 0, 4.0], 2500)
    feet = np.array([[[-0.1, 1.47, 3.0], [0.1, 1.47, 3.1]]])
    hips = np.array([[0.0, 0.6, 3.05]])
    found, count = scene_floor(np.concatenate([wall, table, ceiling, floor]), up + [0.1, 0, 0.05], feet, hips, rng)
    assert degrees(found.normal, up) < 0.5  # 0.1-0.3 over seeds: the wall's foot, within the band, pulls a little
    assert abs(found.height(np.array([0.0, 1.5, 3.0]))) < 0.02
    assert count < 700
    assert scene_floor(np.concatenate([wall, table, ceiling]), up, feet, hips, rng) is None  # no floor in view


def test_a_strip_of_floor_is_too_little():
    rng = np.random.default_rng(4)
    strip = _patch(rng, [-1.5, 1.5, 3.0], [3.0, 0, 0], [0, 0, 0.2], 600)  # 20 cm deep: the tilt along z unmeasured
    feet, hips = np.array([[[0.0, 1.47, 3.1], [0.2, 1.47, 3.1]]]), np.array([[0.1, 0.6, 3.1]])
    assert scene_floor(strip, [0.0, -1.0, 0.0], feet, hips, rng) is None


def test_normals_of_a_moving_camera_meet_in_the_current_camera():
    """Each frame's normal in its own camera, with that camera's odometry rotation: while the camera moves
    they are turned through the odometry frame; a static camera's are averaged as they are."""
    up_odometry = np.array([0.0, -np.cos(0.3), -np.sin(0.3)])
    planes = ScenePlanes()
    rotations = [Rotation.from_euler("xyz", [0.1 * k, -0.05 * k, 0.02 * k]).as_matrix() for k in range(6)]
    for rotation in rotations:
        planes._normals.append((rotation.T @ up_odometry, rotation))  # what `add` keeps for a found floor
    current = Rotation.from_euler("y", 0.4).as_matrix()
    assert degrees(planes.normal(current, moving=True), current.T @ up_odometry) < 1e-6
    assert degrees(planes.normal(current, moving=False), up_odometry) > 5  # static: not turned


def _run(camera: np.ndarray, background: np.ndarray | None, seed: int = 0) -> GroundStage:
    """The ground stage over `tests.scene_person.person_frames`."""
    stage = GroundStage(NAMES)
    for frame in person_frames(camera, background, seed):
        stage.process(frame)
    return stage


def test_a_leaning_body_standing_still_gets_a_level_floor_from_the_scene():
    camera, up = standing_leaning(200, 6.0)  # 40 depth frames: the floor fitted at the 30th
    feet_only, with_scene = _run(camera, None), _run(camera, bench.scene_background())
    assert degrees(feet_only.floor.normal, up) > 4.0  # the body's lean (6 degrees) taken for the floor's tilt: 6.0
    assert degrees(with_scene.floor.normal, up) < 0.5  # 0.07
    assert with_scene.scene.found == 40
    feet = foot_centres(camera[0], foot_indices(NAMES))
    assert np.abs(with_scene.floor.height(feet)).max() < 0.05  # its height still where the feet stand


def test_a_body_leaning_as_far_as_sitting_down_still_finds_its_floor():
    # sitting down or stretching, the trunk leans 40-57 degrees; within the old 30-degree gate the floor was lost
    # (the body's lean taken for its tilt) or found 14-20 degrees off among the few planes that passed
    for lean in (40.0, 50.0):
        camera, up = standing_leaning(200, lean)
        stage = _run(camera, bench.scene_background())
        assert stage.scene.found == 40
        assert degrees(stage.floor.normal, up) < 0.5  # 0.07


@pytest.mark.parametrize("scene_floor", [True, False])
def test_without_a_pointmap_the_floor_and_contacts_are_the_feet_only_ones(scene_floor):
    """No pointmap (or `scene_floor=False`): the ground stage's floor and contacts are exactly those of
    the feet-only fit, refit by refit."""
    from realtime.rig.floor import fit_floor

    truth = walk(200)
    stage = GroundStage(NAMES, scene_floor=scene_floor)
    reference = GroundStage(NAMES, scene_floor=False)
    rng = np.random.default_rng(5)
    for t in range(200):
        points = truth.camera[t] + rng.normal(0, 0.015, truth.camera[t].shape)
        person = Person(box=np.array([0, 0, 10, 10], np.float32), track_id=1, keypoints=truth.pixels[t].astype(np.float32),
                        keypoint_scores=np.full(len(NAMES), 0.9, np.float32),
                        keypoints3d=points.astype(np.float32) if t % 5 == 0 else None)
        frame = Frame(index=t, timestamp=t / 30, image=np.zeros((2, 2, 3), np.uint8), people=(person,))
        a, b = stage.process(frame).people[0], reference.process(frame).people[0]
        assert (a.contacts is None) == (b.contacts is None)
        if a.contacts is not None:
            np.testing.assert_array_equal(a.contacts, b.contacts)
    np.testing.assert_array_equal(stage.floor.normal, reference.floor.normal)
    np.testing.assert_array_equal(stage.floor.point, reference.floor.point)
    assert stage.scene is None or stage.scene.tried == 0
    # and the fit itself: no normal given is the plane fit as before, a normal given keeps it
    candidates = np.concatenate(reference.floors._candidates)
    same = fit_floor(candidates, reference.floors._up)
    np.testing.assert_array_equal(same.normal, reference.floor.normal)
    fixed = fit_floor(candidates, reference.floors._up, normal=truth.up)
    np.testing.assert_allclose(fixed.normal, truth.up)


def test_a_pointmap_without_floor_in_view_leaves_the_feet_only_floor():
    """The pointmap shows only a wall 3 m out (no floor): no frame's background gives a floor, and the
    floor is the feet-only one."""
    camera, _ = standing_leaning(160, 3.0)
    stage, reference = _run(camera, bench.scene_rays() * 3.0), _run(camera, None)
    assert stage.scene.tried == 32 and stage.scene.found == 0
    np.testing.assert_array_equal(stage.floor.normal, reference.floor.normal)


def test_a_real_straight_walk_leaning_sideways_gets_its_floor_within_a_degree():
    """CMU 08_11 (tests/data/mocap), seen by bench/rig.py's camera after two earlier passes: its upper body
    leans 3.9 degrees sideways (held at one frame's pose when transcribed), which the feet-only floor takes
    for the floor's tilt across the straight path; the scene's floor is level (the issue's goal: 1 degree)."""
    from tests.mocap_clips import WALKS, load_clip

    clip = load_clip(WALKS[2])
    scene = bench.evaluate_walk(clip, 45.0, [0])[0]
    feet_only = bench.evaluate_walk(clip, 45.0, [0], scene=False)[0]
    assert feet_only["floor_up_error_end_deg"] > 3.0  # measured 4.55
    assert scene["floor_up_error_5s_deg"] < 0.5 and scene["floor_up_error_end_deg"] < 0.5  # measured 0.07, 0.06
    # contacts as good as feet-only (measured P 0.50 / 0.50, R 0.89 / 0.89)
    assert scene["contact_recall"] >= feet_only["contact_recall"] - 0.02
    assert scene["contact_precision"] >= feet_only["contact_precision"] - 0.02


def test_a_handheld_camera_keeps_its_floor_frame_by_frame():
    """bench/world.py's room (textured floor and walls, two walkers, seg and a half-resolution pointmap every
    5th frame) seen by a handheld camera, through the egomotion and ground stages: once the camera is seen to
    move, each frame's normal is turned through the egomotion stage's pose, so the floor follows the camera's
    shake between refits; the feet-only floor, refitted every 10 depth frames, lags it."""
    from realtime.stages import EgomotionStage
    from tests.world_tracks import NAMES as WORLD_NAMES
    from tests.world_tracks import scene_frames

    egomotion, truth = EgomotionStage(camera="auto"), None
    frames = []
    for truth, frame in scene_frames("handheld", 100):  # noqa: B007 (the last truth holds every frame's pose)
        frames.append(egomotion.process(frame))
    errors = {}
    for scene in (True, False):
        stage, errors[scene] = GroundStage(WORLD_NAMES, scene_floor=scene), []
        for frame in frames:
            stage.process(frame)
            if stage.floor is not None:
                up = truth.world_from_camera[frame.index][:3, :3].T @ np.array([0.0, 1.0, 0.0])
                errors[scene].append(degrees(stage.floor.normal, up))
    assert len(errors[True]) > 20 and frames[-1].odometry.moving
    assert max(errors[True]) < 0.5  # measured 0.18 (mean 0.13) over the last 30 frames
    assert max(errors[False]) > 2 * max(errors[True])  # measured 1.42 (mean 0.79)
