"""The detector replayed as a CUDA graph on a real CUDA device (skipped without one;
bench/gpu_check.py runs it): the same boxes as eager, one capture, and once captured a call
makes no hidden host sync. The stand-in twin is tests/test_cuda_graphs.py."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_graphed_detector_equals_eager_and_syncs_only_its_wait(rtmdet_fixtures_dir):
    from realtime.models.rtmdet import load_detector

    image = load_file(str(rtmdet_fixtures_dir / "tiny_w025_case_a.safetensors"))["image_bgr_uint8"].numpy()
    weights = rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors"
    eager = load_detector(weights, widen=0.25, device="cuda")
    graphed = load_detector(weights, widen=0.25, device="cuda", cuda_graphs=True)
    graphed(image, rgb=False)  # captures (the fixture is BGR)
    other = np.ascontiguousarray(image[::-1])
    torch.cuda.set_sync_debug_mode("error")
    try:
        got = [graphed.raw(image, rgb=False), graphed.raw(other, rgb=False)]  # only each call's final event wait
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert graphed._graphs.captured() == [(image.shape, False)]
    for (boxes, scores), im in zip(got, (image, other)):
        want_boxes, want_scores = eager.raw(im, rgb=False)
        np.testing.assert_allclose(boxes, want_boxes, atol=1e-3)
        np.testing.assert_allclose(scores, want_scores, atol=1e-5)
