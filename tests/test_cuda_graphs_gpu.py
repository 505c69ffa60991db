"""CUDA graphs and frames in flight on a real CUDA device (skipped without one; bench/gpu_check.py
runs it): graphed predictions equal eager ones with the same padded batches, and once captured
a frame makes no hidden host sync."""

import numpy as np
import pytest
import torch

from realtime.models import load_model

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
              pytest.mark.usefixtures("no_tf32")]

IMAGE = np.random.default_rng(0).integers(0, 256, (96, 128, 3), dtype=np.uint8)
BOXES = np.array([[10, 10, 60, 90], [40, 5, 120, 95], [0, 0, 127, 95]], np.float32)


def test_graphed_frames_in_flight_equal_eager(fixtures_dir):
    from realtime.infer import Predictor

    models = {t: load_model(t, fixtures_dir / f"{t}_weights.safetensors", device="cuda") for t in ("pose", "seg")}
    eager = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), pad_batches=True)
    graphed = Predictor(models, device="cuda", dtype=torch.float32, input_hw=(128, 96), cuda_graphs=True)
    for n in (1, 3):
        graphed.predict(IMAGE, BOXES[:n])  # captures
    other = np.ascontiguousarray(IMAGE[::-1])
    torch.cuda.set_sync_debug_mode("error")
    try:
        first = graphed.launch(IMAGE, BOXES[:3])
        second = graphed.launch(other, BOXES[:1])
        got = [graphed.collect(first), graphed.collect(second)]
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for g, (image, n) in zip(got, ((IMAGE, 3), (other, 1))):
        want = eager.predict(image, BOXES[:n])
        np.testing.assert_allclose(g.keypoints, want.keypoints, atol=1e-3)
        np.testing.assert_allclose(g.keypoint_scores, want.keypoint_scores, atol=1e-4)
        assert (g.seg == want.seg).mean() > 0.999
