"""CUDA graphs on the stand-in GPU (tests/gpu_standin.py). Predictor(cuda_graphs=True): one graph
per (task, person bucket, crop sampling), captured on first use by the launching thread, replayed
after; outputs equal eager's; a handful of launches per predict; no races with frames in flight.
The detector (cuda_graphs=True): one graph per frame size through the same machinery
(realtime/models/cuda_graph.py), one replay and one host wait per call, outputs equal eager's.
Work that cannot be captured runs eagerly."""

import copy
import logging

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime.infer import Predictor
from realtime.models.cuda_graph import GraphCache
from realtime.models.rtmdet import load_detector
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions
from tests.gpu_standin import StandinGPU

CAPTURE = "torch.cuda.graph(): synchronize before capturing"

IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95], [20, 30, 90, 80], [5, 5, 50, 50]], np.float32)


@pytest.fixture(scope="module")
def task_models(fixtures_dir):
    from realtime.models import load_model

    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "seg")}


def _captures(gpu) -> int:
    return sum(e.what == CAPTURE for e in gpu.rec.log)


def _people(n: int) -> np.ndarray:
    """n boxes, small ones (crops that enlarge: bicubic) and large ones (bilinear) mixed."""
    rng = np.random.default_rng(n)
    sides = np.where(np.arange(n) % 2 == 0, 20.0, 90.0)[:, None]
    x0, y0 = rng.uniform(0, 40, (n, 1)), rng.uniform(0, 10, (n, 1))
    return np.hstack((x0, y0, x0 + 0.75 * sides, y0 + sides)).astype(np.float32)


FEW = (1, 3, 5, 3, 1)  # people per frame of BOXES
COUNTS = tuple(range(1, 10)) + tuple(range(8, 0, -1))  # people per frame of _people(n)


@pytest.fixture(scope="module")
def graphed(task_models):
    """One graphed Predictor on the stand-in, warmed up once, then given the frames of both tests
    below in turn (FEW, then COUNTS); what each test asserts is recorded per step, with the eager
    predictions (the same padded batches and head layout: channels_last, what a CUDA Predictor picks)."""
    eager = Predictor(copy.deepcopy(task_models), input_hw=(128, 96), pad_batches=True, channels_last=True)
    rec = {"few_wants": [eager.predict(IMAGE, BOXES[:n]) for n in FEW],
           "counts_wants": [eager.predict(IMAGE, _people(n)) for n in COUNTS]}
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True)
        rec["padded"], rec["buckets"] = predictor.padded, predictor.buckets()
        predictor.warm_up(IMAGE.shape[:2])
        rec["warmed"], rec["warm_captures"] = set(predictor._graphs.captured()), _captures(gpu)
        rec["sealed"] = predictor._graphs.sealed
        for name, frames in (("few", [BOXES[:n] for n in FEW]), ("counts", [_people(n) for n in COUNTS])):
            steps = []
            for boxes in frames:
                gpu.rec.clear()
                got = predictor.predict(IMAGE, boxes)
                steps.append({"got": got, "launches": gpu.rec.launches(), "syncs": len(gpu.rec.syncs()),
                              "captures": _captures(gpu)})
            rec[name] = steps
            rec[f"{name}_races"] = list(gpu.rec.races)
            rec[f"{name}_captured"], rec[f"{name}_late"] = set(predictor._graphs.captured()), list(predictor._graphs.late)
            rec[f"{name}_report"] = predictor.graph_report()
    return rec


def test_graphed_predictions_equal_eager_with_few_launches(graphed):
    assert graphed["padded"] and graphed["buckets"] == (1, 2, 3, 4, 6, 8, 12, 16)
    # the warm-up captures every key: one per bucket (sampling is picked per crop on the
    # device, so it is no part of a key) and the seg map of this frame size
    assert graphed["warmed"] == {("pose", b, (3, 96, 128)) for b in graphed["buckets"]} | {("seg", (3, 96, 128), (96, 128))}
    assert graphed["warm_captures"] == 9 and graphed["sealed"]
    steps = graphed["few"]
    assert [step["captures"] for step in steps] == [0] * len(FEW)
    assert not graphed["few_races"] and graphed["few_late"] == [] and graphed["few_report"] == []
    assert [step["syncs"] for step in steps] == [1, 1, 1, 1, 1]  # the frame's one wait: no capture (and its synchronize) mid-run
    # replayed: per task a graph launch, its input copies and the output's clone, plus the transfers
    launches = [step["launches"] for step in steps]
    assert launches[3] == launches[4] <= 16, launches
    for step, w in zip(steps, graphed["few_wants"]):
        g = step["got"]
        np.testing.assert_array_equal(g.keypoints, w.keypoints)
        np.testing.assert_array_equal(g.keypoint_scores, w.keypoint_scores)
        np.testing.assert_array_equal(g.seg, w.seg)


