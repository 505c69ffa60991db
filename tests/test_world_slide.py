"""World foot slide at a contact's start (issue 32): `FootLock` holds a foot where it was shown on the frame
before the contact detector decided (the foot was already down then), so the deciding frame's noise, the live
filter's lag or a depth frame's re-measuring does not move it; the motion stage forgets those feet when the
person was missed on a frame; a released foot eases over 1/6 s from where it was held to where it is shown (a
smoothstep), rather than jumping there, once it swings (after a stance: two frames moved, 1/3 s at most). Frames
here are 1/30 s apart.
bench/world.py measures the slide this removes (bench/RESULTS.md)."""

from __future__ import annotations

import numpy as np

from realtime.frames import Frame, Person
from realtime.rig.lock import FootLock, LockGates
from realtime.stages.motion import MotionStage
from tests.ground_synthetic import walk
from tests.mocap_synthetic import NAMES

ANKLE = NAMES.index("left_ankle")
LEFT_FOOT = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]
DOWN, UP = np.array([True, False]), np.array([False, False])
_IMAGE = np.zeros((2, 2, 3), np.uint8)
HOLD_AFTER = round(LockGates().hold_after * 30)  # frames at 30 fps: a contact this long is a stance
RELEASE_HOLD = round(LockGates().release_hold * 30)  # frames: the longest a released stance waits for its swing


class _Clocked(FootLock):
    """A FootLock fed one frame every 1/30 s."""

    def __init__(self):
        super().__init__(NAMES)
        self.frame = 0

    def apply(self, points3d, contacts):
        self.frame += 1
        return super().apply(self.frame / 30, points3d, contacts)


def _body(foot_shift=(0.0, 0.0, 0.0)) -> np.ndarray:
    points = walk(2).camera[0].copy()
    points[LEFT_FOOT] += foot_shift
    return points


def test_a_new_contact_holds_the_foot_where_it_was_shown_on_the_frame_before():
    lock = _Clocked()
    shown = lock.apply(_body(), UP)[ANKLE]  # the foot came down: not yet decided
    # the deciding frame re-measures the foot 6 cm further along the line of sight (a depth frame), then noise
    held = [lock.apply(_body((0.0, 0.0, 0.06 + 0.003 * t)), DOWN)[ANKLE] for t in range(4)]
    np.testing.assert_allclose(np.array(held), np.repeat(shown[None], 4, axis=0), atol=1e-9)


def test_without_a_frame_before_the_contact_holds_the_foot_where_it_begins():
    lock = _Clocked()
    first = lock.apply(_body((0.0, 0.0, 0.06)), DOWN)[ANKLE]
    np.testing.assert_allclose(first, _body((0.0, 0.0, 0.06))[ANKLE], atol=1e-9)
    lock.apply(_body(), UP)
    lock.reset()  # frames missed: the foot shown last is stale
    np.testing.assert_allclose(lock.apply(_body((0.0, 0.0, 0.06)), DOWN)[ANKLE], first, atol=1e-9)


def test_a_released_foot_eases_from_where_it_was_held_to_where_it_is_shown():
    lock = _Clocked()
    held = lock.apply(_body(), DOWN)[ANKLE]
    lock.apply(_body((0.0, 0.0, 0.08)), DOWN)  # the foot shown 8 cm away while held (heel-off, a late depth frame)
    shown = _body((0.0, 0.0, 0.08))[ANKLE]
    eased = [lock.apply(_body((0.0, 0.0, 0.08)), UP) for _ in range(5)]
    steps = [np.linalg.norm(points[ANKLE] - held) / np.linalg.norm(shown - held) for points in eased]
    # a smoothstep over 4 frames: slow first (a release can come before the foot truly leaves the floor), no pop
    np.testing.assert_allclose(steps, [0.104, 0.352, 0.648, 0.896, 1.0], atol=1e-6)
    hip, knee = NAMES.index("left_hip"), NAMES.index("left_knee")
    body = _body((0.0, 0.0, 0.08))
    for points in eased:  # the knee follows: the leg keeps its lengths
        assert abs(np.linalg.norm(points[knee] - points[hip]) - np.linalg.norm(body[knee] - body[hip])) < 1e-6
        assert abs(np.linalg.norm(points[ANKLE] - points[knee]) - np.linalg.norm(body[ANKLE] - body[knee])) < 1e-6
    np.testing.assert_allclose(eased[-1], _body((0.0, 0.0, 0.08)), atol=1e-9)  # then exactly as shown


def _released_after(held_frames: int, shown_after) -> list[float]:
    """The share of the held-to-shown offset still applied on each frame after a release: the foot held for
    `held_frames` frames while shown 8 cm off (a stale anchor), then shown at `shown_after` (one shift per frame)."""
    lock = _Clocked()
    held = lock.apply(_body(), DOWN)[ANKLE]
    for _ in range(held_frames - 1):
        lock.apply(_body((0.0, 0.0, 0.08)), DOWN)
    offset = np.linalg.norm(_body((0.0, 0.0, 0.08))[ANKLE] - held)  # where it was held from where it was shown
    out = []
    for shift in shown_after:
        shown = _body((0.0, 0.0, 0.08 + shift))
        out.append(np.linalg.norm(lock.apply(shown, UP)[ANKLE] - shown[ANKLE]) / offset)
    return out


def test_a_foot_released_from_a_stance_keeps_its_offset_while_still_on_the_floor():
    """After a stance (HOLD_AFTER frames or more) a released foot that is shown still keeps where it was held, up to
    RELEASE_HOLD frames, before the ease: an early release (the heel rising, the toes down) does not move a stale
    anchor inside the stance, where it is slide; the swing then carries the correction."""
    still = _released_after(HOLD_AFTER + 1, [0.0] * (RELEASE_HOLD + 5))
    np.testing.assert_allclose(still, [1.0] * RELEASE_HOLD + [0.896, 0.648, 0.352, 0.104, 0.0], atol=1e-3)


