"""The world's up from the scene: the ground stage measures the floor's normal in the pointmap's
background (`Frame.floor_up`) and the world stage takes it for the world frame's y, the feet setting
only the floor's height; without it (no scene floor) the world is the feet-only one, exactly."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bench import rig as bench
from realtime.frames import Frame
from realtime.rig.world import WorldAnchor, rigid, transform_points
from realtime.stages import EgomotionStage, GroundStage, WorldStage
from tests.ground_synthetic import walk
from tests.mocap_synthetic import NAMES
from tests.scene_person import degrees, person_frames, standing_leaning


def _world_up(frame: Frame) -> np.ndarray:
    """The world frame's y in this frame's camera (a row of world_from_camera's rotation)."""
    return frame.camera.world_from_camera[1, :3]


def _chain(camera: np.ndarray, background: np.ndarray | None, scene_floor: bool = True, seed: int = 0) -> list[Frame]:
    """`tests.scene_person.person_frames` through egomotion (static camera) -> ground -> world."""
    stages = [EgomotionStage(camera="static"), GroundStage(NAMES, scene_floor=scene_floor), WorldStage(NAMES, camera="static")]
    out = []
    for frame in person_frames(camera, background, seed):
        for stage in stages:
            frame = stage.process(frame)
        out.append(frame)
    return out


def test_a_leaning_performer_gets_a_level_world_from_the_scene():
    """Standing still, the upper body leaning 6 degrees across the feet: the feet-only world takes the lean
    for the floor's tilt; with the scene's floor (the bench's room behind the person) the world is level."""
    camera, up = standing_leaning(200, 6.0)  # 40 depth frames: the world fixed at the 30th
    feet_only = _chain(camera, bench.scene_background(), scene_floor=False)
    with_scene = _chain(camera, bench.scene_background())
    assert feet_only[-1].camera.grounded and with_scene[-1].camera.grounded
    assert degrees(_world_up(feet_only[-1]), up) > 4.0
    assert degrees(_world_up(with_scene[-1]), up) < 0.2
    assert all(f.floor_up is None for f in feet_only) and with_scene[-1].floor_up is not None


def _turned_walk(floor_up: bool):
    """The walker (in the odometry frame: the first camera) seen by a camera that turns up to 8 degrees
    and moves, every 5th frame (40 depth frames): the anchor fed each frame's points in its own camera,
    with the floor's true up in that camera when `floor_up`."""
    truth = walk(200)
    rng = np.random.default_rng(7)
    anchor = WorldAnchor(NAMES)
    for t in range(0, 200, 5):
        rotation = Rotation.from_rotvec(np.radians(8.0) * np.sin([0.3 * t, 0.2 * t + 1, 0.1 * t + 2])).as_matrix()
        pose = rigid(rotation, [0.01 * t, 0.0, -0.02 * t])  # odometry_from_camera
        points = transform_points(np.linalg.inv(pose), truth.camera[t] + rng.normal(0, 0.01, truth.camera[t].shape))
        anchor.add(pose, points, rotation.T @ truth.up if floor_up else None)
    return anchor, truth


def test_the_anchor_turns_each_frames_floor_up_into_the_odometry_frame():
    anchor, truth = _turned_walk(floor_up=True)
    assert anchor.frame.grounded
    assert degrees(anchor.frame.world_from_odometry[1, :3], truth.up) < 1e-9  # the up given, exactly
    feet = np.concatenate(anchor.floors._candidates)
    heights = (feet - anchor.floor.point) @ anchor.floor.normal
    assert abs(np.median(heights)) < 0.02  # the feet still set the floor's height


def test_without_floor_up_the_anchor_is_the_feet_only_one_of_before():
    """No floor_up: the world frame is the feet's fit, to the bit, as before the scene's up (the numbers
    of this very input on the code before it), but for the floor's height: set by the feet's lowest points
    since, not their centres (the up and the origin across the floor unchanged)."""
    anchor, _ = _turned_walk(floor_up=False)
    before = [[0.9999997555245267, -0.0006992502321859537, 2.710505431213761e-20, 1.2100098362186602],
              [-0.0006744610436844587, -0.9645486662003916, -0.2639041788857204, 1.512932700908618],
              [0.00018453505836068344, 0.2639041143676213, -0.9645489020089411, 3.9936339502744382],
              [0.0, 0.0, 0.0, 1.0]]
    np.testing.assert_array_equal(anchor.frame.world_from_odometry[:3, :3], np.array(before)[:3, :3])
    np.testing.assert_allclose(anchor.frame.world_from_odometry[[0, 2], 3], np.array(before)[[0, 2], 3], atol=1e-12)
    assert 0.005 < anchor.frame.world_from_odometry[1, 3] - before[1][3] < 0.01  # the soles' level: 7 mm down


def test_a_handheld_camera_gets_the_scenes_up_through_its_moving_frames():
    """bench/world.py's room (textured floor and walls, two walkers, seg and a half-resolution pointmap every
    5th frame) seen by a handheld camera, through egomotion -> ground -> world: the floor_up of each frame,
    in its own shaken camera, is turned into the odometry frame, and the world's up is the scene's."""
    from tests.world_tracks import NAMES as WORLD_NAMES
    from tests.world_tracks import scene_frames

    egomotion, truth, frames = EgomotionStage(camera="auto"), None, []
    for truth, frame in scene_frames("handheld", 100):  # noqa: B007 (the last truth holds every frame's pose)
        frames.append(egomotion.process(frame))
    errors = {}
    for scene in (True, False):
        ground, world = GroundStage(WORLD_NAMES, scene_floor=scene), WorldStage(WORLD_NAMES, camera="auto")
        out = [world.process(ground.process(frame)) for frame in frames]
        errors[scene] = [degrees(_world_up(f), truth.world_from_camera[f.index][1, :3]) for f in out if f.camera.grounded]
    assert len(errors[True]) == len(errors[False]) > 20 and frames[-1].odometry.moving
    assert np.mean(errors[True]) < 0.2 and max(errors[True]) < 0.3  # measured 0.15 (max 0.19)
    assert np.mean(errors[False]) > 2 * np.mean(errors[True])  # measured 0.46: the feet's tilt


def _frame_lines(frames: list[Frame], path) -> list[str]:
    from realtime.sinks.tracks import TrackWriter

    with TrackWriter(path, keypoint_names=NAMES, image_wh=(2, 2), fps=30.0, source="synthetic", model={}) as writer:
        for frame in frames:
            writer.write(frame)
    return path.read_text().splitlines()[1:]


def test_without_a_floor_in_view_the_world_and_the_tracks_are_the_feet_only_ones(tmp_path):
    """A pointmap that shows only a wall 3 m out (no floor): no frame has a floor_up, and every frame line
    of the tracks (the world's camera, contacts, heights) is byte for byte that of `scene_floor=False`."""
    camera, _ = standing_leaning(200, 3.0)
    wall, feet_only = _chain(camera, bench.scene_rays() * 3.0), _chain(camera, bench.scene_rays() * 3.0, scene_floor=False)
    assert all(f.floor_up is None for f in wall) and wall[-1].camera.grounded
    lines = _frame_lines(wall, tmp_path / "wall.jsonl")
    assert lines == _frame_lines(feet_only, tmp_path / "feet.jsonl")
    assert "floor_up" not in "".join(lines)


def test_floor_up_round_trips_through_the_tracks_and_a_replay(tmp_path):
    """The frames' floor_up, rounded by the ground stage, reads back as the very same numbers (`read_tracks`,
    and the replay's `Frame`s); a floor_up that is not a unit vector is refused in one sentence."""
    import json

    from realtime.errors import UserError
    from realtime.export.jsonl import read_tracks
    from realtime.replay import read_frames

    camera, _ = standing_leaning(60, 6.0)
    frames = _chain(camera, bench.scene_background())
    path = tmp_path / "t.jsonl"
    _frame_lines(frames, path)
    known = [f.index for f in frames if f.floor_up is not None]
    assert known and known[0] > 0  # none until the scene found the floor on a few frames
    tracks = read_tracks(path)
    for frame, again in zip(frames, read_frames(path, len(NAMES))):
        if frame.floor_up is None:
            assert again.floor_up is None and np.isnan(tracks.floor_up[frame.index]).all()
        else:
            np.testing.assert_array_equal(again.floor_up, frame.floor_up)
            np.testing.assert_array_equal(tracks.floor_up[frame.index], frame.floor_up)
    lines = path.read_text().splitlines()
    record = json.loads(lines[-1])
    record["floor_up"] = [0.0, -2.0, 0.0]
    path.write_text("\n".join([*lines[:-1], json.dumps(record)]) + "\n")
    with pytest.raises(UserError, match=f"line {len(lines)} .*floor_up is .* not a unit vector"):
        read_tracks(path)
