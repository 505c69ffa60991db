"""The CUDA code paths, run on a stand-in GPU (tests/gpu_standin.py): how often the host
would wait for the GPU, and on which streams the work is launched. No CUDA needed."""

import copy

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from realtime.models import rtmdet_post as post
from realtime.models.rtmdet import load_detector
from tests.gpu_standin import StandinGPU, StandinTensor

# -- the harness itself: it must see what it claims to see


def test_standin_counts_what_blocks_the_host_and_nothing_else():
    with StandinGPU() as gpu:
        x = torch.arange(6.0, device="cuda")
        assert x.device.type == "cuda" and isinstance(x, StandinTensor)
        y = (x * 2).sum()
        gpu.rec.clear()
        assert y.item() == 30.0  # 1: a value read on the host
        assert x[x > 2].tolist() == [3.0, 4.0, 5.0]  # 2: boolean mask, 3: tolist of the result
        torch.tensor([1.0], device="cuda")  # 4: a blocking upload
        torch.ones(3).to("cuda", non_blocking=True)  # 5: pageable source
        host = torch.empty(6, pin_memory=True)
        host.copy_(x, non_blocking=True)  # pinned, non-blocking: no wait
        pinned = torch.ones(3).pin_memory()
        pinned.to("cuda", non_blocking=True)  # no wait
        assert x.cpu().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # 6: blocking download
        assert len(gpu.rec.syncs()) == 6, [s.what for s in gpu.rec.syncs()]
        assert host.tolist() == x.cpu().tolist()


def test_standin_records_streams_and_waits():
    with StandinGPU() as gpu:
        side = torch.cuda.Stream()
        x = torch.ones(4, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = x + 1
        done = torch.cuda.Event()
        done.record(side)
        done.synchronize()
        kinds = [(e.kind, e.stream) for e in gpu.rec.log if e.kind != "op" or "add" in e.what]
        assert kinds == [("wait", side.name), ("op", side.name), ("record", side.name), ("sync", "default")]
        assert y.cpu().tolist() == [2.0] * 4


def _copy_down_then_write_on_a_thread(wait_before_start: bool) -> list[str]:
    """A non-blocking copy into a pinned buffer on a side stream; a thread later writes the
    buffer on the host. Safe only if the host waited for the copy before starting the thread."""
    import threading

    errors = []
    with StandinGPU():
        side = torch.cuda.Stream()
        x = torch.ones(4, device="cuda")
        side.wait_stream(torch.cuda.current_stream())
        host = torch.empty(4).pin_memory()
        with torch.cuda.stream(side):
            host.copy_(x, non_blocking=True)
        done = torch.cuda.Event()
        done.record(side)

        def write():
            try:
                host.numpy()[...] = 0
            except AssertionError as error:
                errors.append(type(error).__name__)

        worker = threading.Thread(target=write)
        if wait_before_start:
            done.synchronize()
            worker.start()
        else:
            worker.start()
            done.synchronize()  # too late: the thread did not see this wait
        worker.join()
    return errors


def test_thread_start_orders_what_the_starter_waited_for_and_nothing_later():
    assert _copy_down_then_write_on_a_thread(wait_before_start=True) == []
    assert _copy_down_then_write_on_a_thread(wait_before_start=False) == ["StreamRace"]


# -- the detector


@pytest.fixture(scope="module")
def rtmdet_case(rtmdet_fixtures_dir):
    return load_file(str(rtmdet_fixtures_dir / "tiny_w025_case_a.safetensors"))


def test_detector_on_gpu_waits_once_and_uses_its_own_stream(rtmdet_fixtures_dir, rtmdet_case):
    image = rtmdet_case["image_bgr_uint8"].numpy()
    weights = rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors"
    cpu = load_detector(weights, widen=0.25)
    with torch.inference_mode():  # the GPU's preprocessing, on the CPU
        padded, w_scale, h_scale = post.letterbox_torch(torch.from_numpy(image))
        rows = post.top_candidates(*cpu.model(post.normalize(padded)), w_scale, h_scale).numpy()
    want_boxes, want_scores = post.keep_candidates(rows)
    want_people = post.select_people_np(want_boxes, want_scores, image.shape[:2])
    with StandinGPU() as gpu:
        det = load_detector(weights, widen=0.25, device="cuda")
        for call, want in ((det.raw, (want_boxes, want_scores)), (det, want_people)):
            gpu.rec.clear()
            got = call(image, rgb=False)  # the fixture image is BGR
            syncs = gpu.rec.syncs()
            assert len(syncs) <= 1, [s.what for s in syncs]
            assert gpu.rec.ops() and not gpu.rec.ops("default"), "detector work went to the default stream"
            for g, w in zip(got, want):
                assert isinstance(g, np.ndarray) and g.dtype == np.float32
                np.testing.assert_allclose(g, w, atol=1e-4, rtol=0)


# -- the Predictor: pose + seg on their own streams, one host wait per frame


IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)


