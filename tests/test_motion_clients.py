"""Every motion file we write, opened by the real clients: Blender, the Khronos glTF-Validator,
ufbx (an FBX reader independent of Blender) and @pixiv/three-vrm-animation.

One clip (the synthetic person, 45 frames at 30 fps) is exported through `export_tracks`
to bvh / glb / fbx on each rig (vrm, mixamo, unreal, smpl) and to vrma; one Blender
process imports them all and reports every bone's world-space head at sampled frames,
which must equal our forward kinematics within 1e-4 m. Under CI=true a missing tool
fails the tests; elsewhere they skip with the install line.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realtime.cli import main
from realtime.errors import UserError
from realtime.export import export_tracks, read_tracks
from realtime.export.mocap import marks_path, motion_from_tracks
from realtime.export.to_fbx import blender_env
from realtime.frames import Frame, Person
from realtime.rig.retarget import RIGS, retarget, rig_spec
from realtime.rig.solver import Motion, forward_kinematics
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip, synthetic_motion, synthetic_skeleton

FRAMES = 45
SAMPLED = (0, 17, FRAMES - 1)
TESTS = Path(__file__).resolve().parent
NODE_MODULES = Path(os.environ.get("SAPIENS_NODE_MODULES", "/opt/sapiens-ci-node/node_modules"))
INSTALL = {
    "blender": "apt-get install -y --no-install-recommends blender python3-numpy",
    "gltf-validator": f"npm install --prefix {NODE_MODULES.parent} gltf-validator@2.0.0-dev.3.10 (or set SAPIENS_NODE_MODULES)",
    "three-vrm-animation": f"npm install --prefix {NODE_MODULES.parent} three@0.180.0 @pixiv/three-vrm-animation@3.5.5",
    "ufbx": "pip install ufbx==0.0.5",
}
# (format, rig): fingers on every rig that has finger bones
CASES = [(fmt, rig) for rig in RIGS for fmt in ("bvh", "gltf", "fbx")] + [("vrma", "vrm")]
SUFFIX = {"bvh": ".bvh", "gltf": ".glb", "fbx": ".fbx", "vrma": ".vrma"}
# glTF-Validator infos we accept: leaf bones are nodes with nothing under them (NODE_EMPTY), and the
# validator does not know the VRMC_vrm_animation extension (checked by our own schema test and three-vrm).
ACCEPTED_INFOS = {"NODE_EMPTY", "UNSUPPORTED_EXTENSION"}


def need(tool: str, present: bool) -> None:
    """Skip (fail under CI=true) when a client is missing, with the line that installs it."""
    if present:
        return
    message = f"{tool} is not installed; install it with: {INSTALL[tool]}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def khronos_reports(paths: list[str]) -> list[dict]:
    """The Khronos glTF-Validator's report of each file, in order (tests/validate_gltf.js)."""
    need("gltf-validator", (NODE_MODULES / "gltf-validator").is_dir() and shutil.which("node") is not None)
    done = subprocess.run(["node", str(TESTS / "validate_gltf.js"), *paths], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert done.returncode == 0, done.stderr
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["file"] for r in reports] == paths
    return reports


def has_blender() -> bool:
    return shutil.which("blender") is not None


def _write_tracks(path: Path, camera: np.ndarray) -> Path:
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic.mp4",
                     model={"pose": "synthetic"}) as writer:
        for t in range(len(camera)):
            xyz = camera[t]
            xy = 500.0 * xyz[:, :2] / xyz[:, 2:] + [320.0, 240.0]
            scores = np.where(np.isfinite(xyz[:, 0]), 0.9, 0.0)
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=scores.astype(np.float32), keypoints3d=xyz.astype(np.float32))
            writer.write(Frame(index=t, timestamp=t / FPS, image=np.zeros((2, 2, 3), np.uint8), people=(person,)))
    return path


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """The tracks file and every file exported from it."""
    folder = tmp_path_factory.mktemp("clients")
    tracks = _write_tracks(folder / "walk.jsonl", synthetic_clip(FRAMES)[4])
    files = {}
    for fmt, rig in CASES:
        if fmt == "fbx" and not has_blender():
            continue
        out = folder / f"walk_{rig}{SUFFIX[fmt]}"
        files[fmt, rig] = export_tracks(tracks, fmt, out, fingers=rig != "smpl", rig=None if fmt == "vrma" else rig)
    return tracks, files


