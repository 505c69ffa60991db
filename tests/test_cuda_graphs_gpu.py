"""CUDA graphs and frames in flight on a real CUDA device (skipped without one; bench/gpu_check.py
runs it): graphed predictions agree with eager ones with the same padded batches (as far as the
fixtures' random-weight heatmaps define keypoints: tests/keypoint_agreement.py), and once
captured a frame makes no hidden host sync."""

import numpy as np
import pytest
import torch

from realtime.models import load_model
from tests.keypoint_agreement import assert_keypoints_agree

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
              pytest.mark.usefixtures("no_tf32")]

IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)


def test_graphed_frames_in_flight_equal_eager(fixtures_dir):
    from realtime.infer import Predictor

    models = {t: load_model(t, fixtures_dir / f"{t}_weights.safetensors", device="cuda") for t in ("pose", "seg")}
    eager = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), pad_batches=True)
    graphed = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), cuda_graphs=True, max_batch=4)
    graphed.warm_up(IMAGE.shape[:2])  # captures every key
    assert sorted(graphed._graphs.captured(), key=str) == sorted(
        [("pose", b, (3, 96, 128)) for b in (1, 2, 3, 4)] + [("seg", (3, 96, 128), (96, 128))], key=str)
    assert graphed._graphs.failed == {}
    other = np.ascontiguousarray(IMAGE[::-1])
    torch.cuda.set_sync_debug_mode("error")
    try:
        first = graphed.launch(IMAGE, BOXES[:3])
        second = graphed.launch(other, BOXES[:1])
        got = [graphed.collect(first), graphed.collect(second)]
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert graphed._graphs.late == [] and graphed.graph_report() == []  # nothing captured after the warm-up
    for g, (image, n) in zip(got, ((IMAGE, 3), (other, 1))):
        want = eager.predict(image, BOXES[:n])
        # the same fp32 model through other kernels (cuDNN picks per capture): near-flat random heatmaps
        # move a few keypoints (tests/keypoint_agreement.py), the scores hardly
        assert_keypoints_agree(g.keypoints, want.keypoints, want.keypoint_scores > 0.3)
        np.testing.assert_allclose(g.keypoint_scores, want.keypoint_scores, atol=1e-4)
        assert (g.seg == want.seg).mean() > 0.999


@pytest.mark.parametrize("options", [dict(compile=True, cuda_graphs=True), dict(compile=True, cuda_graphs=True, sdpa="cudnn"),
                                     dict(cuda_graphs=True, sdpa="flash")], ids=["compile+graphs", "+cudnn", "graphs+flash"])
def test_every_fast_path_equals_eager_in_bf16(fixtures_dir, options):
    """bf16 as `run` uses it: each fast path gives eager's keypoints (to a fraction of a pixel)
    and seg labels, with every graph captured in the warm-up."""
    import copy

    from realtime.infer import Predictor

    models = {t: load_model(t, fixtures_dir / f"{t}_weights.safetensors", device="cuda", dtype=torch.bfloat16)
              for t in ("pose", "seg")}
    eager = Predictor(copy.deepcopy(models), device="cuda", dtype=torch.bfloat16, input_hw=(128, 96), pad_batches=True,
                      max_batch=4)
    fast = Predictor(models, device="cuda", dtype=torch.bfloat16, input_hw=(128, 96), max_batch=4, **options)
    fast.warm_up(IMAGE.shape[:2])
    assert fast._graphs.failed == {} and len(fast._graphs.captured()) == 5
    for n in (1, 3):
        got, want = fast.predict(IMAGE, BOXES[:n]), eager.predict(IMAGE, BOXES[:n])
        sure = want.keypoint_scores > 0.3
        assert_keypoints_agree(got.keypoints, want.keypoints, sure, share=0.85, median_px=0.1)  # bf16 rounding, fused
        assert (got.seg == want.seg).mean() > 0.99
    assert fast._graphs.late == []


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9), reason="needs FP8 tensor cores")
def test_fp8_compiled_and_graphed_stays_within_the_error_table(fixtures_dir):
    """--compile --cuda-graphs --fp8 on the fixture pose model: keypoints where bf16's are
    (docs/deploy.md's table: about 87 % on the same heatmap cell), every graph captured."""
    import copy

    from realtime.infer import Predictor

    model = load_model("pose", fixtures_dir / "pose_weights.safetensors", device="cuda", dtype=torch.bfloat16)
    eager = Predictor({"pose": copy.deepcopy(model)}, device="cuda", dtype=torch.bfloat16, input_hw=(128, 96), pad_batches=True,
                      max_batch=2)
    fast = Predictor({"pose": model}, device="cuda", dtype=torch.bfloat16, input_hw=(128, 96), max_batch=2, compile=True,
                     cuda_graphs=True, fp8=True)
    fast.warm_up(IMAGE.shape[:2])
    assert fast._graphs.failed == {} and len(fast._graphs.captured()) == 2
    got, want = fast.predict(IMAGE, BOXES[:2]), eager.predict(IMAGE, BOXES[:2])
    close = np.linalg.norm(got.keypoints - want.keypoints, axis=-1) <= 4.0  # px, one heatmap cell at 128x96
    assert close.mean() >= 0.8 and fast._graphs.late == []
