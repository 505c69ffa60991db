"""Tracks-file fields without sentinels: tentative people have no id and stay out of
per-person tracks, keypoints without a heatmap peak are null, and the live filter's
`predicted` flags are written and read back."""

import json

import numpy as np

from doubles import MarkerPoseModel
from media import gaussian_marker, write_video
from realtime.export.jsonl import read_tracks
from realtime.frames import Frame, Person
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions
from realtime.run import RunOptions, run
from realtime.sinks.tracks import TrackWriter


def test_predicted_flags_and_tentative_people_round_trip(tmp_path):
    image = np.zeros((4, 4, 3), np.uint8)
    xy = np.tile([[1.0, 2.0]], (3, 1)).astype(np.float32)
    scores = np.array([0.9, 0.1, 0.8], np.float32)
    confirmed = Person(box=np.zeros(4, np.float32), track_id=4, keypoints=xy, keypoint_scores=scores,
                       keypoints_smoothed=xy, predicted=np.array([False, True, False]))
    tentative = Person(box=np.ones(4, np.float32), keypoints=xy + 1, keypoint_scores=scores)
    path = tmp_path / "t.jsonl"
    with TrackWriter(path, keypoint_names=["a", "b", "c"], image_wh=(4, 4), fps=10, source="s", model={}, tracked=True) as w:
        w.write(Frame(0, 0.0, image, people=(confirmed, tentative)))
        w.write(Frame(1, 0.1, image, people=(tentative,)))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["tracked"] is True
    assert lines[1]["people"][0]["predicted"] == [0, 1, 0] and lines[1]["people"][1]["id"] is None
    assert "predicted" not in lines[1]["people"][1]  # not filtered: no flags
    tracks = read_tracks(path)
    assert list(tracks.people) == [4]  # the tentative detections belong to nobody
    assert tracks.people[4].predicted.tolist() == [[False, True, False], [False, False, False]]


def test_a_run_writes_null_ids_for_tentative_people_and_null_points_without_a_peak(tmp_path):
    # one marker on the left all along; from frame 3 a second box over empty background on the right
    frames = [gaussian_marker(96, 200, 40 + 2 * i, 50, 8) for i in range(8)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=25)

    def boxes(image, index, previous=(), seg=None):
        b = [[0, 0, 99, 95]] + ([[110, 0, 199, 95]] if index >= 3 else [])
        return np.array(b, np.float32), np.array([0.9, 0.8][:len(b)], np.float32), "detector"

    path = tmp_path / "t.jsonl"
    options = RunOptions(source=str(src), models=ModelOptions(device="cpu", input_hw=(128, 96)),
                         smoothing=SmoothingOptions(smooth="kalman"),
                         outputs=OutputOptions(no_video=True, tracks=str(path), progress=False))
    assert run(options, models={"pose": MarkerPoseModel()}, box_finder=boxes).result.exit_code == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["tracked"] is True
    rows = lines[1:]
    ids = [[p["id"] for p in r["people"]] for r in rows]
    assert ids[:2] == [[None], [None]] and ids[2] == [0]  # confirmed on its 3rd frame
    assert ids[3][1] is None and ids[5][1] is not None  # the second box: tentative, then its own id
    empty = rows[3]["people"][1]["kpts"]  # nothing bright in that box: no peak anywhere
    assert all(x is None and y is None and s <= 0 for x, y, s in empty)
    marker = rows[4]["people"][0]
    assert len(marker["predicted"]) == 308 and set(marker["predicted"]) <= {0, 1}
    tracks = read_tracks(path)
    assert sorted(tracks.people) == [0, 1]
    assert tracks.people[0].present.tolist() == [False, False] + [True] * 6
