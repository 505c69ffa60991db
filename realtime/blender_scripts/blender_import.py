"""Build an animated Blender scene from a sapiens-realtime tracks JSONL.

Run headless (or inside Blender's Text Editor with the arguments edited below):

    blender -b --python realtime/blender_scripts/blender_import.py -- tracks.jsonl [--out scene.blend]
            [--person ID] [--subset 308|coco-wholebody|coco17] [--no-armature]

For each person it creates an empty `p<id>` with one child empty per keypoint
(`p<id>_<keypoint name>`), its location keyframed at every frame where the
keypoint is known, and its visibility (`hide_viewport`, `hide_render`) keyed
where the keypoint appears or disappears; plus an armature `p<id>_armature`
whose bones follow the body keypoints (Copy Location + Stretch To constraints).
Blender frame = source frame index + 1; the scene frame rate is the tracks' fps
(fractional rates via fps_base, e.g. 29.97 = 30 / 1.001).

Units and axes (Blender is Z up): 3D tracks (`kpts3d`) in metres with
X = x, Y = z, Z = -y of the camera frame (camera at the origin looking along +Y);
2D tracks on the XZ plane (front view), 1 px = 1 mm, X = x / 1000, Z = (H - y) / 1000.

Needs only Blender's bundled Python (json, no numpy); tested with Blender 3.4.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import bpy

TABLE = Path(__file__).resolve().parent.parent / "data" / "keypoints308.json"
BODY_GROUPS = ("body", "foot")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="blender -b --python blender_import.py --", description=__doc__.splitlines()[0])
    parser.add_argument("tracks", type=Path, help="tracks .jsonl written by sapiens-rt")
    parser.add_argument("--out", type=Path, help="save the scene to this .blend file")
    parser.add_argument("--person", type=int, help="only this track id (default: everybody)")
    parser.add_argument("--subset", choices=("308", "coco-wholebody", "coco17"), default="308")
    parser.add_argument("--no-armature", action="store_true", help="only empties, no body armature")
    return parser.parse_args(argv)


def read_jsonl(path: Path) -> tuple[dict, list[dict]]:
    """Header and frame records; a cut-off last line (crashed run) is skipped."""
    records = []
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    for number, line in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number != len(lines) - 1:
                raise SystemExit(f"error: {path} line {number + 1} is not valid JSON; pass an intact tracks file.") from None
    if not records or records[0].get("type") != "header":
        raise SystemExit(f"error: {path} has no tracks header; pass a tracks .jsonl written by sapiens-rt.")
    return records[0], [r for r in records[1:] if r.get("type") == "frame"]


def subset_points(subset: str, names: list[str]) -> list[tuple[str, int | None]]:
    """(name, index into the file's keypoints or None) for each point of the subset."""
    if subset == "308":
        return [(name, k) for k, name in enumerate(names)]
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    if subset == "coco17":
        return list(zip(table["coco17_names"], table["coco17_to_308"]))
    mapping = table["coco_wholebody_to_308"]
    return [(table["coco_wholebody_names"][str(i)], mapping.get(str(i))) for i in range(len(table["coco_wholebody_names"]))]


def to_scene(point: list, use_3d: bool, height: int) -> tuple[float, float, float] | None:
    """A JSONL point -> Blender coordinates, None when unknown."""
    if point is None or any(v is None for v in point[:3 if use_3d else 2]):
        return None
    if use_3d:
        x, y, z = point[:3]
        return (x, z, -y)
    x, y = point[:2]
    return (x / 1000.0, 0.0, (height - y) / 1000.0)


def key_fcurve(obj: bpy.types.Object, path: str, index: int, keys: list[tuple[float, float]], interpolation: str) -> None:
    """Add all keyframes of one F-curve at once (much faster than keyframe_insert per frame)."""
    curve = obj.animation_data.action.fcurves.new(path, index=index)
    curve.keyframe_points.add(len(keys))
    curve.keyframe_points.foreach_set("co", [v for key in keys for v in key])
    for point in curve.keyframe_points:
        point.interpolation = interpolation
    curve.update()


def animate_empty(obj: bpy.types.Object, samples: list[tuple[int, tuple | None]]) -> None:
    """Keyframe location where known and visibility where it changes."""
    obj.animation_data_create()
    obj.animation_data.action = bpy.data.actions.new(obj.name + "_action")
    known = [(frame, xyz) for frame, xyz in samples if xyz is not None]
    for axis in range(3):
        key_fcurve(obj, "location", axis, [(frame, xyz[axis]) for frame, xyz in known], "LINEAR")
    changes, previous = [], None
    for frame, xyz in samples:
        hidden = float(xyz is None)
        if hidden != previous:
            changes.append((frame, hidden))
            previous = hidden
    for path in ("hide_viewport", "hide_render"):
        key_fcurve(obj, path, 0, changes, "CONSTANT")


def build_armature(name: str, links: list[tuple[str, str]], empties: dict, collection) -> bpy.types.Object:
    """An armature with one bone per body link, driven by the keypoint empties."""
    armature = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    collection.objects.link(armature)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    for head, tail in links:
        bone = armature.data.edit_bones.new(f"{head}-{tail}")
        bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 0.1)
    bpy.ops.object.mode_set(mode="OBJECT")
    for head, tail in links:
        pose_bone = armature.pose.bones[f"{head}-{tail}"]
        pose_bone.constraints.new("COPY_LOCATION").target = empties[head]
        pose_bone.constraints.new("STRETCH_TO").target = empties[tail]
    return armature