@functools.lru_cache(maxsize=None)
def expected_motion(tracks: Path, rig: str) -> Motion:
    motion, _ = motion_from_tracks(read_tracks(tracks), "a BVH file", smooth="rts", fingers=rig != "smpl")
    return retarget(motion, rig)


def blender_axes(points: np.ndarray) -> np.ndarray:
    """Our rig axes (Y up, facing +Z) -> Blender's after its importers' default conversion: (x, -z, y)."""
    return np.stack([points[..., 0], -points[..., 2], points[..., 1]], axis=-1)


@pytest.fixture(scope="module")
def blender_heads(clip, tmp_path_factory):
    """One Blender process imports every file; {path: report} (see tests/blender_heads.py)."""
    need("blender", has_blender())
    _, files = clip
    folder = tmp_path_factory.mktemp("blender")
    jobs = [{"file": str(path), "fps": FPS, "frames": list(SAMPLED)} for path in files.values()]
    (folder / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(["blender", "-b", "--factory-startup", "--python-exit-code", "1", "--python",
                           str(TESTS / "blender_heads.py"), "--", str(folder / "jobs.json"), str(folder / "result.json")],
                          capture_output=True, text=True, timeout=600, env=blender_env(shutil.which("blender")))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((folder / "result.json").read_text())


@pytest.mark.parametrize("fmt,rig", CASES)
def test_blender_imports_each_file_at_our_forward_kinematics(clip, blender_heads, fmt, rig):
    tracks, files = clip
    if (fmt, rig) not in files:
        need("blender", has_blender())
    report = blender_heads[str(files[fmt, rig])]
    motion = expected_motion(tracks, rig)
    heads, _ = forward_kinematics(motion.skeleton, motion.root_position, motion.rotations)
    expected = blender_axes(heads[list(SAMPLED)])
    assert report["last"] - report["first"] + 1 == FRAMES and report["fps"] == pytest.approx(FPS)
    names = motion.skeleton.names
    assert set(names) <= set(report["bones"]), sorted(set(names) - set(report["bones"]))
    got = np.array([report["bones"][name] for name in names]).transpose(1, 0, 2)  # (frames, bones, 3)
    np.testing.assert_allclose(got, expected, atol=1e-4)
    if fmt == "fbx":
        assert report["armatures"] == 1 and report["meshes"] == 1  # a skinned character, not bare nodes


@pytest.mark.parametrize("rig", [r for r in RIGS if r != "vrm"])
def test_rigs_put_shared_joints_where_the_vrm_rig_has_them(clip, blender_heads, rig):
    _, files = clip
    names = rig_spec(rig).names
    for fmt in ("bvh", "gltf", "fbx"):
        if (fmt, rig) not in files:
            continue
        ours = blender_heads[str(files[fmt, "vrm"])]["bones"]
        theirs = blender_heads[str(files[fmt, rig])]["bones"]
        shared = [name for name in names if name in ours]
        assert len(shared) >= 21  # SMPL: the 21 body bones; the others with fingers too
        np.testing.assert_allclose([theirs[names[n]] for n in shared], [ours[n] for n in shared], atol=1e-4)


def test_every_gltf_passes_the_khronos_validator(clip):
    _, files = clip
    paths = [str(path) for (fmt, _), path in files.items() if fmt in ("gltf", "vrma")]
    reports = khronos_reports(paths)
    for report in reports:
        assert report["errors"] == 0 and report["warnings"] == 0, report
        codes = {code for code, _, pointer, message in report["messages"]}
        assert codes <= ACCEPTED_INFOS, report["messages"]
        unsupported = [m for code, _, _, m in report["messages"] if code == "UNSUPPORTED_EXTENSION"]
        assert all("VRMC_vrm_animation" in m for m in unsupported) and (len(unsupported) == 1) == report["file"].endswith(".vrma")


UFBX_READ = """
import json, os, sys, ufbx
scene = ufbx.load_file(sys.argv[1])
stack = scene.anim_stacks[0]
print(json.dumps({"version": scene.metadata.version, "ascii": scene.metadata.ascii, "bones": len(scene.bones),
                  "bone_names": sorted(node.name for node in scene.nodes if node.bone is not None),
                  "fps": scene.settings.frames_per_second, "unit_meters": scene.settings.unit_meters,
                  "up": scene.settings.axes.up.name, "front": scene.settings.axes.front.name, "stacks": len(scene.anim_stacks),
                  "begin": stack.time_begin, "end": stack.time_end, "skins": len(scene.skin_deformers),
                  "clusters": sorted(cluster.name for cluster in scene.skin_clusters),
                  "bind_pose": [len(pose.bone_poses) for pose in scene.poses if pose.is_bind_pose]}))
sys.stdout.flush()
os._exit(0)  # the binding (0.0.5) can crash while freeing the scene at exit
"""


def test_ufbx_reads_the_fbx_files(clip):
    """ufbx (github.com/ufbx/ufbx, an FBX reader independent of Blender), in a child process: its
    Python binding 0.0.5 crashes when `scene.bones` is iterated, a cluster's or pose's `bone_node` is
    read, or a scene is freed, so bones are named via their nodes and the child ends with os._exit."""
    need("blender", has_blender())
    present = subprocess.run([sys.executable, "-c", "import ufbx"], capture_output=True).returncode == 0
    need("ufbx", present)
    tracks, files = clip
    for rig in RIGS:
        path = files["fbx", rig]
        assert path.read_bytes()[:20] == b"Kaydara FBX Binary  "
        done = subprocess.run([sys.executable, "-c", UFBX_READ, str(path)], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        read = json.loads(done.stdout)
        motion = expected_motion(tracks, rig)
        bones = len(motion.skeleton.names)
        assert read["version"] == 7400 and not read["ascii"]
        assert read["bones"] == bones and read["bone_names"] == sorted(motion.skeleton.names)
        assert read["fps"] == pytest.approx(FPS) and read["unit_meters"] == pytest.approx(1.0)
        assert (read["up"], read["front"]) == ("POSITIVE_Y", "POSITIVE_Z")
        assert read["stacks"] == 1 and read["begin"] == pytest.approx(0.0)
        assert round((read["end"] - read["begin"]) * FPS) + 1 == FRAMES
        assert read["skins"] == 1 and read["clusters"] == read["bone_names"]  # one skin: a box per bone, weighted to it
        assert read["bind_pose"] == [bones + 2]  # one bind pose: every bone, the armature and the mesh node


def test_vrma_extension_maps_every_bone_to_its_node(clip):
    """The extension against the VRMC_vrm_animation 1.0 schema's rules (specVersion, required bones,
    humanBones.<bone>.node an index) and each node named as its bone."""
    import pygltflib

    jsonschema = pytest.importorskip("jsonschema")
    _, files = clip
    gltf = pygltflib.GLTF2().load_binary(str(files["vrma", "vrm"]))  # a .glb by content
    assert gltf.extensionsUsed == ["VRMC_vrm_animation"]
    extension = gltf.extensions["VRMC_vrm_animation"]
    bones = ["hips", "spine", "chest", "neck", "head"] + [f"{s}{b}" for s in ("left", "right") for b in (
        "UpperLeg", "LowerLeg", "Foot", "Toes", "Shoulder", "UpperArm", "LowerArm", "Hand",
        "ThumbMetacarpal", "ThumbProximal", "ThumbDistal",
        *(f"{f}{p}" for f in ("Index", "Middle", "Ring", "Little") for p in ("Proximal", "Intermediate", "Distal")))]
    required = ["hips", "spine", "head"] + [f"{s}{b}" for s in ("left", "right")
                                            for b in ("UpperLeg", "LowerLeg", "Foot", "UpperArm", "LowerArm", "Hand")]
    bone = {"type": "object", "properties": {"node": {"type": "integer", "minimum": 0}}, "required": ["node"]}
    schema = {"type": "object", "required": ["specVersion", "humanoid"],
              "properties": {"specVersion": {"const": "1.0"},
                             "humanoid": {"type": "object", "required": ["humanBones"], "properties": {"humanBones": {
                                 "type": "object", "required": required, "additionalProperties": False,
                                 "properties": {name: bone for name in bones}}}}}}
    jsonschema.validate(extension, schema)
    mapping = extension["humanoid"]["humanBones"]
    assert len(mapping) == 51 and all(gltf.nodes[v["node"]].name == name for name, v in mapping.items())
    assert all(gltf.nodes[v["node"]].rotation in (None, [0, 0, 0, 1]) for v in mapping.values())  # rest = T-pose


def test_three_vrm_animation_plays_the_vrma(clip):
    need("three-vrm-animation", (NODE_MODULES / "@pixiv" / "three-vrm-animation").is_dir() and shutil.which("node") is not None)
    tracks, files = clip
    done = subprocess.run(["node", str(TESTS / "load_vrma.mjs"), "17", str(files["vrma", "vrm"])], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "SAPIENS_NODE_MODULES": str(NODE_MODULES)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    motion = expected_motion(tracks, "vrm")
    assert report["animations"] == 1 and report["duration"] == pytest.approx((FRAMES - 1) / FPS, abs=1e-6)
    assert report["rotation"] == {name: FRAMES for name in motion.skeleton.names} and report["translation"] == {"hips": FRAMES}
    np.testing.assert_allclose(report["restHipsPosition"], [0, motion.skeleton.floor_height(), 0], atol=1e-6)
    np.testing.assert_allclose(report["hipsAt"], motion.root_position[17], atol=1e-5)
    for b, name in enumerate(motion.skeleton.names):
        np.testing.assert_allclose(report["rotationAt"][name], motion.rotations[17, b], atol=1e-6)


def test_held_marks_reach_the_files(tmp_path):
    """A wrist lost over frames 20-24 (no smoothing, which would bridge the gap): the forearm and hand
    hold their rotations there, and the glb extras and the BVH sidecar say so, in the rig's names."""
    import pygltflib

    camera = synthetic_clip(FRAMES)[4].copy()
    camera[20:25, NAMES.index("left_wrist")] = np.nan
    tracks = _write_tracks(tmp_path / "lost.jsonl", camera)
    motion, _ = motion_from_tracks(read_tracks(tracks), "a BVH file", smooth=None)
    names = motion.skeleton.names
    assert [names[b] for b in np.flatnonzero(motion.held.any(axis=0))] == ["leftLowerArm", "leftHand"]
    glb = export_tracks(tracks, "gltf", tmp_path / "lost.glb", smooth="none")
    marks = pygltflib.GLTF2().load(str(glb)).animations[0].extras["sapiens"]
    assert marks == {"fps": FPS, "frames": FRAMES, "held": {"leftLowerArm": [[20, 24]], "leftHand": [[20, 24]]}}
    bvh = export_tracks(tracks, "bvh", tmp_path / "lost.bvh", smooth="none", rig="mixamo")
    sidecar = json.loads(marks_path(bvh).read_text())
    assert sidecar["held"] == {"mixamorig:LeftForeArm": [[20, 24]], "mixamorig:LeftHand": [[20, 24]]}


def test_retargeting_keeps_every_shared_joint_and_sets_the_rest_pose():
    skeleton = synthetic_skeleton()
    root, rotations = synthetic_motion(skeleton, 20)
    count = len(root)
    motion = Motion(skeleton, np.arange(count) / FPS, root, rotations, np.zeros((count, len(skeleton.bones)), bool),
                    np.zeros(count, bool), np.zeros(3))
    heads, _ = forward_kinematics(skeleton, root, rotations)
    for rig, bones in (("mixamo", 52), ("unreal", 55)):  # 51 + Spine1; + spine_02, spine_04, spine_05, neck_02
        moved = retarget(motion, rig)
        assert len(moved.skeleton.names) == bones
        rig_heads, _ = forward_kinematics(moved.skeleton, moved.root_position, moved.rotations)
        index = {name: i for i, name in enumerate(moved.skeleton.names)}
        names = rig_spec(rig).names
        for b, name in enumerate(skeleton.names):
            np.testing.assert_allclose(rig_heads[:, index[names[name]]], heads[:, b], atol=1e-9)
    unreal = retarget(motion, "unreal").skeleton
    lower = unreal.offsets[unreal.names.index("lowerarm_l")]
    assert np.degrees(np.arctan2(-lower[1], lower[0])) == pytest.approx(45.0)  # A-pose: the upper arm 45 degrees down
    assert unreal.names[:8] == ["pelvis", "spine_01", "spine_02", "spine_03", "spine_04", "spine_05", "neck_01", "neck_02"]
    with pytest.raises(UserError, match="drop --fingers"):
        retarget(motion, "smpl")  # the synthetic skeleton has fingers


def test_smpl_rig_has_its_24_joints(tmp_path):
    camera = synthetic_clip(12)[4]
    tracks = _write_tracks(tmp_path / "t.jsonl", camera)
    motion, _ = motion_from_tracks(read_tracks(tracks), "a BVH file")
    smpl = retarget(motion, "smpl")
    assert len(smpl.skeleton.names) == 24
    assert set(smpl.skeleton.names) >= {"pelvis", "spine1", "spine2", "spine3", "left_hand", "right_foot", "neck", "head"}
    parents = dict(zip(smpl.skeleton.names, [smpl.skeleton.names[p] if p >= 0 else None for p in smpl.skeleton.parents]))
    assert parents["left_hand"] == "left_wrist" and parents["spine3"] == "spine2" and parents["left_collar"] == "spine3"
    inserted = Rotation.from_quat(smpl.rotations[:, smpl.skeleton.names.index("spine2")]).magnitude()
    assert np.allclose(inserted, 0.0)  # a bone SMPL has and we do not: identity, so the chest bends at spine3


def test_rig_and_fbx_user_errors(tmp_path, capsys, monkeypatch):
    tracks = _write_tracks(tmp_path / "t.jsonl", synthetic_clip(6)[4])
    assert main(["export", str(tracks), "--to", "csv", "--rig", "mixamo"]) == 2
    assert "--rig only applies" in capsys.readouterr().err
    assert main(["export", str(tracks), "--to", "bvh", "--rig", "smpl", "--fingers"]) == 2
    assert "no finger bones" in capsys.readouterr().err
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["export", str(tracks), "--to", "fbx"]) == 2
    err = capsys.readouterr().err
    assert "apt-get install blender" in err and err.count("\n") == 1
    assert not (tmp_path / "t.fbx").exists() and not (tmp_path / "t.fbx.marks.json").exists()


@pytest.fixture(scope="module")
def pan_world(tmp_path_factory):
    """A moving camera (the synthetic room, a pan) through ground -> world -> motion: the tracks and
    its exports, glTF and FBX with --root world (the default when the camera moved) and with --root
    camera; {"tracks", "frames", "glb", "glb_camera", "fbx", "fbx_camera"}."""
    from tests.world_tracks import run_chain, write_tracks

    need("blender", has_blender())
    folder = tmp_path_factory.mktemp("world")
    _, frames, stages = run_chain("pan", 150)
    assert any(f.camera.world for f in frames)
    tracks = write_tracks(frames, stages[-1].bone_names, folder / "pan.jsonl")
    out = {"tracks": tracks, "frames": len(frames)}
    for fmt, suffix in (("gltf", ".glb"), ("fbx", ".fbx")):
        out[suffix[1:]] = export_tracks(tracks, fmt, folder / f"pan{suffix}", person=1)
        out[f"{suffix[1:]}_camera"] = export_tracks(tracks, fmt, folder / f"pan_camera{suffix}", person=1, root="camera")
    return out


def test_a_world_export_puts_the_root_and_the_camera_path_where_the_run_tracked_them(pan_world, tmp_path):
    """glTF and FBX with --root world open in Blender with a camera on the recorded camera path (within
    1 mm) and the root in the world; the camera path CSV beside them; --root camera keeps the old
    camera-relative root and writes no camera."""
    from realtime.export.world import camera_csv_path

    frames = pan_world["frames"]
    csv_rows = camera_csv_path(pan_world["glb"]).read_text().splitlines()
    assert csv_rows[0].startswith("frame,time,x,y,z,qx,qy,qz,qw") and len(csv_rows) == frames + 1
    recorded = read_tracks(pan_world["tracks"])
    grid = list(range(0, frames, 10))
    files = [pan_world[key] for key in ("glb", "glb_camera", "fbx", "fbx_camera")]
    jobs = [{"file": str(path), "fps": FPS, "frames": grid} for path in files]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    done = subprocess.run(["blender", "-b", "--factory-startup", "--python-exit-code", "1",
                           "--python", str(TESTS / "blender_heads.py"),
                           "--", str(tmp_path / "jobs.json"), str(tmp_path / "result.json")],
                          capture_output=True, text=True, timeout=600, env=blender_env(shutil.which("blender")))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "result.json").read_text())
    expected = blender_axes(recorded.camera.position[grid])
    for world, local in ((pan_world["glb"], pan_world["glb_camera"]), (pan_world["fbx"], pan_world["fbx_camera"])):
        camera = np.array(report[str(world)]["bones"]["camera"])
        assert camera.shape == expected.shape and np.abs(camera - expected).max() < 1e-3  # the camera path within 1 mm
        assert "camera" not in report[str(local)]["bones"]
        # the root in the world: the hips' height above the world floor, and not where the camera-relative root starts
        hips = np.array(report[str(world)]["bones"]["hips"])
        assert 0.7 < np.median(hips[:, 2]) < 1.1
        assert np.abs(hips - np.array(report[str(local)]["bones"]["hips"])).max() > 0.1


