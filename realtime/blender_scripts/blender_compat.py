"""Runs inside Blender: importers that work around Debian Blender 3.4.1 on Python 3.11.

Debian's Blender uses the system Python 3.11, where `open(path, "rU")` (used by
Blender 3.4's BVH importer) raises `ValueError: invalid mode: 'rU'`; the "U" flag
was a no-op since Python 3.0, so we drop it while the importer runs.
"""

from __future__ import annotations

import builtins
import contextlib

import bpy


@contextlib.contextmanager
def _no_universal_newline_flag():
    original = builtins.open

    def patched(file, mode="r", *args, **kwargs):
        return original(file, mode.replace("U", "") if isinstance(mode, str) else mode, *args, **kwargs)

    builtins.open = patched
    try:
        yield
    finally:
        builtins.open = original


def import_bvh(path: str, first: int = 1) -> bpy.types.Object:
    """Import a sapiens BVH (centimetres, Y up, facing +Z) at the scene's frame rate, its first frame
    at Blender frame `first`; the scene's frame range becomes the clip's. Returns the armature
    (Blender axes: file (x, y, z) cm -> (x, -z, y) m)."""
    before = set(bpy.data.objects)
    with _no_universal_newline_flag():
        bpy.ops.import_anim.bvh(filepath=str(path), global_scale=0.01, frame_start=first, use_fps_scale=False,
                                update_scene_fps=False, update_scene_duration=True, rotate_mode="NATIVE",
                                axis_forward="-Z", axis_up="Y")
    (armature,) = [obj for obj in bpy.data.objects if obj not in before and obj.type == "ARMATURE"]
    action = armature.animation_data.action
    start, end = (int(round(v)) for v in action.frame_range)
    if start != first:  # Blender 3.4's importer starts at frame 1 at the earliest
        for curve in action.fcurves:
            for key in curve.keyframe_points:
                for point in (key.co, key.handle_left, key.handle_right):
                    point.x += first - start
        start, end = first, end + first - start
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = start, end
    return armature
