"""Offline foot locking (realtime/rig/leg_ik.py): the two-bone IK, the contact spans, and the
exported BVH / glb read back on the synthetic walker with exact foot plants."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from realtime.cli import main
from realtime.errors import UserError
from realtime.export import export_tracks
from realtime.rig.leg_ik import contact_spans, lock_feet, lock_weights, solve_leg
from tests.foot_lock_synthetic import bvh_ankles, glb_ankles, slide, write_walk_tracks
from tests.mocap_synthetic import NAMES
from tests.test_motion_clients import ACCEPTED_INFOS, NODE_MODULES, TESTS, need

THIGH, SHIN = 0.46, 0.42
FRAMES = 150


def _legs(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    hip = rng.normal(size=(count, 3))
    return hip, hip + rng.normal(size=(count, 3))


def test_ik_keeps_bone_lengths_reaches_the_target_and_keeps_the_bend_plane():
    hip, knee = _legs(200)
    rng = np.random.default_rng(1)
    direction = rng.normal(size=(200, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    reach = rng.uniform(THIGH - SHIN + 0.01, THIGH + SHIN - 0.01, 200)
    target = hip + reach[:, None] * direction
    new_knee, ankle = solve_leg(hip, knee, target, THIGH, SHIN)
    np.testing.assert_allclose(np.linalg.norm(new_knee - hip, axis=1), THIGH, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ankle - new_knee, axis=1), SHIN, atol=1e-6)
    np.testing.assert_allclose(ankle, target, atol=1e-9)
    # in the plane of hip, measured knee and target, on the measured knee's side of the hip-target line
    normal = np.cross(knee - hip, target - hip)
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    assert np.abs(np.einsum("ij,ij->i", normal, new_knee - hip)).max() < 1e-9
    side_before = np.einsum("ij,ij->i", np.cross(direction, knee - hip), normal)
    side_after = np.einsum("ij,ij->i", np.cross(direction, new_knee - hip), normal)
    assert (np.sign(side_before) == np.sign(side_after)).all()


def test_ik_per_frame_lengths_and_a_straight_measured_leg():
    hip, knee = _legs(50, seed=2)
    thigh, shin = np.linspace(0.3, 0.5, 50), np.linspace(0.5, 0.3, 50)
    target = hip + np.array([0.0, -0.5, 0.1])
    new_knee, ankle = solve_leg(hip, knee, target, thigh, shin)
    np.testing.assert_allclose(np.linalg.norm(new_knee - hip, axis=1), thigh, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ankle - new_knee, axis=1), shin, atol=1e-6)
    np.testing.assert_allclose(ankle, target, atol=1e-9)
    # no bend measured (knee on the hip-target line): still a valid bent leg reaching the target
    straight_knee = hip + 0.3 * (target - hip)
    new_knee, ankle = solve_leg(hip, straight_knee, target, THIGH, SHIN)
    np.testing.assert_allclose(ankle, target, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(new_knee - hip, axis=1), THIGH, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ankle - new_knee, axis=1), SHIN, atol=1e-6)


@pytest.mark.parametrize("reach,limit", [(2.0, THIGH + SHIN), (0.01, THIGH - SHIN)])
def test_ik_clamps_unreachable_targets_on_the_line_to_them(reach, limit):
    hip, knee = _legs(20, seed=3)
    direction = np.array([0.6, -0.8, 0.0])
    target = hip + reach * direction
    new_knee, ankle = solve_leg(hip, knee, target, THIGH, SHIN)
    np.testing.assert_allclose(ankle, hip + limit * direction, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(new_knee - hip, axis=1), THIGH, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ankle - new_knee, axis=1), SHIN, atol=1e-6)
    assert np.linalg.norm(np.cross(new_knee - hip, ankle - hip), axis=1).max() < 1e-9  # straight (or folded) leg


def test_contact_spans_and_blend_weights():
    contact = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1], bool)
    assert contact_spans(contact) == [(4, 6), (12, 12)]
    ankle = np.arange(13, dtype=float)[:, None] * [1.0, 0.0, 0.0]
    weight, shift = lock_weights(ankle, contact, np.arange(13) / 30, blend=0.1)  # 0.1 s: two frames each side at 30 fps
    np.testing.assert_allclose(weight, [0, 0, 1 / 3, 2 / 3, 1, 1, 1, 2 / 3, 1 / 3, 0, 1 / 3, 2 / 3, 1])
    # the same blend in seconds at 60 fps: four frames each side, the weight falling with the time from the span
    contact60 = np.zeros(25, bool)
    contact60[::2], contact60[1::2] = contact, contact[:-1] & contact[1:]  # the same spans in time
    weight60, _ = lock_weights(np.zeros((25, 3)), contact60, np.arange(25) / 60, blend=0.1)
    np.testing.assert_allclose(weight60[::2], weight, atol=1e-9)
    np.testing.assert_allclose(weight60[3:9], [1 / 6, 1 / 3, 1 / 2, 2 / 3, 5 / 6, 1], atol=1e-9)
    # to the first span's median ankle (5): inside from each frame, before / after from the span's edge
    np.testing.assert_allclose(shift[2:9, 0], [1, 1, 1, 0, -1, -1, -1])
    np.testing.assert_allclose(shift[10:, 0], 0.0)  # a one-frame span is its own median
    assert np.isnan(shift[[0, 1, 9]]).all()


def test_lock_feet_holds_the_foot_rigidly_and_leaves_the_rest():
    """A foot sliding 1 cm per frame while in contact: held at the span's median, heel and toes
    with it, thigh and shin of the clip's lengths there, every other point and frame untouched."""
    count = 30
    index = {n: i for i, n in enumerate(NAMES)}
    points = np.full((count, len(NAMES), 3), np.nan)
    t = np.arange(count)[:, None]
    for side, x in (("left", 0.1), ("right", -0.1)):
        hip = np.array([x, 0.9, 0.0]) + t * [0.0, 0.0, 0.01]
        ankle = np.array([x, 0.08, 0.1]) + t * [0.0, 0.0, 0.01]
        points[:, index[f"{side}_hip"]] = hip
        points[:, index[f"{side}_knee"]] = hip + [0.0, -0.45, 0.12]
        points[:, index[f"{side}_ankle"]] = ankle
        points[:, index[f"{side}_heel"]] = ankle + [0.0, -0.07, -0.05]
        points[:, index[f"{side}_big_toe"]] = ankle + [0.03, -0.07, 0.15]
        points[:, index[f"{side}_small_toe"]] = ankle + [-0.03, -0.07, 0.14]
    contacts = np.zeros((count, 2), bool)
    contacts[10:20, 0] = True
    locked = lock_feet(points, NAMES, contacts, np.arange(count) / 30)
    ankle = locked[:, index["left_ankle"]]
    np.testing.assert_allclose(ankle[10:20], np.tile(np.median(points[10:20, index["left_ankle"]], axis=0), (10, 1)), atol=1e-9)
    for foot in ("left_heel", "left_big_toe", "left_small_toe"):
        np.testing.assert_allclose(locked[:, index[foot]] - ankle,
                                   points[:, index[foot]] - points[:, index["left_ankle"]], atol=1e-12)
    thigh = np.linalg.norm(locked[10:20, index["left_knee"]] - locked[10:20, index["left_hip"]], axis=1)
    shin = np.linalg.norm(ankle[10:20] - locked[10:20, index["left_knee"]], axis=1)
    measured_thigh = np.linalg.norm([0.0, -0.45, 0.12])
    np.testing.assert_allclose(thigh, measured_thigh, atol=1e-6)
    measured_shin = np.linalg.norm(points[:, index["left_ankle"]] - points[:, index["left_knee"]], axis=1)
    np.testing.assert_allclose(shin, np.median(measured_shin), atol=1e-6)
    changed = ~np.isclose(locked, points, atol=0, rtol=0) & np.isfinite(points)
    frames, keypoints = np.nonzero(changed.any(axis=2))
    assert set(frames) == set(range(10 - 2, 20 + 2))  # the span and its blend windows only (0.1 s: 2 frames at 30 fps)
    assert {NAMES[k] for k in keypoints} == {"left_knee", "left_ankle", "left_heel", "left_big_toe", "left_small_toe"}
    # the blend spreads the 4.5 cm to the anchor over the window: 2.5 cm steps (1 measured + 1.5), no pop
    steps = np.linalg.norm(np.diff(ankle[10 - 2 - 1:10 + 1], axis=0), axis=1)
    np.testing.assert_allclose(steps, 0.025, atol=1e-9)


