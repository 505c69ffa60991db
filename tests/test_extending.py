"""Adding a task and an output from outside the product code: one `Task` row and one
sink, written here in test code only, run end to end through `sapiens-rt run`'s Python
entry point (`realtime.run.run`), with a real checkpoint file, real codecs and files.
Also: albedo as a table row, and how extra sinks behave on file and live sources."""

import threading
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from doubles import MarkerPoseModel, whole_frame_boxes
from media import gaussian_marker, read_video, write_video
from realtime import tasks, transforms
from realtime.cli import main
from realtime.models import build_model
from realtime.models.heads import _DenseHead
from realtime.models.registry import ModelSpec
from realtime.options import LiveOutputOptions, ModelOptions, OutputOptions, PeopleOptions, SmoothingOptions
from realtime.run import RunOptions, run
from realtime.sources import Source, SourceInfo
from viz.panes import Pane


class GrayHead(_DenseHead):
    """A new task's head: the dense trunk and a 1-channel output conv `conv_gray`."""

    def __init__(self, in_channels, *, upsample_channels, conv_out_channels):
        super().__init__(in_channels, upsample_channels, conv_out_channels)
        self.conv_gray = nn.Conv2d(conv_out_channels[-1], 1, 1)

    def forward(self, x):
        return self.conv_gray(self.trunk(x))


def _gray_postprocess(raw, pad, map_hw):
    left, right, top, bottom = pad
    raw = raw[..., top:raw.shape[-2] - bottom, left:raw.shape[-1] - right]
    return torch.sigmoid(F.interpolate(raw, size=map_hw, mode="bilinear", align_corners=False))[0, 0]


def _gray_render(maps, foreground, size_hw):
    gray = maps.get("gray")
    if gray is None:
        return None
    import cv2

    image = (np.clip(gray, 0, 1) * 255).astype(np.uint8)
    return np.repeat(cv2.resize(image, size_hw[::-1], interpolation=cv2.INTER_NEAREST)[..., None], 3, axis=2)


GRAY = tasks.Task(
    model=ModelSpec(
        name="gray", head=GrayHead, output_layer="conv_gray",
        head_kwargs={"fixture_e32_h4_l18": dict(upsample_channels=(32, 16, 16, 8), conv_out_channels=(8, 8, 4))},
        hub_repo=None, input_hw=(64, 48)),
    preprocess=transforms.resize_pad, postprocess=_gray_postprocess, field="gray", aliases=("grey",),
    pane=Pane(name="gray", title="gray", render=_gray_render, hot_keys=("B",)),
)


class Collect:
    """A new sink: keeps what it is given; `fail_at=k` raises on its (k+1)-th write."""

    def __init__(self, delay=0.0, fail_at=None, on_write=None):
        self.delay, self.fail_at, self.on_write = delay, fail_at, on_write
        self.frames, self.closed = [], False

    def write(self, frame):
        if self.on_write is not None:
            self.on_write(frame)
        if len(self.frames) == self.fail_at:  # counted in writes: a live sink may be handed any frame
            raise RuntimeError("network down")
        time.sleep(self.delay)
        self.frames.append(frame)

    def close(self):
        self.closed = True


@pytest.fixture
def gray_task():
    tasks.register(GRAY)
    yield GRAY
    tasks.unregister("gray")


