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

from export_synthetic import FPS, IMAGE_SIZE, K, NAMES, NUM_FRAMES, expected_scores, expected_xy, expected_xyz, write_synthetic
from realtime.errors import UserError
from realtime.export.jsonl import read_tracks
from realtime.sinks.tracks import TrackWriter
from realtime.frames import Frame, Person

REPO = Path(__file__).resolve().parent.parent


def test_file_follows_schema_v1(tmp_path):
    path = write_synthetic(tmp_path / "t.jsonl")
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + NUM_FRAMES  # header + one line per frame, also the empty frame 2
    header = json.loads(lines[0])
    assert header["type"] == "header" and header["version"] == 1
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
    with TrackWriter(tmp_path / "u.jsonl", keypoint_names=["a", "b", "c"], image_wh=(2, 2), fps=10, source="s", model={}) as writer:
        writer.write(Frame(index=0, timestamp=0.0, image=image, people=(person, person.replace(keypoints=xy + 5))))
        writer.write(Frame(index=1, timestamp=0.1, image=image, people=(person,)))
    tracks = read_tracks(tmp_path / "u.jsonl")
    assert list(tracks.people) == [-2, -1]  # no id: keyed by order in the frame
    np.testing.assert_allclose(tracks.people[-2].keypoints[0], xy + 5)
    assert np.isnan(tracks.people[-1].scores).all()  # no scores written -> null
    assert tracks.people[-1].keypoints3d is None


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
        (lambda lines: [lines[0].replace('"version":1', '"version":2')] + lines[1:], "schema version 2"),
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
