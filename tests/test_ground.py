"""Lifting between depth frames, the floor, foot contact and foot locking: unit checks, and
bench/rig.py's synthetic walker (camera tilted 15 degrees, depth every 5th frame) held to the
thresholds stated in bench/RESULTS.md."""

from __future__ import annotations

import numpy as np
import pytest

from bench import rig as bench
from realtime.rig.contacts import ContactDetector
from realtime.rig.floor import Floor, FloorEstimator, fit_floor
from realtime.rig.lift import Intrinsics, Lifter
from realtime.rig.lock import FootLock
from tests.ground_synthetic import walk
from tests.mocap_synthetic import NAMES


def test_intrinsics_are_recovered_from_depth_frames():
    rng = np.random.default_rng(0)
    points = rng.uniform([-1, -1, 2], [1, 1, 5], (40, 3))
    pixels = np.stack([900 * points[:, 0] / points[:, 2] + 630, 880 * points[:, 1] / points[:, 2] + 350], axis=1)
    intrinsics = Intrinsics()
    intrinsics.add(pixels, points)
    np.testing.assert_allclose(intrinsics.solve(), [900, 880, 630, 350], atol=1e-6)


def test_a_body_moved_sideways_is_lifted_within_a_centimetre():
    truth = walk(30)
    shifted = truth.camera[0] + np.array([0.3, 0.0, 0.0])  # the first pose moved sideways: depths unchanged
    from tests.ground_synthetic import CENTRE, FOCAL

    lifter = Lifter(NAMES)
    assert lifter.update(truth.pixels[0]) is None  # nothing before the first depth frame
    lifter.update(truth.pixels[0], truth.camera[0])
    out = lifter.update(FOCAL * shifted[:, :2] / shifted[:, 2:] + CENTRE)
    known = np.isfinite(shifted).all(axis=1)
    assert np.linalg.norm(out[known] - shifted[known], axis=1).max() < 0.01  # the torso's image size barely changes


def _tilted_floor_axes() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The up of a floor seen by a camera tilted 15 degrees down, and two unit axes along the floor."""
    up = np.array([0.0, -np.cos(np.radians(15)), -np.sin(np.radians(15))])
    a = np.cross(up, [1.0, 0, 0])
    a /= np.linalg.norm(a)
    return up, a, np.cross(up, a)


def test_the_floor_of_a_tilted_plane_with_feet_in_the_air():
    rng = np.random.default_rng(1)
    up, a, b = _tilted_floor_axes()
    ground = np.array([0, 1.5, 4.0]) + rng.uniform(-1, 1, (200, 1)) * a + rng.uniform(-1, 1, (200, 1)) * b
    air = ground[:60] + up * rng.uniform(0.05, 0.3, (60, 1))  # swinging feet
    floor = fit_floor(np.concatenate([ground, air]))
    assert np.degrees(np.arccos(floor.normal @ up)) < 0.1
    assert abs(floor.height(ground).max()) < 1e-6


def test_the_floor_lies_under_the_soles_not_through_the_feet():
    """Planted feet whose toes sit 3 cm above the heel (a real stance: CMU 07_04's toes 1-3 cm up, 08_11's 6): the
    floor's height from each foot's lowest point, so the heels stand on it (through the feet's centres it was 2 cm
    above them, the feet sunk into it)."""
    rng = np.random.default_rng(3)
    up, a, b = _tilted_floor_axes()
    index = {n: i for i, n in enumerate(NAMES)}
    estimator, heels = FloorEstimator(NAMES), []
    for _ in range(40):
        points = np.full((len(NAMES), 3), np.nan)
        hips = np.array([0, 1.5, 4.0]) + rng.uniform(-1, 1) * a + rng.uniform(-1, 1) * b + 0.9 * up
        points[index["left_hip"]], points[index["right_hip"]] = hips + 0.1 * a, hips - 0.1 * a
        points[index["neck"]] = hips + 0.5 * up
        for side, across in (("left", 0.1), ("right", -0.1)):
            heel = hips - 0.9 * up + across * a + rng.normal(0, 0.005, 3)
            points[index[f"{side}_heel"]] = heel
            points[index[f"{side}_big_toe"]] = heel + 0.22 * b + 0.03 * up
            points[index[f"{side}_small_toe"]] = heel + 0.2 * b + 0.05 * a * np.sign(across) + 0.03 * up
            heels.append(heel)
        estimator.add(points)
    assert estimator.floor is not None
    assert np.degrees(np.arccos(estimator.floor.normal @ up)) < 0.5
    assert abs(np.median(estimator.floor.height(np.array(heels)))) < 0.005


def test_feet_kept_in_one_spot_take_the_unknown_tilt_from_the_body():
    rng = np.random.default_rng(2)
    up, a, b = _tilted_floor_axes()
    stance = np.array([0, 1.5, 4.0]) + np.repeat([[0.1], [-0.1]], 300, axis=0) * a  # two feet, 20 cm apart, 10 s still
    feet = stance + rng.normal(0, 0.015, stance.shape)
    body_up = up + 0.15 * a + 0.05 * b  # the body's up, 8.5 degrees off along the feet and 3 across
    floor = fit_floor(feet, body_up)
    assert abs(floor.normal @ a) < 0.025  # the slope along the feet is the data's
    expected = (up + 0.05 * b) / np.linalg.norm(up + 0.05 * b)  # the tilt across them the body's
    assert np.degrees(np.arccos(np.clip(floor.normal @ expected, -1, 1))) < 1.5


def test_contact_has_hysteresis():
    """The heel's height on and off the floor, the heel moving only along its line of sight (no speed across
    it): the ray through (0, -0.1, 4) m, the floor through the camera's centre."""
    floor = Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3))
    detector = ContactDetector(floor, NAMES)
    heel = NAMES.index("left_heel")
    heights = [0.2, 0.2, 0.06, 0.06, 0.09, 0.10, 0.12, 0.09, 0.12, 0.13, 0.09, 0.06, 0.06, 0.06, 0.06, 0.06, 0.06]
    states = []
    for i, height in enumerate(heights):
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = np.array([0.0, -0.1, 4.0]) * height / 0.1
        states.append(bool(detector.update(i / 30, points)[0]))
    # not on a track's first frame (no speed yet); on below 8 cm, stays on up to 11 cm, off once its median over the
    # last 1/15 s is above (two of the last three frames at 30 fps: one frame above does not end it), on again only
    # below 8 cm and 0.2 s after the release
    assert states == [False, False, True, True, True, True, True, True, False, False, False, False, False, False,
                      True, True, True]