@pytest.mark.parametrize("flip", [False, True])
def test_predictor_waits_once_per_frame_and_seg_overlaps_pose(standin_task_models, flip):
    from realtime.infer import Predictor

    cpu = Predictor(standin_task_models, input_hw=(128, 96), flip_test=flip)  # eager: unpadded on both
    wants = {n: cpu.predict(IMAGE, BOXES[:n]) for n in (1, 3)}
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in standin_task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96), flip_test=flip)
        pose_stream, seg_stream = predictor._streams["pose"].name, predictor._streams["seg"].name
        for n in (1, 3):
            gpu.rec.clear()
            got = predictor.predict(IMAGE, BOXES[:n])
            log = gpu.rec.log
            syncs = [i for i, e in enumerate(log) if e.kind == "sync"]
            assert len(syncs) == 1, [log[i].what for i in syncs]
            assert "blocking" in log[syncs[0]].what  # the host sleeps in the wait, no spinning
            pose_ops, seg_ops = gpu.rec.ops(pose_stream), gpu.rec.ops(seg_stream)
            assert pose_ops and seg_ops and not gpu.rec.ops("default")
            # Seg is launched while pose may still run: the host waits only after both are
            # queued, and neither stream waits for the other.
            assert max(pose_ops + seg_ops) < syncs[0]
            waits = [e for e in log if e.kind == "wait"]
            assert not any(e.stream == seg_stream and pose_stream in e.what for e in waits)
            assert not any(e.stream == pose_stream and seg_stream in e.what for e in waits)
            # tensors made on one stream and read on another are kept alive for it
            assert sum(e.kind == "record_stream" for e in log) >= 4
            want = wants[n]
            np.testing.assert_array_equal(got.keypoints, want.keypoints)
            np.testing.assert_array_equal(got.keypoint_scores, want.keypoint_scores)
            np.testing.assert_array_equal(got.seg, want.seg)


def test_a_frame_is_launched_before_the_previous_one_is_collected(standin_task_models):
    from realtime.infer import Predictor

    cpu = Predictor(standin_task_models, input_hw=(128, 96))
    wants = [cpu.predict(IMAGE, BOXES[:n]) for n in (1, 3, 2)]
    with StandinGPU() as gpu:
        models = {task: copy.deepcopy(model).to("cuda") for task, model in standin_task_models.items()}
        predictor = Predictor(models, device="cuda", input_hw=(128, 96))
        gpu.rec.clear()
        first = predictor.launch(IMAGE, BOXES[:1])
        second = predictor.launch(IMAGE, BOXES[:3])
        assert not gpu.rec.syncs()  # two frames queued, the host never waited
        got = [predictor.collect(first)]
        third = predictor.launch(IMAGE, BOXES[:2])  # into buffers of its own while the second is in flight
        got += [predictor.collect(second), predictor.collect(third)]
        assert len(gpu.rec.syncs()) == 3 and not gpu.rec.races
    for g, w in zip(got, wants):
        np.testing.assert_array_equal(g.keypoints, w.keypoints)
        np.testing.assert_array_equal(g.seg, w.seg)


# -- out of GPU memory, for every task


class OutOfMemory(torch.nn.Module):
    """Wraps a model; its first `times` calls raise the CUDA out-of-memory error."""

    def __init__(self, inner, times):
        super().__init__()
        self.inner, self.times = inner, times

    def forward(self, x, *args):  # seg's model also takes the map's size (Task.resized_in_model)
        if self.times > 0:
            self.times -= 1
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected)")
        return self.inner(x, *args)


def test_out_of_memory_is_handled_for_every_task(standin_task_models):
    from realtime.errors import UserError
    from realtime.infer import Predictor

    want = Predictor(standin_task_models, input_hw=(128, 96)).predict(IMAGE, BOXES)
    flaky = Predictor({task: OutOfMemory(m, 1) for task, m in standin_task_models.items()}, input_hw=(128, 96))
    got = flaky.predict(IMAGE, BOXES)  # pose retries with smaller batches, seg once after freeing the cache
    assert flaky.max_batch == 1
    # batch 1 blocks the matmuls differently: close, not bit-equal (the DARK step amplifies it)
    np.testing.assert_allclose(got.keypoint_scores, want.keypoint_scores, atol=1e-4)
    sure = want.keypoint_scores > 0.3
    np.testing.assert_allclose(got.keypoints[sure], want.keypoints[sure], atol=0.2, rtol=1e-2)
    np.testing.assert_array_equal(got.seg, want.seg)
    for task in standin_task_models:
        broken = Predictor({task: OutOfMemory(standin_task_models[task], 99)}, input_hw=(128, 96))
        with pytest.raises(UserError, match="out of memory"):
            broken.predict(IMAGE, BOXES)


