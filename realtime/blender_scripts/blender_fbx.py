"""Runs inside Blender: a BVH written by `to_bvh.py` -> a skinned-skeleton FBX (see `to_fbx.py`).

    blender -b --factory-startup --python realtime/blender_scripts/blender_fbx.py -- motion.bvh out.fbx FPS [camera.json]

camera.json (optional, `to_fbx.blender_camera`): the camera's path in Blender's axes, keyed as an
animated perspective camera "camera".

Needs only Blender's bundled modules. Tested with Debian's Blender 3.4.1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import bpy


def _import_bvh(path: str) -> bpy.types.Object:
    """`blender_compat.import_bvh`, loaded by path from this folder: Blender does not have our
    package on its path."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("blender_compat", Path(__file__).resolve().parent / "blender_compat.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.import_bvh(path, first=0)  # the FBX take starts at time 0


def skin_mesh(armature: bpy.types.Object) -> bpy.types.Object:
    """A box along every bone (rest pose), each fully weighted to its bone, deformed by the armature."""
    vertices, faces, groups = [], [], []
    for bone in armature.data.bones:
        head, tail = bone.head_local, bone.tail_local
        axis = tail - head
        if axis.length < 1e-6:
            continue
        side = axis.orthogonal().normalized() * max(0.005, 0.12 * axis.length)
        other = axis.normalized().cross(side)
        start = len(vertices)
        for end in (head, tail):
            for a, b in ((1, 1), (-1, 1), (-1, -1), (1, -1)):
                vertices.append(end + a * side + b * other)
        quads = ((0, 1, 2, 3), (7, 6, 5, 4), (0, 4, 5, 1), (1, 5, 6, 2), (2, 6, 7, 3), (3, 7, 4, 0))
        faces += [tuple(start + i for i in quad) for quad in quads]
        groups.append((bone.name, range(start, start + 8)))
    mesh = bpy.data.meshes.new("sapiens_body")
    mesh.from_pydata([tuple(v) for v in vertices], [], faces)
    body = bpy.data.objects.new("sapiens_body", mesh)
    bpy.context.scene.collection.objects.link(body)
    for name, indices in groups:
        body.vertex_groups.new(name=name).add(list(indices), 1.0, "REPLACE")
    body.parent = armature
    body.modifiers.new("armature", "ARMATURE").object = armature
    return body


def add_camera(path: str) -> bpy.types.Object:
    """The camera of camera.json, keyed at every one of its frames (location, quaternion: no
    interpolation in between to go wrong, the exporter bakes each frame as keyed)."""
    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    scene = bpy.context.scene
    data = bpy.data.cameras.new("camera")
    data.sensor_fit = "VERTICAL"  # lens and film height give the vertical field of view, as recorded
    data.sensor_width, data.sensor_height = spec["sensor"]
    data.lens = spec["lens"]
    data.clip_start = 0.01
    scene.render.resolution_x, scene.render.resolution_y = spec["resolution"]
    scene.render.resolution_percentage = 100
    camera = bpy.data.objects.new("camera", data)
    scene.collection.objects.link(camera)
    camera.rotation_mode = "QUATERNION"
    for frame, location, quaternion in zip(spec["frames"], spec["location"], spec["quaternion"]):
        camera.location, camera.rotation_quaternion = location, quaternion
        camera.keyframe_insert("location", frame=frame)
        camera.keyframe_insert("rotation_quaternion", frame=frame)
    return camera


def main() -> None:
    args = sys.argv[sys.argv.index("--") + 1:]
    bvh, out, fps = args[:3]
    fps = float(fps)
    scene = bpy.context.scene
    for obj in list(scene.collection.all_objects):
        bpy.data.objects.remove(obj, do_unlink=True)
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    armature = _import_bvh(bvh)
    armature.name = armature.data.name = "sapiens_person"
    skin_mesh(armature)
    camera = add_camera(args[3]) if len(args) > 3 else None
    bpy.ops.export_scene.fbx(
        filepath=out, use_selection=False, object_types={"ARMATURE", "MESH"} | ({"CAMERA"} if camera else set()),
        apply_unit_scale=True, apply_scale_options="FBX_SCALE_UNITS", axis_forward="-Z", axis_up="Y",
        add_leaf_bones=False, primary_bone_axis="Y", secondary_bone_axis="X", armature_nodetype="NULL",
        use_armature_deform_only=False, mesh_smooth_type="OFF",
        bake_anim=True, bake_anim_use_all_bones=True, bake_anim_use_nla_strips=False, bake_anim_use_all_actions=False,
        bake_anim_force_startend_keying=True, bake_anim_step=1.0, bake_anim_simplify_factor=0.0,
    )
    print("sapiens-rt fbx:", out, len(armature.data.bones), "bones", "and the camera" if camera else "")


if __name__ == "__main__":
    main()