def test_a_task_row_and_a_sink_added_in_test_code_run_end_to_end(tmp_path, fixtures_dir, gray_task):
    model = build_model("gray", "fixture_e32_h4_l18")  # the arch table and the new row give its shape
    checkpoint = tmp_path / "gray.safetensors"
    save_file(model.state_dict(), str(checkpoint))
    frames = [gaussian_marker(96, 128, 30 + 8 * i, 50, 10) for i in range(5)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=10)
    sink = Collect()
    checkpoints = {"pose": str(fixtures_dir / "pose_weights.safetensors"), "gray": str(checkpoint)}
    options = RunOptions(source=str(src),
                         models=ModelOptions(tasks=("pose", "grey"), device="cpu", input_hw=(64, 48), checkpoints=checkpoints),
                         people=PeopleOptions(boxes_from="frame"),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "t.jsonl"), progress=False),
                         live_outputs=LiveOutputOptions(sinks=[sink]))
    summary = run(options)
    assert summary.result.exit_code == 0, summary.result.message
    # the sink saw every frame of the file, in order, with the new task's map and the keypoints
    assert [f.index for f in sink.frames] == list(range(5)) and sink.closed
    for frame in sink.frames:
        gray = frame.dense.get("gray")
        assert gray.shape == (96, 128) and np.isfinite(gray).all() and gray.std() > 0
        assert frame.people[0].keypoints.shape == (308, 2)
        # the new pane sits right of the overlay and shows the row's rendering of this frame's map
        assert frame.overlay.shape == (96, 256, 3)
        expected = _gray_render(frame.dense, None, (96, 128))
        assert np.array_equal(frame.overlay[25:75, 128:], expected[25:75])  # between the title and the caption
    # the map is what the loaded model gives for that frame (not a reused or stale one)
    loaded = tasks.get("gray")
    image = torch.from_numpy(sink.frames[2].image).permute(2, 0, 1)
    x, pad = loaded.preprocess(image, loaded.input_hw)
    with torch.no_grad():
        direct = loaded.postprocess(model(x).float(), pad, (96, 128)).numpy()
    np.testing.assert_allclose(sink.frames[2].dense.get("gray"), direct, atol=1e-5)
    video, _, _ = read_video(tmp_path / "o.mp4")
    assert len(video) == 5 and video[0].shape == (96, 256, 3)


def test_albedo_runs_from_a_users_checkpoint_with_its_own_pane(tmp_path, fixtures_dir, capsys):
    # a fixture albedo model: the fixture backbone and the fixture albedo head of the official code
    weights = {k: v for k, v in load_file(str(fixtures_dir / "normal_weights.safetensors")).items() if k.startswith("backbone.")}
    weights.update(load_file(str(fixtures_dir / "albedo_head_weights.safetensors")))
    checkpoint = tmp_path / "my_albedo.safetensors"
    save_file(weights, str(checkpoint))
    frames = [gaussian_marker(96, 128, 40 + 10 * i, 50, 12) for i in range(3)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=10)
    out = tmp_path / "o.mp4"
    code = main(["run", str(src), "--tasks", "albedo", "--checkpoint", f"albedo={checkpoint}", "--out", str(out),
                 "--tracks", str(tmp_path / "t.jsonl"), "--device", "cpu", "--no-progress", "--boxes-from", "frame"])
    assert code == 0, capsys.readouterr().err
    video, _, _ = read_video(out)
    assert len(video) == 3 and video[0].shape == (96, 256, 3)  # the overlay and the albedo pane
    pane = video[1][30:, 128:].astype(int)
    assert pane.std() > 1  # a picture, not the dark "no data" placeholder

    # without a checkpoint: one sentence saying there are no public weights and what to pass
    code = main(["run", str(src), "--tasks", "albedo", "--out", str(tmp_path / "x.mp4"), "--device", "cpu", "--no-progress",
                 "--output-dir", str(tmp_path / "rec")])
    assert code == 2
    assert "No albedo weights are released; pass your own checkpoint with --checkpoint albedo=PATH." in capsys.readouterr().err


class LiveFrames(Source):
    """A camera: n marker frames, one every `period` seconds."""

    def __init__(self, n, period=0.01):
        self.n, self.period = n, period

    def open(self):
        self.info = SourceInfo(name="cam", uri="cam", live=True, width=64, height=48, fps=1 / self.period, frame_count=None)
        return self.info

    def frames(self):
        for i in range(self.n):
            time.sleep(self.period)
            yield i * self.period, gaussian_marker(48, 64, 20 + i, 20, 4)


def _marker_run(tmp_path, source, sinks):
    options = RunOptions(source="cam", models=ModelOptions(device="cpu", input_hw=(64, 48)),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(no_video=True, tracks=str(tmp_path / "t.jsonl"), progress=False),
                         live_outputs=LiveOutputOptions(sinks=sinks))
    return run(options, models={"pose": MarkerPoseModel()}, box_finder=whole_frame_boxes, source=source)