# -- bench/gpu_check.py without a GPU


def test_gpu_check_says_there_is_no_gpu_and_exits_0():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "bench" / "gpu_check.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "No CUDA GPU here" in done.stdout


BLOCKER = """
import importlib.abc, sys
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in ("av", "pyqtgraph", "filterpy"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: a GPU machine lacks it)", name=name)
sys.meta_path.insert(0, Blocked())
for name in [m for m in sys.modules if m.partition(".")[0] in ("av", "pyqtgraph", "filterpy")]:
    del sys.modules[name]
"""


def test_gpu_check_imports_and_collects_without_pyav_pyqtgraph_or_filterpy():
    """What a GPU machine with only PyTorch, NumPy, safetensors, OpenCV (and pytest) does:
    gpu_check imports everything it uses and pytest collects every GPU test file it names."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = BLOCKER + """
try:
    import av
except ImportError:
    pass
else:
    raise SystemExit("the blocker did not block PyAV")
sys.path.insert(0, ".")
import bench.gpu_check as check
check.imports()
import pytest
rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *check.GPU_TESTS])
assert rc == 0, rc
assert check.main() == 0  # no CUDA here: says so
assert not [m for m in sys.modules if m.partition(".")[0] in ("av", "pyqtgraph", "filterpy")]
print("IMPORTS OK")
"""
    done = subprocess.run([sys.executable, "-c", script, "--no-tests"], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "IMPORTS OK" in done.stdout and "ERROR" not in done.stdout and " error" not in done.stdout  # no collection error
    collected = [line for line in done.stdout.splitlines() if "::" in line]
    assert {line.split("::")[0] for line in collected} == {"tests/test_models_gpu.py", "tests/test_cuda_graphs_gpu.py",
                                                          "tests/test_detector_graph_gpu.py"}


def test_gpu_check_times_seg_every_frame_and_every_other_frame():
    """bench/gpu_check.py's timing loop: frame N+1 launched before frame N is collected, and with
    seg_every=2 seg launched on every other frame (what SegSchedule(every=2) does), its estimate
    from the same configuration with `seg_every`."""
    import bench.gpu_check as check
    from bench.gpu_estimate import GPUS

    calls = []

    class Recording:
        def launch(self, image, boxes, tasks):
            calls.append(("launch", sorted(tasks)))
            return len(calls)

        def collect(self, launched):
            calls.append(("collect", launched))

    with StandinGPU():
        assert check.pipelined_fps(Recording(), IMAGE, BOXES, 4, seg_every=2) > 0
    assert [c[1] for c in calls if c[0] == "launch"] == [["pose", "seg"], ["pose"], ["pose", "seg"], ["pose"]]
    assert [c[0] for c in calls] == ["launch", "launch", "collect", "launch", "collect", "launch", "collect", "collect"]
    mode = "--sdpa cudnn --fp8"
    assert check.estimate_for(mode, GPUS["h100"], seg_every=2).fps > check.estimate_for(mode, GPUS["h100"]).fps


def test_gpu_check_knows_the_peaks_of_common_gpus():
    import bench.gpu_check as gpu_check

    assert gpu_check.peak_tflops("NVIDIA H100 80GB HBM3") == 989  # the SXM part's name
    assert gpu_check.peak_tflops("NVIDIA H100 PCIe") == 756
    assert gpu_check.peak_tflops("NVIDIA GeForce RTX 4090") == 165
    assert gpu_check.peak_tflops("NVIDIA L4") == 121 and gpu_check.peak_tflops("NVIDIA L40S") == 362
    assert gpu_check.peak_tflops("Some Future GPU") is None


def test_gpu_check_times_other_input_sizes_and_people_with_their_estimates():
    """`--input-size` and `--people`: the boxes lie side by side inside the 720p frame, and the
    estimate printed beside the time is that configuration's (the lighter preset is faster, more
    people slower)."""
    import argparse

    import bench.gpu_check as check
    from bench.gpu_estimate import GPUS

    assert check.parse_hw("768x576") == (768, 576)
    for bad in ("768", "770x576", "16x16"):
        with pytest.raises(argparse.ArgumentTypeError):
            check.parse_hw(bad)
    boxes = check.person_boxes(3)
    assert boxes.shape == (3, 4) and (boxes[:, 0] >= 0).all() and (boxes[:, 2] <= 1280).all() and (boxes[:, 3] <= 720).all()
    assert (boxes[1:, 0] >= boxes[:-1, 2]).all()  # side by side, not overlapping
    gpu = GPUS["h100"]
    base = check.estimate_for("default", gpu).fps
    assert check.estimate_for("default", gpu, input_hw=(768, 576)).fps > 1.5 * base
    assert check.estimate_for("default", gpu, people=3).fps < 0.6 * base
