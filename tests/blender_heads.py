"""Runs inside Blender (one process for many files): import each motion file and report bone heads.

    blender -b --factory-startup --python tests/blender_heads.py -- jobs.json result.json

jobs.json: [{"file": ..., "fps": 30.0, "frames": [0, 17, ...]}, ...] (.bvh, .glb, .vrma, .fbx).
result.json: {file: {"first": blender frame of clip frame 0, "last": last keyed frame,
"fps": scene fps, "bones": {name: [[x, y, z] world head at each requested frame]}}}.
BVH goes through our own importer wrapper (realtime/blender_scripts/blender_compat.py); glTF and
FBX through Blender's importers as a user would. Armature bones report their pose heads,
glTF nodes without a skin (imported as empties) and cameras their world locations.
"""

import json
import sys
from pathlib import Path

import bpy


def _compat():
    """realtime/blender_scripts/blender_compat.py, loaded by path (Blender does not have our
    package on its path)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "realtime" / "blender_scripts" / "blender_compat.py"
    spec = importlib.util.spec_from_file_location("blender_compat", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import_bvh = _compat().import_bvh


def load(path: str, fps: float) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    suffix = Path(path).suffix
    if suffix == ".bvh":
        import_bvh(path)
    elif suffix in (".glb", ".vrma"):
        bpy.ops.import_scene.gltf(filepath=path)
    elif suffix == ".fbx":
        bpy.ops.import_scene.fbx(filepath=path)
    else:
        raise SystemExit(f"unknown file type {path}")


def heads(frames: list[int]) -> dict:
    actions = [a for a in bpy.data.actions]
    first = min(a.frame_range[0] for a in actions)
    last = max(a.frame_range[1] for a in actions)
    scene = bpy.context.scene
    out: dict = {}
    for frame in frames:
        scene.frame_set(int(round(first)) + frame)
        for obj in scene.objects:
            if obj.type == "ARMATURE":
                for bone in obj.pose.bones:
                    out.setdefault(bone.name, []).append(list(obj.matrix_world @ bone.head))
            elif obj.type in ("EMPTY", "CAMERA"):  # a camera: its centre (the camera path of a world export)
                out.setdefault(obj.name, []).append(list(obj.matrix_world.translation))
    return {"first": first, "last": last, "fps": scene.render.fps / scene.render.fps_base, "bones": out,
            "armatures": sum(obj.type == "ARMATURE" for obj in scene.objects),
            "meshes": sum(obj.type == "MESH" for obj in scene.objects)}


def main() -> None:
    jobs_path, result_path = sys.argv[sys.argv.index("--") + 1:][:2]
    result = {}
    for job in json.loads(Path(jobs_path).read_text()):
        load(job["file"], job["fps"])
        result[job["file"]] = heads(job["frames"])
    Path(result_path).write_text(json.dumps(result))


main()
