"""The world's floor height (issue 51): a person's first depth frames come before the ground stage's scale is steady,
so the height is fitted once more from the settled ones alone (unless people were placed in the world by then)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bench import corpus
from bench import motion as motion_bench
from realtime.rig.world import WorldAnchor, transform_points
from realtime.stages import EgomotionStage, GroundStage, WorldStage
from realtime.stages import world as world_stage
from tests.ground_synthetic import walk
from tests.mocap_synthetic import NAMES

SOLES = [NAMES.index(f"{side}_{point}") for side in ("left", "right") for point in ("heel", "big_toe", "small_toe")]
ANKLES = [NAMES.index("left_ankle"), NAMES.index("right_ankle")]
SETTLE = world_stage.SCALE_SETTLE  # the stage's, before a test changes it
UNSTEADY = 1.06  # the first depth frames' scale about the camera, before the ground stage's is steady


def _lowest(points: np.ndarray) -> np.ndarray:
    """(T, K, 3) y up -> (T, 2) each foot's lowest heel or toe height."""
    return points[:, SOLES, 1].reshape(len(points), 2, 3).min(axis=2)


def _feed(first_scale: float, settled_first: bool, freeze_at: int | None = None) -> tuple[WorldAnchor, list, object]:
    """The walker's 60 depth frames (1.5 cm noise) into an anchor, the first 10 scaled about the camera by
    `first_scale` (a scale not steady yet) and given as `settled_first`; `freeze_at`: the depth frame at which people
    go into the world. -> (the anchor, its frame after each depth frame, the walk)."""
    truth = walk(300)
    rng = np.random.default_rng(0)
    anchor, frames = WorldAnchor(NAMES), []
    for k, t in enumerate(range(0, 300, 5)):
        if k == freeze_at:
            anchor.freeze()
        scale = first_scale if k < 10 else 1.0
        points = truth.camera[t] * scale + rng.normal(0, 0.015, truth.camera[t].shape)
        anchor.add(np.eye(4), points, truth.up, settled=settled_first or k >= 10)
        frames.append(anchor.frame)
    return anchor, frames, truth


def _offset(frame, truth) -> float:
    """The walker's true feet in `frame`'s world less their true heights (m; < 0: the world's floor too high)."""
    world = transform_points(frame.world_from_odometry, truth.camera)
    return float(np.median(_lowest(world) - _lowest(truth.world)))


def test_the_first_unsteady_frames_do_not_move_the_worlds_floor():
    # 6 % further on the first 10 of the first 30 depth frames: feet 4-5 m out some 9 cm lower there (the floor's
    # level is the lowest dense level of the soles: feet too high on a third of the frames leave it where it is)
    anchor, frames, truth = _feed(UNSTEADY, settled_first=True)
    assert _offset(anchor.frame, truth) > 0.02  # counted for the height: the floor too low
    anchor, frames, truth = _feed(UNSTEADY, settled_first=False)
    assert _offset(frames[29], truth) > 0.02  # fixed at the 30th depth frame from every sample: too low
    assert all(f is frames[39] for f in frames[39:])  # then once from the 30 settled ones (the 40th), and no more
    assert abs(_offset(anchor.frame, truth)) < 0.005
    np.testing.assert_array_equal(anchor.frame.world_from_odometry[:3, :3], frames[29].world_from_odometry[:3, :3])
    for scale in (1.0, 1.02):
        assert abs(_offset(_feed(scale, settled_first=False)[0].frame, truth)) < 0.005


def test_a_world_with_people_in_it_stays_put():
    anchor, frames, truth = _feed(UNSTEADY, settled_first=False, freeze_at=35)
    assert anchor.final and all(f is frames[29] for f in frames[29:])  # frozen before the settled refit
    assert _offset(anchor.frame, truth) > 0.02


def test_feet_unseen_or_settled_from_the_start_leave_the_first_fit_as_it_was():
    truth = walk(300)
    rng = np.random.default_rng(0)
    noisy = [truth.camera[t] + rng.normal(0, 0.015, truth.camera[t].shape) for t in range(0, 300, 5)]
    plain, mixed = WorldAnchor(NAMES), WorldAnchor(NAMES)
    for k, points in enumerate(noisy):
        plain.add(np.eye(4), points, truth.up)  # settled from the start: the first fit stands, to the bit
        footless = points.copy()
        footless[SOLES] = np.nan
        mixed.add(np.eye(4), footless, truth.up, settled=False)  # no feet: no sample of the floor, settled or not
        mixed.add(np.eye(4), points, truth.up)
        if k == 29:
            first = plain.frame
    assert plain.final and plain.frame is first
    np.testing.assert_array_equal(mixed.frame.world_from_odometry, plain.frame.world_from_odometry)


def _world_floor_above_the_feet(settle: int, monkeypatch) -> float:
    """A held-out walk of the project's clips (cmu_35_05's first 2 s, 30 fps, seen from the side) through the run's
    stages with bench/motion.py's camera, noise (seed 0) and warm-up: how far the world's floor is above where the
    measured planted feet stand (m; the measured ankles on the frames both of a foot's points are truly down, against
    the true ankles over the clean motion's planted level)."""
    monkeypatch.setattr(world_stage, "SCALE_SETTLE", settle)
    motion = corpus.project_motions(["cmu_35_05"])[0]
    motion = replace(motion, joints=motion.joints[: int(motion_bench.FAST_SECONDS * motion.fps) + 1])  # as --fast
    truth = corpus.true_contacts(motion)
    seen = motion_bench.seen(motion, "side", truth)
    level = motion_bench.planted_level(seen.world, truth)
    flat = truth.heel & truth.toes
    stages = [EgomotionStage(camera="static"), GroundStage(NAMES), WorldStage(NAMES, camera="static")]
    gaps = []
    for frame in motion_bench.run_frames(stages, motion, seen, 0, by_time=False):  # the noise this case was found on
        t, person = frame.index - motion_bench.WARMUP_DEPTH_FRAMES, frame.people[0]
        if t < 0 or frame.dense is None or person.keypoints3d is None:
            continue
        assert frame.camera.grounded
        measured = transform_points(frame.camera.world_from_camera, np.asarray(person.keypoints3d, np.float64)[ANKLES])
        gaps.extend((seen.world[t, ANKLES, 1] - level - measured[:, 1])[flat[t]])
    return float(np.median(gaps))


def test_a_walk_through_the_stages_stands_on_the_worlds_floor(monkeypatch):
    # the floor's level from its band's still feet (fifteenth stop): 2.5 mm, every depth frame counted 2.0 (from the
    # band's mean: 4.0 and 6.5; 4.7 and 8.3 before the still camera's usual floor distance was kept: eighth stop)
    settled = _world_floor_above_the_feet(SETTLE, monkeypatch)
    assert abs(settled) < 0.006
