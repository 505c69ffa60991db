"""A foot leaving low along the line of sight, seen as the lifter shows it (issue 51, side steps from the side): the
side-stepper of tests/test_contacts_flat_lift.py with a longer, lower swing (0.6 s, 3 cm up, 40 cm towards the
camera), its 3D keypoints as the pipeline gives them to the rule-based `ContactDetector`: exact on depth frames (6 a
second), and between them a foot the detector holds on its pixel's ray at the point nearest to where it was
(`realtime.rig.lift.nearest_on_rays`, the lifter's step 4), the rest of the body exact.

From the side the image shows the swing's rise less the drop of a foot coming nearer, under every gate across the line
of sight: the foot was held 0.30-0.33 s into its swing, half of it. The depth frames show it: the heel and the toes
both move along the line of sight."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from realtime.rig.lift import nearest_on_rays
from tests.ground_synthetic import camera_pose
from tests.mocap_synthetic import NAMES

_K = {n: i for i, n in enumerate(NAMES)}
LIFT_OFF, SWING, RISE, REACH = 1.0, 0.6, 0.03, 0.40  # s, s, m, m
HEEL_TIME, HEEL_TURN, HEEL_RISE, HIPS_SPEED = 0.25, 0.10, 0.045, 0.6  # s, m, m, m/s
DEPTH_PERIOD = 1 / 6  # s: the pointmap 6 times a second
FEET = {side: [_K[f"{side}_{p}"] for p in ("ankle", "heel", "big_toe", "small_toe")] for side in ("left", "right")}


def side_step(fps: float, seconds: float = 2.2, reach: float = REACH, lift_off: float = LIFT_OFF):
    """(T,) times, (T, K, 3) camera-frame keypoints (NaN for those not placed), (T,) the leading (left) foot's true
    contact. Facing across the line of sight, the left side towards the camera; the left foot leaves at LIFT_OFF and
    swings `reach` towards the camera over SWING, RISE up at most, and lands; the hips follow half as far."""
    times = np.arange(int(round(seconds * fps))) / fps
    up, facing, left = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, -1.0])
    phase = np.clip((times - lift_off) / SWING, 0.0, 1.0)
    world = np.full((len(times), len(NAMES), 3), np.nan)
    centre = np.array([0.0, 0.0, 4.0])
    world[:, _K["left_hip"]] = centre + 0.9 * up + 0.09 * left + (0.5 * reach * phase)[:, None] * left
    world[:, _K["right_hip"]] = world[:, _K["left_hip"]] - 0.18 * left
    for side, sign in (("left", 1.0), ("right", -1.0)):
        ankle = np.repeat((centre + 0.1 * sign * left + 0.08 * up)[None], len(times), axis=0)
        if side == "left":
            ankle = ankle + (reach * (1 - np.cos(np.pi * phase)) / 2)[:, None] * left
            ankle = ankle + (RISE * np.sin(np.pi * phase))[:, None] * up
        world[:, _K[f"{side}_ankle"]] = ankle
        world[:, _K[f"{side}_heel"]] = ankle - 0.05 * facing - 0.07 * up
        world[:, _K[f"{side}_big_toe"]] = ankle + 0.15 * facing - sign * 0.03 * left - 0.07 * up
        world[:, _K[f"{side}_small_toe"]] = ankle + 0.14 * facing + sign * 0.03 * left - 0.07 * up
    truth = (phase <= 0.0) | (phase >= 1.0)
    rotation, camera_centre = camera_pose()
    return times, (world - camera_centre) @ rotation.T, truth


def heel_first_step(fps: float, seconds: float = 2.2):
    """(T,) times, (T, K, 3) camera-frame keypoints, (T,) the leading (left) foot's true contact: side_step's body
    stepping as a side step does (69_59's): the hips shifting towards the camera at HIPS_SPEED from 0.4 s before the
    foot leaves; the left heel leaves first at LIFT_OFF, rising HEEL_RISE and swinging HEEL_TURN towards the camera over
    HEEL_TIME (the foot turning on its toes towards its step: the truth's lift-off, the foot moving), then the whole
    foot swings as side_step's, HEEL_TIME later."""
    times, points, _ = side_step(fps, seconds)
    rotation, camera_centre = camera_pose()
    world = points @ rotation + camera_centre  # back to the world
    left, up = np.array([0.0, 0.0, -1.0]), np.array([0.0, 1.0, 0.0])
    late = side_step(fps, seconds, lift_off=LIFT_OFF + HEEL_TIME)[1] @ rotation + camera_centre
    feet = FEET["left"]
    world[:, feet] = late[:, feet]
    turn = np.clip((times - LIFT_OFF) / HEEL_TIME, 0.0, 1.0)
    world[:, _K["left_heel"]] += (HEEL_TURN * turn)[:, None] * left + (HEEL_RISE * np.sin(0.5 * np.pi * turn))[:, None] * up
    shift = HIPS_SPEED * np.clip(times - (LIFT_OFF - 0.4), 0.0, None)
    for hip in ("left_hip", "right_hip"):
        world[:, _K[hip]] = world[0, _K[hip]] + shift[:, None] * left
    return times, (world - camera_centre) @ rotation.T, times < LIFT_OFF


def decide(times: np.ndarray, points: np.ndarray, depth_scale: float = 1.0, scaled_from: float = np.inf,
           carried: bool = False) -> np.ndarray:
    """(T, 2) the detector's contacts, each frame's keypoints as the lifter gives them: exact on a depth frame, a foot
    held on the last frame on its ray nearest to where it was between depth frames. `depth_scale`: the depth frames
    from `scaled_from` (s) on put the whole body that much further along the line of sight (a pointmap's scale error);
    `carried`: and the frames between them too (the lifter carries a depth frame's depth to the next)."""
    rotation, camera_centre = camera_pose()
    detector = ContactDetector(Floor(rotation @ np.array([0.0, 1.0, 0.0]), (np.zeros(3) - camera_centre) @ rotation.T),
                               NAMES)
    out, previous, decided = [], None, np.zeros(2, bool)
    for t, exact in zip(times, points):
        depth_frame = abs(t / DEPTH_PERIOD - round(t / DEPTH_PERIOD)) < 1e-6
        shown = exact * (depth_scale if (depth_frame or carried) and t >= scaled_from else 1.0)
        if previous is not None and not depth_frame:
            for held, side in zip(decided, ("left", "right")):
                if held:  # on its ray (the exact point's direction), nearest to where it was
                    shown[FEET[side]] = nearest_on_rays(previous[FEET[side]], exact[FEET[side]])
        decided = detector.update(t, shown)
        out.append(decided)
        previous = shown
    return np.array(out)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_foot_leaving_low_along_the_line_of_sight_is_released_in_its_swing(fps):
    """Released within 0.2 s of leaving the floor, at its first depth frame after it (before `off_along`: 0.30-0.33 s,
    half its swing), and not planted again in the air; the standing foot held throughout."""
    times, points, truth = side_step(fps)
    decided = decide(times, points)
    assert decided[(times > 0.5) & (times < LIFT_OFF), 0].all()  # planted before it lifts
    released = times[(times >= LIFT_OFF) & ~decided[:, 0]]
    assert len(released) and released[0] - LIFT_OFF <= 0.2 + 1e-9, released[:1]
    swing = (times > released[0]) & (times < LIFT_OFF + SWING - 0.1)
    assert not decided[swing, 0].any(), times[swing & decided[:, 0]]
    assert decided[times > 0.5, 1].all()


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_standing_foot_is_held_while_the_body_moves_along_the_line_of_sight(fps):
    """A foot that does not leave stays planted through depth frames while the other one swings along the line of
    sight and the hips move with it."""
    times, points, truth = side_step(fps)
    assert decide(times, points)[times > 0.5, 1].all()


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_depth_frame_that_moves_the_whole_body_releases_no_foot(fps):
    """Both feet standing (the clip ends before the step) while every depth frame from 0.5 s on puts the whole body 3 %
    further (12 cm at 4 m): no foot moved from the other, both held."""
    times, points, truth = side_step(fps, seconds=0.95)
    decided = decide(times, points, depth_scale=1.03, scaled_from=0.5)
    assert truth.all() and decided[times > 0.3].all()


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_side_steps_heel_leaving_first_along_the_line_of_sight_is_released_at_its_first_depth_frame(fps):
    """The heel leaves first (heel_first_step), the toes standing HEEL_TIME longer: released at the first depth frame
    after it leaves, at every rate alike; the standing foot held throughout."""
    times, points, truth = heel_first_step(fps)
    decided = decide(times, points)
    assert decided[(times > 0.5) & (times < LIFT_OFF), 0].all()  # planted before it lifts
    released = times[(times >= LIFT_OFF) & ~decided[:, 0]]
    assert len(released) and released[0] - LIFT_OFF <= DEPTH_PERIOD + 1e-9, released[:1]
    assert decided[times > 0.5, 1].all()


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0])
def test_a_depth_frame_that_moves_the_whole_body_releases_no_foot_beside_one_in_the_air(fps):
    """One foot standing, the other held still 15 cm up (not in contact), while every depth frame from 0.5 s on puts
    the whole body 3 % further: the standing foot moved no more than the raised one, held throughout."""
    times, points, truth = side_step(fps, seconds=0.95)
    rotation, _ = camera_pose()
    points[:, FEET["right"]] += 0.15 * (rotation @ np.array([0.0, 1.0, 0.0]))
    decided = decide(times, points, depth_scale=1.03, scaled_from=0.5, carried=True)
    assert not decided[:, 1].any() and decided[times > 0.3, 0].all()
