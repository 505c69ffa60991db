"""A hold's height at 60 fps (issue 51): a hold is anchored at the frame before its decision (no step back over the
ground a foot still shown moving has just crossed), but at the height its ankle had `LockGates.anchor_back` (1/30 s)
before, the instant a 24 or 30 fps hold reads: a foot the frames still show coming down is read 1/60 s further down
on the frame before, and a hold on one frame's heights keeps that (realtime/rig/lock.py `FootLock`; the motion stage
gives the lock the floor's up)."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.frames import Frame, Person, rounded_camera
from realtime.rig.bones import bone_table
from realtime.rig.lock import FootLock
from realtime.rig.solver import Skeleton, forward_kinematics
from realtime.stages.motion import MotionStage
from tests.ground_synthetic import walk, world_from_camera
from tests.mocap_synthetic import NAMES

INDEX = {n: i for i, n in enumerate(NAMES)}
ANKLE = INDEX["left_ankle"]
LEFT_FOOT = [INDEX[f"left_{p}"] for p in ("ankle", "heel", "big_toe", "small_toe")]
LEFT_FOOT_BONE = [b.name for b in bone_table()].index("leftFoot")
DRIFT, DROP = 0.75, 0.3  # m/s: a landing foot still shown moving along the floor and coming down at the decision
DECIDED = 0.2  # s
LOWER = 0.06  # m: the left foot stands this much lower than the walker's (under PinGates.first_ankle)
_IMAGE = np.zeros((2, 2, 3), np.uint8)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_hold_keeps_the_place_of_the_frame_before_and_the_height_of_anchor_back_before(fps):
    """The whole body drifts along the floor and comes down; the left foot's contact is decided 0.2 s in. The held
    ankle is as high as the shown one was 1/30 s before the decision at 30 and 60 fps (at 60 fps the frame before is
    5 mm lower; at 24 fps the frame before), and along the floor where the frame before showed it (at 60 fps not
    stepped back to 1/30 s before)."""
    pose = world_from_camera()
    up = pose[1, :3]  # the world's up in the camera's axes, as the motion stage gives it
    along = np.array([0.0, 0.0, 1.0])
    along = along - (along @ up) * up
    along /= np.linalg.norm(along)
    start = walk(1).camera[0]
    lock = FootLock(NAMES)
    decided = int(round(DECIDED * fps))

    def shown(k):
        t = k / fps
        return start + along * DRIFT * t - up * DROP * t

    for k in range(decided + int(round(0.1 * fps))):
        out = lock.apply(1.0 + k / fps, shown(k), np.array([k >= decided, False]), up=up)
        if k == decided:
            held = out[ANKLE]
    # the place: the frame before at every rate; the height: 1/30 s before, the frame before at 24 fps (the lock
    # reads no later than that frame)
    expected_height = start[ANKLE] @ up - DROP * (decided / fps - max(1 / 30, 1 / fps))
    assert held @ up == pytest.approx(expected_height, abs=1e-9)
    expected_along = (shown(decided)[ANKLE] - along * DRIFT / fps) @ along
    assert held @ along == pytest.approx(expected_along, abs=1e-9)


def _avatar_ankles(fps: float) -> tuple[np.ndarray, np.ndarray]:
    """A standing body in the world (the still camera's, y up, floor at 0) whose left foot (set LOWER, under
    `PinGates.first_ankle`) comes down at 0.3 m/s until 0.25 s, its contact given from 0.2 s (still 1.5 cm up), through
    the motion stage at `fps` without the live filter: the times and the avatar's left ankle heights (forward
    kinematics of `Person.bones`)."""
    pose = world_from_camera()
    up = pose[1, :3]
    camera = rounded_camera(pose, None, "static", True, True)
    stage = MotionStage(NAMES, smooth="none")  # the live filter lags a landing differently at each rate: not this
    start = walk(1).camera[0]
    times = np.arange(int(round(0.8 * fps))) / fps
    heights = []
    for t, time in enumerate(times):
        points = start.copy()
        points[LEFT_FOOT] += up * (DROP * max(0.25 - time, 0.0) - LOWER)
        person = Person(box=np.zeros(4, np.float32), track_id=1, keypoints=np.zeros((len(NAMES), 2), np.float32),
                        keypoints3d=points.astype(np.float32), contacts=np.array([time >= DECIDED - 1e-9, True]))
        out = stage.process(Frame(index=t, timestamp=float(time), image=_IMAGE, people=(person,), camera=camera))
        bones = out.people[0].bones
        skeleton = Skeleton(bone_table(), bones.offsets, np.zeros((len(bones.offsets), 3)))
        heads = forward_kinematics(skeleton, bones.root_position[None], bones.rotations[None])[0][0]
        heights.append(heads[LEFT_FOOT_BONE, 1])
    return times, np.array(heights)


def test_a_first_hold_on_a_landing_foot_stands_as_high_at_60_fps_as_at_30():
    """Through the motion stage (the lock given the floor's up by it, the pin's hold on that frame's heights): the
    avatar's held left ankle stands at the same height at 30 and 60 fps once settled (read at the frame before, it
    would stand 5 mm lower at 60 fps: the foot 1/60 s further down at 0.3 m/s)."""
    times30, ankles30 = _avatar_ankles(30.0)
    times60, ankles60 = _avatar_ankles(60.0)
    common = np.searchsorted(times60, times30 - 1e-9)
    settled = (times30 >= DECIDED + 0.12) & (times30 <= 0.7)  # after the settle (PinGates.settle)
    assert settled.sum() >= 10
    apart = ankles60[common][settled] - ankles30[settled]
    assert np.abs(apart).max() < 0.001, np.round(1000 * apart, 2)
