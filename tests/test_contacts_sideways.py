"""Foot contacts of a body stepping sideways (issue 51, side steps): a synthetic side-stepper with exact plants,
facing the camera of tests/ground_synthetic.py (1.5 m up, 15 degrees down), so that it walks across the line of
sight, its exact 3D keypoints fed to the rule-based `ContactDetector` frame by frame.

Each step cycle the leading foot swings out sideways in an arc and plants, then the trailing foot swings in after it
and plants beside the hips' trailing side: down behind the hips along the walk, as every side step's trailing foot
comes down. The hips move along the body's left at a steady speed."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor
from tests.ground_synthetic import camera_pose
from tests.mocap_synthetic import NAMES

_K = {n: i for i, n in enumerate(NAMES)}
LEAD, TRAIL = 0.3, 0.08  # m: the leading foot lands this far ahead of the hips' centre along the walk, the trailing
# foot this far behind it (the feet 0.2 m apart then; the hips pass on between them, the feet always either side)
LIFT = 0.15  # m: the swinging heel's top, above the off_height gate (11 cm): the foot is "down from a swing" after it


def side_steps(speed: float, cycle: float, fps: float, seconds: float, drag: float = 0.0, drag_time: float = 0.0):
    """(T,) times, (T, K, 3) camera-frame keypoints (NaN for those not placed), (T, 2) true contacts (left, right)
    of a body stepping to its left at `speed` m/s, one step of each foot per `cycle` s: the left (leading) foot
    swings in an arc over the first 30 % of the cycle and the right (trailing) foot over 50-80 %, each moving
    speed * cycle along the walk, the hips centred in front of the camera mid-clip. `drag` (m/s) and `drag_time` (s):
    the leading foot comes down that long before the end of its travel and slides the rest along the floor at
    `drag`, as a defensive slide's feet do (no contact while it slides: it moves)."""
    times = np.arange(int(round(seconds * fps))) / fps
    left = np.array([1.0, 0.0, 0.0])  # the body's left in the world (x right as the camera sees it, y up, z away)
    up = np.array([0.0, 1.0, 0.0])
    facing = np.array([0.0, 0.0, -1.0])  # towards the camera
    centre = np.array([0.0, 0.0, 4.0])
    stride = speed * cycle
    world = np.full((len(times), len(NAMES), 3), np.nan)
    truth = np.zeros((len(times), 2), bool)
    hips = centre + left * speed * (times[:, None] - seconds / 2) + up * 0.9
    for column, (side, sign, start) in enumerate((("left", 1.0, 0.0), ("right", -1.0, 0.5))):
        slide = drag * drag_time if sign > 0 else 0.0  # m the leading foot slides
        slide_phase = (drag_time / cycle) if sign > 0 else 0.0
        phase = (times / cycle - start) % 1.0
        landing = (np.floor(times / cycle - start) + start + 0.3) * cycle  # this cycle's landing (after the slide)
        planted_at = speed * (landing - seconds / 2) + (LEAD if sign > 0 else -TRAIL)  # beside the hips as it lands
        swing = np.clip(phase / 0.3, 0.0, 1.0)  # 0 -> 1 over the swing in the air
        sliding = np.clip((phase - 0.3) / max(slide_phase, 1e-9), 0.0, 1.0) if slide else np.ones_like(phase)
        along = planted_at - stride + (stride - slide) * swing + slide * sliding
        height = 0.08 + np.where(swing < 1.0, LIFT * np.sin(np.pi * swing), 0.0)
        ankle = centre + left[None] * along[:, None] + up * height[:, None]
        world[:, _K[f"{side}_hip"]] = hips + left * sign * 0.09
        world[:, _K[f"{side}_ankle"]] = ankle
        world[:, _K[f"{side}_heel"]] = ankle - 0.05 * facing - 0.07 * up
        world[:, _K[f"{side}_big_toe"]] = ankle + 0.15 * facing - sign * 0.03 * left - 0.07 * up
        world[:, _K[f"{side}_small_toe"]] = ankle + 0.14 * facing + sign * 0.03 * left - 0.07 * up
        truth[:, column] = (swing >= 1.0) & (sliding >= 1.0)
    rotation, camera_centre = camera_pose()
    return times, (world - camera_centre) @ rotation.T, truth


def _detector() -> ContactDetector:
    rotation, camera_centre = camera_pose()
    return ContactDetector(Floor(rotation @ np.array([0.0, 1.0, 0.0]), (np.zeros(3) - camera_centre) @ rotation.T),
                           NAMES)


def _decide(times, points) -> np.ndarray:
    detector = _detector()
    return np.array([detector.update(t, p) for t, p in zip(times, points)])


def _touchdowns(truth: np.ndarray, times: np.ndarray, column: int) -> list[float]:
    starts = np.flatnonzero(truth[1:, column] & ~truth[:-1, column]) + 1
    return [float(times[i]) for i in starts]


@pytest.mark.parametrize("fps", [30.0, 60.0])
def test_the_trailing_foot_of_a_side_step_plants_when_it_lands(fps):
    """The trailing foot comes down from its swing behind the hips along the walk: it plants within 0.1 s of
    landing, as the leading foot does (the rule that holds back a heel landing behind the hips is for walking
    forwards: there a late swing seen along the line of sight shows behind the hips)."""
    times, points, truth = side_steps(speed=0.35, cycle=1.0, fps=fps, seconds=4.0)
    decided = _decide(times, points)
    for column in (0, 1):
        landings = [t for t in _touchdowns(truth, times, column) if t > 0.5]
        assert len(landings) >= 3
        for landing in landings:
            planted = times[(times >= landing) & decided[:, column]]
            assert len(planted) and planted[0] - landing <= 0.1 + 1e-9, (column, landing)
    # and no swinging foot is held: every decided contact within 0.1 s of a true one
    for column in (0, 1):
        for t in times[decided[:, column] & ~truth[:, column]]:
            near = np.abs(times[truth[:, column]] - t)
            assert near.min() <= 0.1 + 1e-9, (column, t)


def test_a_fast_side_shuffle_is_no_run():
    """Shuffling sideways at 2.4 m/s (a defensive slide, hips as fast as a run), the leading foot comes down early
    and slides along the floor at 0.47 m/s for 0.25 s: faster than the walking onset gate across the line of sight
    (0.4 m/s), slower than the running one (0.5 m/s: a running heel reads 0.3-0.4 m/s on the frames it stands). A
    run is the walk along the body's facing: the shuffle keeps the walking gate and the sliding foot is not planted
    while it slides (but for its last 0.1 s: a speed is measured over 67 ms), only once it stops."""
    cycle, slide = 0.6, 0.25
    times, points, truth = side_steps(speed=2.4, cycle=cycle, fps=60.0, seconds=2.4, drag=0.47, drag_time=slide)
    decided = _decide(times, points)
    phase = (times / cycle) % 1.0
    sliding = (phase >= 0.3) & (phase < 0.3 + (slide - 0.1) / cycle) & (times > 0.5)  # on the floor, moving
    assert sliding.sum() >= 20 and not truth[sliding, 0].any()
    assert not decided[sliding, 0].any()
    for landing in [t for t in _touchdowns(truth, times, 0) if t > 0.5]:  # it plants once it stops
        planted = times[(times >= landing) & decided[:, 0]]
        assert len(planted) and planted[0] - landing <= 0.1 + 1e-9, landing
