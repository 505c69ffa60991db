"""Tracks JSONL: writer -> reader round trip, tolerance of damaged files, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from export_synthetic import FPS, IMAGE_SIZE, NAMES, NUM_FRAMES, K, expected_scores, expected_xy, expected_xyz, write_synthetic
from realtime.errors import UserError
from realtime.export.jsonl import read_tracks
from realtime.frames import Frame, Person
from realtime.sinks.tracks import TrackWriter

REPO = Path(__file__).resolve().parent.parent


def test_file_follows_schema_v2(tmp_path):
    path = write_synthetic(tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + NUM_FRAMES  # header + one line per frame, also the empty frame 2
    header = json.loads(lines[0])
    assert header["type"] == "header" and header["version"] == 5
    assert header["keypoint_names"] == NAMES and header["image_size"] == list(IMAGE_SIZE) and header["fps"] == FPS
    assert header["source"] == "synthetic.mp4" and header["model"] == {"pose": "synthetic"}
    assert header["software"]["name"] == "sapiens-realtime"
    empty = json.loads(lines[3])
    assert empty == {"type": "frame", "frame": 2, "t": 0.08, "people": []}
    frame4 = json.loads(lines[5])
    person = frame4["people"][0]
    assert set(person) == {"id", "box", "kpts", "smoothed", "kpts3d"}
    assert person["id"] == 7 and person["smoothed"] is False
    assert person["box"] == [10.0, 20.0, 304.0, 400.0, 0.875]
    assert len(person["kpts"]) == K and len(person["kpts3d"]) == K
    assert person["kpts"][5][:2] == [None, None]  # NaN -> null, score kept
    assert person["kpts"][0] == [round(50 + 40 * 0.16 + 7, 2), round(30 + 20 * 0.16, 2), 0.054]


def test_round_trip_arrays(tmp_path):
    tracks = read_tracks(write_synthetic(tmp_path / "t.jsonl"))
    assert not tracks.truncated
    assert tracks.keypoint_names == NAMES and tracks.fps == FPS and tracks.image_wh == IMAGE_SIZE
    np.testing.assert_array_equal(tracks.frames, np.arange(NUM_FRAMES))
    np.testing.assert_allclose(tracks.times, np.arange(NUM_FRAMES) / FPS)
    assert list(tracks.people) == [7, 9]
    seven, nine = tracks.people[7], tracks.people[9]
    np.testing.assert_array_equal(seven.present, [True, True, False, True, True, True])
    np.testing.assert_array_equal(nine.present, [False, False, False, True, True, True])
    assert seven.keypoints.shape == (NUM_FRAMES, K, 2) and seven.scores.shape == (NUM_FRAMES, K)
    assert seven.keypoints3d.shape == (NUM_FRAMES, K, 3)
    for frame in (0, 1, 3, 5):
        t = frame / FPS
        np.testing.assert_allclose(seven.keypoints[frame], expected_xy(7, t), atol=0.006)
        np.testing.assert_allclose(seven.scores[frame], expected_scores(7, frame), atol=6e-4)
        np.testing.assert_allclose(seven.keypoints3d[frame], expected_xyz(7, t), atol=6e-5)
    assert np.isnan(seven.keypoints[2]).all() and np.isnan(seven.scores[2]).all() and np.isnan(seven.boxes[2]).all()
    assert np.isnan(seven.keypoints[4, 5]).all() and np.isfinite(seven.scores[4, 5])
    np.testing.assert_allclose(seven.boxes[4], [10, 20, 304, 400, 0.875])
    np.testing.assert_allclose(nine.keypoints[4], expected_xy(9, 4 / FPS), atol=0.006)


def test_untracked_people_and_2d_only(tmp_path):
    image = np.zeros((2, 2, 3), np.uint8)
    xy = np.tile([[1.0, 2.0]], (3, 1)).astype(np.float32)
    person = Person(box=np.zeros(4, np.float32), keypoints=xy, keypoint_scores=None)
    with TrackWriter(tmp_path / "u.jsonl", keypoint_names=["a", "b", "c"], image_wh=(2, 2), fps=10, source="s",
                     model={}) as writer:
        writer.write(Frame(index=0, timestamp=0.0, image=image, people=(person, person.replace(keypoints=xy + 5))))
        writer.write(Frame(index=1, timestamp=0.1, image=image, people=(person,)))
    tracks = read_tracks(tmp_path / "u.jsonl")
    assert tracks.people == {}  # no id: nobody's track, and no invented -1, -2 keys
    seen = tracks.unidentified
    np.testing.assert_array_equal(seen.rows, [0, 0, 1])  # one entry per person, in file order
    np.testing.assert_allclose(seen.keypoints[1], xy + 5)
    assert np.isnan(seen.scores).all()  # no scores written -> null
    assert seen.keypoints3d is None


def _stills_file(path):
    """Two unrelated photos as a stills run writes them: 2 people in the first, 1 in the second, all "id": null.
    Person p of the file has every keypoint at (10 p + k, 10 p + k + 0.5), score 0.9."""
    from realtime.data import keypoint_names

    names = keypoint_names()
    base = np.stack([np.arange(len(names)), np.arange(len(names)) + 0.5], axis=1).astype(np.float32)
    person = Person(box=np.array([0, 0, 9, 9], np.float32), keypoints=base, keypoint_scores=np.full(len(names), 0.9, np.float32))
    files = ["a, b.jpg", "c.jpg"]
    with TrackWriter(path, keypoint_names=names, image_wh=(20, 10), fps=30, source="s", model={},
                     stills=lambda i: files[i], tracked=False) as writer:
        writer.write(Frame(index=0, timestamp=0.0, image=np.zeros((10, 20, 3), np.uint8),
                           people=(person, person.replace(keypoints=base + 10))))
        writer.write(Frame(index=1, timestamp=1 / 30, image=np.zeros((30, 40, 3), np.uint8),
                           people=(person.replace(keypoints=base + 20),)))
    return path, base


def test_stills_export_per_image_rows_without_invented_ids(tmp_path):
    import csv

    from realtime.export.formats import export_tracks

    path, base = _stills_file(tmp_path / "s.jsonl")
    assert [p["id"] for line in path.read_text().splitlines()[1:] for p in json.loads(line)["people"]] == [None] * 3
    tracks = read_tracks(path)
    assert tracks.people == {} and len(tracks.unidentified) == 3 and tracks.files == ("a, b.jpg", "c.jpg")

    rows = list(csv.reader(open(export_tracks(path, "csv"), newline="")))  # one row per person per image
    assert rows[0][:7] == ["frame", "time", "file", "id", "nose_x", "nose_y", "nose_score"] and len(rows) == 4
    assert not any(column.startswith("p") and "_" in column and column[1] in "-0123456789" for column in rows[0])
    assert [r[:4] for r in rows[1:]] == [["0", "0.000000", "a, b.jpg", ""], ["0", "0.000000", "a, b.jpg", ""],
                                         ["1", "0.033333", "c.jpg", ""]]
    assert [float(v) for v in rows[2][4:7]] == [10.0, 10.5, 0.9] and float(rows[3][4]) == 20.0

    openpose = export_tracks(path, "openpose")
    first = json.loads(next(openpose.glob("*_000000000000_keypoints.json")).read_text())["people"]
    second = json.loads(next(openpose.glob("*_000000000001_keypoints.json")).read_text())["people"]
    assert [p["person_id"] for p in first + second] == [[-1], [-1], [-1]]  # OpenPose's "no id"
    assert first[1]["pose_keypoints_2d"][:2] == [10.0, 10.5] and second[0]["pose_keypoints_2d"][:2] == [20.0, 20.5]

    coco = json.loads(export_tracks(path, "coco", subset="coco17").read_text())
    assert [a["image_id"] for a in coco["annotations"]] == [1, 1, 2] and not any("track_id" in a for a in coco["annotations"])
    assert coco["annotations"][2]["keypoints"][:2] == [20.0, 20.5]

    with np.load(export_tracks(path, "npz")) as arrays:
        assert arrays["ids"].shape == (0,) and list(arrays["unidentified_rows"]) == [0, 0, 1]
        np.testing.assert_allclose(arrays["unidentified_keypoints"][2], base + 20)
        assert list(arrays["files"]) == ["a, b.jpg", "c.jpg"]
    with pytest.raises(UserError, match="without identities"):
        export_tracks(path, "trc")


def test_reader_skips_cut_off_last_line_and_unknown_fields(tmp_path):
    path = write_synthetic(tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    extra = json.loads(lines[1])
    extra["future_field"] = {"x": 1}
    extra["people"][0]["new_person_field"] = [1, 2]
    lines[1] = json.dumps(extra)
    lines.insert(2, json.dumps({"type": "event", "what": "camera reconnected"}))
    path.write_text("\n".join(lines) + "\n" + lines[-1][: len(lines[-1]) // 2])  # a crash mid-line
    tracks = read_tracks(path)
    assert tracks.truncated
    np.testing.assert_array_equal(tracks.frames, np.arange(NUM_FRAMES))
    np.testing.assert_allclose(tracks.people[7].keypoints[0], expected_xy(7, 0.0), atol=0.006)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda lines: lines[:2] + ["{not json"] + lines[2:], "line 3 is not valid JSON"),
        (lambda lines: lines[1:], "does not start with a tracks header"),
        (lambda lines: [lines[0].replace('"version":5', '"version":6')] + lines[1:], "schema version 6"),
        # no version, or none a writer ever wrote: not "upgrade sapiens-realtime"
        (lambda lines: [lines[0].replace('"version":5,', '')] + lines[1:], "header's version is None, not a tracks schema "
                                                                             "version from 1 to 5; pass a tracks .jsonl"),
        (lambda lines: [lines[0].replace('"version":5', '"version":0')] + lines[1:], "header's version is 0, not a"),
        (lambda lines: [lines[0].replace('"version":5', '"version":"5"')] + lines[1:], "header's version is '5', not a"),
        (lambda lines: [lines[0].replace('"version":5', '"version":true')] + lines[1:], "header's version is True, not a"),
    ],
)
def test_reader_rejects_damaged_files_with_one_sentence(tmp_path, damage, message):
    path = write_synthetic(tmp_path / "t.jsonl")
    path.write_text("\n".join(damage(path.read_text().splitlines())) + "\n")
    with pytest.raises(UserError, match=message):
        read_tracks(path)


_CHILD = """
import sys
sys.path.insert(0, {tests!r}); sys.path.insert(0, {repo!r})
from export_synthetic import NAMES, make_frame
from realtime.sinks.tracks import TrackWriter
writer = TrackWriter({path!r}, keypoint_names=NAMES, image_wh=(640, 480), fps=25.0, source="live", model={{}})
index = 0
while True:
    writer.write(make_frame(index % 6).replace(index=index, timestamp=index / 25.0))
    print(index, flush=True)  # after write returned: this frame is on disk
    index += 1
