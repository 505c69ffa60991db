"""bench/motion.py and bench/corpus.py: the measures on tracks of known error, the corpus loader on the project's own
clips and on a small iClone-skeleton BVH written here, and the bench end to end in its fast mode."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from bench import corpus
from bench import motion as bench
from tests.mocap_clips import FOLDER, forward, load_clip, read_bvh


def _steps(period: float, duration: float, fps: float, on: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """(times, (T, 2) contacts): each foot on the floor for the first `on` of every `period` s, the right half a period
    later."""
    times = np.arange(0.0, duration, 1.0 / fps)
    left = (times % period) < on * period
    right = ((times + period / 2) % period) < on * period
    return times, np.stack([left, right], axis=1)


def _shifted(contacts: np.ndarray, frames: int) -> np.ndarray:
    """The decisions `frames` late (early when negative), the frames rolled in at the ends as the truth's there."""
    out = np.roll(contacts, frames, axis=0)
    if frames > 0:
        out[:frames] = contacts[0]
    elif frames < 0:
        out[frames:] = contacts[-1]
    return out


def test_a_decision_50_ms_off_counts_neither_way_100_ms_off_does():
    times, truth = _steps(1.0, 6.0, 60.0)
    for frames in (3, -3):  # 50 ms late, 50 ms early
        tp, fp, fn = bench.contact_counts(_shifted(truth, frames), truth, times)
        assert fp == 0 and fn == 0 and tp > 0
    tp, fp, fn = bench.contact_counts(_shifted(truth, 6), truth, times)  # 100 ms late
    assert fp > 0 and fn > 0
    assert tp / (tp + fp) < 1.0 and tp / (tp + fn) < 1.0
    # and with no tolerance a 50 ms shift is counted
    tp, fp, fn = bench.contact_counts(_shifted(truth, 3), truth, times, tolerance=0.0)
    assert fp > 0 and fn > 0


def test_the_tolerance_is_in_seconds_at_every_frame_rate():
    for fps in (24.0, 30.0, 60.0):
        times, truth = _steps(1.2, 6.0, fps)
        late = int(round(0.06 * fps))  # 42, 67 and 50 ms: within 67 ms
        tp, fp, fn = bench.contact_counts(_shifted(truth, late), truth, times)
        assert (fp, fn) == (0, 0)
        tp, fp, fn = bench.contact_counts(_shifted(truth, int(round(0.15 * fps))), truth, times)
        assert fn > 0


def test_invalid_frames_are_not_counted():
    times, truth = _steps(1.0, 4.0, 30.0)
    wrong = ~truth
    valid = np.zeros(len(times), bool)
    assert bench.contact_counts(wrong, truth, times, valid) == (0, 0, 0)


def test_a_foot_sliding_1_mm_a_frame_at_60_fps_reads_2_mm_per_30th_of_a_second():
    for fps, expected in ((60.0, 2.0), (30.0, 1.0), (24.0, 0.8)):
        times = np.arange(120) / fps
        points = np.zeros((120, 3))
        points[:, 0] = 0.001 * np.arange(120)  # 1 mm a frame along x
        points[:, 1] = 0.01 * np.sin(times)  # up and down does not count
        steps = bench.slide_steps(points, np.ones(120, bool), times)
        assert len(steps) == 119
        np.testing.assert_allclose(steps, expected, rtol=1e-6)


def test_slide_counts_only_steps_between_two_contact_frames():
    times = np.arange(10) / 30.0
    points = np.zeros((10, 3))
    points[:, 2] = 0.01 * np.arange(10)
    contact = np.array([1, 1, 0, 1, 1, 1, 0, 0, 1, 0], bool)
    steps = bench.slide_steps(points, contact, times)
    assert len(steps) == 3  # 0-1, 3-4, 4-5
    points[4] = np.nan
    assert len(bench.slide_steps(points, contact, times)) == 1


def test_airborne_held_frames_outside_the_tolerance():
    fps = 60.0
    times = np.arange(120) / fps
    airborne = (times >= 0.5) & (times < 1.0)  # 30 frames in the air
    truth = np.stack([~airborne, ~airborne], axis=1)
    assert bench.airborne_held(truth.copy(), airborne, truth, times) == 0  # released exactly
    held = truth.copy()
    held[:, 0] = True  # the left foot held through the flight
    # the frames within 67 ms of lift-off (0.5 s) and touchdown (1.0 s) are excused: 0.5 s of flight less 2 x 67 ms
    inside = airborne & (np.abs(times - (0.5 - 0.5 / fps)) > bench.TOLERANCE) & (np.abs(times - (1.0 - 0.5 / fps))
                                                                                  > bench.TOLERANCE)
    assert bench.airborne_held(held, airborne, truth, times) == int(inside.sum()) > 15
    late = _shifted(truth, 2)  # released and landed 33 ms late: nothing counted
    assert bench.airborne_held(late, airborne, truth, times) == 0


def test_agreement_of_30_and_60_fps_on_common_timestamps():
    t60, d60 = _steps(1.0, 4.0, 60.0)
    t30, d30 = _steps(1.0, 4.0, 30.0)
    alike, compared = bench.agreement(t30, d30, t60, d60)
    assert compared == 2 * len(t30) and alike == compared
    d30 = d30.copy()
    d30[:12, 0] = ~d30[:12, 0]
    alike, compared = bench.agreement(t30, d30, t60, d60)
    assert compared - alike == 12
    valid = np.ones(len(t30), bool)
    valid[:12] = False
    assert bench.agreement(t30, d30, t60, d60, valid) == (2 * (len(t30) - 12), 2 * (len(t30) - 12))