@pytest.fixture(scope="module")
def walk_exports(tmp_path_factory):
    """The walker's tracks (noisy 3D, true contacts) exported to BVH and glb with and without foot locking."""
    folder = tmp_path_factory.mktemp("footlock")
    tracks = folder / "walk.jsonl"
    contacts = write_walk_tracks(tracks, FRAMES, seed=0)
    files = {(fmt, lock): export_tracks(tracks, fmt, folder / f"walk_{lock}.{'bvh' if fmt == 'bvh' else 'glb'}", foot_lock=lock)
             for fmt in ("bvh", "gltf") for lock in (True, False)}
    return tracks, contacts, files


def _away_from_contacts(contacts: np.ndarray) -> np.ndarray:
    """(T, 2) frames outside every contact span and its blend windows (the tracks at 30 fps)."""
    times = np.arange(len(contacts)) / 30
    return np.stack([lock_weights(np.zeros((len(contacts), 3)), contacts[:, s], times)[0] == 0 for s in range(2)], axis=1)


@pytest.mark.parametrize("fmt,read", [("bvh", bvh_ankles), ("gltf", glb_ankles)])
def test_exported_feet_stop_sliding_during_contacts(walk_exports, fmt, read):
    _, contacts, files = walk_exports
    locked, free = read(files[fmt, True]), read(files[fmt, False])
    assert locked.shape == free.shape == (FRAMES, 2, 3)
    before, after = slide(free, contacts), slide(locked, contacts)
    # measured on seed 0 (150 frames): 19.1 mm/frame before, 1.65 after (0.09x)
    assert before > 10.0 and after < 0.3 * before and after < 3.0, (before, after)
    away = _away_from_contacts(contacts)
    assert away.sum() > 40  # swing frames beyond the blend windows exist to compare
    np.testing.assert_allclose(locked[away], free[away], atol=1e-4)