UFBX_CAMERA = """
import json, os, sys, ufbx
scene = ufbx.load_file(sys.argv[1])
cameras = [node for node in scene.nodes if node.camera is not None]
out = {"cameras": [node.name for node in cameras]}
if cameras:
    camera = cameras[0].camera
    out.update(fov=[camera.field_of_view_deg.x, camera.field_of_view_deg.y],
               resolution=[camera.resolution.x, camera.resolution.y], position=[], view=[], up=[])
    for frame in range(int(sys.argv[2])):
        node = ufbx.evaluate_scene(scene, scene.anim, frame / float(sys.argv[3])).find_node(cameras[0].name)
        m = node.node_to_world  # columns: the node's axes and its origin in the file's (Y-up, metre) world
        out["position"].append([m.c3.x, m.c3.y, m.c3.z])
        out["view"].append([m.c0.x, m.c0.y, m.c0.z])  # an FBX camera looks down its +X
        out["up"].append([m.c1.x, m.c1.y, m.c1.z])
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)  # the binding (0.0.5) can crash while freeing the scene at exit
"""


def test_ufbx_reads_the_camera_path_of_a_world_fbx(pan_world):
    """ufbx (independent of Blender) evaluates the FBX's animated camera at every frame: its centre on
    the recorded camera path within 1 mm, looking where the recorded camera looked (its +Z) with its
    up the recorded -Y, within 0.01 degree, and its field of view and picture size the video's; the
    --root camera export has no camera."""
    present = subprocess.run([sys.executable, "-c", "import ufbx"], capture_output=True).returncode == 0
    need("ufbx", present)
    frames = pan_world["frames"]
    read = {}
    for key in ("fbx", "fbx_camera"):
        done = subprocess.run([sys.executable, "-c", UFBX_CAMERA, str(pan_world[key]), str(frames), str(FPS)],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        read[key] = json.loads(done.stdout)
    assert read["fbx"]["cameras"] == ["camera"] and read["fbx_camera"]["cameras"] == []
    recorded = read_tracks(pan_world["tracks"]).camera
    world_from_camera = Rotation.from_quat(recorded.rotation[:frames]).as_matrix()
    position = np.array(read["fbx"]["position"])
    assert position.shape == (frames, 3)
    assert np.abs(position - recorded.position[:frames]).max() < 1e-3
    for axis, expected in (("view", world_from_camera[:, :, 2]), ("up", -world_from_camera[:, :, 1])):
        got = np.array(read["fbx"][axis])
        angle = np.degrees(np.arccos(np.clip(np.sum(got * expected, axis=1) / np.linalg.norm(got, axis=1), -1, 1)))
        assert angle.max() < 0.01, (axis, angle.max())
    fx, fy, _, _ = np.median(recorded.intrinsics[:frames], axis=0)
    assert read["fbx"]["fov"] == pytest.approx([np.degrees(2 * np.arctan(320 / fx)), np.degrees(2 * np.arctan(240 / fy))],
                                               abs=0.01)
    assert read["fbx"]["resolution"] == [640, 480]