def test_no_capture_after_the_warm_up_while_the_people_count_goes_1_to_9_and_back(graphed):
    """The issue-31 stall: a graph captured mid-run (a device-wide synchronize and a capture)
    whenever the people count met a new bucket or a person crossed the bilinear/bicubic edge."""
    steps = graphed["counts"]
    for step, want in zip(steps, graphed["counts_wants"]):
        np.testing.assert_array_equal(step["got"].keypoints, want.keypoints)
        np.testing.assert_array_equal(step["got"].seg, want.seg)
    assert not graphed["counts_races"]
    assert graphed["counts_captured"] == graphed["warmed"] and graphed["counts_late"] == []
    # no capture after the warm-up, one host wait per predict
    assert [(step["captures"], step["syncs"]) for step in steps] == [(0, 1)] * len(COUNTS)


def test_a_key_the_warm_up_missed_is_counted_and_reported(task_models):
    with StandinGPU():
        models = {"pose": copy.deepcopy(task_models["pose"]).to("cuda")}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True)
        predictor.warm_up(IMAGE.shape[:2])
        other = np.zeros((64, 128, 3), np.uint8)  # another frame size than the warm-up's
        predictor.predict(other, BOXES[:1])
    assert predictor._graphs.late == [("pose", 1, (3, 64, 128))]
    assert predictor.graph_report() == ["inference: 1 CUDA graph(s) captured mid-run (each stalled the run), "
                                        "for keys the warm-up did not meet: ('pose', 1, (3, 64, 128))"]


def test_graphed_frames_in_flight_keep_their_own_outputs(task_models):
    eager = Predictor(copy.deepcopy(task_models), input_hw=(128, 96), pad_batches=True, channels_last=True)
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), cuda_graphs=True)
        predictor.predict(IMAGE, BOXES[:2])  # captured
        other = np.ascontiguousarray(IMAGE[::-1])
        first = predictor.launch(IMAGE, BOXES[:2])
        second = predictor.launch(other, BOXES[1:3])  # replays the same graphs before the first is collected
        a, b = predictor.collect(first), predictor.collect(second)
        assert not gpu.rec.races
    np.testing.assert_array_equal(a.keypoints, eager.predict(IMAGE, BOXES[:2]).keypoints)
    np.testing.assert_array_equal(b.keypoints, eager.predict(other, BOXES[1:3]).keypoints)
    np.testing.assert_array_equal(b.seg, eager.predict(other, BOXES[1:3]).seg)


def test_cuda_graphs_are_ignored_on_the_cpu(task_models):
    predictor = Predictor(task_models, input_hw=(128, 96), cuda_graphs=True)
    assert not predictor.cuda_graphs and not predictor.padded


# -- the detector, through the same machinery


@pytest.fixture(scope="module")
def detector_case(rtmdet_fixtures_dir):
    image = load_file(str(rtmdet_fixtures_dir / "tiny_w025_case_a.safetensors"))["image_bgr_uint8"].numpy()
    return rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors", image


def _calls(gpu, det, images) -> list[dict]:
    """Per call: the (boxes, scores), host syncs, captures, launches (kernels and copies), replays."""
    out = []
    for image in images:
        gpu.rec.clear()
        got = det.raw(image)
        ops = [e.what for e in gpu.rec.log if e.kind == "op" and e.kernel]
        out.append({"got": got, "syncs": len(gpu.rec.syncs()), "captures": sum(e.what == CAPTURE for e in gpu.rec.log),
                    "launches": len(ops), "replays": sum(w.startswith("graph replay") for w in ops)})
    return out


def test_graphed_detector_equals_eager_with_one_replay_and_one_wait_per_call(detector_case):
    weights, image = detector_case
    images = [image, np.ascontiguousarray(image[::-1]), image, np.ascontiguousarray(image[:, ::-1])]
    with StandinGPU() as gpu:
        eager = _calls(gpu, load_detector(weights, widen=0.25, device="cuda"), images)
        det = load_detector(weights, widen=0.25, device="cuda", cuda_graphs=True)
        assert det.cuda_graphs
        graphed = _calls(gpu, det, images)
        assert det._graphs.captured() == [(image.shape, True)]  # one frame size (RGB, the default)
        assert not gpu.rec.races
    assert [c["syncs"] for c in eager] == [1, 1, 1, 1] and not any(c["replays"] for c in eager)
    assert [c["captures"] for c in graphed] == [1, 0, 0, 0]  # captured once, by the first call
    # the first call: the capture's synchronize, then the call's wait; after it the one wait
    assert [c["syncs"] for c in graphed] == [2, 1, 1, 1]
    assert [c["replays"] for c in graphed] == [1, 1, 1, 1]
    # replayed: the frame up, into the graph's static input, the replay, out of its static
    # output, the rows down; eager launches every layer
    assert [c["launches"] for c in graphed[1:]] == [5, 5, 5]
    assert min(c["launches"] for c in eager) > 100
    for g, w in zip(graphed, eager):
        for got, want in zip(g["got"], w["got"]):
            np.testing.assert_array_equal(got, want)