def test_a_swinging_foot_with_its_toes_near_the_floor_is_not_in_contact():
    """Mid-swing the toes pass 1-2 cm over the floor and the heel 15-30 cm: the heel's height gates."""
    floor = Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3))
    detector = ContactDetector(floor, NAMES)
    heel, toes = NAMES.index("left_heel"), [NAMES.index(f"left_{p}") for p in ("big_toe", "small_toe")]
    states = []
    for i in range(8):
        points = np.full((len(NAMES), 3), np.nan)
        points[heel] = np.array([0.0, -0.1, 4.0]) * 0.2 / 0.1  # still (along its ray), 20 cm up
        points[toes] = [0.15, -0.015, 4.0]
        states.append(bool(detector.update(i / 30, points)[0]))
    assert not any(states)  # the foot's centre is 8 cm up, below the onset height


def test_contact_ends_when_the_heel_lifts_or_moves():
    floor = Floor(np.array([0.0, -1.0, 0.0]), np.zeros(3))
    feet = [NAMES.index(f"left_{p}") for p in ("heel", "big_toe", "small_toe")]
    for step in ([0.0, -0.012, 0.0], [0.02, 0.0, 0.0]):  # heel-off: 1.2 cm a frame up; a slide: 2 cm a frame
        detector, states = ContactDetector(floor, NAMES), []
        for i in range(12):
            points = np.full((len(NAMES), 3), np.nan)
            points[feet] = np.array([0.0, 0.0, 4.0]) + np.array(step) * max(i - 6, 0)
            states.append(bool(detector.update(i / 30, points)[0]))
        assert states[1:7] == [True] * 6 and not any(states[10:]), step
    # along the line of sight a creep (depth re-measured: 3 cm over a stance_time, under `off_along`) does not count;
    # a foot leaving along it (3 cm a frame, a depth frame's word) does, once its first stance_time has passed
    for per_frame, held in ((0.006, True), (0.03, False)):
        detector = ContactDetector(floor, NAMES)
        for i in range(12):
            points = np.full((len(NAMES), 3), np.nan)
            points[feet] = [0.0, 0.0, 4.0 + per_frame * i]
            state = detector.update(i / 30, points)[0]
        assert state == held, per_frame


def test_a_locked_foot_does_not_slide():
    truth = walk(60)
    lock = FootLock(NAMES)
    ankle = NAMES.index("left_ankle")
    held = []
    for t in range(10):
        points = truth.camera[0].copy()
        points[[NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]] += [0.01 * t, 0, 0]  # sliding
        held.append(lock.apply(t / 30, points, np.array([True, False]))[ankle])
    np.testing.assert_allclose(np.array(held), np.repeat(held[:1], 10, axis=0), atol=1e-9)



