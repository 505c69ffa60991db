"""Test doubles with known behaviour (not stand-ins for the real models, which are
tested against the official fixtures): a pose model whose heatmaps are the input
brightness, so its keypoints land exactly where a bright marker is."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

MEAN = torch.tensor([123.675, 116.28, 103.53]).view(1, 3, 1, 1)
STD = torch.tensor([58.395, 57.12, 57.375]).view(1, 3, 1, 1)


class MarkerPoseModel(nn.Module):
    """(B, 3, H, W) normalized crop -> (B, K, H/4, W/4) heatmaps = the crop's brightness
    sampled at the UDP heatmap grid (heatmap pixel j <-> input pixel j (W-1)/(W/4-1)),
    so every keypoint decodes to the brightest spot of the crop."""

    arch = "marker-test-double"

    def __init__(self, num_keypoints: int = 308, background: float = 20.0):
        super().__init__()
        self.k = num_keypoints
        self.background = background

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = (x.float() * STD.to(x.device) + MEAN.to(x.device)).mean(1, keepdim=True)
        h, w = x.shape[2] // 4, x.shape[3] // 4
        heat = F.interpolate(b, size=(h, w), mode="bilinear", align_corners=True)
        heat = (heat - self.background).clamp_min(0) / 255.0
        return heat.expand(-1, self.k, -1, -1).to(x.dtype)


class FailingModel(nn.Module):
    """Wraps a model and raises on its n-th call (to test stage failures)."""

    def __init__(self, inner: nn.Module, fail_on_call: int):
        super().__init__()
        self.inner, self.fail_on_call, self.calls = inner, fail_on_call, 0

    def forward(self, x, *args):  # seg's model also takes the map's size (Task.resized_in_model)
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("injected failure")
        return self.inner(x, *args)


def whole_frame_boxes(image: np.ndarray, index: int, previous=(), seg=None):
    """A box finder for one person filling the view (the demo's fallback)."""
    h, w = image.shape[:2]
    return np.array([[0, 0, w - 1, h - 1]], np.float32), np.ones(1, np.float32), "frame"


class SlowModel(nn.Module):
    """Wraps a model and takes at least `seconds` per call (a GPU slower than the camera)."""

    def __init__(self, inner: nn.Module, seconds: float):
        super().__init__()
        self.inner, self.seconds = inner, seconds

    def forward(self, x, *args):
        import time

        time.sleep(self.seconds)
        return self.inner(x, *args)