"""


def test_killed_writer_leaves_one_line_per_written_frame(tmp_path):
    path = tmp_path / "live.jsonl"
    code = _CHILD.format(tests=str(REPO / "tests"), repo=str(REPO), path=str(path))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        for line in child.stdout:  # wait until 20 frames are reported written, then kill mid-run
            if int(line) == 19:
                break
        os.kill(child.pid, signal.SIGKILL)
        reported = [19] + [int(line) for line in child.stdout]  # reports that raced the kill
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    tracks = read_tracks(path)
    written = len(tracks)
    # Every reported frame is in the file; at most one more (written, not yet reported) may be.
    assert max(reported) + 1 <= written <= max(reported) + 2
    np.testing.assert_array_equal(tracks.frames, np.arange(written))
    np.testing.assert_allclose(tracks.people[7].keypoints[0], expected_xy(7, 0.0), atol=0.006)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_an_older_version_file_still_reads(tmp_path, version):
    """Files from before lips and bones (schema version 1), before floor_up (2) and before the camera's
    pointmap_scale (3), and version 4 (a camera that could have been the egomotion's) read as they always did."""
    path = write_synthetic(tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([lines[0].replace('"version":5', f'"version":{version}'), *lines[1:]]) + "\n")
    new, before = read_tracks(path), read_tracks(old)
    assert before.header["version"] == version and before.floor_up is None
    assert sorted(before.people) == sorted(new.people)
    for track in new.people:
        np.testing.assert_array_equal(before.people[track].keypoints, new.people[track].keypoints)


def test_a_cameras_pointmap_scale_is_read_and_a_bad_one_refused():
    """Schema 4's camera "pointmap_scale": a positive number, or absent (frames without a pointmap, older files)."""
    from realtime.export.jsonl import check_frame

    camera = {"position": [0.0, 1.5, 4.0], "rotation": [0.0, 0.0, 0.0, 1.0], "intrinsics": None, "status": "tracking",
              "world": 1, "grounded": 1}
    assert check_frame({"frame": 0, "camera": camera}, K).camera.pointmap_scale is None
    assert check_frame({"frame": 0, "camera": {**camera, "pointmap_scale": 1.012}}, K).camera.pointmap_scale == 1.012
    for bad in (0, -1.0, "1.01", True, [1.0]):
        with pytest.raises(ValueError, match="camera's pointmap_scale is .*, not a positive number"):
            check_frame({"frame": 0, "camera": {**camera, "pointmap_scale": bad}}, K)