def test_root_jitter_is_the_shake_not_the_motion():
    fps = 30.0
    t = np.arange(150) / fps
    smooth = np.stack([1.2 * t, 0.9 + 0.1 * np.sin(2 * np.pi * t), 0.3 * t ** 2], axis=1)
    assert bench.root_jitter(smooth, fps) < 0.2  # mm
    rng = np.random.default_rng(0)
    shaky = smooth + rng.normal(0, 0.005, smooth.shape)  # 5 mm per axis
    assert 5 < bench.root_jitter(shaky, fps) < 9
    assert np.isnan(bench.root_jitter(smooth[:3], fps))


def test_elevations_take_the_lower_point():
    feet = np.zeros((1, 2, 2, 3))
    feet[0, 0, :, 1] = [0.10, 0.05]  # ankle 2 cm above its rest, toes 1 cm: on the floor 1 cm up
    feet[0, 1, :, 1] = [0.06, 0.02]  # 2 cm below its rest
    rest = np.array([[0.08, 0.04], [0.08, 0.04]])
    np.testing.assert_allclose(bench.elevations(feet, rest), [[0.01, -0.02]], atol=1e-12)



def test_sinking_is_below_both_the_rest_and_the_true_point():
    feet = np.zeros((1, 2, 2, 3))
    feet[0, 0, :, 1] = [0.06, 0.03]  # ankle 2 cm under its rest, toes 1 cm
    feet[0, 1, :, 1] = [0.08, 0.02]  # toes 2 cm under their rest, but where the true toes are
    rest = np.array([[0.08, 0.04], [0.08, 0.04]])
    true_heights = np.array([[[0.07, 0.04], [0.08, 0.02]]])  # the true left ankle 1 cm under its rest
    np.testing.assert_allclose(bench.sinking(feet, rest, true_heights), [[0.01, 0.0]], atol=1e-12)


def test_floating_is_above_both_the_rest_and_the_true_point():
    feet = np.zeros((1, 2, 2, 3))
    feet[0, 0, :, 1] = [0.11, 0.06]  # ankle 3 cm over its rest, toes 2 cm: on the floor 2 cm up
    feet[0, 1, :, 1] = [0.11, 0.07]  # 3 cm up, but where the true foot stands on this frame
    rest = np.array([[0.08, 0.04], [0.08, 0.04]])
    true_heights = np.array([[[0.09, 0.05], [0.11, 0.07]]])  # the true left foot 1 cm over its rest
    np.testing.assert_allclose(bench.floating(feet, rest, true_heights), [[0.01, 0.0]], atol=1e-12)


def _clean_feet(world: np.ndarray) -> np.ndarray:
    """(T, 2, 2, 3) the clean motion's own ankles and toes (the big and small toe's midpoint), as the avatar's feet are
    measured."""
    _, toes = corpus.foot_points(world)
    ankles = world[:, [corpus.NAMES.index("left_ankle"), corpus.NAMES.index("right_ankle")]]
    return np.stack([ankles, toes], axis=2)


def _clean_on_their_floor(name: str):
    """A project clip's motion, its true contacts, the level its planted feet stand at, and over that level its clean
    feet (as `_clean_feet`), their resting heights and their true heights on every frame."""
    motion = corpus.project_motions([name])[0]
    truth = corpus.true_contacts(motion)
    level = bench.planted_level(motion.joints, truth)
    feet = _clean_feet(motion.joints)
    feet[..., 1] -= level
    rest = bench.resting_heights(motion.joints, truth) - level
    return motion, truth, level, feet, rest, bench.foot_heights(motion.joints) - level


@pytest.mark.parametrize("name", ["cmu_07_04", "cmu_35_05", "cmu_16_18"])
def test_the_clean_motion_does_not_sink_on_the_floor_its_feet_stand_on(name):
    """The measure on the truth: the clean motion's own feet, on held frames (its true contacts), with the floor where
    its planted feet's lowest keypoints stand (the world stage's definition) score no penetration; the measure before
    (the lower point against fixed resting heights over the corpus's y = 0) gave the truth centimetres of it."""
    motion, truth, level, feet, rest, true_heights = _clean_on_their_floor(name)
    held = truth.contact
    sunk = bench.sinking(feet, rest, true_heights)[held]
    assert np.percentile(sunk, 95) <= 0.003
    # the clean feet on the corpus's floor (y = 0, below where they stand) against those heights: sunk by the gap
    assert 0.005 < level < 0.03
    lowered = feet.copy()
    lowered[..., 1] -= 0.02
    assert 0.015 < np.percentile(bench.sinking(lowered, rest, true_heights)[held], 95) < 0.025
    # the measure before: the lower of the ankle and toes below their fixed resting heights, over the corpus's floor
    before = -bench.elevations(_clean_feet(motion.joints), bench.resting_heights(motion.joints, truth))[held]
    assert np.percentile(np.maximum(before, 0), 95) > 0.005


@pytest.mark.parametrize("name", ["cmu_08_11", "cmu_35_24"])
def test_the_clean_motion_does_not_float_over_the_floor_its_feet_stand_on(name):
    """The float's measure on the truth: the clean motion's own feet on its true contacts score no float; raised 2 cm
    they score 2 cm. Against one resting height per foot (the measure before), these clips' own stances floated over 2
    cm (08_11 2.5, 35_24 2.2): a perfect avatar could not have met the 2 cm goal."""
    motion, truth, level, feet, rest, true_heights = _clean_on_their_floor(name)
    held = truth.contact
    assert np.percentile(bench.floating(feet, rest, true_heights)[held], 95) <= 0.001
    raised = feet.copy()
    raised[..., 1] += 0.02
    assert 0.018 < np.percentile(bench.floating(raised, rest, true_heights)[held], 95) < 0.022
    before = np.maximum(bench.elevations(feet, rest)[held], 0)
    assert np.percentile(before, 95) > 0.02


# ---- the corpus ----

