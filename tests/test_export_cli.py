"""`sapiens-rt export` / `sapiens-rt smooth`, the smoothing plumbing, and the Blender import."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from export_synthetic import FPS, NAMES, NUM_FRAMES, K, expected_scores, expected_xyz, write_synthetic
from realtime.cli import main
from realtime.export.jsonl import read_tracks
from realtime.export.smoothing import smooth_tracks_file


@pytest.fixture()
def tracks_file(tmp_path):
    return write_synthetic(tmp_path / "walk.jsonl")


def _shift_smoother(calls):
    """A stand-in smoother with a visible effect: +1 on every coordinate; records its arguments."""

    def smooth(t, keypoints, scores, method="rts", **_):
        calls.append((t.copy(), keypoints.shape, None if scores is None else scores.shape, method))
        return keypoints + 1.0

    return smooth


def test_smooth_file_plumbing_keeps_frames_people_and_fields(tracks_file, tmp_path):
    lines = tracks_file.read_text().splitlines()
    record = json.loads(lines[1])
    record["people"][0]["extra"] = "kept"
    lines[1] = json.dumps(record)
    tracks_file.write_text("\n".join(lines) + "\n")
    calls = []
    out = smooth_tracks_file(tracks_file, tmp_path / "smooth.jsonl", "savgol", smoother=_shift_smoother(calls))
    # 2D and 3D of two persons, each over the whole timeline with its scores.
    assert sorted(c[1] for c in calls) == [(NUM_FRAMES, K, 2)] * 2 + [(NUM_FRAMES, K, 3)] * 2
    assert all(c[2] == (NUM_FRAMES, K) and c[3] == "savgol" for c in calls)
    np.testing.assert_allclose(calls[0][0], np.arange(NUM_FRAMES) / FPS)

    raw, smoothed = read_tracks(tracks_file), read_tracks(out)
    assert smoothed.header["smoothing"] == {"method": "savgol"} and smoothed.header["keypoint_names"] == NAMES
    np.testing.assert_array_equal(smoothed.frames, raw.frames)
    for track_id in (7, 9):
        before, after = raw.people[track_id], smoothed.people[track_id]
        np.testing.assert_array_equal(after.present, before.present)
        np.testing.assert_array_equal(after.smoothed, before.present)
        np.testing.assert_allclose(after.keypoints, before.keypoints + 1, atol=0.006, equal_nan=True)
        np.testing.assert_allclose(after.keypoints3d, before.keypoints3d + 1, atol=6e-5, equal_nan=True)
        np.testing.assert_array_equal(after.scores, before.scores)
    assert json.loads(out.read_text().splitlines()[1])["people"][0]["extra"] == "kept"


def test_cli_export_every_file_format(tracks_file, tmp_path, capsys):
    for fmt, extra, expected in [
        ("csv", [], "walk.csv"), ("npz", ["--subset", "coco17"], "walk.npz"), ("coco", [], "walk_coco.json"),
        ("openpose", [], "walk_openpose"), ("trc", ["--person", "9"], "walk.trc"), ("c3d", ["--person", "7"], "walk.c3d"),
    ]:
        assert main(["export", str(tracks_file), "--to", fmt, *extra]) == 0
        assert (tmp_path / expected).exists()
        assert f"wrote {tmp_path / expected}" in capsys.readouterr().out
    assert np.load(tmp_path / "walk.npz")["keypoints"].shape == (2, NUM_FRAMES, 17, 2)


def test_cli_errors_are_one_sentence(tracks_file, tmp_path, capsys):
    assert main(["export", str(tracks_file), "--to", "trc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and err.endswith("choose one with --person ID.") and "\n" not in err
    assert main(["export", str(tmp_path / "missing.jsonl"), "--to", "csv"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_smooth_and_export_with_offline_smoother(tmp_path):
    offline = pytest.importorskip("trackers.offline", reason="trackers/offline.py (offline smoothing) is not in this branch yet")
    assert hasattr(offline, "smooth_track")
    tracks_file = write_synthetic(tmp_path / "long.jsonl", num_frames=60)
    out = tmp_path / "smooth.jsonl"
    assert main(["smooth", str(tracks_file), "--method", "rts", "-o", str(out)]) == 0
    raw, smoothed = read_tracks(tracks_file), read_tracks(out)
    seven = smoothed.people[7]
    np.testing.assert_array_equal(seven.present, raw.people[7].present)
    assert seven.smoothed[seven.present].all() and len(smoothed) == 60
    # The synthetic motion is linear in time: a zero-phase smoother keeps it (within a pixel)
    # for confident keypoints in the middle of the track.
    confident = expected_scores(7, 30) >= 0.35
    np.testing.assert_allclose(seven.keypoints[30][confident], raw.people[7].keypoints[30][confident], atol=1.0)
    assert main(["export", str(tracks_file), "--to", "csv", "--smooth", "butterworth", "-o", str(tmp_path / "s.csv")]) == 0


_INSPECT = """
import bpy, json
scene = bpy.context.scene
animated = [o for o in bpy.data.objects if o.type == "EMPTY" and o.animation_data and o.animation_data.action]
scene.frame_set(4)
nose = bpy.data.objects["p7_nose"].matrix_world.translation
armature = bpy.data.objects["p7_armature"]
print("INSPECT", json.dumps({"animated": len(animated), "fps": scene.render.fps / scene.render.fps_base,
    "start": scene.frame_start, "end": scene.frame_end, "nose": list(nose), "bones": len(armature.data.bones),
    "shown_when_seen": not bpy.data.objects["p7_nose"].hide_viewport,
    "hidden_when_absent": (scene.frame_set(3), bpy.data.objects["p7_nose"].hide_viewport)[1]}))
"""


@pytest.mark.optional
def test_blender_import_builds_animated_empties(tracks_file, tmp_path):
    if shutil.which("blender") is None:
        pytest.skip("blender is not installed (apt-get install blender); the Blender import is untested here")
    out = tmp_path / "walk.blend"
    assert main(["export", str(tracks_file), "--to", "blender", "--subset", "coco17", "-o", str(out)]) == 0
    result = subprocess.run(["blender", "-b", "--factory-startup", str(out), "--python-expr", _INSPECT], capture_output=True,
                            text=True, timeout=120)
    line = next(line for line in result.stdout.splitlines() if line.startswith("INSPECT"))
    scene = json.loads(line.split(" ", 1)[1])
    assert scene["animated"] == 2 * 17  # two persons x 17 keypoints
    assert scene["fps"] == pytest.approx(FPS) and (scene["start"], scene["end"]) == (1, NUM_FRAMES)
    xyz = expected_xyz(7, 3 / FPS)[0]  # Blender frame 4 = source frame 3
    np.testing.assert_allclose(scene["nose"], [xyz[0], xyz[2], -xyz[1]], atol=1e-4)
    assert scene["bones"] == 12 + 7  # COCO-17 body links among the exported points (limbs, torso, head)
    assert scene["shown_when_seen"] and scene["hidden_when_absent"]  # nobody in source frame 2 = Blender frame 3
