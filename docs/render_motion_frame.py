"""Render one frame of an exported clip headless in Blender, for the docs (docs/images/motion-frame.png).

    PYTHONPATH=. python3 docs/render_motion_frame.py [TRACKS.jsonl] [--frame 20] [--rig mixamo] [-o docs/images/motion-frame.png]

Without TRACKS it uses the synthetic person of the tests (tests/mocap_synthetic.py). The
clip goes through `sapiens-rt export --to fbx` (Blender converts it); a second Blender
imports the FBX as a user would and renders frame N with Cycles on the CPU (Workbench and
EEVEE need an OpenGL context that a headless machine lacks) to a small PNG.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from realtime.export import export_tracks  # noqa: E402
from realtime.export.to_fbx import blender_env, check_blender  # noqa: E402

SCENE = '''
import math, sys
import bpy
from mathutils import Vector

fbx, frame, out = sys.argv[sys.argv.index("--") + 1:][:3]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.fbx(filepath=fbx)
scene = bpy.context.scene
scene.frame_set(scene.frame_start + int(frame))
armature = [o for o in scene.objects if o.type == "ARMATURE"][0]
heads = [armature.matrix_world @ b.head for b in armature.pose.bones]
low = Vector([min(h[i] for h in heads) for i in range(3)])
high = Vector([max(h[i] for h in heads) for i in range(3)])
centre = (low + high) / 2
floor = bpy.data.meshes.new("floor")
floor.from_pydata([(centre.x + x, centre.y + y, low.z - 0.08) for x, y in ((-3, -3), (3, -3), (3, 3), (-3, 3))], [],
                  [(0, 1, 2, 3)])
scene.collection.objects.link(bpy.data.objects.new("floor", floor))
for name, colour in (("sapiens_body", (0.9, 0.4, 0.1, 1.0)), ("floor", (0.35, 0.37, 0.4, 1.0))):
    material = bpy.data.materials.new(name)
    material.diffuse_color = colour
    material.use_nodes = True
    material.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = colour
    scene.objects[name].data.materials.append(material)
camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
scene.collection.objects.link(camera)
camera.location = centre + Vector((1.3, -2.6, 0.35))  # in front (the character faces -Y) and to its left
camera.rotation_euler = (centre - camera.location).to_track_quat("-Z", "Y").to_euler()
scene.camera = camera
sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
sun.data.energy = 4.0
sun.rotation_euler = (math.radians(40), 0, math.radians(30))
scene.collection.objects.link(sun)
world = bpy.data.worlds.new("world")
world.color = (0.25, 0.27, 0.3)
scene.world = world
scene.render.engine = "CYCLES"
scene.cycles.device = "CPU"
scene.cycles.samples = 16
scene.cycles.use_denoising = False
scene.render.resolution_x, scene.render.resolution_y = 360, 400
scene.render.image_settings.file_format = "PNG"
scene.render.image_settings.color_mode = "RGB"
scene.render.image_settings.compression = 100
scene.render.filepath = out
bpy.ops.render.render(write_still=True)
'''


def synthetic_tracks(path: Path) -> Path:
    from tests.mocap_synthetic import synthetic_clip
    from tests.test_motion_clients import _write_tracks

    return _write_tracks(path, synthetic_clip(60)[4])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tracks", nargs="?", type=Path,
                        help="tracks .jsonl with 3D keypoints (default: the tests' synthetic person)")
    parser.add_argument("--person", type=int, default=None)
    parser.add_argument("--frame", type=int, default=20, help="clip frame to render (0-based)")
    parser.add_argument("--rig", default="mixamo", choices=("vrm", "mixamo", "unreal", "smpl"))
    parser.add_argument("-o", "--out", type=Path, default=ROOT / "docs" / "images" / "motion-frame.png")
    args = parser.parse_args()
    blender = check_blender()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        tracks = args.tracks or synthetic_tracks(folder / "synthetic.jsonl")
        fbx = export_tracks(tracks, "fbx", folder / "clip.fbx", person=args.person, rig=args.rig, fingers=args.rig != "smpl")
        script = folder / "render.py"
        script.write_text(SCENE)
        rendered = folder / "frame.png"
        done = subprocess.run([blender, "-b", "--factory-startup", "--python-exit-code", "1", "--python", str(script), "--",
                               str(fbx), str(args.frame), str(rendered)],
                              capture_output=True, text=True, env=blender_env(blender))
        if done.returncode != 0 or not rendered.is_file():
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 1
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rendered, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