def test_the_projects_clips_load_as_the_benches_see_them():
    motion = corpus.load_motion(FOLDER / "cmu_07_04.bvh", "walk")
    clip = load_clip("cmu_07_04")
    assert motion.fps == 30.0 and motion.category == "walk" and motion.held_out is False
    assert motion.joints.shape == clip.joints.shape == (113, len(corpus.NAMES), 3)
    np.testing.assert_allclose(motion.joints, clip.joints, equal_nan=True)
    heels, toes = corpus.foot_points(motion.joints)
    lowest = np.minimum(heels[..., 1], toes[..., 1]).min(axis=1)
    assert abs(np.percentile(lowest, 2)) < 1e-9  # the floor at y = 0
    truth = corpus.true_contacts(motion)
    assert not truth.airborne.any()  # a walk
    assert ((truth.contact.mean(axis=0) > 0.4) & (truth.contact.mean(axis=0) < 0.75)).all()
    assert truth.contact.any(axis=1).mean() > 0.9  # a foot down almost always (double support, stance)
    held_out = corpus.project_motions(["cmu_35_05", "cmu_09_03"])
    assert [m.held_out for m in held_out] == [True, True] and [m.category for m in held_out] == ["walk", "run"]


def test_every_category_has_a_held_out_clip():
    corpus_categories = {"jump", "dance", "turn", "side_step", "backward", "crouch", "lunge", "brisk_walk", "slow_walk"}
    held = {corpus.PROJECT.get(name) or corpus.category_of(name) for name in corpus.HELD_OUT}
    assert corpus_categories | set(corpus.PROJECT.values()) <= held
    assert all(name in corpus.PROJECT or "_cmu_" in name for name in corpus.HELD_OUT)


def test_the_hips_vertical_acceleration_is_a_parabolas():
    fps = 60.0
    times = np.arange(60) / fps
    flight = 1.0 + 2.0 * times - 9.81 / 2 * times**2  # thrown up at 2 m/s
    np.testing.assert_allclose(corpus.vertical_acceleration(flight, fps), -9.81, atol=1e-6)
    np.testing.assert_allclose(corpus.vertical_acceleration(np.full(60, 0.9), fps), 0.0, atol=1e-9)


def test_a_walk_whose_feet_both_stand_up_off_their_rest_is_not_in_the_air():
    motion = corpus.project_motions(["cmu_08_11"])[0]
    heels, toes = corpus.foot_points(motion.joints)
    feet_up = np.ones(len(motion.joints), bool)
    for points in (heels, toes):
        above = points[..., 1] - corpus.rest_height(points[..., 1], motion.fps)
        feet_up &= (above >= corpus.CONTACT_HEIGHT).all(axis=1)
    assert feet_up.sum() >= 4  # both feet over 3 cm above their rest for a moment (a roll onto the toes)
    assert not corpus.true_contacts(motion).airborne.any()  # yet the hips are held up: no flight


def test_a_run_has_flights_and_its_truth_is_the_same_at_every_rate():
    motion = corpus.project_motions(["cmu_35_24"])[0]
    truth = corpus.true_contacts(motion)
    assert truth.airborne.sum() >= 4 and not (truth.airborne & truth.contact.any(axis=1)).any()
    at_60 = corpus.resample(motion, 60.0)
    assert len(at_60.joints) == 2 * len(motion.joints) - 1
    np.testing.assert_allclose(at_60.joints[::2], motion.joints, atol=1e-9, equal_nan=True)  # through the frames
    sampled = truth.at(at_60.times)
    np.testing.assert_array_equal(sampled.contact[::2], truth.contact)
    at_24 = corpus.resample(motion, 24.0)
    assert at_24.times[-1] <= motion.times[-1] + 1e-9 and len(at_24.joints) == int(motion.times[-1] * 24 + 1e-6) + 1


def test_floor_speed_in_metres_per_second_at_any_rate():
    for fps in (24.0, 60.0):
        t = np.arange(50) / fps
        points = np.stack([0.3 * t, 0.5 * t, np.zeros_like(t)], axis=1)  # 0.3 m/s along x, rising (not counted)
        np.testing.assert_allclose(corpus.floor_speed(points, fps), 0.3, rtol=1e-9)


