"""Faults and awkward inputs through the whole pipeline: truncated files, odd and huge
frames, mixed image folders, signals, out-of-memory back-off, checkpoint mistakes,
a slow source that must not spin the CPU."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from doubles import MarkerPoseModel, whole_frame_boxes
from media import gaussian_marker, read_video, write_video
from realtime.cli import main
from realtime.errors import UserError
from realtime.infer import Predictor
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions
from realtime.run import RunOptions, run
from realtime.sources import Source, SourceInfo

ROOT = Path(__file__).resolve().parents[1]


def _rows(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines()[1:] if line.strip()]


def _run_marker(source: str, tmp_path: Path):
    options = RunOptions(source=source, models=ModelOptions(device="cpu", input_hw=(256, 192)),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "t.jsonl"), progress=False))
    return run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes)


def test_truncated_video_processes_what_decodes_then_says_so(tmp_path):
    frames = [np.random.default_rng(i).integers(0, 255, (96, 128, 3), dtype=np.uint8) for i in range(40)]
    full = write_video(tmp_path / "full.mkv", frames)
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size * 6 // 10])
    summary = _run_marker(str(cut), tmp_path)
    r = summary.result
    assert r.exit_code == 3 and "truncated" in r.message, r.message
    rows = _rows(tmp_path / "t.jsonl")
    video, _, _ = read_video(tmp_path / "o.mp4")
    assert 5 <= len(rows) < 40 and len(video) == len(rows)


@pytest.mark.parametrize("hw", [(1, 1), (479, 641), (2160, 3840)])
def test_tiny_odd_and_4k_frames(tmp_path, hw):
    image = gaussian_marker(*hw, hw[1] / 2, hw[0] / 2, max(1.0, hw[0] / 10))
    cv2.imwrite(str(tmp_path / "frame.png"), image)
    summary = _run_marker(str(tmp_path / "frame.png"), tmp_path)
    assert summary.result.exit_code == 0, summary.result.message
    video, _, _ = read_video(tmp_path / "o.mp4")
    assert len(video) == 1 and video[0].shape[0] % 2 == 0 and video[0].shape[1] % 2 == 0
    assert video[0].shape[0] >= hw[0] and video[0].shape[1] >= hw[1]
    kpts = np.array(__import__("json").loads(_rows(tmp_path / "t.jsonl")[0])["people"][0]["kpts"], dtype=float)
    assert np.isfinite(kpts).all()


def test_image_folder_of_mixed_sizes_and_formats(tmp_path):
    folder = tmp_path / "shots"
    folder.mkdir()
    cv2.imwrite(str(folder / "a1.png"), gaussian_marker(120, 160, 80, 60, 8))
    cv2.imwrite(str(folder / "a2.png"), cv2.cvtColor(gaussian_marker(200, 100, 50, 100, 8), cv2.COLOR_RGB2GRAY))
    cv2.imwrite(str(folder / "a3.png"), (gaussian_marker(90, 90, 45, 45, 6).astype(np.uint16) * 257))
    summary = _run_marker(str(folder), tmp_path)
    assert summary.result.exit_code == 0
    video, _, _ = read_video(tmp_path / "o.mp4")
    assert len(video) == 3 and len({v.shape for v in video}) == 1


class Trickle(Source):
    """A live source delivering a frame every `period` seconds."""

    def __init__(self, n, period):
        self.n, self.period = n, period

    def open(self):
        self.info = SourceInfo(name="trickle", uri="trickle", live=True, width=64, height=48, fps=1 / self.period,
                               frame_count=None)
        return self.info

    def frames(self):
        for i in range(self.n):
            time.sleep(self.period)
            yield i * self.period, gaussian_marker(48, 64, 30, 20, 4)


def test_a_slow_source_does_not_spin_the_cpu(tmp_path):
    options = RunOptions(source="trickle", models=ModelOptions(device="cpu", input_hw=(64, 48)),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(no_video=True, tracks=str(tmp_path / "t.jsonl"), progress=False))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    summary = run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes, source=Trickle(5, 0.5))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    assert summary.result.frames_out == 5 and wall >= 2.5
    assert cpu < 0.35 * wall  # waiting threads block; nothing busy-polls


def test_gpu_out_of_memory_lowers_the_batch_then_names_the_setting():
    class OOMAbove(torch.nn.Module):
        def __init__(self, limit):
            super().__init__()
            self.inner, self.limit, self.batches = MarkerPoseModel(), limit, []

        def forward(self, x):
            self.batches.append(len(x))
            if len(x) > self.limit:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
            return self.inner(x)

    image = gaussian_marker(120, 160, 80, 60, 8)
    boxes = np.array([[10 * i, 10, 10 * i + 60, 100] for i in range(5)], np.float32)
    model = OOMAbove(limit=2)
    predictor = Predictor({"pose": model}, input_hw=(64, 48), max_batch=8)
    pred = predictor.predict(image, boxes)
    assert pred.keypoints.shape == (5, 308, 2) and predictor.max_batch == 2
    assert model.batches[0] == 5 and max(model.batches[1:]) <= 2
    with pytest.raises(UserError, match="lower --input-size"):
        Predictor({"pose": OOMAbove(limit=0)}, input_hw=(64, 48)).predict(image, boxes)


def _cli(tmp_path, capsys, *args):
    src = write_video(tmp_path / "v.mp4", [gaussian_marker(48, 64, 30, 20, 4)] * 2)
    code = main(["run", str(src), "--device", "cpu", "--no-progress", "--output-dir", str(tmp_path / "rec"), *args])
    return code, capsys.readouterr().err.strip()


def test_checkpoint_of_the_wrong_task(tmp_path, capsys, fixtures_dir):
    code, err = _cli(tmp_path, capsys, "--tasks", "pose", "--boxes-from", "frame",
                     "--checkpoint", f"pose={fixtures_dir / 'seg_weights.safetensors'}")
    assert code == 2 and err.startswith("error: ") and "seg" in err and "Traceback" not in err


def test_truncated_checkpoint(tmp_path, capsys, fixtures_dir):
    cut = tmp_path / "pose.safetensors"
    cut.write_bytes((fixtures_dir / "pose_weights.safetensors").read_bytes()[:5000])
    code, err = _cli(tmp_path, capsys, "--tasks", "pose", "--boxes-from", "frame", "--checkpoint", f"pose={cut}")
    assert code == 2 and "truncated" in err and "Traceback" not in err


def test_missing_weights_while_offline(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    code, err = _cli(tmp_path, capsys, "--tasks", "pose", "--boxes-from", "frame")
    assert code == 2 and "facebook/sapiens2-pose-0.4b" in err and "sapiens-rt download" in err
    assert not (tmp_path / "rec").exists()  # no empty output folder left behind
    code, err = _cli(tmp_path, capsys, "--tasks", "pose", "--checkpoint", f"pose={tmp_path / 'none.safetensors'}")
    assert code == 2 and "does not exist" in err


def test_missing_detector_while_offline_names_the_alternatives(tmp_path, capsys, monkeypatch, fixtures_dir):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    code, err = _cli(tmp_path, capsys, "--tasks", "pose", "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}")
    assert code == 2 and "sapiens-rt download --tasks detector" in err and "--boxes-from seg" in err


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signals_mid_run_leave_playable_video_and_complete_tracks(tmp_path, fixtures_dir, sig):
    frames = [gaussian_marker(240, 320, 50 + i, 100, 10) for i in range(300)]
    src = write_video(tmp_path / "long.mp4", frames, fps=30)
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    cmd = [sys.executable, "-m", "realtime.cli", "run", str(src), "--out", str(out), "--tracks", str(tracks),
           "--input-size", "256x192", "--tasks", "pose,seg", "--device", "cpu", "--no-progress", "--boxes-from", "frame",
           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}",
           "--checkpoint", f"seg={fixtures_dir / 'seg_weights.safetensors'}"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if tracks.exists() and len(tracks.read_text().splitlines()) >= 6:  # header + 5 frames
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    word, code = ("interrupted", 130) if sig == signal.SIGINT else ("terminated", 143)
    assert proc.returncode == code, stderr
    assert f"stopped: {word}" in stdout and "Traceback" not in stderr
    rows = _rows(tracks)
    assert 5 <= len(rows) < 300
    video, _, _ = read_video(out)
    assert len(video) == len(rows)


def test_every_missing_weight_file_is_named_at_once_with_one_download_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    code, err = _cli(tmp_path, capsys, "--tasks", "pose,seg,depth")
    assert code == 2 and len(err.splitlines()) == 1, err
    for repo in ("facebook/sapiens2-pose-0.4b", "facebook/sapiens2-seg-0.4b", "facebook/sapiens2-pointmap-0.4b",
                 "facebook/sapiens-pose-bbox-detector"):
        assert repo in err
    assert "`sapiens-rt download --tasks pose,seg,depth,detector --size 0.4b`" in err and "--boxes-from frame" in err
    assert not (tmp_path / "rec").exists()


def test_download_by_default_fetches_what_run_uses_by_default_and_offline_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("SAPIENS_CHECKPOINT_ROOT", raising=False)
    code = main(["download"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    for repo in ("facebook/sapiens2-pose-0.4b", "facebook/sapiens2-seg-0.4b", "facebook/sapiens-pose-bbox-detector"):
        assert repo in err
    assert "offline" in err and "sapiens-rt download" not in err  # it does not tell you to run itself
