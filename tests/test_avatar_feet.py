"""The avatar's feet (realtime/rig/leg_ik.py `pin_leg`, realtime/rig/solver.py `LiveSolver.update(feet=...)`,
realtime/rig/lock.py `FootPin`, realtime/stages/motion.py): the forward kinematics of `Person.bones`, not only the
keypoints, holds a planted foot still while the body sways and its lengths jitter, puts it on the floor at its
measured resting heights, and does so alike at 30 and 60 fps."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realtime.frames import Frame, Person, rounded_camera
from realtime.rig.bones import bone_table
from realtime.rig.leg_ik import pin_leg, turn_between
from realtime.rig.lock import LockGates, PinGates
from realtime.rig.solver import LiveSolver, Skeleton, forward_kinematics
from realtime.stages.motion import MotionStage
from tests.ground_synthetic import walk, world_from_camera
from tests.mocap_synthetic import NAMES

BONES = bone_table()
INDEX = {b.name: i for i, b in enumerate(BONES)}
FEET = [INDEX["leftFoot"], INDEX["rightFoot"]]
TOES = [INDEX["leftToes"], INDEX["rightToes"]]
_IMAGE = np.zeros((2, 2, 3), np.uint8)


def _rotation(rng) -> np.ndarray:
    return Rotation.random(random_state=int(rng.integers(1 << 30))).as_matrix()


def test_turn_between_is_the_smallest_rotation_onto_a_direction():
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = rng.normal(size=3), rng.normal(size=3)
        turn = turn_between(a, b)
        np.testing.assert_allclose(turn @ turn.T, np.eye(3), atol=1e-12)
        assert np.linalg.det(turn) == pytest.approx(1.0)
        np.testing.assert_allclose(turn @ a / np.linalg.norm(a), b / np.linalg.norm(b), atol=1e-12)
        np.testing.assert_allclose(turn @ np.cross(a, b), np.cross(a, b), atol=1e-12)  # about their common normal
    np.testing.assert_allclose(turn_between([1.0, 0, 0], [2.0, 0, 0]), np.eye(3))
    opposite = turn_between([0.0, 1, 0], [0.0, -3, 0])
    np.testing.assert_allclose(opposite @ [0.0, 1, 0], [0.0, -1, 0], atol=1e-12)
    np.testing.assert_allclose(opposite @ opposite.T, np.eye(3), atol=1e-12)


def _about_x(angle: float) -> np.ndarray:
    return Rotation.from_rotvec([angle, 0.0, 0.0]).as_matrix()


def test_a_pinned_leg_reaches_its_target_with_its_own_bone_lengths_bending_its_knee_about_its_hinge():
    rng = np.random.default_rng(1)
    offsets = np.array([[0.0, -0.44, 0.01], [0.0, -0.42, -0.01], [0.0, -0.07, 0.15]])  # knee, ankle, toes
    for bend in [0.0] * 20 + list(rng.uniform(0.05, 1.5, 80)):  # straight legs too: no bend plane of their own
        hip = rng.normal(size=3)
        upper, foot = _rotation(rng), _rotation(rng)
        lower = upper @ _about_x(bend)  # a rig's knee: a hinge about the upper leg's x, bent forward
        reach = rng.uniform(0.1, 0.85)
        ankle = hip + reach * (direction := rng.normal(size=3)) / np.linalg.norm(direction)
        toes = ankle + rng.normal(size=3)
        new_upper, new_lower, new_foot, reached = pin_leg(hip, upper, lower, foot, offsets, ankle, toes)
        for turned in (new_upper, new_lower, new_foot):
            np.testing.assert_allclose(turned @ turned.T, np.eye(3), atol=1e-9)
        new_knee = hip + new_upper @ offsets[0]
        fk_ankle = new_knee + new_lower @ offsets[1]
        np.testing.assert_allclose(fk_ankle, ankle, atol=1e-9)  # forward kinematics puts the ankle there
        np.testing.assert_allclose(reached, ankle, atol=1e-9)
        aim = new_foot @ offsets[2]
        np.testing.assert_allclose(aim / np.linalg.norm(aim), (toes - ankle) / np.linalg.norm(toes - ankle), atol=1e-9)
        knee = Rotation.from_matrix(new_upper.T @ new_lower).as_rotvec()  # the knee's local rotation
        assert abs(knee[1]) < 1e-6 and abs(knee[2]) < 1e-6, knee  # about the hinge only, never sideways
        assert knee[0] > 0.0  # forward, as the rig's knees bend
    far = hip + 2.0 * (ankle - hip) / np.linalg.norm(ankle - hip)
    *_, reached = pin_leg(hip, upper, lower, foot, offsets, far, far + 1.0)
    assert np.linalg.norm(reached - hip) == pytest.approx(np.linalg.norm(offsets[0]) + np.linalg.norm(offsets[1]))


def _heads(pose) -> np.ndarray:
    heads, _ = forward_kinematics(pose.skeleton, pose.root_position[None], pose.rotations[None])
    return heads[0]


def test_the_live_solver_puts_the_bones_feet_on_the_targets_moving_the_hips_only_out_of_reach():
    body = walk(2).camera[0]
    solver = LiveSolver(NAMES)
    free = solver.update(body, absolute_root=True)
    seen = {}

    def aim(legs, shift):
        seen["legs"] = legs
        ankles = legs.ankle + shift
        return ankles, ankles + [[0.0, -0.05, 0.15], [0.0, -0.05, 0.15]]

    for shift in (np.array([0.0, 0.02, 0.03]), np.array([0.0, -0.3, 0.0])):  # in reach; 30 cm below: out of it
        pose = solver.update(body, absolute_root=True, feet=lambda legs, s=shift: aim(legs, s))
        heads = _heads(pose)  # the root is the hips (absolute_root): the axes the targets were given in
        moved = pose.root_position - free.root_position
        if shift[1] > -0.1:
            np.testing.assert_allclose(moved, 0.0, atol=1e-9)  # the hips stay
            np.testing.assert_allclose(heads[FEET], seen["legs"].ankle + shift, atol=1e-6)
        else:
            assert moved[1] < -0.2  # the hips came down to reach
            np.testing.assert_allclose(heads[FEET], seen["legs"].ankle + shift, atol=2e-3)
        direction = heads[TOES] - heads[FEET]
        np.testing.assert_allclose(direction / np.linalg.norm(direction, axis=1, keepdims=True),
                                   np.tile([0.0, -0.05, 0.15] / np.linalg.norm([0.0, -0.05, 0.15]), (2, 1)), atol=1e-6)


# ---- the motion stage on the synthetic walker, in the world (y up, the floor at 0) ----

def _run(fps: float, seconds: float = 4.0, noise: float = 0.01, jitter: float = 0.005, seed: int = 0,
         contacts: np.ndarray | None = None):
    """The walker at `fps` through the motion stage in the world, its 3D with `noise` (m) on each point and `jitter`
    (share) of scale on each frame, contacts the truth (or `contacts` (T, 2), given per frame): times, the contacts
    given, the avatar's ankles and toes in the
    world (T, 2, 3) each, the ankles the stage was shown (`keypoints3d_smoothed`, the live filter's) in the world
    (T, 2, 3), and the walk."""
    seen = walk(int(round(seconds * fps)), fps=fps)
    pose = world_from_camera()
    camera = rounded_camera(pose, None, "static", True, True)
    rng = np.random.default_rng(seed)
    stage = MotionStage(NAMES)
    ankles, toes, shown = [], [], []
    left, right = NAMES.index("left_ankle"), NAMES.index("right_ankle")
    contacts = seen.contacts if contacts is None else contacts
    for t, time in enumerate(seen.times):
        points = seen.camera[t] * (1.0 + rng.normal(0.0, jitter)) + rng.normal(0.0, noise, seen.camera[t].shape)
        person = Person(box=np.zeros(4, np.float32), track_id=1, keypoints=np.zeros((len(NAMES), 2), np.float32),
                        keypoints3d=points.astype(np.float32), contacts=contacts[t].copy())
        out = stage.process(Frame(index=t, timestamp=float(time), image=_IMAGE, people=(person,), camera=camera))
        bones = out.people[0].bones
        skeleton = Skeleton(BONES, bones.offsets, np.zeros((len(BONES), 3)))
        heads = forward_kinematics(skeleton, bones.root_position[None], bones.rotations[None])[0][0]
        ankles.append(heads[FEET])
        toes.append(heads[TOES])
        smoothed = out.people[0].keypoints3d_smoothed[[left, right]].astype(np.float64)
        shown.append(smoothed @ pose[:3, :3].T + pose[:3, 3])
    return seen.times, contacts, np.array(ankles), np.array(toes), np.array(shown), seen


def _stances(contacts: np.ndarray, times: np.ndarray, settle: float = 0.15):
    """(side, frames) of each stance, from `settle` seconds after its touchdown to its last frame."""
    for side in range(2):
        edges = np.diff(np.concatenate([[0], contacts[:, side].astype(int), [0]]))
        for first, end in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            frames = np.arange(first, end)
            frames = frames[times[frames] >= times[first] + settle]
            if len(frames) > 3:
                yield side, frames


def test_a_planted_foot_of_the_avatar_stays_put_while_the_body_sways_and_its_measured_lengths_jitter():
    times, contacts, ankles, _, shown, _ = _run(30.0)
    steps, filtered = [], []
    for side, frames in _stances(contacts, times, settle=0.0):
        steps.append(np.linalg.norm(np.diff(ankles[frames, side][:, [0, 2]], axis=0), axis=1))
        filtered.append(np.linalg.norm(np.diff(shown[frames, side][:, [0, 2]], axis=0), axis=1))
    steps, filtered = 1000 * np.concatenate(steps), 1000 * np.concatenate(filtered)  # mm per 1/30 s
    assert len(steps) > 100
    assert steps.mean() <= 2.0 and np.percentile(steps, 95) <= 5.0, (steps.mean(), np.percentile(steps, 95))
    assert filtered.mean() > 3 * max(steps.mean(), 1.0)  # what the stage was shown moves: the hold is the avatar's


def test_the_avatar_stands_its_planted_feet_on_the_floor_at_their_resting_heights():
    times, contacts, ankles, toes, _, seen = _run(30.0, seconds=5.0)
    left_ankle = NAMES.index("left_ankle")
    toe_points = [NAMES.index("left_big_toe"), NAMES.index("left_small_toe")]
    flat = seen.contacts[:, 0]
    ankle_rest = float(np.median(seen.world[flat, left_ankle, 1]))
    toes_rest = float(np.median(seen.world[flat][:, toe_points, 1].mean(axis=1)))
    late = times > 2.0  # the resting heights measured by now
    held = [(side, frames[late[frames]]) for side, frames in _stances(contacts, times) if side == 0]
    heights = np.concatenate([ankles[frames, 0, 1] for _, frames in held])
    toe_heights = np.concatenate([toes[frames, 0, 1] for _, frames in held])
    assert len(heights) > 20
    # the floor is y = 0: the ankle and the toes where the walker's rest (within 1 cm), never through the floor
    assert abs(np.median(heights) - ankle_rest) <= 0.01, (np.median(heights), ankle_rest)
    assert abs(np.median(toe_heights) - toes_rest) <= 0.01, (np.median(toe_heights), toes_rest)
    assert heights.min() > ankle_rest - 0.02 and toe_heights.min() > toes_rest - 0.02


def test_the_avatars_feet_do_at_60_fps_what_they_do_at_30():
    # both rates told the same contacts in seconds (each 60 fps frame the 30 fps frame at or before it): a touchdown
    # sampled half a frame apart would catch a landing foot 1/60 s apart, which is the detector's to agree on
    contacts30 = walk(90, fps=30.0).contacts
    runs = {30.0: _run(30.0, seconds=3.0, noise=0.0, jitter=0.0, contacts=contacts30),
            60.0: _run(60.0, seconds=3.0, noise=0.0, jitter=0.0, contacts=np.repeat(contacts30, 2, axis=0))}
    times30, held, ankles30, toes30, _, _ = runs[30.0]
    times60, held60, ankles60, toes60, _, _ = runs[60.0]
    common = np.searchsorted(times60, times30)  # every 1/30 s
    np.testing.assert_allclose(times60[common], times30, atol=1e-9)
    held = held & (times30 > 0.5)[:, None]  # after the live filter's start
    assert held.sum() > 80
    # settled alike, in seconds: the held foot's heights within millimetres at every common timestamp (in the swing
    # the lock's ease starts on a frame, 1/60 s apart, and the foot moves metres a second)
    for feet60, feet30 in ((ankles60, ankles30), (toes60, toes30)):
        assert np.abs(feet60[common][held][:, 1] - feet30[held][:, 1]).max() < 0.01
    assert np.abs(ankles60[common][held][:, 1] - ankles30[held][:, 1]).mean() < 0.002
    # and along the floor at the same place but for one 60 fps frame: a hold is anchored no further back than the
    # frame before its decision (realtime/rig/lock.py), 1/30 s at 30 fps and 1/60 s at 60, so a foot the frames still
    # show moving there (this walker's contacts begin with its ankle at 2.2 m/s) is held where the 60 fps frame
    # before showed it, not stepped back to where the 30 fps one did; never further apart than that frame's move
    for side in range(2):
        edges = np.flatnonzero(np.diff(np.concatenate([[0], held60[:, side].astype(int)])) == 1)
        for first in edges[edges >= 2]:
            frame_move = np.linalg.norm((ankles60[first - 1, side] - ankles60[first - 2, side])[[0, 2]])
            both = np.flatnonzero(held[:, side] & (common >= first) & held60[common, side]
                                  & (np.cumsum(~held60[:, side])[common] == np.cumsum(~held60[:, side])[first]))
            for feet60, feet30 in ((ankles60, ankles30), (toes60, toes30)):
                apart = np.linalg.norm((feet60[common[both], side] - feet30[both, side])[:, [0, 2]], axis=1)
                assert (apart <= frame_move + 0.005).all(), (side, first, apart.max(), frame_move)


def test_the_cost_bench_times_the_pin_on_the_live_path_and_refuses_bad_options(capsys):
    from bench import feet_cost

    spent = feet_cost.run(seconds=1.0, fps=30.0, seed=0)
    assert set(spent) == {"pin frame", "pin IK", "motion stage"}
    assert all(np.isfinite(v) and v > 0 for v in spent.values())  # the pin ran within the stage's frames
    assert spent["motion stage"] > spent["pin IK"]
    for bad in (["--seconds", "nan"], ["--fps", "0"], ["--repeat", "0"], ["--seconds", "1e9"]):
        with pytest.raises(SystemExit) as stopped:
            feet_cost.main(bad)
        assert stopped.value.code == 2
    assert "--seconds" in capsys.readouterr().err


def test_a_held_foot_settles_level_or_toes_down_even_when_its_first_frame_shows_the_toes_up():
    from realtime.rig.lock import FootLock, FootPin
    from realtime.rig.solver import Legs

    lock, pin = FootLock(NAMES), FootPin()
    body = walk(2).camera[0]
    up = np.array([0.0, 1.0, 0.0])
    # rig axes, the floor at y = 0: the left foot held with its toes shown 8 cm above its ankle (one frame's depth
    # error), before any resting heights were measured; the right foot free
    feet = np.array([[[0.0, 0.04, 0.0], [0.0, 0.12, 0.15]], [[0.3, 0.3, 0.0], [0.3, 0.3, 0.15]]])
    legs = Legs(hip=np.array([[0.0, 0.85, 0.0], [0.3, 0.85, 0.0]]), knee=np.array([[0.0, 0.45, 0.05], [0.3, 0.6, 0.05]]),
                ankle=feet[:, 0], toes=feet[:, 1], reach=np.array([0.85, 0.85]), foot=np.array([0.17, 0.17]))
    level = feet.copy()
    level[0, 1, 1] = 0.03  # the frames after it show the foot level (toes resting 1 cm under the ankle)
    for k, t in enumerate(np.arange(10) / 30.0):
        lock.apply(t, body, np.array([True, False]))
        ankles, aims = pin.frame(t, lock, feet, feet if k == 0 else level, (up, 0.0))(legs)
    assert np.isnan(ankles[1]).all()  # the free foot is left as solved
    assert ankles[0, 1] == pytest.approx(0.04, abs=1e-6)  # the ankle at the height it was held at
    assert aims[0, 1] <= ankles[0, 1] + 1e-9  # settled flat: the toes not above the ankle
    np.testing.assert_allclose(ankles[0, [0, 2]], [0.0, 0.0], atol=1e-9)  # and not moved along the floor


def test_the_motion_stage_takes_pin_gates_and_refuses_anything_else_naming_the_argument():
    from realtime.rig.lock import LockGates, PinGates

    slow = MotionStage(NAMES, pin_gates=PinGates(settle=0.3))
    assert slow.pin_gates.settle == 0.3 and slow.lock_gates == LockGates()
    for name, bad in (("pin_gates", {"settle": 0.3}), ("pin_gates", LockGates()), ("lock_gates", PinGates()),
                      ("lock_gates", "ease_time=0.2")):
        with pytest.raises(TypeError, match=f"MotionStage {name} takes a"):
            MotionStage(NAMES, **{name: bad})


# ---- a foot's first holds (FootPin with a stand-in for the lock's hold: its share and its hold's start) ----

_UP = np.array([0.0, 1.0, 0.0])
_LENGTH = 0.16  # m, ankle to toes
_REST = (0.08, 0.02)  # m, the ankle's and the toes' heights when the foot rests flat: a flat pitch of 22 degrees


class _Hold:
    """What FootPin reads of a FootLock: per foot its share (1 held) and when its current hold began (None: none), and
    its gates and how far back a hold begun now is anchored."""

    def __init__(self):
        self.gates = LockGates()
        self.back = self.gates.anchor_back
        self.share = {"left": 0.0, "right": 0.0}
        self.since = {"left": None, "right": None}


def _foot(toes: np.ndarray, raised_degrees: float) -> np.ndarray:
    """(2, 3) ankle and toes of a foot pointing along +z with its toes at `toes`, its heel `raised_degrees` above
    flat (rig axes, y up, the floor at y = 0)."""
    pitch = np.arcsin((_REST[0] - _REST[1]) / _LENGTH) + np.radians(raised_degrees)
    return np.array([toes + _LENGTH * np.array([0.0, np.sin(pitch), -np.cos(pitch)]), toes])


def _pitch(ankle: np.ndarray, toes: np.ndarray) -> np.ndarray:
    """The foot's pitch (degrees, heel over toes), per (..., 3) ankle and toes."""
    foot = ankle - toes
    return np.degrees(np.arcsin(foot[..., 1] / np.linalg.norm(foot, axis=-1)))


def _pin_frames(plan, seed: int = 0, pins: list | None = None):
    """FootPin driven by `plan`: per frame (time, share, since, shown (2, 2, 3)[, anchored (2, 2, 3) or None]) for both
    feet (left, right); the lock's held feet are the shown ones when each hold began (`anchored` where given: the
    lock's anchor on the frame before), the avatar's solved feet the shown ones. -> per frame
    the avatar's feet (ankles, toes) (2, 3) each: the pin's targets, the solved (shown) foot where it gives none.
    pins: a list the FootPin is appended to (to look at it afterwards)."""
    from realtime.rig.lock import FootPin
    from realtime.rig.solver import Legs

    rng = np.random.default_rng(seed)
    pin, hold = FootPin(), _Hold()
    if pins is not None:
        pins.append(pin)
    held = [None, None]
    out = []
    for time, shares, sinces, shown, *anchored in plan:
        shown = shown + rng.normal(0.0, 0.002, shown.shape)  # the measurement's noise
        first = anchored[0] if anchored and anchored[0] is not None else shown
        for s, side in enumerate(("left", "right")):
            if sinces[s] is not None and sinces[s] != hold.since[side]:
                held[s] = first[s].copy()
            hold.share[side], hold.since[side] = shares[s], sinces[s]
        locked = np.array([held[s] if held[s] is not None and shares[s] > 0 else shown[s] for s in range(2)])
        hips = shown[:, 0] * [1.0, 0.0, 1.0] + [0.0, 0.8, -0.1]  # 80 cm over the floor: the feet on it in reach
        legs = Legs(hip=hips, knee=0.5 * (hips + shown[:, 0]) + [0.0, 0.0, 0.05], ankle=shown[:, 0], toes=shown[:, 1],
                    reach=np.array([0.85, 0.85]), foot=np.array([_LENGTH, _LENGTH]))
        targets = pin.frame(time, hold, locked, shown, (_UP, 0.0))(legs)
        ankles, aims = (np.full((2, 3), np.nan), np.full((2, 3), np.nan)) if targets is None else targets
        free = ~np.isfinite(ankles).all(axis=1)  # left as solved: the avatar's foot as shown
        ankles[free], aims[free] = shown[free, 0], shown[free, 1]
        out.append((ankles, aims))
    return np.array([a for a, _ in out]), np.array([t for _, t in out])


def test_a_foot_planted_flat_is_still_settled_flat_and_a_first_hold_takes_the_other_feet_resting_heights():
    fps = 30.0
    plan = []
    for k in range(int(2.0 * fps)):
        time = k / fps
        right = _foot(np.array([0.3, 0.02, 0.0]), 0.0)  # held flat from the start: its resting heights are measured
        if time < 1.0:
            left, share, since = _foot(np.array([0.0, 0.3, 0.2]), 0.0), 0.0, None  # in the air, never held yet
        else:  # its first hold, the lock's ankle 6 cm up (a landing caught a frame early), the foot level
            left, share, since = _foot(np.array([0.0, 0.08, 0.5]), 0.0), 1.0, 1.0
            left[0, 1] = left[1, 1] = 0.14
        plan.append((time, (share, 1.0), (since, 0.0), np.array([left, right])))
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    late = times >= 1.2
    # the left foot settles onto the floor at the right foot's resting heights, not where its first frame was held
    assert np.abs(ankles[late, 0, 1] - _REST[0]).max() < 0.01, ankles[late, 0, 1]
    assert np.abs(toes[late, 0, 1] - _REST[1]).max() < 0.01
    # the right foot, planted flat, stays flat at its resting heights (its heel never rolled by the noise)
    assert np.abs(ankles[times >= 0.6, 1, 1] - _REST[0]).max() < 0.005
    assert np.abs(_pitch(ankles[times >= 0.6, 1], toes[times >= 0.6, 1]) - _pitch(*_foot(np.zeros(3), 0.0))).max() < 2.0


def test_a_first_hold_before_any_resting_heights_are_measured_does_not_keep_a_foot_in_the_air():
    fps = 30.0
    plan = []
    for k in range(int(1.0 * fps)):
        time = k / fps
        left = _foot(np.array([0.0, 0.14, 0.5]), 0.0)  # held from 0.2 s where a landing decided early caught it
        left[:, 1] += 0.1  # its ankle 30 cm up, no foot's resting heights measured yet
        right = _foot(np.array([0.3, 0.3, 0.0]), 0.0)  # in the air, never held
        held = time >= 0.2
        plan.append((time, (1.0 if held else 0.0, 0.0), (0.2 if held else None, None), np.array([left, right])))
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    late = times >= 0.4
    assert ankles[late, 0, 1].max() <= 0.105, ankles[late, 0, 1]  # 10 cm up at most: an ankle rests 5-9 cm up
    assert toes[late, 0, 1].max() <= ankles[late, 0, 1].min() + 0.005  # level or toes down, not pitched up
    assert np.abs(ankles[late, 0][:, [0, 2]] - ankles[late][0, 0, [0, 2]]).max() < 1e-9  # not moved along the floor


def test_a_first_hold_that_outlasts_the_measuring_goes_over_to_the_measured_resting_heights():
    """A foot held from its first frame for 3 s (standing, a lunge, a sit), that first frame showing it 2 cm low (one
    frame's noise): once the hold shows it standing still (`still_look`), and its resting heights are measured
    (`rest_after`), the avatar's foot goes up to them, over `settle`, not moving along the floor; it stood 2 cm in the
    floor for the whole hold."""
    fps = 30.0
    plan = []
    for k in range(int(3.0 * fps)):
        left = _foot(np.array([0.0, _REST[1], 0.3]), 0.0)
        if k == 0:
            left[:, 1] -= 0.02  # the hold's first frame: 2 cm low
        right = _foot(np.array([0.3, 0.3, 0.0]), 0.0)  # in the air, never held
        plan.append((k / fps, (1.0, 0.0), (0.0, None), np.array([left, right])))
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    first = times < PinGates().still_look  # one frame's heights, before a look at the still foot or measuring
    assert np.abs(ankles[first, 0, 1] - (_REST[0] - 0.02)).max() < 0.005
    late = times >= 1.0
    assert np.abs(ankles[late, 0, 1] - _REST[0]).max() < 0.005, ankles[late, 0, 1]
    assert np.abs(toes[late, 0, 1] - _REST[1]).max() < 0.005
    assert np.abs(np.diff(ankles[:, 0, 1])).max() < 0.012  # eased over `settle` (0.1 s), no 2 cm jump in a frame
    assert np.abs(ankles[:, 0, [0, 2]] - ankles[0, 0, [0, 2]]).max() < 0.001  # not moved along the floor


def test_a_foot_standing_toes_up_rests_its_toes_where_shown_not_at_the_other_feet_or_a_first_frames():
    """A kick's standing foot can stand toes-up (a CMU kick's toe points rest 3.5 cm over its ankle): the right foot
    held flat from the start (its resting heights measured first), the left in the air for 1 s, then held standing still
    with its toes 3 cm over its ankle (ankle 6 cm, toes 9 cm up) for 1.5 s. The avatar's left toes rest where they are
    shown from 0.3 s into the hold (`still_look`, `toes_up`); they did not rest at the right foot's toes (2 cm), 7 cm in
    the floor, for the whole hold."""
    fps = 30.0
    toes_up = _foot(np.array([0.0, 0.09, 0.5]), -32.8)  # pitched 10.8 degrees toes-up: the ankle 6 cm up
    assert toes_up[0, 1] == pytest.approx(0.06, abs=1e-3)
    plan = []
    for k in range(int(2.5 * fps)):
        time = k / fps
        right = _foot(np.array([0.3, _REST[1], 0.0]), 0.0)
        if time < 1.0:
            left, share, since = _foot(np.array([0.0, 0.3, 0.2]), 0.0), 0.0, None  # in the air, never held yet
        else:
            left, share, since = toes_up, 1.0, 1.0
        plan.append((time, (share, 1.0), (since, 0.0), np.array([left, right])))
    times = np.array([p[0] for p in plan])
    ankles, toes = _pin_frames(plan)
    late = times >= 1.3
    assert toes[late, 0, 1].min() > 0.09 - 0.01, toes[late, 0, 1]  # not in the floor under where the toes stand
    assert abs(np.median(toes[late, 0, 1]) - 0.09) < 0.01
    assert np.abs(ankles[late, 0][:, [0, 2]] - ankles[late][0, 0, [0, 2]]).max() < 1e-3  # not moved along the floor
    assert np.abs(toes[times >= 0.6, 1, 1] - _REST[1]).max() < 0.005  # the right foot, flat, as before


def test_a_long_toes_up_stance_keeps_its_toes_up_and_a_bounded_look_at_how_it_stands():
    """A foot standing toes-up for a minute at 60 fps (a performer standing about): its toes stay where shown all the
    while, and the pin keeps no more than a look's worth of the still foot's heights (a median over every frame of a
    long stance, every frame, would cost ever more on the live path)."""
    fps = 60.0
    toes_up = _foot(np.array([0.0, 0.09, 0.5]), -32.8)
    right = _foot(np.array([0.3, _REST[1], 0.0]), 0.0)
    plan = [(k / fps, (1.0, 1.0), (0.0, 0.0), np.array([toes_up, right])) for k in range(int(60 * fps))]
    pins: list = []
    _, toes = _pin_frames(plan, pins=pins)
    assert np.abs(toes[int(5 * fps):, 0, 1] - 0.09).max() < 0.01  # the toes up where shown, to the end
    kept = len(pins[0]._seen["left"])
    assert 0 < kept <= 1.5 * PinGates().still_look * fps  # a look's frames, not the minute's 3,600


def test_a_first_hold_keeps_a_toes_up_foots_toes_up_and_brings_a_heel_strikes_toes_down():
    """Before any resting heights are measured (a track's first stances: a sitter or a kicker standing from the start),
    a hold's toes shown over its ankle are either a heel strike's, still to come down, or a foot standing toes-up (a
    CMU kicker's and sitter's toe points rest 3-4 cm over the ankle). From the first frames on, at 24, 30 and 60 fps,
    the left foot standing toes-up (ankle 6 cm, toes 9 cm up) keeps its toes where shown, and the right foot striking
    with its heel (toes shown 12 cm up, coming down to 2 cm in 0.12 s) brings them down flat; neither moves along the
    floor. Main put both feet's toes at 3 cm at once (`first_toes`): the standing toes 6 cm in the floor until
    the look at a still foot raised them, 0.3 s into the hold."""
    toes_up = _foot(np.array([0.0, 0.09, 0.5]), -32.8)  # pitched 10.8 degrees toes-up: the ankle 6 cm up
    ankle = np.array([0.3, _REST[0], 0.0])
    for fps in (24.0, 30.0, 60.0):
        plan = []
        for k in range(int(0.8 * fps)):
            time = k / fps
            down = min(time / 0.12, 1.0)  # the heel strike's toes: from 15 degrees toes-up to resting flat
            angle = (1.0 - down) * np.radians(15.0) + down * -np.arcsin((_REST[0] - _REST[1]) / _LENGTH)
            right = np.array([ankle, ankle + _LENGTH * np.array([0.0, np.sin(angle), -np.cos(angle)])])
            plan.append((time, (1.0, 1.0), (0.0, 0.0), np.array([toes_up, right])))
        times = np.array([p[0] for p in plan])
        ankles, toes = _pin_frames(plan)
        assert toes[0, 1, 1] > 0.1  # the heel strike's toes shown up on its first frame
        standing = times >= 0.1
        assert toes[standing, 0, 1].min() > 0.09 - 0.01, (fps, toes[standing, 0, 1])  # the toes-up toes where shown
        assert np.abs(ankles[standing, 0, 1] - 0.06).max() < 0.01
        down = times >= 0.3
        # the heel strike's toes came down, to where they rest flat (2 cm) or first_toes (3 cm)
        assert toes[down, 1, 1].max() < 0.035 and toes[down, 1, 1].min() > _REST[1] - 0.01, (fps, toes[down, 1, 1])
        assert np.abs(ankles[:, 1, 1] - _REST[0]).max() < 0.01  # about its heel, the ankle where it struck
        for s in range(2):  # not moved along the floor
            assert np.abs(ankles[:, s][:, [0, 2]] - ankles[0, s, [0, 2]]).max() < 2e-3, (fps, s)


def test_a_heel_strikes_toes_on_a_first_hold_come_down_to_where_they_are_shown_resting_not_first_toes():
    """A track's first stances rest on one frame's heights (no resting heights measured yet): a heel strike's toes go
    flat at `first_toes` (3 cm) over `settle`, and then, shown resting lower (a performer whose toe points rest 1 cm
    up: the tuning walks' rest 1.3-2.8 cm), go on down to where they are shown, never below it. At 24, 30 and 60 fps
    the right foot strikes with its heel (toes shown 12 cm up, down to 1 cm in 0.12 s) and stands: its toes rest
    within 5 mm of 1 cm from 0.3 s on, never under where shown, the ankle where it struck, nothing moved along the
    floor. Toes kept at `first_toes` for the whole hold stand 2 cm over the true foot at heel-off, where the leg lifts
    the heel about the toes."""
    toes_rest = 0.01
    ankle = np.array([0.3, _REST[0], 0.0])
    flat = -np.arcsin((_REST[0] - toes_rest) / _LENGTH)
    for fps in (24.0, 30.0, 60.0):
        plan = []
        for k in range(int(0.8 * fps)):
            time = k / fps
            down = min(time / 0.12, 1.0)  # the heel strike's toes: from 15 degrees toes-up to resting flat
            angle = (1.0 - down) * np.radians(15.0) + down * flat
            right = np.array([ankle, ankle + _LENGTH * np.array([0.0, np.sin(angle), -np.cos(angle)])])
            left = _foot(np.array([0.0, 0.3, 0.2]), 0.0)  # in the air, never held
            plan.append((time, (0.0, 1.0), (None, 0.0), np.array([left, right])))
        times = np.array([p[0] for p in plan])
        ankles, toes = _pin_frames(plan)
        assert toes[0, 1, 1] > 0.1  # the heel strike's toes shown up on its first frame
        rested = times >= 0.3
        assert np.abs(toes[rested, 1, 1] - toes_rest).max() < 0.005, (fps, toes[rested, 1, 1])
        assert toes[:, 1, 1].min() > toes_rest - 0.005, (fps, toes[:, 1, 1])  # never under where they are shown
        assert np.abs(ankles[:, 1, 1] - _REST[0]).max() < 0.01  # about its heel, the ankle where it struck
        assert np.abs(ankles[:, 1][:, [0, 2]] - ankles[0, 1, [0, 2]]).max() < 2e-3, fps  # not moved along the floor