def test_live_a_stuck_sink_gets_the_newest_frame_and_never_stalls_the_run(tmp_path):
    released = threading.Event()
    n = 12
    watcher = Collect()
    # Sinks close in order: by the time the watcher closes, every frame has been handed to the
    # stuck sink too, so its waiting frame is the last one (releasing on frame n-1's write
    # instead races with that frame's hand-over under load).
    watcher.close = released.set
    stuck = Collect(on_write=lambda f: released.wait())  # blocked on its first frame until the run has ended
    summary = _marker_run(tmp_path, LiveFrames(n), [watcher, stuck])
    assert summary.result.exit_code == 0
    processed = summary.result.frames_out
    # every frame went through the pipeline and into the tracks while the sink was stuck
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 1 + processed
    # the stuck sink got its first frame and then only the newest one; the rest were skipped (a camera
    # may drop its very first frame at the gate under load, so "first" is the watcher's first)
    assert [f.index for f in stuck.frames] == [watcher.frames[0].index, watcher.frames[-1].index]
    assert any("frames skipped" in line for line in summary.lines)


def test_live_a_failing_sink_is_cut_off_and_the_run_goes_on(tmp_path):
    broken = Collect(fail_at=2)
    summary = _marker_run(tmp_path, LiveFrames(6), [broken])
    assert summary.result.exit_code == 0 and summary.result.frames_out >= 3
    indices = [f.index for f in broken.frames]
    assert len(indices) == 2 and indices == sorted(set(indices)) and broken.closed
    assert any("output Collect stopped after 2 frames: network down" in line for line in summary.lines)


class ThreadCountingPose(MarkerPoseModel):
    """The marker model, noting how many intra-op threads torch gives the thread that runs it."""

    def __init__(self):
        super().__init__()
        self.threads: set[int] = set()

    def forward(self, x):
        self.threads.add(torch.get_num_threads())
        return super().forward(x)


@pytest.mark.parametrize("video", [False, True])
def test_a_live_cpu_run_that_draws_leaves_one_core_to_the_picture(tmp_path, video):
    """With live senders and an overlay video on a CPU, the model runs on one thread fewer than
    the machine's (a parallel op waits for its slowest thread, so an encoder on one of the model's
    cores would hold up every op); without the overlay it keeps them all; afterwards they are back."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        model, sender = ThreadCountingPose(), Collect()
        outputs = {"out": str(tmp_path / "overlay.mp4")} if video else {"no_video": True}
        options = RunOptions(source="cam", models=ModelOptions(device="cpu", input_hw=(64, 48)),
                             smoothing=SmoothingOptions(smooth="none"),
                             outputs=OutputOptions(tracks=str(tmp_path / "t.jsonl"), progress=False, **outputs),
                             live_outputs=LiveOutputOptions(senders=[sender]))
        summary = run(options, models={"pose": model}, box_finder=whole_frame_boxes, source=LiveFrames(4))
        assert summary.result.exit_code == 0 and sender.frames
        # warm-up runs on the caller's thread with all of them; the stage thread gets what the run chose
        assert model.threads == ({2, 1} if video else {2})
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


class FileFrames(LiveFrames):
    def open(self):
        info = super().open()
        self.info = SourceInfo(**{**info.__dict__, "live": False, "frame_count": self.n})
        return self.info


def test_file_a_slow_sink_gets_every_frame_and_a_failing_one_stops_the_run(tmp_path):
    slow = Collect(delay=0.02)
    summary = _marker_run(tmp_path, FileFrames(8, period=0.001), [slow])
    assert summary.result.exit_code == 0
    assert [f.index for f in slow.frames] == list(range(8))
    summary = _marker_run(tmp_path, FileFrames(8, period=0.001), [Collect(fail_at=3)])
    assert summary.result.exit_code == 1
    assert "stage 'write' failed on frame 3: RuntimeError: network down" in summary.result.message


def test_download_and_run_know_the_same_task_names(tmp_path, monkeypatch, capsys, fixtures_dir):
    (tmp_path / "pointmap").mkdir()
    target = tmp_path / "pointmap" / "sapiens2_1b_pointmap.safetensors"
    target.write_bytes((fixtures_dir / "pointmap_weights.safetensors").read_bytes())
    monkeypatch.setenv("SAPIENS_CHECKPOINT_ROOT", str(tmp_path))
    for name in ("depth", "depth-estimation", "pointmap"):  # the CLI alias and the transformers task name
        assert main(["download", "--tasks", name, "--size", "1b"]) == 0
        assert capsys.readouterr().out.strip() == f"pointmap: {target}"
    assert tasks.parse("keypoint-detection,image-segmentation,depth") == ("pose", "seg", "pointmap")