# A small BVH of the iClone skeleton (joint names CC_Base_*, centimetres, the legs' rest frames turned 180 degrees
# about z as Character Creator's are): standing facing +z, the right leg raised forward between 0.6 and 1.2 s,
# after a first frame at rest far away (as CMU 07_05 of the corpus starts).
_CC = [  # name, parent, offset (cm), rest rotation (Z, Y, X degrees)
    ("CC_Base_Hip", None, (0.0, 0.0, 0.0), (0, 0, 0)),  # its height in the position channels (bvhio drops the offset)
    ("CC_Base_Pelvis", "CC_Base_Hip", (0, 0, 0), (0, 0, 0)),
    ("CC_Base_L_Thigh", "CC_Base_Pelvis", (9.0, -2.0, 0.0), (180, 0, 0)),
    ("CC_Base_L_Calf", "CC_Base_L_Thigh", (0.0, 45.0, 0.0), (0, 0, 0)),
    ("CC_Base_L_Foot", "CC_Base_L_Calf", (0.0, 45.0, 0.0), (0, 0, 70)),
    ("CC_Base_L_ToeBase", "CC_Base_L_Foot", (0.0, 14.0, 0.0), (0, 0, 20)),
    ("CC_Base_R_Thigh", "CC_Base_Pelvis", (-9.0, -2.0, 0.0), (180, 0, 0)),
    ("CC_Base_R_Calf", "CC_Base_R_Thigh", (0.0, 45.0, 0.0), (0, 0, 0)),
    ("CC_Base_R_Foot", "CC_Base_R_Calf", (0.0, 45.0, 0.0), (0, 0, 70)),
    ("CC_Base_R_ToeBase", "CC_Base_R_Foot", (0.0, 14.0, 0.0), (0, 0, 20)),
    ("CC_Base_Waist", "CC_Base_Hip", (0.0, 8.0, 0.0), (0, 0, 0)),
    ("CC_Base_Spine01", "CC_Base_Waist", (0.0, 10.0, 0.0), (0, 0, 0)),
    ("CC_Base_Spine02", "CC_Base_Spine01", (0.0, 15.0, 0.0), (0, 0, 0)),
    ("CC_Base_NeckTwist01", "CC_Base_Spine02", (0.0, 27.0, 0.0), (0, 0, 0)),
    ("CC_Base_NeckTwist02", "CC_Base_NeckTwist01", (0.0, 4.0, 0.0), (0, 0, 0)),
    ("CC_Base_Head", "CC_Base_NeckTwist02", (0.0, 4.0, 0.0), (0, 0, 0)),
    ("CC_Base_L_Clavicle", "CC_Base_Spine02", (5.0, 21.0, 0.0), (0, 0, 0)),
    ("CC_Base_L_Upperarm", "CC_Base_L_Clavicle", (13.0, 0.0, 0.0), (0, 0, 0)),
    ("CC_Base_L_Forearm", "CC_Base_L_Upperarm", (25.0, 0.0, 0.0), (0, 0, 0)),
    ("CC_Base_L_Hand", "CC_Base_L_Forearm", (25.0, 0.0, 0.0), (0, 0, 0)),
    ("CC_Base_R_Clavicle", "CC_Base_Spine02", (-5.0, 21.0, 0.0), (0, 0, 0)),
    ("CC_Base_R_Upperarm", "CC_Base_R_Clavicle", (-13.0, 0.0, 0.0), (0, 0, 0)),
    ("CC_Base_R_Forearm", "CC_Base_R_Upperarm", (-25.0, 0.0, 0.0), (0, 0, 0)),
    ("CC_Base_R_Hand", "CC_Base_R_Forearm", (-25.0, 0.0, 0.0), (0, 0, 0)),
]
_FPS, _FRAMES = 60.0, 120


def _raised(t: np.ndarray) -> np.ndarray:
    """The right thigh's forward swing (degrees) at times t: up over 0.1 s from 0.6 s, down over 0.1 s from 1.1 s."""
    return 35.0 * np.clip(np.minimum((t - 0.6) / 0.1, (1.2 - t) / 0.1), 0.0, 1.0)


def _write_cc_bvh(path) -> None:
    lines = ["HIERARCHY"]
    children = {}
    for name, parent, _, _ in _CC:
        children.setdefault(parent, []).append(name)
    spec = {name: (offset, rest) for name, _, offset, rest in _CC}

    def emit(name, depth):
        pad = "  " * depth
        offset = spec[name][0]
        lines.append(f"{pad}{'ROOT' if depth == 0 else 'JOINT'} {name}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {offset[0]:.4f} {offset[1]:.4f} {offset[2]:.4f}")
        channels = "6 Xposition Yposition Zposition" if depth == 0 else "3"
        lines.append(f"{pad}  CHANNELS {channels} Zrotation Yrotation Xrotation")
        for child in children.get(name, []):
            emit(child, depth + 1)
        if name not in children:
            lines.extend([f"{pad}  End Site", f"{pad}  {{", f"{pad}    OFFSET 0 0 0", f"{pad}  }}"])
        lines.append(f"{pad}}}")

    emit("CC_Base_Hip", 0)
    times = np.arange(_FRAMES) / _FPS
    lines += ["MOTION", f"Frames: {_FRAMES + 1}", f"Frame Time: {1 / _FPS:.6f}"]
    rows = []
    for t in [None, *times]:
        values = [0.0, 0.0, 0.0] if t is None else [20.0, 100.0, 300.0]  # frame 0: a rest pose at the origin
        for name, _, _, rest in _CC:
            z, y, x = rest
            if name == "CC_Base_R_Thigh" and t is not None:
                x = _raised(np.array(t))  # forward: the thigh's rest frame is turned 180 degrees about z
            values += [z, y, x]
        rows.append(" ".join(f"{v:.6f}" for v in values))
    path.write_text("\n".join(lines + rows) + "\n")


def test_an_iclone_bvh_loads_in_metres_with_its_heels_and_toes_placed(tmp_path):
    import bvhio

    path = tmp_path / "stand_cmu_00_01.bvh"
    _write_cc_bvh(path)
    # the project's forward kinematics agrees with bvhio's on this file (centimetres)
    positions, _ = forward(read_bvh(path))
    root = bvhio.readAsHierarchy(str(path))
    joints = {joint.Name: joint for joint, _, _ in root.layout()}
    names = read_bvh(path).names
    for frame in (0, 1, 60, 100):
        root.loadPose(frame)
        for j, name in enumerate(names):
            np.testing.assert_allclose(positions[frame, j], list(joints[name].PositionWorld), atol=1e-3)

    motion = corpus.load_motion(path)
    assert motion.name == "stand_cmu_00_01" and motion.category == "stand" and motion.fps == _FPS
    assert len(motion.joints) == _FRAMES  # the rest frame at the origin dropped
    k = {n: i for i, n in enumerate(corpus.NAMES)}
    first = motion.joints[0]
    # the left leg straight down from the hip: 0.9 m of thigh and shin, in metres
    assert abs(np.linalg.norm(first[k["left_hip"]] - first[k["left_ankle"]]) - 0.90) < 1e-6
    # the heel: under the ankle at the ball's height less 1 cm, 5 cm back (the body faces +z); the big toe 6 cm
    # ahead of the ball, 2.5 cm inside, 1 cm down
    ankle, heel, ball_height = first[k["left_ankle"]], first[k["left_heel"]], None
    positions_m = positions[1] / 100.0
    ball = positions_m[names.index("CC_Base_L_ToeBase")] - positions_m[names.index("CC_Base_L_Foot")] + ankle
    ball_height = ball[1]
    np.testing.assert_allclose(heel - ankle, [0.0, ball_height - 0.01 - ankle[1], -0.05], atol=1e-6)
    np.testing.assert_allclose(first[k["left_big_toe"]] - ball, [-0.025, -0.01, 0.06], atol=1e-6)
    np.testing.assert_allclose(first[k["right_big_toe"]] - (ball + first[k["right_ankle"]] - ankle),
                               [0.025, -0.01, 0.06], atol=1e-6)
    assert np.isfinite(first[[k["nose"], k["left_eye"], k["left_ear"], k["neck"], k["left_wrist"]]]).all()
    # the truth: the left foot down all along; the right one lifted while raised, down before and after
    truth = corpus.true_contacts(motion)
    t = motion.times
    assert truth.contact[:, 0].all() and not truth.airborne.any()
    assert truth.contact[t < 0.55, 1].all() and truth.contact[t > 1.3, 1].all()
    assert not truth.contact[(t > 0.72) & (t < 1.08), 1].any()


