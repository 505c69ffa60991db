"""The solve's bone lengths (issue 51): estimated from the depth frames' measured points, not the lifted frames'.

Between depth frames the lifter keeps each point's depth relative to the hips from the last depth frame, and a
planted foot's along its ray: walking towards the camera the knee is carried with the hips while the ankle stays,
so the lifted frames' shins read centimetres long, and so did the avatar's legs (`Person.bones`)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import corpus
from bench import motion as motion_bench
from realtime.rig.solver import MIN_MEASURED, LiveSolver
from tests import ground_synthetic
from tests.mocap_synthetic import NAMES

LEGS = {"thigh": ("leftLowerLeg", "rightLowerLeg"), "shin": ("leftFoot", "rightFoot")}  # each bone's offset: its parent's length


def _lengths(bones) -> dict[str, float]:
    offsets = np.asarray(bones.offsets, np.float64)
    return {part: float(np.mean([np.linalg.norm(offsets[motion_bench._BONE_INDEX[b]]) for b in names]))
            for part, names in LEGS.items()}


@pytest.mark.parametrize("view, fps", [("front", 24.0), ("front", 30.0), ("front", 60.0)])
def test_the_avatars_legs_are_as_long_as_the_walkers_seen_walking_towards_the_camera(view, fps):
    """A straight walk at 1.3 m/s of known thigh and shin (0.46 m) through the run's stages as bench/motion.py sees
    it (its camera, its noise: 1 px, 1.5 cm and 2 % scale on the depth frames, 6 a second): the avatar's thigh and
    shin within 1 cm of the truth (from every frame's points the shins read 3.1-3.6 cm long)."""
    seen = ground_synthetic.walk(int(6 * fps), fps, speed=1.3, straight=True)
    motion = corpus.Motion("walk_synthetic", "walk", seen.world, fps)
    record: dict = {}
    motion_bench.run_clip(motion, view, 0, corpus.true_contacts(motion), record=record)
    lengths = _lengths(record["frames"][-1].people[0].bones)
    assert abs(lengths["thigh"] - ground_synthetic.THIGH) < 0.01, lengths
    assert abs(lengths["shin"] - ground_synthetic.SHIN) < 0.01, lengths


def _legs_points(frames: int, rng) -> np.ndarray:
    """(T, K, 3) camera metres: a person standing 3 m out, legs straight down, thigh 0.45 and shin 0.42 m, swaying."""
    points = np.full((frames, len(NAMES), 3), np.nan)
    index = {n: i for i, n in enumerate(NAMES)}
    for t in range(frames):
        hips = np.array([0.05 * np.sin(t / 10), 0.0, 3.0])
        for side, x in (("left", 0.1), ("right", -0.1)):
            hip = hips + [x, 0.0, 0.0]
            points[t, index[f"{side}_hip"]] = hip
            points[t, index[f"{side}_knee"]] = hip + [0.0, 0.45, 0.02]
            points[t, index[f"{side}_ankle"]] = hip + [0.0, 0.87, 0.0]
            points[t, index[f"{side}_big_toe"]] = hip + [0.02, 0.93, -0.15]
            points[t, index[f"{side}_small_toe"]] = hip + [-0.02, 0.93, -0.14]
            points[t, index[f"{side}_heel"]] = hip + [0.0, 0.93, 0.05]
            points[t, index[f"{side}_shoulder"]] = hip + [0.08, -0.5, 0.0]
            points[t, index[f"{side}_elbow"]] = hip + [0.12, -0.22, 0.0]
            points[t, index[f"{side}_wrist"]] = hip + [0.13, 0.02, 0.0]
        points[t, index["neck"]] = hips + [0.0, -0.55, 0.0]
        points[t, index["nose"]] = hips + [0.0, -0.7, -0.08]
    return points + rng.normal(0.0, 0.003, points.shape)


def _shin(pose) -> float:
    index = {b.name: i for i, b in enumerate(pose.skeleton.bones)}
    return float(np.linalg.norm(pose.skeleton.offsets[index["leftFoot"]]))


def test_the_live_skeleton_takes_its_lengths_from_the_measured_frames_once_there_are_enough():
    rng = np.random.default_rng(0)
    points = _legs_points(120, rng)
    stretched = points.copy()  # lifted frames: each ankle 25 cm off along the line of sight (a stale depth)
    ankles = [NAMES.index("left_ankle"), NAMES.index("right_ankle")]
    stretched[:, ankles, 2] += 0.25
    solver, plain = LiveSolver(NAMES), LiveSolver(NAMES)
    shins = []
    for t in range(len(points)):
        depth_frame = t % 5 == 0
        shown = points[t] if depth_frame else stretched[t]
        pose = solver.update(shown, measured=points[t] if depth_frame else None)
        unmeasured = plain.update(shown)  # nobody says which frames were measured: every frame counts, as before
        shins.append(_shin(pose))
    assert abs(_shin(pose) - 0.42) < 0.005  # the measured frames' (a stretched frame's shin: 0.49)
    assert _shin(unmeasured) > 0.47
    # the first frames, before MIN_MEASURED were measured, take every frame's
    assert shins[0] == pytest.approx(0.42, abs=0.005) and max(shins[: 5 * MIN_MEASURED - 5]) > 0.44
    solver.reset()  # another person: their own lengths
    solver.update(points[0] * 1.1, measured=points[0] * 1.1)
    assert _shin(solver.update(points[0] * 1.1, measured=points[0] * 1.1)) == pytest.approx(0.462, abs=0.01)


def test_the_live_solvers_measured_points_are_checked():
    points = _legs_points(2, np.random.default_rng(1))
    solver = LiveSolver(NAMES)
    with pytest.raises(ValueError, match="measured must be shaped as points3d"):
        solver.update(points[0], measured=points[0][:10])
    hostile = points[0].copy()
    hostile[NAMES.index("left_ankle")] = [np.inf, 0.0, np.nan]
    for _ in range(MIN_MEASURED + 10):
        pose = solver.update(points[0], measured=hostile)
    assert np.isfinite(pose.skeleton.offsets).all() and np.isfinite(pose.rotations).all()
    assert _shin(pose) == pytest.approx(0.42, abs=0.01)  # the left shin unknown: the right's, mirrored