def test_a_released_foot_that_swings_eases_once_it_has_moved_on_two_frames():
    moving = _released_after(HOLD_AFTER + 1, [0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.14])  # 2 cm a frame from the second
    np.testing.assert_allclose(moving, [1.0, 1.0, 0.896, 0.648, 0.352, 0.104, 0.0, 0.0], atol=2e-3)


def test_one_frame_moved_does_not_end_the_hold():
    """A depth frame re-measures a held foot once (2 cm here): no swing, so the foot keeps its offset from where it is
    shown; easing a stale anchor inside the stance from there was most of the slide left on CMU 16_32 straight away."""
    np.testing.assert_allclose(_released_after(HOLD_AFTER + 1, [0.0, 0.02, 0.02, 0.02, 0.02]), [1.0] * 5, atol=1e-3)
    # the live filter's tail of that jump moves it 6-9 mm more on the next frame: still not a swing (70-130 mm a frame)
    np.testing.assert_allclose(_released_after(HOLD_AFTER + 1, [0.0, 0.02, 0.029, 0.029, 0.029]), [1.0] * 5, atol=1e-3)


def test_a_short_contact_eases_without_waiting():
    """A contact of fewer than HOLD_AFTER frames (a foot that only passed through) is let go at once."""
    np.testing.assert_allclose(_released_after(HOLD_AFTER - 1, [0.0] * 5), [0.896, 0.648, 0.352, 0.104, 0.0], atol=1e-3)


def _replanted(shown_after) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A foot held HOLD_AFTER + 1 frames where it came down while shown 8 cm off (a stale anchor), released and shown
    at `shown_after` (one shift per frame), then planted again: (where it was held, where it was shown on the frame
    before the new contact, the new contact's ankle)."""
    lock = _Clocked()
    held = lock.apply(_body(), DOWN)[ANKLE]
    for _ in range(HOLD_AFTER):
        lock.apply(_body((0.0, 0.0, 0.08)), DOWN)
    for shift in shown_after:
        out = lock.apply(_body((0.0, 0.0, 0.08 + shift)), UP)[ANKLE]
    return held, out, lock.apply(_body((0.0, 0.0, 0.08 + shown_after[-1])), DOWN)[ANKLE]


def test_a_foot_planted_again_before_it_swung_stays_where_it_was_held():
    """Released early (the heel rising, the toes down), the foot never swung and is planted again: it stays where it
    was held rather than jumping to where it is shown (8 cm inside the stance; CMU 131_01 in bench/world.py's follow
    shot moved 21 cm in one frame so). The swing that ends this stance carries the correction."""
    held, before, again = _replanted([0.0] * 3)
    np.testing.assert_allclose(before, held, atol=1e-9)  # still in the release's hold
    np.testing.assert_allclose(again, held, atol=1e-9)


def test_a_foot_planted_again_after_it_swung_is_held_where_it_came_in():
    """Once the foot was shown swinging, the ease ran towards where it is shown: a new contact holds it where it came
    in on the frame before (the measured foot), as any contact."""
    _, _, again = _replanted([0.0, 0.02, 0.04, 0.06, 0.06])
    np.testing.assert_allclose(again, _body((0.0, 0.0, 0.14))[ANKLE], atol=1e-9)


def test_an_ease_ends_when_the_leg_is_not_seen():
    lock = _Clocked()
    lock.apply(_body(), DOWN)
    lock.apply(_body((0.0, 0.0, 0.08)), DOWN)
    lock.apply(_body((0.0, 0.0, 0.08)), UP)  # released: the ease starts
    unseen = _body((0.0, 0.0, 0.08))
    unseen[NAMES.index("left_knee")] = np.nan
    lock.apply(unseen, UP)
    np.testing.assert_allclose(lock.apply(_body((0.0, 0.0, 0.08)), UP), _body((0.0, 0.0, 0.08)), atol=1e-12)


def _frame(index: int, points: np.ndarray, contacts: np.ndarray, track: int = 1) -> Frame:
    person = Person(box=np.array([0, 0, 10, 10], np.float32), track_id=track, keypoints=np.zeros((len(NAMES), 2), np.float32),
                    keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=points.astype(np.float32),
                    contacts=contacts)
    return Frame(index=index, timestamp=index / 30.0, image=_IMAGE, people=(person,))


def _anchors(stage: MotionStage, frames) -> list[np.ndarray]:
    """What the motion stage locks: its lock's anchor for the left foot after each frame."""
    out = []
    for frame in frames:
        stage.process(frame)
        anchor = stage._performers[1].lock._anchor["left"]
        out.append(None if anchor is None else anchor.copy())
    return out


def test_the_motion_stage_anchors_on_the_last_frame_shown_unless_the_person_was_missed():
    stage = MotionStage(NAMES, smooth=None)
    anchors = _anchors(stage, [_frame(0, _body(), UP), _frame(1, _body((0.0, 0.0, 0.06)), DOWN)])
    np.testing.assert_allclose(anchors[1], _body()[ANKLE], atol=1e-6)  # the frame before's foot

    stage = MotionStage(NAMES, smooth=None)
    other = Frame(index=1, timestamp=1 / 30.0, image=_IMAGE, people=())
    stage.process(_frame(0, _body(), UP))
    stage.process(other)  # the person not seen on this frame
    anchors = _anchors(stage, [_frame(2, _body((0.0, 0.0, 0.06)), DOWN)])
    np.testing.assert_allclose(anchors[0], _body((0.0, 0.0, 0.06))[ANKLE], atol=1e-6)  # not a stale foot