def test_corpus_errors_say_what_to_do(tmp_path):
    with pytest.raises(corpus.CorpusError, match="give --corpus a folder"):
        corpus.corpus_files(tmp_path / "missing")
    with pytest.raises(corpus.CorpusError, match="no .bvh files"):
        corpus.corpus_files(tmp_path)
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n")
    with pytest.raises(corpus.CorpusError, match="not a readable BVH"):
        corpus.load_motion(bad)
    other = tmp_path / "other.bvh"
    other.write_text("HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 3 Xposition Yposition Zposition\n"
                     " End Site\n {\n OFFSET 0 1 0\n }\n}\nMOTION\nFrames: 2\nFrame Time: 0.1\n0 0 0\n0 0 1\n")
    with pytest.raises(corpus.CorpusError, match="a skeleton this corpus does not know"):
        corpus.load_motion(other)
    good = tmp_path / "stand_cmu_00_01.bvh"
    _write_cc_bvh(good)
    text = good.read_text()
    for name, changed, message in (
            ("still", text.replace(f"Frame Time: {1 / _FPS:.6f}", "Frame Time: 0"), "no frame time"),
            ("nan", text.replace("\n20.000000 100.000000", "\nnan 100.000000", 1), "not finite"),
            ("huge", "\n1e308 1e308".join(text.rsplit("\n20.000000 100.000000", 1)), "reaches further than 1000 m"),
            ("cut", text[: len(text) // 2], "not a readable BVH")):
        path = tmp_path / f"{name}.bvh"
        path.write_text(changed)
        with pytest.raises(corpus.CorpusError, match=message):
            corpus.load_motion(path)
    (tmp_path / "folder.bvh").mkdir()  # a folder named like a file is not a clip
    assert corpus.corpus_files(tmp_path) == sorted(tmp_path.glob("[!f]*.bvh"))


# ---- the bench end to end ----

def test_the_bench_runs_on_a_held_out_clip_in_its_fast_mode(capsys):
    assert bench.main(["--clips", "cmu_35_05", "--fast", "--views", "front", "--fps", "30", "60", "--seeds", "3", "4"]) == 0
    out = capsys.readouterr()
    lines = out.out.strip().splitlines()
    assert lines[-1].startswith("held-out worst: ")
    for name in bench.GOALS:
        assert name in lines[-1]
    rows = [line.split() for line in lines if line.startswith("walk ")]
    assert [(r[1], r[2]) for r in rows] == [("front", "30"), ("front", "60")]
    for r in rows:
        precision, recall, agree = float(r[4]), float(r[5]), float(r[11])
        assert 0.0 <= precision <= 1.0 and 0.0 <= recall <= 1.0 and 0.5 < agree <= 1.0
        held, airborne = map(int, r[9].split("/"))
        assert held == airborne == 0  # a walk
        assert float(r[6]) > 0 and float(r[10]) > 0  # slide and jitter measured
    assert "cmu_35_05 front 60 fps seed 3: 121 frames" in out.err and "seed 4" not in out.err  # --fast: 2 s, a seed


def test_the_bench_writes_its_rows_unrounded_as_json(tmp_path, capsys):
    path = tmp_path / "motion.json"
    argv = ["--clips", "cmu_35_05", "--fast", "--views", "front", "--fps", "30", "60", "--json", str(path)]
    assert bench.main(argv) == 0
    printed = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("walk ")]
    written = json.loads(path.read_text())
    assert written["argv"] == argv and written["contacts"] == "rules" and written["goals"]["penetration_cm"] == 1.0
    assert [(r["category"], r["view"], r["fps"], r["held_out"]) for r in written["rows"]] == [
        ("walk", "front", 30.0, True), ("walk", "front", 60.0, True)]
    for row, line in zip(written["rows"], printed):
        assert f"{row['precision']:.2f}" == line[4] and f"{row['slide_mm']:.2f}" == line[6]
    assert {(c["clip"], c["fps"]) for c in written["clips"]} == {("cmu_35_05", 30.0), ("cmu_35_05", 60.0)}
    assert not [p for p in tmp_path.iterdir() if p.name != "motion.json"]  # no temporary file left


@pytest.mark.parametrize("where, message", [("folder", "is a folder"), ("a_file/out.json", "is not writable"),
                                            ("clip.bvh", "would overwrite a clip"),
                                            ("/proc/motion.json", "the folder /proc is not writable"),
                                            ("/dev/stdout", "not a file or folder on disk"),
                                            ("fifo", "not a file or folder on disk")])
def test_a_json_path_that_cannot_be_written_is_refused_before_the_bench_runs(where, message, tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "a_file").write_text("")
    os.mkfifo(tmp_path / "fifo")
    assert bench.main(["--clips", "cmu_35_05", "--fast", "--json", str(tmp_path / where)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "cmu_35_05" not in err[0]  # refused before any run


def test_the_bench_runs_on_a_corpus_folder(tmp_path, capsys):
    _write_cc_bvh(tmp_path / "stand_cmu_00_01.bvh")
    assert bench.main(["--corpus", str(tmp_path), "--clips", "stand_cmu_00_01", "--fast", "--views", "side",
                       "--fps", "30"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = [line.split() for line in lines if line.startswith("stand ")]
    assert len(rows) == 1 and float(rows[0][4]) > 0.5 and float(rows[0][5]) > 0.5
    assert lines[-1] == "held-out worst: no held-out clip measured"


@pytest.mark.parametrize("argv, message", [
    (["--corpus", "/nonexistent/mocap"], "no motion corpus at /nonexistent/mocap"),
    (["--clips", "cmu_07_04", "no_such_clip", "--corpus", "/nonexistent"], "no motion corpus"),
    (["--clips", "cmu_07_04", "--corpus", "/nonexistent"], "no motion corpus"),  # named, so checked
    (["--clips", "no_such_clip"], "--clips: no clip named no_such_clip"),
    (["--clips", "cmu_07_04", "--categories", "ballet"], "--categories: no clip of ballet"),
    (["--clips", "cmu_07_04", "--held-out-only"], "no clip left to measure"),
])
def test_the_bench_says_what_to_do(argv, message, capsys, tmp_path):
    if argv[:2] == ["--clips", "no_such_clip"]:
        (tmp_path / "jump_cmu_00_00.bvh").write_text("")
        argv = [*argv, "--corpus", str(tmp_path)]
    assert bench.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize("argv", [["--fps", "0"], ["--fps", "nan"], ["--fps", "inf"], ["--fps", "x"],
                                  ["--seeds", "-1"], ["--views", "top"]])
def test_the_bench_refuses_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--clips", "cmu_07_04"])
    assert stop.value.code == 2
    assert "error:" in capsys.readouterr().err


# ---- extra held-out clips: CMU's own skeleton (its ASF names, 1/0.45 inch) ----

# A small BVH of CMU's own skeleton as the BVH conversions of CMU's AMC files write it (the joints' rest frames
# the world's, lengths in CMU's unit of 1/0.45 inch): standing facing +z, the right leg raised forward between 0.6
# and 1.2 s. The same skeleton with the cgspeed names and in metres is the project's clips' (tests/data/mocap).
_CMU_UNIT = 0.0254 / 0.45  # m
_CMU = [  # name, parent, offset (CMU units), the cgspeed name
    ("Hips", None, (0.0, 0.0, 0.0), "Hips"),
    ("LHipJoint", "Hips", (0.0, 0.0, 0.0), "LHipJoint"),
    ("LeftUpLeg", "LHipJoint", (1.6, -1.8, 0.7), "LeftHip"),
    ("LeftLeg", "LeftUpLeg", (2.4, -6.6, 0.0), "LeftKnee"),
    ("LeftFoot", "LeftLeg", (2.7, -7.3, 0.0), "LeftAnkle"),
    ("LeftToeBase", "LeftFoot", (0.2, -0.6, 2.1), "LeftToe"),
    ("RHipJoint", "Hips", (0.0, 0.0, 0.0), "RHipJoint"),
    ("RightUpLeg", "RHipJoint", (-1.6, -1.8, 0.7), "RightHip"),
    ("RightLeg", "RightUpLeg", (-2.4, -6.6, 0.0), "RightKnee"),
    ("RightFoot", "RightLeg", (-2.7, -7.3, 0.0), "RightAnkle"),
    ("RightToeBase", "RightFoot", (-0.2, -0.6, 2.1), "RightToe"),
    ("LowerBack", "Hips", (0.0, 0.0, 0.0), "lowerback"),
    ("Spine", "LowerBack", (0.0, 2.1, -0.3), "Chest"),
    ("Spine1", "Spine", (0.0, 2.1, 0.0), "Chest2"),
    ("Neck", "Spine1", (0.0, 0.0, 0.0), "lowerneck"),
    ("Neck1", "Neck", (0.0, 1.6, 0.2), "Neck"),
    ("Head", "Neck1", (0.1, 1.7, -0.2), "Head"),
    ("LeftShoulder", "Spine1", (0.0, 0.0, 0.0), "LeftCollar"),
    ("LeftArm", "LeftShoulder", (3.3, 0.8, -0.7), "LeftShoulder"),
    ("LeftForeArm", "LeftArm", (5.2, 0.0, 0.0), "LeftElbow"),
    ("LeftHand", "LeftForeArm", (3.8, 0.0, 0.0), "LeftWrist"),
    ("RightShoulder", "Spine1", (0.0, 0.0, 0.0), "RightCollar"),
    ("RightArm", "RightShoulder", (-3.3, 0.8, -0.7), "RightShoulder"),
    ("RightForeArm", "RightArm", (-5.2, 0.0, 0.0), "RightElbow"),
    ("RightHand", "RightForeArm", (-3.8, 0.0, 0.0), "RightWrist"),
]


def _write_cmu_bvh(path, cgspeed: bool = False, scale: float = 1.0) -> None:
    """The clip in CMU's own names and unit (times `scale`), or (`cgspeed`) in the cgspeed names and metres."""
    unit = _CMU_UNIT if cgspeed else scale
    names = {name: (cg if cgspeed else name) for name, _, _, cg in _CMU}
    children, offsets = {}, {}
    for name, parent, offset, _ in _CMU:
        children.setdefault(parent, []).append(name)
        offsets[name] = offset
    lines = ["HIERARCHY"]

    def emit(name, depth):
        pad = "\t" * depth
        x, y, z = (v * unit for v in offsets[name])
        channels = "6 Xposition Yposition Zposition" if depth == 0 else "3"
        lines.extend([f"{pad}{'ROOT' if depth == 0 else 'JOINT'} {names[name]}", f"{pad}{{",
                      f"{pad}\tOFFSET {x:.6f} {y:.6f} {z:.6f}", f"{pad}\tCHANNELS {channels} Zrotation Yrotation Xrotation"])
        for child in children.get(name, []):
            emit(child, depth + 1)
        if name not in children:
            lines.extend([f"{pad}\tEnd Site", f"{pad}\t{{", f"{pad}\t\tOFFSET 0 0 1", f"{pad}\t}}"])
        lines.append(f"{pad}}}")

    emit("Hips", 0)
    lines += ["MOTION", f"Frames: {_FRAMES}", f"Frame Time: {1 / _FPS:.7f}"]
    for t in np.arange(_FRAMES) / _FPS:
        values = [3.0 * unit, 16.5 * unit, -20.0 * unit]  # the hips 0.93 m up: the legs straight, the soles at 0
        for name, _, _, _ in _CMU:
            values += [0.0, 0.0, -_raised(np.array(t)) if name == "RightUpLeg" else 0.0]  # forward: towards +z
        lines.append(" ".join(f"{v:.6f}" for v in values))
    path.write_text("\r\n".join(lines) + "\r\n")  # the conversions' line ends


def test_an_extra_clip_of_cmus_own_skeleton_loads_as_the_projects_clips_do_and_is_held_out(tmp_path):
    extra, same = tmp_path / "extra", tmp_path / "same"
    extra.mkdir()
    same.mkdir()
    _write_cmu_bvh(extra / "hop_cmu_99_01.bvh")
    _write_cmu_bvh(same / "cgspeed.bvh", cgspeed=True)
    assert corpus.extra_files([extra]) == [extra / "hop_cmu_99_01.bvh"]
    motion = corpus.load_motion(extra / "hop_cmu_99_01.bvh", extra=True)
    assert motion.name == "hop_cmu_99_01" and motion.category == "hop" and motion.fps == _FPS
    assert motion.held_out and motion.extra and len(motion.joints) == _FRAMES
    # the same motion as the project's clips' skeleton in metres: the same keypoints (to the 1 um its file rounds to)
    np.testing.assert_allclose(motion.joints, corpus.load_motion(same / "cgspeed.bvh").joints, atol=1e-5)
    assert not corpus.load_motion(extra / "hop_cmu_99_01.bvh").held_out  # held out as an extra clip, not by its name
    k = {n: i for i, n in enumerate(corpus.NAMES)}
    first = motion.joints[0]
    leg = (np.hypot(2.4, 6.6) + np.hypot(2.7, 7.3)) * _CMU_UNIT  # hip to ankle, straight, in metres
    assert abs(np.linalg.norm(first[k["left_hip"]] - first[k["left_ankle"]]) - leg) < 1e-5
    # its arms at the arms (not the clavicles), its neck at the neck's base
    np.testing.assert_allclose(first[k["left_elbow"]] - first[k["left_shoulder"]], [5.2 * _CMU_UNIT, 0, 0], atol=1e-9)
    assert first[k["neck"]][1] < first[k["nose"]][1]
    # held out, resampled and turned as well; the truth: the right foot up while raised
    assert corpus.resample(motion, 30.0).held_out and corpus.turned(motion, 90.0).held_out
    truth = corpus.true_contacts(motion)
    t = motion.times
    assert truth.contact[:, 0].all() and not truth.contact[(t > 0.72) & (t < 1.08), 1].any()
    # a skeleton whose legs are no person's in any unit known
    _write_cmu_bvh(tmp_path / "giant.bvh", scale=1000.0)
    with pytest.raises(corpus.CorpusError, match="a person's in none of"):
        corpus.load_motion(tmp_path / "giant.bvh")


def test_the_bench_reports_extra_clips_apart_as_held_out(tmp_path, capsys):
    folder, extra = tmp_path / "corpus", tmp_path / "extra"
    folder.mkdir()
    extra.mkdir()
    _write_cc_bvh(folder / "stand_cmu_00_01.bvh")
    _write_cmu_bvh(extra / "hop_cmu_99_01.bvh")
    args = ["--corpus", str(folder), "--extra", str(extra), "--fast", "--views", "side", "--fps", "30", "--seeds", "0"]
    assert bench.main(args + ["--categories", "hop,stand"]) == 0
    out = capsys.readouterr().out
    tuned, held = out.split("held-out clips: ")
    assert "clips fitted and tuned on: stand_cmu_00_01" in tuned and "hop " not in tuned
    assert held.startswith("hop_cmu_99_01\n") and "\nhop " in held and "stand " not in held
    assert out.strip().splitlines()[-1].startswith("held-out worst: ")
    assert bench.main(args + ["--held-out-only"]) == 0
    assert "stand_cmu_00_01" not in capsys.readouterr().out


def test_extra_folders_say_what_to_do(tmp_path, capsys):
    corpus_folder, extra, other = tmp_path / "corpus", tmp_path / "extra", tmp_path / "other"
    for folder in (corpus_folder, extra, other):
        folder.mkdir()
    _write_cc_bvh(corpus_folder / "stand_cmu_00_01.bvh")
    with pytest.raises(corpus.CorpusError, match="no .bvh files in .*give --extra a folder"):
        corpus.extra_files([extra])
    _write_cmu_bvh(extra / "hop_cmu_99_01.bvh")
    _write_cmu_bvh(other / "hop_cmu_99_01.bvh")
    with pytest.raises(corpus.CorpusError, match="no folder of extra clips at .*missing: give --extra a folder"):
        corpus.extra_files([extra, tmp_path / "missing"])
    with pytest.raises(corpus.CorpusError, match="is not a folder: give --extra"):
        corpus.extra_files([extra / "hop_cmu_99_01.bvh"])
    with pytest.raises(corpus.CorpusError, match="two extra clips named hop_cmu_99_01"):
        corpus.extra_files([extra, other])
    _write_cc_bvh(other / "stand_cmu_00_01.bvh")
    (other / "hop_cmu_99_01.bvh").unlink()
    for argv, message in (
            (["--extra", str(tmp_path / "missing")], "no folder of extra clips at"),
            (["--extra", str(other)], "has the name of a clip of the corpus or the project .stand_cmu_00_01.: rename it"),
            (["--extra", str(extra), "--categories", ","], "--categories: name at least one category"),
            (["--extra", str(extra), "--categories", "hop,kick"], "--categories: no clip of kick")):
        assert bench.main(["--corpus", str(corpus_folder), *argv]) == 2
        err = capsys.readouterr().err
        assert re.search(message, err), err
        assert "Traceback" not in err
    with pytest.raises(SystemExit) as stop:  # a second --corpus would silently replace the first
        bench.main(["--corpus", str(corpus_folder), "--corpus", str(extra)])
    assert stop.value.code == 2 and "a second folder of clips goes to --extra" in capsys.readouterr().err


# ---- --contact-weights: the learned model's weights file ----

def test_contact_weights_pick_the_learned_models_weights(tmp_path, capsys):
    from dataclasses import replace

    from realtime.rig.contact_model import default_model

    never = tmp_path / "never.npz"
    replace(default_model(), b3=-60.0, header={"note": "never plants"}).save(never)  # every logit very negative
    argv = ["--clips", "cmu_35_05", "--fast", "--views", "side", "--fps", "30", "--contacts", "learned"]
    recalls = []
    for extra in ([], ["--contact-weights", str(never)]):
        assert bench.main(argv + extra) == 0
        rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("walk ")]
        recalls.append(float(rows[0][5]))
    assert recalls[0] > 0.5 and recalls[1] == 0.0  # the package's weights plant feet; the file's never do


def test_contact_weights_say_what_to_do(tmp_path, capsys):
    from dataclasses import replace

    from realtime.rig.contact_model import default_model

    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a weights file")
    broken = tmp_path / "nan.npz"
    replace(default_model(), b3=float("nan")).save(broken)
    argv = ["--clips", "cmu_07_04", "--fast", "--contacts", "learned", "--contact-weights"]
    for path, message in ((tmp_path / "missing.npz", "no weights file at"), (tmp_path, "no weights file at"),
                          (junk, "is not a contact model's weights"), (broken, "not finite numbers")):
        assert bench.main([*argv, str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and "--contact-weights" in err[0]
    with pytest.raises(SystemExit) as stop:  # a weights file for the rule-based detector
        bench.main(["--clips", "cmu_07_04", "--contact-weights", str(broken)])
    assert stop.value.code == 2 and "add --contacts learned" in capsys.readouterr().err


def _raw_frames(motion, seed, by_time=True):
    """The frames bench/motion.py feeds the stages (no stage between), by timestamp, from the front."""
    walk = bench.seen(motion, "front", corpus.true_contacts(motion))
    return {round(f.timestamp, 4): f for f in bench.run_frames([], motion, walk, seed, by_time=by_time)}


def test_the_same_instant_is_measured_alike_at_30_and_60_fps_as_one_video_with_every_other_frame_dropped():
    motion = corpus.project_motions(["cmu_35_24"])[0]
    at_30, at_60 = _raw_frames(motion, 0), _raw_frames(corpus.resample(motion, 60.0), 0)
    common = sorted(set(at_30) & set(at_60))
    assert len(common) >= len(at_30) - 1  # every 30 fps frame (warm-up and clip) is a 60 fps one's instant
    depth_frames = 0
    for at in common:
        a, b = at_30[at].people[0], at_60[at].people[0]
        np.testing.assert_allclose(a.keypoints, b.keypoints, atol=1e-6, equal_nan=True)
        assert (a.keypoints3d is None) == (b.keypoints3d is None)
        if a.keypoints3d is not None:
            np.testing.assert_allclose(a.keypoints3d, b.keypoints3d, atol=1e-6, equal_nan=True)
            np.testing.assert_allclose(at_30[at].dense.pointmap, at_60[at].dense.pointmap, atol=1e-5)
            depth_frames += 1
    assert depth_frames >= bench.WARMUP_DEPTH_FRAMES + 5
    # the noise is real: another seed, or the old draw per clip and rate, measures the same instants otherwise
    other = _raw_frames(motion, 1)
    per_rate = _raw_frames(corpus.resample(motion, 60.0), 0, by_time=False)
    for frames in (other, per_rate):
        moved = [np.nanmax(np.abs(frames[at].people[0].keypoints - at_30[at].people[0].keypoints)) for at in common]
        assert np.median(moved) > 0.3  # px: the bench's noise is 1 px


def test_the_worst_line_names_the_clip_view_and_rate_of_each_worst():
    good = {"precision": 0.99, "recall": 0.95, "slide_mm": 0.5, "float_cm": 0.5, "penetration_cm": 0.2,
            "airborne_held": 0, "agreement": 0.99, "jitter_mm": 5.0}
    bad = dict(good, recall=0.56, slide_mm=10.7)
    line = bench.worst_line({("walk_cmu_37_01", "side", 30.0): good, ("jump_cmu_13_42", "45", 60.0): bad})
    assert "recall 0.56 (>= 0.9: NOT met; jump_cmu_13_42 45 60 fps)" in line
    assert "slide_mm 10.7 (<= 2: NOT met; jump_cmu_13_42 45 60 fps)" in line
    assert "precision 0.99 (>= 0.9: met; walk_cmu_37_01 side 30 fps)" in line  # the first of equal worsts
