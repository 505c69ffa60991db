"""The world stage in the chain egomotion -> ground -> world -> motion, on the synthetic room
(`synthetic/world_scene.py`): the camera's pose per frame (`Frame.camera`), the switch to the world
when the camera moves (`--camera auto`), roots in the world (two performers keep their distance),
heights, and a static camera that leaves every bone as it was without the stage."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realtime.frames import Camera, DenseMaps, Frame, Person, rounded_camera
from realtime.rig.bones import bone_table
from realtime.stages.egomotion import person_mask
from tests.world_tracks import NAMES, run_chain, write_tracks

HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]


@pytest.fixture(scope="module")
def pan():
    return run_chain("pan", 240)


def test_a_panning_camera_is_tracked_and_the_people_move_into_the_world(pan):
    truth, frames, stages = pan
    world_stage = stages[2]
    assert all(f.camera is not None for f in frames)
    switched = [f.index for f in frames if f.camera.world]
    assert switched and world_stage.moved_at == switched[0] and switched == list(range(switched[0], len(frames)))
    # the camera's rotation relative to the first frame of the fixed world, against the truth
    start = next(f.index for f in frames if f.camera.grounded)
    first = frames[start].camera.world_from_camera
    errors = []
    for f, pose in zip(frames[start:], truth.world_from_camera[start:]):
        estimated = np.linalg.inv(first) @ f.camera.world_from_camera
        true = np.linalg.inv(truth.world_from_camera[start]) @ pose
        errors.append(np.degrees(Rotation.from_matrix(estimated[:3, :3].T @ true[:3, :3]).magnitude()))
    assert np.mean(errors) < 0.5
    # the world is upright: the truth's up (world y) maps to y
    camera = frames[-1].camera.world_from_camera
    up_in_camera = np.linalg.inv(truth.world_from_camera[-1])[:3, :3] @ [0.0, 1.0, 0.0]
    assert np.degrees(np.arccos(np.clip((camera[:3, :3] @ up_in_camera)[1], -1, 1))) < 2.0
    # roots in the world: the two performers keep their true distance while the camera pans
    rows = [i for i in switched if all(p.bones is not None and not p.bones.root_held for p in frames[i].people)]
    estimated = np.array([np.linalg.norm(frames[i].people[0].bones.root_position - frames[i].people[1].bones.root_position)
                          for i in rows])
    true = np.linalg.norm(truth.joints[0, rows][:, HIPS].mean(axis=1) - truth.joints[1, rows][:, HIPS].mean(axis=1), axis=1)
    assert np.mean(np.abs(estimated - true) / true) < 0.05
    # roots stand above the world's floor at hip height
    heights = [p.bones.root_position[1] for i in rows for p in frames[i].people]
    assert 0.75 < np.median(heights) < 1.1
    # each performer's height is measured with a confidence, and said in the summary
    assert all(p.height is not None and 1.4 < p.height[0] < 2.1 and 0 < p.height[1] <= 1 for p in frames[-1].people)
    lines = world_stage.summary_lines()
    assert lines[0].startswith("camera: moved") and sum(line.startswith("height: person") for line in lines) == 2


def test_a_static_camera_stays_put_and_leaves_the_bones_as_without_the_stage():
    # the rule-based contacts: with the learned ones (a foot held also while only its toes are down) the pin settling
    # a held foot flat lowers the hips by up to 3 cm here (bench/RESULTS.md, "Issue 51: learned contacts and
    # --motion-lag"; left to the pin's tuning)
    _, with_stage, stages = run_chain("static", 120, contacts="rules")
    _, without, _ = run_chain("static", 120, world=False, contacts="rules")
    assert all(f.camera.status in ("static", "waiting") and not f.camera.world for f in with_stage)
    assert all(np.array_equal(f.camera.world_from_camera, with_stage[-1].camera.world_from_camera) for f in with_stage
               if f.camera.grounded)
    # the bones stay camera-relative; only the legs differ: the stage's floor lets the motion stage stand a held foot
    # on it (realtime.rig.lock.FootPin), the hips lowered for a foot just out of reach at most
    names = [b.name for b in bone_table()]
    body = [i for i, name in enumerate(names) if not any(part in name for part in ("Leg", "Foot", "Toes"))]
    for a, b in zip(with_stage, without):
        for p, q in zip(a.people, b.people):
            assert (p.bones is None) == (q.bones is None)
            if p.bones is not None:
                np.testing.assert_allclose(p.bones.root_position, q.bones.root_position, atol=0.01)
                np.testing.assert_array_equal(p.bones.rotations[body], q.bones.rotations[body])
    assert stages[2].summary_lines()[0].startswith("camera: static")


def test_camera_static_runs_no_egomotion_and_gives_the_floor_frame():
    _, frames, stages = run_chain("pan", 100, camera="static")
    assert stages[0].tracker is None
    assert all(not f.camera.world and f.camera.status == "static" for f in frames)
    grounded = [f for f in frames if f.camera.grounded]
    assert grounded and all(np.array_equal(f.camera.world_from_camera, grounded[0].camera.world_from_camera) for f in grounded)
    assert grounded[0].camera.intrinsics is not None and grounded[0].camera.intrinsics[0] == pytest.approx(500, rel=0.02)


def test_camera_moving_puts_people_in_the_world_once_the_floor_is_known():
    _, frames, stages = run_chain("static", 200, camera="moving")
    grounded = [f.index for f in frames if f.camera.grounded]
    assert grounded and [f.index for f in frames if f.camera.world] == grounded


def test_the_person_mask_is_the_seg_on_its_own_frame_else_the_boxes():
    image = np.zeros((100, 200, 3), np.uint8)
    person = Person(box=np.array([20, 10, 60, 90], np.float32))
    seg = np.zeros((50, 100), np.uint8)
    seg[5:20, 10:30] = 3
    fresh = Frame(index=4, timestamp=0.0, image=image, people=(person,), dense=DenseMaps(computed_on=4, seg=seg))
    stale = fresh.replace(index=5)
    mask = person_mask(fresh, (100, 200))
    assert mask.sum() == 4 * (seg > 0).sum()
    boxes = person_mask(stale, (50, 100))
    assert boxes[25, 20] and not boxes[25, 40] and boxes.sum() == pytest.approx(20 * 40 * 1.1 * 1.1, rel=0.15)
    assert person_mask(Frame(index=0, timestamp=0.0, image=image), (100, 200)) is None


def test_a_camera_rounds_to_what_the_tracks_file_keeps():
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_euler("xyz", [12.3456789, -45.6, 100.1], degrees=True).as_matrix()
    pose[:3, 3] = [1.23456789, -0.5, 7.0]
    camera = rounded_camera(pose, np.array([500.123, 501.0, 319.5, 239.5]), "tracking", True, True)
    again = Camera(camera.position.copy(), camera.rotation.copy(), camera.intrinsics.copy(), "tracking", True, True)
    np.testing.assert_array_equal(again.world_from_camera, camera.world_from_camera)
    np.testing.assert_allclose(camera.world_from_camera, pose, atol=2e-6)
    with pytest.raises(ValueError):
        Camera(np.zeros(3), np.array([0, 0, 0, 1.0]), status="moving")
    assert rounded_camera(pose, None, "tracking", True, True, 1.0123456789).pointmap_scale == 1.012346
    for scale in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError):
            Camera(np.zeros(3), np.array([0, 0, 0, 1.0]), pointmap_scale=scale)


def test_the_tracks_keep_camera_floor_up_and_height_and_a_stream_sends_the_same_bytes(pan, tmp_path):
    from realtime.export.jsonl import read_tracks
    from realtime.replay import read_frames
    from realtime.stages import live_senders

    _, frames, stages = pan
    bone_names = stages[-1].bone_names
    path = write_tracks(frames, bone_names, tmp_path / "pan.jsonl")
    replayed = list(read_frames(path, len(NAMES), bone_names))
    assert len(replayed) == len(frames)
    for a, b in zip(frames, replayed):
        assert (a.camera.status, a.camera.world, a.camera.grounded) == (b.camera.status, b.camera.world, b.camera.grounded)
        assert a.camera.pointmap_scale == b.camera.pointmap_scale
        np.testing.assert_array_equal(a.camera.world_from_camera, b.camera.world_from_camera)
        assert (a.floor_up is None) == (b.floor_up is None)
        if a.floor_up is not None:
            np.testing.assert_array_equal(a.floor_up, b.floor_up)
        for p, q in zip(a.people, b.people):
            assert p.height == q.height
            np.testing.assert_array_equal(p.bones.root_position, q.bones.root_position)
    run_sender, stream_sender = (live_senders(vmc=["127.0.0.1:9"], vmc_person="all", tasks=("pose", "pointmap"))[0]
                                 for _ in range(2))
    for a, b in zip(frames, replayed):
        assert run_sender.datagrams(a) == stream_sender.datagrams(b)
    for sender in (run_sender, stream_sender):
        sender.close()
    tracks = read_tracks(path)
    assert tracks.camera is not None and tracks.camera.moved and tracks.camera.known.all()
    np.testing.assert_allclose(tracks.camera.world_from_camera()[-1], frames[-1].camera.world_from_camera, atol=1e-12)
    assert tracks.camera.status[-1] == frames[-1].camera.status
    scales = [f.camera.pointmap_scale for f in frames]  # the egomotion's, on the depth frames (every 5th) only
    assert [f.index for f in frames if f.camera.pointmap_scale is not None] == list(range(0, len(frames), 5))
    np.testing.assert_array_equal(tracks.camera.pointmap_scale, [np.nan if s is None else s for s in scales])
    assert 0.93 < np.nanmin(tracks.camera.pointmap_scale) and np.nanmax(tracks.camera.pointmap_scale) < 1.07  # 2 % jitter
    np.testing.assert_array_equal(tracks.floor_up[-1], frames[-1].floor_up)  # the scene's floor, in the last camera
    assert tracks.people[1].stature == frames[-1].people[0].height


def test_csv_and_trc_exports_are_in_the_world_when_the_camera_moved(pan, tmp_path):
    import csv

    from realtime.errors import UserError
    from realtime.export import export_tracks
    from realtime.export.world import camera_csv_path

    _, frames, stages = pan
    path = write_tracks(frames, stages[-1].bone_names, tmp_path / "pan.jsonl")
    out = export_tracks(path, "csv", tmp_path / "pan.csv")
    rows = list(csv.DictReader(open(out)))
    world = np.array([[float(r["p1_left_hip_X"]), float(r["p1_left_hip_Y"]), float(r["p1_left_hip_Z"])] for r in rows[-20:]])
    assert 0.7 < np.median(world[:, 1]) < 1.1  # y up, the floor at 0
    camera_rows = list(csv.DictReader(open(camera_csv_path(out))))
    assert len(camera_rows) == len(frames) and camera_rows[-1]["world"] == "1"
    assert float(camera_rows[-1]["x"]) == pytest.approx(frames[-1].camera.position[0], abs=1e-5)
    local = export_tracks(path, "csv", tmp_path / "local.csv", root="camera")
    rows = list(csv.DictReader(open(local)))
    assert float(rows[-1]["p1_left_hip_Z"]) > 2  # camera frame: z forward, metres away
    trc = export_tracks(path, "trc", tmp_path / "pan.trc", person=1)
    assert trc.exists() and camera_csv_path(trc).exists()
    with pytest.raises(UserError, match="--root applies"):
        export_tracks(path, "npz", tmp_path / "pan.npz", root="world")
