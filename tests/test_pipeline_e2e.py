"""End to end on synthetic videos made here: the real CLI, real codecs, tiny models
with the official structure (the golden-fixture weights), and a marker test double
for geometric truth."""

import json
import threading
from pathlib import Path

import numpy as np

from doubles import FailingModel, MarkerPoseModel, whole_frame_boxes
from media import gaussian_marker, read_video, write_video
from realtime.cli import main
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions, SourceOptions
from realtime.run import RunOptions, run


def _read_jsonl(path: Path):
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert lines[0]["type"] == "header"
    return lines[0], [record for record in lines[1:] if record["type"] == "frame"]


def _fixture_args(fixtures_dir, tasks=("pose", "seg")):
    args = ["--tasks", ",".join(tasks), "--device", "cpu", "--no-progress", "--boxes-from", "frame"]
    for task in tasks:
        args += ["--checkpoint", f"{task}={fixtures_dir / f'{task}_weights.safetensors'}"]
    return args


def test_cli_end_to_end_frames_timestamps_and_audio(tmp_path, fixtures_dir):
    times = [0.0, 0.04, 0.08, 0.15, 0.19, 0.23, 0.4, 0.44, 0.48, 0.52]  # variable frame rate
    frames = [gaussian_marker(120, 160, 40 + 8 * i, 60, 10) for i in range(len(times))]
    src = write_video(tmp_path / "clip.mp4", frames, times=times, audio_seconds=0.6)
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    code = main(["run", str(src), "--out", str(out), "--tracks", str(tracks), "--input-size", "256x192",
                 *_fixture_args(fixtures_dir)])
    assert code == 0
    got, got_times, has_audio = read_video(out)
    assert len(got) == len(times) and has_audio
    assert np.allclose(got_times, times, atol=1e-3)
    header, rows = _read_jsonl(tracks)
    assert header["version"] == 5 and len(header["keypoint_names"]) == 308 and header["image_size"] == [160, 120]
    assert [r["frame"] for r in rows] == list(range(len(times)))
    assert np.allclose([r["t"] for r in rows], times, atol=1e-3)
    assert all(len(r["people"]) == 1 and len(r["people"][0]["kpts"]) == 308 for r in rows)


def test_keypoints_follow_a_moving_marker_within_a_pixel(tmp_path):
    path_xy = [(60.3 + 9.7 * i, 50.6 + 6.1 * i) for i in range(16)]
    frames = [gaussian_marker(240, 320, x, y, 8) for x, y in path_xy]
    src = write_video(tmp_path / "marker.mp4", frames, fps=25)
    tracks = tmp_path / "marker.jsonl"
    options = RunOptions(source=str(src), models=ModelOptions(device="cpu"), smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(out=str(tmp_path / "marker_out.mp4"), tracks=str(tracks), progress=False))
    summary = run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0
    _, rows = _read_jsonl(tracks)
    assert len(rows) == len(path_xy)
    errors = []
    for row, (x, y) in zip(rows, path_xy):
        kx, ky, score = row["people"][0]["kpts"][0]
        errors.append(np.hypot(kx - x, ky - y))
    # through crop (UDP warp), heatmap decode (DARK) and un-warp, in original-image pixels
    assert max(errors) < 1.0, errors


def test_a_failing_stage_stops_cleanly_with_valid_outputs(tmp_path):
    before = threading.active_count()
    path_xy = [(100 + 3 * i, 120) for i in range(12)]
    frames = [gaussian_marker(240, 320, x, y, 8) for x, y in path_xy]
    src = write_video(tmp_path / "m.mp4", frames, fps=25)
    options = RunOptions(source=str(src), input=SourceOptions(max_in_flight=1), models=ModelOptions(device="cpu"),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "t.jsonl"), progress=False))
    # call 1 is the warm-up before the run, so call 7 is frame 5
    summary = run(options, models={"pose": FailingModel(MarkerPoseModel(), fail_on_call=7)}, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 1
    assert "stage 'infer' failed on frame 5: RuntimeError: injected failure" in summary.result.message
    assert threading.active_count() == before
    _, rows = _read_jsonl(tmp_path / "t.jsonl")
    video, _, _ = read_video(tmp_path / "o.mp4")
    assert [r["frame"] for r in rows] == list(range(5)) and len(video) == 5


def test_all_dense_tasks_with_3d_keypoints_in_the_tracks(tmp_path, fixtures_dir):
    """pose + seg + normal + pointmap (fixture models), pointmap every 2nd frame: depth and
    normal panes in the video, metric 3D keypoints on the frames with a fresh pointmap."""
    from realtime.models import load_model

    frames = [gaussian_marker(120, 160, 60 + 4 * i, 60, 12) for i in range(6)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=10)
    models = {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors")
              for task in ("pose", "seg", "normal", "pointmap")}
    tracks = tmp_path / "t.jsonl"
    options = RunOptions(source=str(src),
                         models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128), dense_every=2),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tracks), progress=False))
    summary = run(options, models=models, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0, summary.result.message
    video, _, _ = read_video(tmp_path / "o.mp4")
    assert len(video) == 6 and video[0].shape[1] > 160  # overlay plus the depth/normal panes beside it
    _, rows = _read_jsonl(tracks)
    with_3d = [r["frame"] for r in rows if r["people"][0].get("kpts3d") is not None]
    # the frames whose pointmap was computed (not reused), and, lifted between them by the ground stage, every
    # frame of a tracked person from their first depth frame with the lifter's root known (test_ground_pipeline.py)
    from realtime.data import keypoint_names
    from realtime.rig.lift import ROOT

    root = keypoint_names().index(ROOT)
    first = min(r["frame"] for r in rows if r["frame"] % 2 == 0 and r["people"][0].get("id") is not None
                and r["people"][0]["kpts3d"][root][0] is not None)
    assert with_3d == sorted({0, 2, 4} | set(range(first, 6)))
    points = np.array([[np.nan if v is None else v for v in p] for p in rows[0]["people"][0]["kpts3d"]], float)
    assert points.shape == (308, 3) and np.isfinite(points).any()
