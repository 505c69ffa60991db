"""The skeleton solver round trip: known local rotations -> FK -> keypoints -> solver -> FK."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realtime.rig.bones import bone_table
from realtime.rig.solver import LiveSolver, camera_to_rig, forward_kinematics, solve
from tests.mocap_synthetic import NAMES, synthetic_clip

FRAMES = 300


@pytest.fixture(scope="module")
def clip():
    return synthetic_clip(FRAMES)


def _roll_steps(globals_: np.ndarray, bones) -> np.ndarray:
    """(T-1, B) degrees each bone's second axis turned about the bone between frames."""
    p0 = np.array([b.rest_primary for b in bones])
    s0 = np.array([b.rest_secondary for b in bones])
    p = np.einsum("tbij,bj->tbi", globals_, p0)[1:]
    s = np.einsum("tbij,bj->tbi", globals_, s0)
    before = s[:-1] - np.sum(s[:-1] * p, axis=-1, keepdims=True) * p
    before /= np.linalg.norm(before, axis=-1, keepdims=True)
    return np.degrees(np.arccos(np.clip(np.sum(before * s[1:], axis=-1), -1.0, 1.0)))


def _solved_heads(motion):
    heads, globals_ = forward_kinematics(motion.skeleton, motion.root_position + motion.origin, motion.rotations)
    return heads, globals_


@pytest.mark.parametrize("fingers", [False, True])
def test_round_trip_is_exact_without_noise(clip, fingers):
    skeleton, root, rotations, heads, camera = clip
    motion = solve(camera, NAMES, np.arange(FRAMES) / 30.0, fingers=fingers)
    assert motion.rotations.shape == (FRAMES, len(bone_table(fingers)), 4)
    assert not motion.held.any() and not motion.root_held.any()
    index = [skeleton.names.index(n) for n in motion.skeleton.names]
    solved, globals_ = _solved_heads(motion)
    error = np.linalg.norm(solved - heads[:, index], axis=-1)
    assert error.max() < 0.01  # the bound; in fact ~1e-15
    assert error.max() < 1e-9
    # per-clip bone lengths are the true ones
    np.testing.assert_allclose(motion.skeleton.offsets, skeleton.offsets[index], atol=1e-9)
    # no flips: no bone's roll jumps by more than the true motion's largest step plus the
    # re-twist of an arm that was straight
    _, true_globals = forward_kinematics(skeleton, root, rotations)
    assert _roll_steps(true_globals, skeleton.bones).max() < 20
    assert _roll_steps(globals_, motion.skeleton.bones).max() < 30
    # bones whose two axes the keypoints fix get the true global rotation (limbs and fingers
    # get their twist from continuity or the knuckle line, the neck from the shoulders' line)
    angle = (Rotation.from_matrix(globals_.reshape(-1, 3, 3)).inv()
             * Rotation.from_matrix(true_globals[:, index].reshape(-1, 3, 3))).magnitude().reshape(FRAMES, -1)
    fixed = ("hips", "spine", "chest", "head", "leftShoulder", "rightShoulder", "leftHand", "rightHand",
             "leftFoot", "rightFoot", "leftToes", "rightToes")
    exact = [motion.skeleton.names.index(n) for n in fixed]
    assert np.degrees(angle[:, exact]).max() < 1e-6


def test_noise_and_dropouts_stay_close_and_never_flip(clip):
    skeleton, _, _, heads, camera = clip
    rng = np.random.default_rng(3)
    noisy = camera + rng.normal(0.0, 0.005, camera.shape)  # 5 mm
    dropped = rng.random(camera.shape[:2]) < 0.05
    dropped[100:110, NAMES.index("left_wrist")] = True  # a 10-frame gap
    noisy[dropped] = np.nan
    motion = solve(noisy, NAMES)
    names = motion.skeleton.names
    # the held marks follow the missing points
    assert motion.held[100:110, names.index("leftLowerArm")].all()
    assert motion.held[100:110, names.index("leftHand")].all()
    assert not motion.held[100:110, names.index("rightLowerArm")].all()
    solved, globals_ = _solved_heads(motion)
    index = [skeleton.names.index(n) for n in names]
    error = np.linalg.norm(solved - heads[:, index], axis=-1)
    assert np.median(error) < 0.015
    assert _roll_steps(globals_, motion.skeleton.bones).max() < 60  # a flip would be ~180


def test_held_bone_keeps_its_local_rotation(clip):
    _, _, _, _, camera = clip
    points = camera.copy()
    points[50:60, NAMES.index("right_knee")] = np.nan
    motion = solve(points, NAMES)
    b = motion.skeleton.names.index("rightUpperLeg")
    assert motion.held[50:60, b].all() and not motion.held[49, b] and not motion.held[60, b]
    np.testing.assert_allclose(motion.rotations[50:60, b], np.repeat(motion.rotations[49:50, b], 10, axis=0), atol=1e-12)


def test_rest_pose_is_a_t_pose_facing_plus_z(clip):
    skeleton = solve(clip[4], NAMES).skeleton
    rest = dict(zip(skeleton.names, skeleton.rest_positions()))
    assert rest["leftUpperArm"][0] > 0.1 and rest["rightUpperArm"][0] < -0.1  # +X is the character's left
    np.testing.assert_allclose(rest["leftHand"][1:], rest["leftUpperArm"][1:], atol=1e-9)  # arms straight out along X
    assert rest["head"][1] > rest["chest"][1] > rest["hips"][1] > rest["leftFoot"][1]
    assert rest["leftToes"][2] > rest["leftFoot"][2]  # toes forward (+Z)
    # the person faced the camera at the start: the rig's +Z points to the camera (camera -z)
    np.testing.assert_allclose(camera_to_rig(np.array([0.0, 0.0, -1.0])), [0.0, 0.0, 1.0])


def test_live_solver_matches_the_offline_solver(clip):
    _, _, _, _, camera = clip
    offline = solve(camera[:60], NAMES)
    live = LiveSolver(NAMES)
    for t in range(60):
        pose = live.update(camera[t])
        assert not pose.held.any()
        dot = np.abs(np.sum(pose.rotations * offline.rotations[t], axis=-1))
        np.testing.assert_allclose(dot, 1.0, atol=1e-9)
    np.testing.assert_allclose(pose.skeleton.offsets, offline.skeleton.offsets, atol=1e-9)
    np.testing.assert_allclose(pose.root_position, offline.root_position[59], atol=1e-9)
