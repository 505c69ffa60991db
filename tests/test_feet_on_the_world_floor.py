"""The avatar's held feet stand on the world's floor where the performer's planted feet stand on it
(realtime/rig/lock.py `RestingHeights.sole`, `FootPin`; realtime/stages/motion.py passes the feet's heel and toe
points). The world stage fixes its floor from a few depth frames (the planted feet's lowest keypoints), and that fit is
off by a centimetre or two (bench/RESULTS.md, issue 51, "the floor's level (fourth stop)"): the avatar's feet must not
follow that error into the floor or above it. Synthetic walker with known truth: its soles (heel and toe keypoints)
stand 1 cm over y = 0, its ankles 8 cm."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.frames import Frame, Person, rounded_camera
from realtime.rig.bones import bone_table
from realtime.rig.lock import FootLock, FootPin, RestingHeights
from realtime.rig.solver import Skeleton, forward_kinematics
from realtime.stages.motion import MotionStage
from tests.ground_synthetic import walk, world_from_camera
from tests.mocap_synthetic import NAMES

BONES = bone_table()
INDEX = {b.name: i for i, b in enumerate(BONES)}
FEET = [INDEX["leftFoot"], INDEX["rightFoot"]]
TOES = [INDEX["leftToes"], INDEX["rightToes"]]
SOLES = [NAMES.index(f"left_{p}") for p in ("heel", "big_toe", "small_toe")]
_IMAGE = np.zeros((2, 2, 3), np.uint8)


def _walk_on_a_floor_fitted_off(error: float, fps: float = 30.0, seconds: float = 5.0, seed: int = 0):
    """The walker through the motion stage in a world whose floor was fitted `error` (m) above where its feet stand
    (every point `error` lower in that world), 1 cm of noise on each point and 0.5 % of scale on each frame. -> times,
    contacts, the avatar's ankles and toes in that world (T, 2, 3), and the walk."""
    seen = walk(int(round(seconds * fps)), fps=fps)
    pose = world_from_camera()
    pose[1, 3] -= error
    camera = rounded_camera(pose, None, "static", True, True)
    rng = np.random.default_rng(seed)
    stage = MotionStage(NAMES)
    ankles, toes = [], []
    for t, time in enumerate(seen.times):
        points = seen.camera[t] * (1.0 + rng.normal(0.0, 0.005)) + rng.normal(0.0, 0.01, seen.camera[t].shape)
        person = Person(box=np.zeros(4, np.float32), track_id=1, keypoints=np.zeros((len(NAMES), 2), np.float32),
                        keypoints3d=points.astype(np.float32), contacts=seen.contacts[t].copy())
        bones = stage.process(Frame(index=t, timestamp=float(time), image=_IMAGE, people=(person,),
                                    camera=camera)).people[0].bones
        skeleton = Skeleton(BONES, bones.offsets, np.zeros((len(BONES), 3)))
        heads = forward_kinematics(skeleton, bones.root_position[None], bones.rotations[None])[0][0]
        ankles.append(heads[FEET])
        toes.append(heads[TOES])
    return seen.times, seen.contacts, np.array(ankles), np.array(toes), seen


@pytest.mark.parametrize("error", [0.02, -0.02])
def test_the_avatars_held_feet_stand_on_the_world_floor_however_far_its_fit_is_off_the_planted_feet(error):
    times, contacts, ankles, toes, seen = _walk_on_a_floor_fitted_off(error)
    flat = seen.contacts[:, 0]
    sole = float(np.median(seen.world[flat][:, SOLES, 1].min(axis=1)))  # where the walker's planted feet stand: 1 cm
    ankle_rest = float(np.median(seen.world[flat, NAMES.index("left_ankle"), 1])) - sole
    toes_rest = float(np.median(seen.world[flat][:, SOLES[1:], 1].mean(axis=1))) - sole
    held = contacts & (times > 2.0)[:, None]  # the resting heights measured by now, every hold begun after
    held &= np.concatenate([np.zeros((6, 2), bool), np.all([contacts[k:len(contacts) - 6 + k] for k in range(6)], axis=0)])
    assert held.sum() > 40
    # on the world's floor (y = 0) as the walker stands on its own: within 5 mm, whichever way the fit is off (the
    # measured heights above the fitted floor put them `error` into it or over it)
    assert abs(np.median(ankles[held][:, 1]) - ankle_rest) <= 0.005, (np.median(ankles[held][:, 1]), ankle_rest)
    assert abs(np.median(toes[held][:, 1]) - toes_rest) <= 0.005, (np.median(toes[held][:, 1]), toes_rest)
    assert toes[held][:, 1].min() > toes_rest - 0.01 and ankles[held][:, 1].min() > ankle_rest - 0.01


def test_resting_heights_take_the_sole_where_the_lowest_point_of_each_held_frame_rests():
    rng = np.random.default_rng(0)
    rest = RestingHeights()
    lowest = []
    for k in range(60):  # 2 s held at 30 fps: the heel down, then the heel up about toes 0.5 cm up, 2 mm of noise
        heel = 0.0 if k < 30 else 0.04
        points = np.array([heel, 0.005, 0.006]) + rng.normal(0.0, 0.002, 3)
        lowest.append(points.min())
        rest.add(1 / 30, 0.08 + heel, 0.02, points)
    # each frame's lowest point (the heel, then the toes), as the world floor's soles are: their median
    assert rest.sole == pytest.approx(np.median(lowest), abs=1e-3)
    assert 0.0 < rest.sole < 0.006


def test_resting_heights_and_the_pin_take_no_soles_as_before_and_refuse_soles_of_another_shape():
    rest = RestingHeights()
    for _ in range(30):
        rest.add(1 / 30, 0.08, 0.02)  # no soles given: none measured
        rest.add(1 / 30, 0.08, 0.02, [np.nan, np.inf, -np.inf])  # none finite: none either
    assert rest.heights == pytest.approx((0.08, 0.02)) and rest.sole is None
    for bad in (np.nan, np.inf, -1.0, 0.0):
        rest.add(bad, 0.08, 0.02, [0.0, 0.0, 0.0])  # a frame of no length (or not finite) is not a sample
    assert rest.sole is None
    pin, lock = FootPin(), FootLock(NAMES)
    feet = np.zeros((2, 2, 3))
    for soles in (np.zeros((2, 3)), np.zeros((3, 3, 3)), np.zeros((2, 3, 2)), np.zeros(0)):
        with pytest.raises(ValueError, match="soles"):
            pin.frame(0.0, lock, feet, feet, (np.array([0.0, 1.0, 0.0]), 0.0), soles)
    assert pin.frame(0.0, lock, feet, feet, (np.array([0.0, 1.0, 0.0]), 0.0), np.full((2, 3, 3), np.nan)) is not None
