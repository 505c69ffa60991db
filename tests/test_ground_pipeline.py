"""3D keypoints at pose rate in a real run: with the pointmap every 3rd frame, the ground stage
lifts the frames in between, so the tracks file has `kpts3d` on every frame of a tracked person
from its first depth frame on (the first with the lifter's root known; the fixture models, as in
test_pipeline_e2e)."""

import json

import numpy as np

from doubles import whole_frame_boxes
from media import gaussian_marker, write_video
from realtime.data import keypoint_names
from realtime.options import ModelOptions, OutputOptions
from realtime.rig.lift import ROOT
from realtime.run import RunOptions, run


def test_kpts3d_on_every_frame_after_the_first_depth_frame(tmp_path, fixtures_dir):
    from realtime.models import load_model

    frames = [gaussian_marker(120, 160, 60 + 3 * i, 60, 12) for i in range(9)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=10)
    models = {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "pointmap")}
    tracks = tmp_path / "t.jsonl"
    options = RunOptions(source=str(src),
                         models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128), dense_every=3),
                         outputs=OutputOptions(tracks=str(tracks), output_dir=str(tmp_path), progress=False))
    summary = run(options, models=models, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0, summary.result.message
    rows = [json.loads(line) for line in tracks.read_text().splitlines()]
    rows = [r for r in rows if r["type"] == "frame"]
    assert len(rows) == 9
    tracked = [(r["frame"], p) for r in rows for p in r["people"] if p.get("id") is not None]
    root = keypoint_names().index(ROOT)  # the lifter anchors on a depth frame with its root known
    depth_frames = [f for f, p in tracked if f % 3 == 0 and p.get("kpts3d") is not None and p["kpts3d"][root][0] is not None]
    assert depth_frames and depth_frames[0] < 6, "no tracked depth frame to anchor on: the fixture run changed"
    after = [(f, p) for f, p in tracked if f >= depth_frames[0]]
    assert [f for f, _ in after] == list(range(depth_frames[0], 9))  # the person is followed to the end
    assert all(p.get("kpts3d") is not None for _, p in after)  # lifted on the 2 of every 3 frames without depth
    lifted = [np.array([[np.nan if v is None else v for v in xyz] for xyz in p["kpts3d"]], float) for f, p in after if f % 3]
    assert lifted and all(np.isfinite(points).any() for points in lifted)


def test_a_motion_lag_holds_frames_in_the_run_and_lets_every_one_go_in_order(tmp_path, fixtures_dir):
    """`--motion-lag` (SmoothingOptions.motion_lag): the ground stage holds each frame until one 100 ms later has come,
    on the pipeline's threads; every frame still reaches the tracks file once, in order, with the same 3D as without
    the lag (the lag changes contact decisions only), and the end of the file lets the held ones go."""
    from realtime.models import load_model
    from realtime.options import SmoothingOptions

    frames = [gaussian_marker(120, 160, 60 + 3 * i, 60, 12) for i in range(9)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=10)
    models = {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "pointmap")}
    written = {}
    for lag in (0.0, 100.0, 250.0):
        tracks = tmp_path / f"t{lag:g}.jsonl"
        options = RunOptions(source=str(src),
                             models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128), dense_every=3),
                             smoothing=SmoothingOptions(motion_lag=lag, contacts="learned"),
                             outputs=OutputOptions(tracks=str(tracks), output_dir=str(tmp_path), progress=False))
        summary = run(options, models=models, box_finder=whole_frame_boxes)
        assert summary.result.exit_code == 0, summary.result.message
        rows = [json.loads(line) for line in tracks.read_text().splitlines()]
        written[lag] = [r for r in rows if r["type"] == "frame"]
    for lag in (100.0, 250.0):
        assert [r["frame"] for r in written[lag]] == list(range(9))
        assert [[p.get("kpts3d") for p in r["people"]] for r in written[lag]] == \
            [[p.get("kpts3d") for p in r["people"]] for r in written[0.0]]