def build_scene(args: argparse.Namespace) -> dict:
    header, frames = read_jsonl(args.tracks)
    names = header["keypoint_names"]
    width, height = header["image_size"]
    points = [(n, k) for n, k in subset_points(args.subset, names) if k is not None]
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    body = {n for group in BODY_GROUPS for n in table["groups"][group]["names"]}
    links = [tuple(link["names"]) for link in table["skeleton_links"] if set(link["names"]) <= body]

    # Per person: blender frame -> person record.
    people: dict[int, dict[int, dict]] = {}
    for record in frames:
        for person in record.get("people") or ():
            track_id = person.get("id")
            if track_id is None:
                continue  # a tentative detection or a person of an unrelated still: not part of any person's track
            track_id = int(track_id)
            if args.person is None or track_id == args.person:
                people.setdefault(track_id, {})[int(record["frame"]) + 1] = person
    if args.person is not None and not people:
        raise SystemExit(f"error: no person with id {args.person} in {args.tracks}; pick an id that the tracks contain.")

    scene = bpy.context.scene
    for obj in list(scene.collection.all_objects):  # start from an empty scene
        bpy.data.objects.remove(obj, do_unlink=True)
    fps = float(header["fps"])
    scene.render.fps = max(1, round(fps))
    scene.render.fps_base = scene.render.fps / fps
    blender_frames = [int(r["frame"]) + 1 for r in frames]
    if blender_frames:
        scene.frame_start, scene.frame_end = min(blender_frames), max(blender_frames)
    collection = bpy.data.collections.new("sapiens_tracks")
    scene.collection.children.link(collection)

    summary = {"people": {}, "fps": fps}
    for track_id, by_frame in sorted(people.items()):
        use_3d = any("kpts3d" in p for p in by_frame.values())
        root = bpy.data.objects.new(f"p{track_id}", None)
        collection.objects.link(root)
        empties = {}
        for name, k in points:
            empty = bpy.data.objects.new(f"p{track_id}_{name}", None)
            empty.empty_display_type, empty.empty_display_size = "SPHERE", 0.01 if use_3d else 0.005
            empty.parent = root
            collection.objects.link(empty)
            samples = []
            for frame in blender_frames:
                person = by_frame.get(frame)
                source = None if person is None else (person.get("kpts3d") if use_3d else person.get("kpts"))
                samples.append((frame, None if source is None else to_scene(source[k], use_3d, height)))
            animate_empty(empty, samples)
            empties[name] = empty
        armature_links = [link for link in links if link[0] in empties and link[1] in empties]
        if armature_links and not args.no_armature:
            build_armature(f"p{track_id}_armature", armature_links, empties, collection)
        summary["people"][track_id] = {"empties": len(empties), "bones": 0 if args.no_armature else len(armature_links),
                                       "3d": use_3d}
    return summary


def main() -> None:
    argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    args = parse_args(argv)
    summary = build_scene(args)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        bpy.ops.wm.save_as_mainfile(filepath=str(args.out.resolve()))
    print("sapiens-rt blender import:", json.dumps(summary))


if __name__ == "__main__":
    main()