def test_no_foot_lock_on_the_command_line(walk_exports, tmp_path, capsys):
    tracks, _, files = walk_exports
    assert main(["export", str(tracks), "--to", "bvh", "--no-foot-lock", "-o", str(tmp_path / "free.bvh")]) == 0
    assert (tmp_path / "free.bvh").read_text() == files["bvh", False].read_text()
    assert main(["export", str(tracks), "--to", "bvh", "-o", str(tmp_path / "locked.bvh")]) == 0
    assert (tmp_path / "locked.bvh").read_text() == files["bvh", True].read_text()
    capsys.readouterr()
    assert main(["export", str(tracks), "--to", "csv", "--no-foot-lock", "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--no-foot-lock" in err and err.count("\n") == 1
    with pytest.raises(UserError, match="no-foot-lock"):
        export_tracks(tracks, "trc", tmp_path / "x.trc", foot_lock=False)


def test_locked_glb_passes_the_khronos_validator(walk_exports):
    need("gltf-validator", (NODE_MODULES / "gltf-validator").is_dir() and shutil.which("node") is not None)
    _, _, files = walk_exports
    path = str(files["gltf", True])
    done = subprocess.run(["node", str(TESTS / "validate_gltf.js"), path], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert done.returncode == 0, done.stderr
    (report,) = [json.loads(line) for line in done.stdout.splitlines()]
    assert report["errors"] == 0 and report["warnings"] == 0, report
    assert {code for code, _, _, _ in report["messages"]} <= ACCEPTED_INFOS, report["messages"]


def test_lock_feet_with_missing_points_locks_what_it_can():
    """Unknown frames inside a span keep NaN and do not move the anchor; a leg never seen is left alone."""
    count = 12
    index = {n: i for i, n in enumerate(NAMES)}
    points = np.full((count, len(NAMES), 3), np.nan)
    t = np.arange(count)[:, None]
    points[:, index["left_hip"]] = [0.1, 0.9, 0.0]
    points[:, index["left_knee"]] = [0.1, 0.45, 0.1]
    points[:, index["left_ankle"]] = np.array([0.1, 0.05, 0.0]) + t * [0.0, 0.0, 0.01]
    points[5, index["left_ankle"]] = np.nan
    contacts = np.zeros((count, 2), bool)
    contacts[3:9] = True
    locked = lock_feet(points, NAMES, contacts, np.arange(count) / 30)
    known = [3, 4, 6, 7, 8]
    np.testing.assert_allclose(locked[known, index["left_ankle"]], np.tile([0.1, 0.05, 0.06], (5, 1)), atol=1e-9)
    assert np.isnan(locked[5, index["left_ankle"]]).all() and np.isnan(locked[:, index["right_knee"]]).all()
    np.testing.assert_array_equal(locked[[0, 11]], points[[0, 11]])  # outside the span and its blend windows
