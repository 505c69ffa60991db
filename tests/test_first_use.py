"""First-use friction: the viewer on a machine whose Qt cannot open a window, wordings,
summaries and captions that say what really happened."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from media import gaussian_marker, write_video
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions, SourceOptions

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 / xcb is the Linux case")
def test_view_without_a_working_qt_platform_fails_before_any_file_exists(tmp_path, fixtures_dir):
    from viz.viewer import _missing_xcb_libraries

    src = write_video(tmp_path / "v.mp4", [gaussian_marker(48, 64, 30, 20, 4)] * 3)
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update(PYTHONPATH=str(ROOT), DISPLAY=":97")  # no X server answers there
    proc = subprocess.run([sys.executable, "-m", "realtime.cli", "run", str(src), "--view", "--output-dir", str(tmp_path / "rec"),
                           "--tasks", "pose", "--boxes-from", "frame", "--device", "cpu",
                           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}"],
                          env=env, capture_output=True, text=True, timeout=120)
    err = proc.stderr.strip()
    assert proc.returncode == 2, err  # not 134: Qt did not abort the run
    assert err.startswith("error: The viewer window cannot open") and len(err.splitlines()) == 1, err
    assert "run without --view" in err
    if _missing_xcb_libraries(""):  # this machine lacks xcb libraries: the packages are named
        assert "sudo apt-get install" in err and "libxcb-" in err
    assert not (tmp_path / "rec").exists()


def _marker_run(tmp_path, n=20, **groups):
    """A run of the marker model over a walk of `n` frames; `groups`: options changed by group (`input={"max_frames": 5}`)."""
    from doubles import MarkerPoseModel, whole_frame_boxes
    from realtime.run import RunOptions, run

    src = write_video(tmp_path / "walk.mp4", [gaussian_marker(120, 200, 40 + i, 50, 6) for i in range(n)])
    options = RunOptions(source=str(src), models=ModelOptions(device="cpu", input_hw=(64, 48)),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "t.jsonl"), progress=False))
    return run(options.change(**groups), models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes)


def test_the_summary_says_max_frames_stopped_the_run(tmp_path):
    summary = _marker_run(tmp_path, input={"max_frames": 5})
    result = summary.result
    assert result.reason == "max frames" and result.exit_code == 0 and result.frames_out == 5
    assert summary.lines[0] == "finished: --max-frames 5 reached"
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 6


def test_no_caption_leaves_the_overlay_clean(tmp_path):
    from media import read_video

    last = {}
    for caption in (True, False):
        folder = tmp_path / str(caption)
        folder.mkdir()
        _marker_run(folder, n=3, outputs={"caption": caption})
        video, _, _ = read_video(folder / "o.mp4")
        last[caption] = video[-1].astype(int)
    diff = np.abs(last[True] - last[False]).max(axis=2)
    # the caption line (bottom left) is there only with the caption; elsewhere only coding noise differs
    assert diff[-20:, :120].max() > 100 and diff[-20:, :120].mean() > 5 * diff[:-24].mean()


def test_caption_and_status_name_the_loaded_models_arch(fixtures_dir):
    from realtime.build import caption, model_label
    from realtime.models import load_model

    pose = load_model("pose", fixtures_dir / "pose_weights.safetensors")
    assert model_label({"pose": pose}) == "pose fixture_e32_h4_l18"
    text = caption({"pose": pose}, "cpu")({"fps": 12.0, "latency_ms": 80.0})
    assert text == "12.0 fps | latency 80 ms | pose fixture_e32_h4_l18 cpu" and "0.4b" not in text


def test_the_viewer_help_lists_only_the_tasks_that_are_on():
    from viz.compose import Layers
    from viz.viewer import key_help

    text = key_help(Layers(skeleton=True, seg=False, panes=("overlay", "depth")))
    assert "1/K skeleton" in text and "3/D depth" in text
    assert "normals" not in text and "albedo" not in text and "parts" not in text


def test_live_sources_on_a_cpu_default_to_one_frame_in_flight(tmp_path, monkeypatch):
    """On a CPU the model is done when the infer stage returns: a second frame inside would only wait
    in front of it (bench/latency.py). A GPU keeps 3 (run.LIVE_MAX_IN_FLIGHT: launch N+1 while N is collected)."""
    import realtime.run as run_module
    from doubles import MarkerPoseModel, whole_frame_boxes
    from test_reliability import Trickle

    seen = []
    real = run_module.Pipeline

    def spy(*args, **kw):
        seen.append(kw["max_in_flight"])
        return real(*args, **kw)

    monkeypatch.setattr(run_module, "Pipeline", spy)
    options = run_module.RunOptions(source="trickle", models=ModelOptions(device="cpu", input_hw=(64, 48)),
                                    smoothing=SmoothingOptions(smooth="none"),
                                    outputs=OutputOptions(no_video=True, tracks=str(tmp_path / "t.jsonl"), progress=False))
    run_module.run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes, source=Trickle(2, 0.01))
    options = options.change(input={"max_in_flight": 2}, outputs={"tracks": str(tmp_path / "t2.jsonl")})
    run_module.run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes, source=Trickle(2, 0.01))
    assert seen == [1, 2]


def test_messages_say_what_the_user_typed(tmp_path, capsys, fixtures_dir):
    from realtime.cli import main
    from realtime.errors import UserError
    from realtime.models.rtmdet import load_detector

    src = write_video(tmp_path / "v.mp4", [gaussian_marker(48, 64, 30, 20, 4)] * 2)
    code = main(["run", str(src), "--checkpoint", "pos=x.safetensors", "--output-dir", str(tmp_path / "rec")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--tasks" not in err
    assert err.startswith("error: --checkpoint pos=x.safetensors names the unknown task 'pos'")
    with pytest.raises(UserError) as wrong:  # a pose checkpoint given as the detector
        load_detector(fixtures_dir / "pose_weights.safetensors")
    assert "task and size" not in str(wrong.value) and "RTMDet-m person detector" in str(wrong.value)


def test_no_opencv_noise_before_the_error_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "realtime.cli", "run", "webcam:57", "--output-dir", str(tmp_path / "rec")],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: Webcam 57 could not be opened; check that a camera with this index exists and is not used by another program."]


def _photo_folder(tmp_path, sizes):
    import cv2

    folder = tmp_path / "photos"
    folder.mkdir()
    spots = []
    for i, (h, w) in enumerate(sizes):
        cx, cy = w * 0.3 + 5 * i, h * 0.6
        cv2.imwrite(str(folder / f"IMG_{i:03d}.png"), gaussian_marker(h, w, cx, cy, 5))
        spots.append((cx, cy))
    return folder, spots


def _run_stills(folder, tmp_path, stills=None):
    from doubles import MarkerPoseModel, whole_frame_boxes
    from realtime.run import RunOptions, run

    options = RunOptions(source=str(folder), input=SourceOptions(stills=stills),
                         models=ModelOptions(device="cpu", input_hw=(128, 96)),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "t.jsonl"), progress=False))
    summary = run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes)
    lines = [__import__("json").loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    return summary, lines[0], lines[1:]


def test_a_folder_of_photos_of_different_sizes_is_taken_as_stills(tmp_path):
    sizes = [(120, 160), (200, 100), (96, 96)]
    folder, spots = _photo_folder(tmp_path, sizes)
    summary, header, rows = _run_stills(folder, tmp_path)
    assert summary.result.exit_code == 0 and header["stills"] is True and len(rows) == 3
    for row, (h, w), (cx, cy), i in zip(rows, sizes, spots, range(3)):
        assert row["file"] == f"IMG_{i:03d}.png" and row["image_size"] == [w, h]
        person = row["people"][0]
        assert person["id"] is None and person["smoothed"] is False  # no tracking, no smoothing
        kpts = np.array(person["kpts"], dtype=float)
        assert np.allclose(kpts[:, 0], cx, atol=2.5) and np.allclose(kpts[:, 1], cy, atol=2.5)  # its own pixels


def test_a_folder_of_one_size_is_a_sequence_unless_stills_is_asked_for(tmp_path):
    folder, _ = _photo_folder(tmp_path, [(120, 160)] * 4)
    _, header, rows = _run_stills(folder, tmp_path)
    assert "stills" not in header and "file" not in rows[0] and rows[-1]["people"][0]["id"] is not None
    _, header, rows = _run_stills(folder, tmp_path, stills=True)
    assert header["stills"] is True and [r["file"] for r in rows] == [f"IMG_{i:03d}.png" for i in range(4)]
    assert all(r["people"][0]["id"] is None for r in rows)


def test_stills_for_a_video_is_one_sentence(tmp_path, capsys):
    from realtime.cli import main

    src = write_video(tmp_path / "v.mp4", [gaussian_marker(48, 64, 30, 20, 4)] * 2)
    code = main(["run", str(src), "--stills", "--output-dir", str(tmp_path / "rec")])
    assert code == 2 and "--stills is for a folder" in capsys.readouterr().err


def test_pointmap_at_another_input_size_gives_a_finite_scale_and_is_unchanged_at_its_own(fixtures_dir):
    import torch

    from realtime.models import load_model

    model = load_model("pointmap", fixtures_dir / "pointmap_weights.safetensors")
    head = model.decode_head
    trained = torch.randn(1, 32, 16, 8)  # the fixture's trained featmap grid (256x128 input)
    assert head.scale_grid((16, 8)) == (16, 8)
    reference = head.scale_final_layer(head.scale_conv_layers(trained))  # the official computation
    torch.testing.assert_close(head(trained)[1], reference, rtol=0, atol=0)
    for hw in ((8, 4), (32, 16), (64, 48)):  # what used to be a `mat1 and mat2` crash
        points, scale = head(torch.randn(1, 32, *hw))
        assert points.shape[-2:] == (16 * hw[0], 16 * hw[1]) and torch.isfinite(scale).all()


def test_dense_size_sets_the_network_input_of_normal_and_depth(tmp_path, fixtures_dir, capsys):
    import torch

    from realtime.cli import main

    seen = {}  # task -> network input sizes its model saw
    src = write_video(tmp_path / "v.mp4", [gaussian_marker(96, 128, 40, 50, 6)] * 2)

    def record(module, args):
        if hasattr(module, "task") and hasattr(module, "decode_head"):  # a Sapiens2TaskModel
            seen.setdefault(module.task, set()).add(tuple(args[0].shape[-2:]))

    handle = torch.nn.modules.module.register_module_forward_pre_hook(record)
    try:
        code = main(["run", str(src), "--tasks", "pose,normal,depth", "--dense-size", "128x96", "--input-size", "64x48",
                     "--boxes-from", "frame", "--device", "cpu", "--no-progress", "--out", str(tmp_path / "o.mp4"),
                     "--tracks", str(tmp_path / "t.jsonl"),
                     "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
                     "--checkpoint", f"normal={fixtures_dir / 'normal_weights.safetensors'}",
                     "--checkpoint", f"depth={fixtures_dir / 'pointmap_weights.safetensors'}"])
    finally:
        handle.remove()
    assert code == 0, capsys.readouterr().err
    assert seen["normal"] == {(128, 96)} and seen["pointmap"] == {(128, 96)} and seen["pose"] == {(64, 48)}
    rows = [__import__("json").loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()[1:]]
    assert len(rows) == 2 and "kpts3d" in rows[0]["people"][0]