def test_graphed_detector_captures_per_frame_size_and_channel_order(detector_case):
    weights, image = detector_case
    smaller = np.ascontiguousarray(image[: image.shape[0] // 2])
    with StandinGPU() as gpu:
        eager = load_detector(weights, widen=0.25, device="cuda")
        det = load_detector(weights, widen=0.25, device="cuda", cuda_graphs=True)
        wants = {}
        for im, rgb in ((image, False), (smaller, False), (image, True), (image, False), (smaller, False)):
            if (im.shape, rgb) not in wants:
                wants[im.shape, rgb] = eager(im, rgb=rgb)
            want = wants[im.shape, rgb]
            for g, w in zip(det(im, rgb=rgb), want):
                np.testing.assert_array_equal(g, w)
        assert sorted(det._graphs.captured()) == [(smaller.shape, False), (image.shape, False), (image.shape, True)]
        assert sum(e.what == CAPTURE for e in gpu.rec.log) == 3
        assert not gpu.rec.races


def test_the_detector_runs_eagerly_without_graphs_or_on_the_cpu(detector_case):
    weights, image = detector_case
    det = load_detector(weights, widen=0.25, cuda_graphs=True)
    assert not det.cuda_graphs
    det(image)
    assert not len(det._graphs)


def test_work_that_cannot_be_captured_runs_eagerly_with_a_warning_and_a_reason(caplog):
    with StandinGPU(), caplog.at_level(logging.WARNING, logger="realtime.models.cuda_graph"):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            cache = GraphCache()
            x = torch.arange(4.0, device="cuda")
            work = lambda t: t * t.sum().item()  # noqa: E731  a host read: not capturable
            got = [cache.run(("k",), "pool", work, x).cpu().tolist() for _ in range(2)]
            fine = cache.run(("ok",), "pool", lambda t: t * 2, x).cpu().tolist()
    assert got == [[0.0, 6.0, 12.0, 18.0]] * 2 and fine == [0.0, 2.0, 4.0, 6.0]
    assert cache.captured() == [("ok",)] and cache.graphs[("k",)] is None
    assert "could not capture a CUDA graph for ('k',)" in caplog.text
    assert list(cache.failed) == [("k",)] and cache.failed[("k",)]  # the reason, for the run summary
    (line,) = cache.report("inference")
    assert line.startswith("inference: no CUDA graph for ('k',) (runs eagerly): ")


def test_the_detector_stream_has_high_priority(detector_case):
    weights, _ = detector_case
    with StandinGPU():
        det = load_detector(weights, widen=0.25, device="cuda")
    assert det.stream.priority < 0  # lower is sooner: the detector's kernels go before a queued backbone's


def test_a_graphed_run_captures_every_graph_before_the_first_frame(tmp_path, task_models, rtmdet_fixtures_dir):
    """`run(cuda_graphs=True)` with the detector on the stand-in: the warm-up (main thread)
    captures the detector's graph and the task models' graphs before the stages start; the detect
    and infer threads only replay them, nothing is captured mid-run and nothing races."""
    from media import gaussian_marker, write_video
    from realtime.detect import make_box_finder
    from realtime.run import RunOptions, run

    frames = [gaussian_marker(96, 128, 30 + 8 * i, 50, 10) for i in range(4)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=25)
    options = RunOptions(source=str(src),
                         models=ModelOptions(device="cuda", dtype="fp32", input_hw=(128, 96), tasks=("pose",), cuda_graphs=True),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(tracks=str(tmp_path / "t.jsonl"), output_dir=str(tmp_path), progress=False))
    with StandinGPU() as gpu:
        models = {"pose": copy.deepcopy(task_models["pose"]).to("cuda")}
        finder = make_box_finder("detector", detector_checkpoint=str(rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors"),
                                 device="cuda", widen=None, cuda_graphs=True)
        summary = run(options, models=models, box_finder=finder)
        log = gpu.rec.log
    assert summary.result.exit_code == 0, summary.result.message
    assert finder.sources["detector"] + finder.sources["frame"] == 4  # a file: the detector every frame
    assert not gpu.rec.races
    replays = [e.thread for e in log if e.kind == "op" and e.what.startswith("graph replay")]
    assert replays.count("stage-detect") == 4 and replays.count("stage-infer") == 4
    captures = [e.thread for e in log if e.what == CAPTURE]
    assert set(captures) == {"MainThread"} and len(captures) == 1 + 8  # the detector, pose's 8 buckets
    assert finder.detector._graphs.late == [] and not any("CUDA graph" in line for line in summary.lines)


@pytest.mark.parametrize("graphs,captured", [(None, 1 + 8), (False, 0)])
def test_cuda_runs_replay_graphs_unless_told_not_to(tmp_path, task_models, rtmdet_fixtures_dir, graphs, captured,
                                                    monkeypatch):
    """CUDA graphs are the default on CUDA: a run given no graph option captures the detector's and
    pose's graphs in the warm-up and replays them; `cuda_graphs=False` (`--no-cuda-graphs`) runs
    every frame eagerly. On the CPU the default is off."""
    import functools

    import realtime.build
    from media import gaussian_marker, write_video
    from realtime.build import cuda_graphs_for
    from realtime.cli import build_parser
    from realtime.detect import make_box_finder
    from realtime.run import RunOptions, run

    # the run's own box finder, with the fixture's tiny detector (widen 0.25, not the released 0.75)
    monkeypatch.setattr(realtime.build.detect, "make_box_finder", functools.partial(make_box_finder, widen=None))

    frames = [gaussian_marker(96, 128, 30 + 8 * i, 50, 10) for i in range(3)]
    src = write_video(tmp_path / "clip.mp4", frames, fps=25)
    chosen = {} if graphs is None else {"cuda_graphs": graphs}
    detector = str(rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors")
    options = RunOptions(source=str(src),
                         models=ModelOptions(device="cuda", dtype="fp32", input_hw=(128, 96), tasks=("pose",), detector=detector,
                                             **chosen),
                         smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(tracks=str(tmp_path / "t.jsonl"), output_dir=str(tmp_path), progress=False))
    assert cuda_graphs_for(options, "cuda") is (graphs is None) and not cuda_graphs_for(options, "cpu")
    with StandinGPU() as gpu:
        models = {"pose": copy.deepcopy(task_models["pose"]).to("cuda")}
        summary = run(options, models=models)
        log = gpu.rec.log
    assert summary.result.exit_code == 0, summary.result.message
    assert not gpu.rec.races
    assert sum(e.what == CAPTURE for e in log) == captured
    replays = [e.thread for e in log if e.kind == "op" and e.what.startswith("graph replay")]
    assert replays.count("stage-infer") == (3 if captured else 0) and replays.count("stage-detect") == (3 if captured else 0)
    parse = build_parser().parse_args
    assert parse(["run", "clip.mp4"]).cuda_graphs is None
    assert parse(["run", "clip.mp4", "--no-cuda-graphs"]).cuda_graphs is False
    assert parse(["run", "clip.mp4", "--cuda-graphs"]).cuda_graphs is True


def test_a_gpu_short_of_memory_for_the_large_buckets_still_warms_up_graphed(task_models):
    """CUDA graphs are on by default, so the warm-up captures every person bucket up to 16 crops even
    for one person: on a GPU without the memory for the large ones, the capture's out-of-memory error
    lowers the batch (as a frame with many people does eagerly), the warm-up ends with the buckets that
    fit captured, and later frames of any people count replay them with nothing captured mid-run."""

    class OutOfMemoryAbove(torch.nn.Module):
        def __init__(self, inner, limit):
            super().__init__()
            self.inner, self.limit = inner, limit

        def forward(self, x):
            if len(x) > self.limit:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")
            return self.inner(x)

    want = Predictor({"pose": copy.deepcopy(task_models["pose"])}, input_hw=(128, 96), pad_batches=True,
                     channels_last=True, max_batch=3).predict(IMAGE, _people(7))
    with StandinGPU() as gpu:
        pose = OutOfMemoryAbove(copy.deepcopy(task_models["pose"]).to("cuda"), limit=4)
        predictor = Predictor({"pose": pose}, device="cuda", input_hw=(128, 96), cuda_graphs=True)
        predictor.warm_up(IMAGE.shape[:2])
        warmed = {key[1] for key in predictor._graphs.captured()}
        got = [predictor.predict(IMAGE, _people(n)) for n in (1, 7, 16, 2)]
        races = list(gpu.rec.races)
    assert predictor.max_batch == 3  # bucket 6 ran out: 6 crops halved to 3, which fit
    assert warmed == {1, 2, 3, 4} and predictor._graphs.failed == {} and predictor._graphs.late == []  # 4 before 6 failed
    assert [len(g.keypoints) for g in got] == [1, 7, 16, 2] and not races
    np.testing.assert_allclose(got[1].keypoints, want.keypoints, atol=1e-3)