def test_a_foot_locked_out_of_reach_lands_once_and_holds():
    """An anchor far out of the leg's reach (set at a depth carried over from the swing) moves once to
    where the leg lands and holds there, rather than dragging with the hips every frame."""
    truth = walk(60)
    lock = FootLock(NAMES)
    ankle = NAMES.index("left_ankle")
    foot = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]
    held = []
    for t in range(6):
        points = truth.camera[0].copy()
        if t == 0:
            points[foot] += [0, 0, 0.5]  # the onset frame's foot 50 cm off along the line of sight
        points[:, 0] += 0.002 * t  # the body drifts 2 mm a frame
        held.append(lock.apply(t / 30, points, np.array([True, False]))[ankle])
    held = np.array(held)
    assert np.linalg.norm(held[1] - held[0]) > 0.2  # landed within reach
    np.testing.assert_allclose(held[2:], np.repeat(held[1:2], 4, axis=0), atol=1e-9)  # and held there

def test_a_foot_planting_again_while_it_eases_out_is_held_where_it_came_in():
    """Released, a foot eases from its anchor to where it is shown; if it plants again before the ease ends,
    the new anchor is where the foot came in on the frame before, not where it was shown part of the way
    from the old anchor (CMU 16_32 straight away: re-anchored 6 cm short in mid-ease, 60 cm short after an
    early plant)."""
    truth = walk(60)
    lock = FootLock(NAMES)
    ankle = NAMES.index("left_ankle")
    foot = [NAMES.index(f"left_{p}") for p in ("ankle", "heel", "big_toe", "small_toe")]
    shown = []
    for t, (contact, shift) in enumerate([(True, 0.0), (True, 0.0), (False, 0.12), (True, 0.12), (True, 0.12)]):
        points = truth.camera[0].copy()
        points[foot] += [shift, 0.0, 0.0]  # the foot comes in 12 cm further from frame 2 on
        shown.append(lock.apply(t / 30, points, np.array([contact, False]))[ankle])
    came = truth.camera[0][ankle] + [0.12, 0.0, 0.0]
    assert 0.0 < shown[2][0] - shown[0][0] < 0.12 - 1e-3  # released: part of the way, easing
    np.testing.assert_allclose(shown[3], came, atol=1e-9)  # planted again: where it came in on frame 2
    np.testing.assert_allclose(shown[4], came, atol=1e-9)


SEEDS = (0, 1, 2, 3, 4, 5)
# bench/RESULTS.md, measured on these seeds: lifted <= 72.3 mm and <= 1.04 x depth every frame, scale error
# 0.84-1.13 % (raw 1.67-2.17 %), floor <= 0.88 deg at 5 s, precision >= 0.87, recall >= 0.85, slide after <= 0.29 x before
LIFTED_MM, LIFTED_RATIO, SCALE_PCT, PRECISION, RECALL, SLIDE_RATIO = 90, 1.2, 1.6, 0.85, 0.75, 0.5


@pytest.fixture(scope="module")
def results():
    return {seed: bench.evaluate(300, seed=seed) for seed in SEEDS}


def test_the_walker_meets_the_stated_thresholds(results):
    # bench/RESULTS.md, "Grounded body every frame": the thresholds asserted here, on every seed
    for seed, r in results.items():
        assert r["joint_error_lifted_mm"] < LIFTED_MM, seed
        assert r["joint_error_lifted_mm"] < LIFTED_RATIO * r["joint_error_depth_every_frame_mm"], seed
        assert r["scale_error_stabilised_pct"] < SCALE_PCT and r["scale_error_raw_pct"] > 1.5, seed
        assert r["floor_up_error_5s_deg"] < 0.3 and r["floor_up_error_end_deg"] < 0.3, seed  # the scene's tilt: 0.09-0.10
        assert r["contact_precision"] > PRECISION and r["contact_recall"] > RECALL, seed
        assert r["slide_after_mm_per_frame"] < SLIDE_RATIO * r["slide_before_mm_per_frame"], seed


