"""Face from the 238 face keypoints, on a synthetic face with known causes: every blendshape
moves monotonically with its cause, stays near 0 on a neutral face after calibration, no
blendshape is pinned over a 30 s clip of random expressions, and the head rotation follows
the head."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realtime.expressions import BLEND_NAMES, blend_values
from realtime.rig.face import ARKIT_NAMES, FaceSolver
from tests.face_synthetic import NAMES, FaceParams, face_keypoints

NEUTRAL = FaceParams()


def _calibrated(seconds: float = 1.0, noise: float = 0.0, seed: int = 0) -> FaceSolver:
    solver = FaceSolver(NAMES, calibrate_seconds=seconds)
    rng = np.random.default_rng(seed)
    for i in range(int(seconds * 30) + 2):
        points = face_keypoints(NEUTRAL)[0] + rng.normal(0, noise, (len(NAMES), 2))
        solver.update(i / 30, points)
    assert solver.neutral is not None
    return solver


# blendshape, the cause's field, values from none to strong (other fields neutral)
CAUSES = [
    ("eyeBlinkLeft", "eye_open_l", [0.010, 0.008, 0.006, 0.004, 0.002]),
    ("eyeBlinkRight", "eye_open_r", [0.010, 0.008, 0.006, 0.004, 0.002]),
    ("eyeWideLeft", "eye_open_l", [0.010, 0.011, 0.012, 0.013, 0.014]),
    ("eyeWideRight", "eye_open_r", [0.010, 0.011, 0.012, 0.013, 0.014]),
    ("jawOpen", "jaw", [0.0, 0.005, 0.01, 0.02, 0.03]),
    ("mouthSmileLeft", "corner_l", [0.0, 0.002, 0.004, 0.006, 0.008]),
    ("mouthSmileRight", "corner_r", [0.0, 0.002, 0.004, 0.006, 0.008]),
    ("mouthFrownLeft", "corner_l", [0.0, -0.002, -0.004, -0.006, -0.008]),
    ("mouthFrownRight", "corner_r", [0.0, -0.002, -0.004, -0.006, -0.008]),
    ("mouthPucker", "mouth_width", [0.050, 0.046, 0.042, 0.038, 0.034]),
    ("mouthStretchLeft", "mouth_width", [0.050, 0.053, 0.056, 0.059, 0.062]),
    ("browInnerUp", "brow_inner", [0.0, 0.002, 0.004, 0.006, 0.008]),
    ("browDownLeft", "brow_l", [0.0, -0.002, -0.004, -0.006, -0.008]),
    ("browDownRight", "brow_r", [0.0, -0.002, -0.004, -0.006, -0.008]),
    ("browOuterUpLeft", "brow_outer_l", [0.0, 0.002, 0.004, 0.006, 0.008]),
    ("browOuterUpRight", "brow_outer_r", [0.0, 0.002, 0.004, 0.006, 0.008]),
    ("eyeLookOutLeft", "gaze_x", [0.0, 0.001, 0.002, 0.003, 0.004]),
    ("eyeLookInRight", "gaze_x", [0.0, 0.001, 0.002, 0.003, 0.004]),
    ("eyeLookInLeft", "gaze_x", [0.0, -0.001, -0.002, -0.003, -0.004]),
    ("eyeLookOutRight", "gaze_x", [0.0, -0.001, -0.002, -0.003, -0.004]),
    ("eyeLookUpLeft", "gaze_y", [0.0, 0.00075, 0.0015, 0.00225, 0.003]),
    ("eyeLookUpRight", "gaze_y", [0.0, 0.00075, 0.0015, 0.00225, 0.003]),
    ("eyeLookDownLeft", "gaze_y", [0.0, -0.00075, -0.0015, -0.00225, -0.003]),
    ("eyeLookDownRight", "gaze_y", [0.0, -0.00075, -0.0015, -0.00225, -0.003]),
]


@pytest.mark.parametrize("name, cause, values", CAUSES, ids=[c[0] for c in CAUSES])
def test_each_blendshape_moves_monotonically_with_its_cause(name, cause, values):
    solver = _calibrated()
    weights = [solver.update(2.0, face_keypoints(dataclasses.replace(NEUTRAL, **{cause: v}))[0]).weight(name) for v in values]
    assert weights[0] < 0.02 and weights[-1] > 0.5
    assert all(b > a for a, b in zip(weights, weights[1:])), weights


def test_funnel_and_close_need_their_lip_state():
    solver = _calibrated()
    w = lambda **k: solver.update(2.0, face_keypoints(dataclasses.replace(NEUTRAL, **k))[0])  # noqa: E731
    funnel = [w(mouth_width=width, lips=0.01).weight("mouthFunnel") for width in (0.05, 0.045, 0.04, 0.035)]
    assert funnel[0] < 0.02 and all(b > a for a, b in zip(funnel, funnel[1:]))
    assert w(mouth_width=0.035, lips=0.0).weight("mouthFunnel") < 0.02  # lips together: a pucker, not a funnel
    close = [w(jaw=j, lips=-0.5 * j).weight("mouthClose") for j in (0.0, 0.01, 0.02, 0.03)]  # jaw down, lips kept together
    assert close[0] < 0.02 and all(b > a for a, b in zip(close, close[1:]))
    assert w(jaw=0.03).weight("mouthClose") < close[-1]  # the same jaw with the lips apart


def test_a_neutral_face_reads_near_zero_after_calibration():
    solver = _calibrated(noise=0.3)  # 0.3 px of keypoint noise on a ~60 px inter-ocular distance
    rng = np.random.default_rng(1)
    worst = np.zeros(len(ARKIT_NAMES))
    for i in range(60):
        state = solver.update(3 + i / 30, face_keypoints(NEUTRAL)[0] + rng.normal(0, 0.3, (len(NAMES), 2)))
        assert state.calibrated
        worst = np.maximum(worst, state.weights)
        angle = np.degrees(Rotation.from_quat(state.head_rotation).magnitude())
        assert angle < 2.0
    assert worst.max() < 0.1, dict(zip(ARKIT_NAMES, worst.round(3)))


def test_the_neutral_is_learned_from_the_first_seconds_whatever_the_face_size():
    near, far = FaceSolver(NAMES, calibrate_seconds=1.0), FaceSolver(NAMES, calibrate_seconds=1.0)
    for i in range(35):
        near.update(i / 30, face_keypoints(NEUTRAL, head_position=(0, 0, 0.5))[0])
        far.update(i / 30, face_keypoints(NEUTRAL, head_position=(0, 0, 1.5))[0])  # a third of the size
    blink = dataclasses.replace(NEUTRAL, eye_open_l=0.004)
    a = near.update(2.0, face_keypoints(blink, head_position=(0, 0, 0.5))[0]).weight("eyeBlinkLeft")
    b = far.update(2.0, face_keypoints(blink, head_position=(0, 0, 1.5))[0]).weight("eyeBlinkLeft")
    assert a == pytest.approx(b, abs=0.03) and a > 0.5
    near.recalibrate()
    assert near.neutral is None


def test_thirty_seconds_of_random_expressions_pin_no_blendshape():
    fps, seconds = 30, 30
    solver = _calibrated(seconds=2.0, noise=0.2)
    rng = np.random.default_rng(5)
    ranges = dict(eye_open_l=(0.0, 0.015), eye_open_r=(0.0, 0.015), jaw=(0.0, 0.03), lips=(0.0, 0.015),
                  mouth_width=(0.033, 0.062), corner_l=(-0.008, 0.008), corner_r=(-0.008, 0.008), brow_inner=(0.0, 0.008),
                  brow_l=(-0.008, 0.006), brow_r=(-0.008, 0.006), brow_outer_l=(0.0, 0.008), brow_outer_r=(0.0, 0.008),
                  gaze_x=(-0.004, 0.004), gaze_y=(-0.003, 0.003), yaw=(-10, 10), pitch=(-8, 8), roll=(-8, 8))
    keys = {k: rng.uniform(*r, size=seconds + 1) for k, r in ranges.items()}  # a new expression every second
    weights = []
    for i in range(fps * seconds):
        s = i / fps
        k, frac = int(s), s - int(s)
        params = FaceParams(**{name: (1 - frac) * v[k] + frac * v[k + 1] for name, v in keys.items()})
        state = solver.update(10 + s, face_keypoints(params)[0] + rng.normal(0, 0.2, (len(NAMES), 2)))
        weights.append(blend_values(state.weights, state.lips_open))  # what the VMC sender sends (realtime.sinks.osc)
    weights = np.array(weights)
    names = BLEND_NAMES
    assert ((weights >= 0) & (weights <= 1)).all()
    for name, column in zip(names, weights.T):
        assert (column > 0.05).mean() > 0.05, f"{name} stays at 0"
        assert (column < 0.95).mean() > 0.5, f"{name} stays at 1"
        assert column.std() > 0.02, name


@pytest.mark.parametrize("axis", ["yaw", "pitch", "roll"])
def test_head_rotation_follows_the_head(axis):
    solver = _calibrated()
    got = []
    for degrees in (-20, -10, 0, 10, 20):
        state = solver.update(2.0, face_keypoints(dataclasses.replace(NEUTRAL, **{axis: degrees}))[0])
        yaw, pitch, roll = Rotation.from_quat(state.head_rotation).as_euler("YXZ", degrees=True)
        got.append({"yaw": yaw, "pitch": pitch, "roll": roll}[axis])
        assert got[-1] == pytest.approx(degrees, abs=6.0)
    assert all(b > a for a, b in zip(got, got[1:]))


def test_an_unreadable_face_gives_none():
    solver = FaceSolver(NAMES)
    points = face_keypoints(NEUTRAL)[0]
    points[NAMES.index("l_inner_end_of_upper_lash_line")] = np.nan
    assert solver.update(0.0, points) is None
    scores = np.full(len(NAMES), 0.9)
    scores[NAMES.index("tip_of_nose")] = 0.05  # below the trusted score
    assert solver.update(0.0, face_keypoints(NEUTRAL)[0], scores) is None


def test_the_face_stage_fills_people_and_the_tracks_file_keeps_it(tmp_path):
    from realtime.export.jsonl import read_tracks
    from realtime.frames import Frame, Person
    from realtime.sinks.tracks import TrackWriter
    from realtime.stages import FaceStage

    stage = FaceStage(NAMES, calibrate_seconds=0.5)
    path = tmp_path / "t.jsonl"
    written = []
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(1280, 720), fps=30.0, source="synthetic", model={}, tracked=True) as w:
        for i in range(30):
            params = NEUTRAL if i < 20 else dataclasses.replace(NEUTRAL, jaw=0.02, yaw=15)
            points = face_keypoints(params)[0]
            known = np.isfinite(points).all(axis=1)
            points[~known] = 100.0  # the body points this face has not: somewhere
            people = (Person(box=np.array([0, 0, 99, 99], np.float32), track_id=5, keypoints=points.astype(np.float32),
                             keypoint_scores=np.full(len(NAMES), 0.9, np.float32)),
                      Person(box=np.array([0, 0, 9, 9], np.float32), keypoints=points.astype(np.float32),
                             keypoint_scores=np.full(len(NAMES), 0.9, np.float32)))  # tentative: no face read
            frame = stage.process(Frame(index=i, timestamp=i / 30, image=np.zeros((2, 2, 3), np.uint8), people=people))
            assert frame.people[1].face is None
            written.append(frame.people[0])
            w.write(frame)
    track = read_tracks(path).person(5)
    faces = np.stack([p.face for p in written])
    np.testing.assert_allclose(track.face, faces, atol=1e-3)
    np.testing.assert_allclose(track.head_rotation, np.stack([p.head_rotation for p in written]), atol=1e-4)
    assert track.face[-1, ARKIT_NAMES.index("jawOpen")] > 0.3 and track.face[:20].max() < 0.05
    yaw = Rotation.from_quat(track.head_rotation[-1]).as_euler("YXZ", degrees=True)[0]
    assert yaw == pytest.approx(15, abs=6)
