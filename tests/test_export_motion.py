"""BVH and glTF export of solved bone rotations, read back by bvhio / pygltflib."""

from __future__ import annotations

import json

import numpy as np
import pytest

from realtime.cli import main
from realtime.errors import UserError
from realtime.export import export_tracks, read_tracks
from realtime.export.mocap import motion_from_tracks
from realtime.frames import Frame, Person
from realtime.rig.solver import forward_kinematics
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

FRAMES = 45
_IMAGE = np.zeros((2, 2, 3), np.uint8)


def _write_tracks(path, camera: np.ndarray, *, with_3d: bool = True, second_person: bool = False):
    """A tracks file of the synthetic person (id 1), 2D by a pinhole projection."""
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic.mp4",
                     model={"pose": "synthetic"}) as writer:
        for t in range(len(camera)):
            xyz = camera[t]
            xy = 500.0 * xyz[:, :2] / xyz[:, 2:] + [320.0, 240.0]
            scores = np.where(np.isfinite(xyz[:, 0]), 0.9, 0.0)
            people = [Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                             keypoint_scores=scores.astype(np.float32), keypoints3d=xyz.astype(np.float32) if with_3d else None)]
            if second_person:
                people.append(people[0].replace(track_id=2))
            writer.write(Frame(index=t, timestamp=t / FPS, image=_IMAGE, people=tuple(people)))
    return path


@pytest.fixture(scope="module")
def camera():
    return synthetic_clip(FRAMES)[4]


@pytest.fixture()
def tracks_file(tmp_path, camera):
    return _write_tracks(tmp_path / "walk.jsonl", camera)


def _solver_heads(tracks_file, fingers=False):
    motion, _ = motion_from_tracks(read_tracks(tracks_file), "a BVH file", smooth="rts", fingers=fingers)
    heads, _ = forward_kinematics(motion.skeleton, motion.root_position, motion.rotations)
    return motion, heads


@pytest.mark.parametrize("fingers", [False, True])
def test_bvh_read_back_by_bvhio(tracks_file, tmp_path, fingers):
    bvhio = pytest.importorskip("bvhio")
    args = ["export", str(tracks_file), "--to", "bvh", "-o", str(tmp_path / "walk.bvh")] + (["--fingers"] if fingers else [])
    assert main(args) == 0
    motion, heads = _solver_heads(tracks_file, fingers)
    container = bvhio.readAsBvh(str(tmp_path / "walk.bvh"))
    assert container.FrameCount == FRAMES
    assert container.FrameTime == pytest.approx(1 / FPS, abs=1e-7)
    root = bvhio.readAsHierarchy(str(tmp_path / "walk.bvh"))
    joints = {joint.Name: joint for joint, _, _ in root.layout()}
    assert list(joints) == motion.skeleton.names
    for frame in (0, 17, FRAMES - 1):
        root.loadPose(frame)
        read = np.array([list(joints[name].PositionWorld) for name in motion.skeleton.names]) / 100.0  # cm -> m
        np.testing.assert_allclose(read, heads[frame], atol=1e-4)
    # the (RTS-smoothed) motion follows the person: FK wrist vs the recorded wrist keypoint
    names = motion.skeleton.names
    points = read_tracks(tracks_file).people[1].keypoints3d
    wrist = points[:, NAMES.index("left_wrist")] * [1, -1, -1] - motion.origin
    distance = np.linalg.norm(heads[:, names.index("leftHand")] - wrist, axis=-1)
    assert np.median(distance) < 0.005 and distance.max() < 0.02


def test_gltf_read_back_by_pygltflib(tracks_file, tmp_path):
    import pygltflib

    out = export_tracks(tracks_file, "gltf", tmp_path / "walk.glb", fingers=True)
    assert out.suffix == ".glb"
    motion, _ = _solver_heads(tracks_file, fingers=True)
    gltf = pygltflib.GLTF2().load(str(out))
    names = [node.name for node in gltf.nodes]
    assert names == ["sapiens_person"] + motion.skeleton.names
    parents = {child: i for i, node in enumerate(gltf.nodes) for child in node.children}
    for b, parent in enumerate(motion.skeleton.parents):
        assert parents[b + 1] == (0 if parent < 0 else parent + 1)
    (animation,) = gltf.animations
    bones = len(motion.skeleton.names)
    assert len(animation.channels) == bones + 1
    paths = [(c.target.node, c.target.path) for c in animation.channels]
    assert paths[0] == (1, "translation") and sorted(paths[1:]) == [(b + 1, "rotation") for b in range(bones)]
    blob = gltf.binary_blob()
    for channel in animation.channels:
        sampler = animation.samplers[channel.sampler]
        for accessor_index in (sampler.input, sampler.output):
            assert gltf.accessors[accessor_index].count == FRAMES
        assert gltf.accessors[sampler.input].max == pytest.approx([(FRAMES - 1) / FPS], abs=1e-6)
    # one rotation channel's samples are the solver's quaternions
    sampler = animation.samplers[animation.channels[5].sampler]
    accessor = gltf.accessors[sampler.output]
    view = gltf.bufferViews[accessor.bufferView]
    values = np.frombuffer(blob, np.float32, count=FRAMES * 4, offset=view.byteOffset).reshape(FRAMES, 4)
    bone = animation.channels[5].target.node - 1
    np.testing.assert_allclose(values, motion.rotations[:, bone], atol=1e-6)


def test_motion_export_needs_3d_keypoints(tmp_path, camera, capsys):
    flat = _write_tracks(tmp_path / "flat.jsonl", camera, with_3d=False)
    with pytest.raises(UserError, match=r"--tasks pose,depth"):
        export_tracks(flat, "bvh")
    assert main(["export", str(flat), "--to", "gltf"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--tasks pose,depth" in err and err.count("\n") == 1


def test_motion_export_asks_for_one_person(tmp_path, camera):
    two = _write_tracks(tmp_path / "two.jsonl", camera, second_person=True)
    with pytest.raises(UserError, match="--person"):
        export_tracks(two, "bvh")
    assert export_tracks(two, "bvh", person=2).exists()


def test_frames_dropped_by_a_live_source_keep_the_clip_duration(tmp_path, camera):
    path = _write_tracks(tmp_path / "gaps.jsonl", camera)
    lines = path.read_text().splitlines()
    kept = [line for line in lines if json.loads(line).get("frame") not in (10, 11, 12)]
    path.write_text("\n".join(kept) + "\n")
    motion, fps = motion_from_tracks(read_tracks(path), "a BVH file")
    assert fps == FPS and len(motion.times) == FRAMES


# Blender, the glTF-Validator, ufbx and three-vrm-animation open every motion file in tests/test_motion_clients.py.