def test_the_scale_filter_is_what_steadies_the_walker():
    steady, raw = bench.evaluate(300, seed=0), bench.evaluate(300, seed=0, stabilise=False)
    assert steady["scale_error_stabilised_pct"] < 0.8 * raw["scale_error_stabilised_pct"]  # 1.13 vs 1.93 %
    assert steady["joint_error_lifted_mm"] < 0.9 * raw["joint_error_lifted_mm"]  # 69.3 vs 86.8 mm
    # the feet-only floor (no pointmap) tilts with an unsteady scale; the scene's tilt does not depend on it
    feet_steady, feet_raw = (bench.evaluate(300, seed=0, stabilise=s, scene=False) for s in (True, False))
    assert feet_raw["floor_up_error_5s_deg"] > 2.0 > feet_steady["floor_up_error_5s_deg"]  # 2.30 vs 0.88 deg
    assert raw["floor_up_error_5s_deg"] < 0.5 and steady["floor_up_error_5s_deg"] < 0.5  # 0.10 both


def test_without_noise_the_lifted_body_and_floor_are_close():
    clean = {"NOISE_PX": 0.0, "NOISE_M": 0.0, "SCALE_JITTER": 0.0}
    saved = {k: getattr(bench, k) for k in clean}
    try:
        for k, v in clean.items():
            setattr(bench, k, v)
        results = bench.evaluate(300, seed=0)
    finally:
        for k, v in saved.items():
            setattr(bench, k, v)
    assert results["joint_error_lifted_mm"] < 40
    assert results["floor_up_error_5s_deg"] < 0.5
    assert results["slide_after_mm_per_frame"] < 0.7 * results["slide_before_mm_per_frame"]



def test_vmc_moves_on_every_frame_when_depth_runs_every_fifth():
    from realtime.frames import Frame, Person
    from tests.live_chain import vmc

    truth = walk(40)
    sink = vmc("127.0.0.1", 9, NAMES, filter_method="none", ground=True)  # messages() only builds them: nothing is sent
    bones = []
    for t in range(40):
        person = Person(box=np.array([0, 0, 10, 10], np.float32), track_id=1, keypoints=truth.pixels[t].astype(np.float32),
                        keypoint_scores=np.where(np.isfinite(truth.pixels[t, :, 0]), 0.9, 0.0).astype(np.float32),
                        keypoints3d=truth.camera[t].astype(np.float32) if t % 5 == 0 else None)
        body, _ = sink.messages(Frame(index=t, timestamp=t / 30, image=np.zeros((2, 2, 3), np.uint8), people=(person,)),
                                sink._slot(0), person)
        bones.append({args[0]: np.array(args[4:8]) for address, args in body if address == "/VMC/Ext/Bone/Pos"})
    sink.close()
    for t in range(1, 40):  # the legs turn on frames without depth too
        assert not np.allclose(bones[t]["LeftUpperLeg"], bones[t - 1]["LeftUpperLeg"]), t


def test_the_ground_stage_finds_contacts_and_the_tracks_keep_them(tmp_path):
    from realtime.export.jsonl import read_tracks
    from realtime.frames import Frame, Person
    from realtime.sinks.tracks import TrackWriter
    from realtime.stages import GroundStage

    truth = walk(240)
    stage = GroundStage(NAMES)
    path = tmp_path / "t.jsonl"
    found = []
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(1280, 720), fps=30.0, source="synthetic", model={}, tracked=True) as w:
        for t in range(240):
            person = Person(box=np.array([0, 0, 10, 10], np.float32), track_id=4, keypoints=truth.pixels[t].astype(np.float32),
                            keypoint_scores=np.where(np.isfinite(truth.pixels[t, :, 0]), 0.9, 0.0).astype(np.float32),
                            keypoints3d=truth.camera[t].astype(np.float32) if t % 5 == 0 else None)
            frame = stage.process(Frame(index=t, timestamp=t / 30, image=np.zeros((2, 2, 3), np.uint8), people=(person,)))
            found.append(frame.people[0].contacts)
            w.write(frame)
    first = next(t for t, c in enumerate(found) if c is not None)
    assert first == 5 * (stage.floors.min_samples - 1)  # the floor once enough depth frames' feet were seen
    assert np.degrees(np.arccos(stage.floor.normal @ truth.up)) < 1.0
    contacts = np.array(found[first:])
    planted = truth.contacts[first:]
    assert (contacts & planted).sum() / contacts.sum() > 0.8 and (contacts & planted).sum() / planted.sum() > 0.5
    track = read_tracks(path).person(4)
    np.testing.assert_array_equal(track.contacts[first:], contacts)
    assert not track.contacts[:first].any()
    # 3D at pose rate: every frame, the 4 between depth frames lifted, in the file as the stage wrote it
    body = np.isfinite(truth.camera[0]).all(axis=1)
    assert np.isfinite(track.keypoints3d[:, body]).all()
    between = np.arange(240) % 5 != 0
    assert np.linalg.norm(track.keypoints3d[between][:, body] - truth.camera[between][:, body], axis=2).mean() < 0.04
