"""Pose heatmap decoding (UDP + DARK, docs/numerics.md, "Heatmap decoding") and flip test as batched tensor ops.

Everything runs on the tensors' device: the DARK blur is a small convolution
around each peak, so only keypoints need to leave the GPU. The crops around the
people and the way back to image pixels are in `realtime.transforms`.

    center, scale = transforms.box_to_center_scale(boxes)
    crops = transforms.normalize(transforms.crop_persons(image, center, scale))
    heatmaps = flip_test(model, crops, flip_idx)            # or model(crops)
    kpts_in, scores = decode_heatmaps(heatmaps)
    kpts = transforms.keypoints_to_image(kpts_in, center, scale)   # (N, 308, 2) image px
"""

from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.nn.functional as F

BLUR_KERNEL = 11  # DARK refinement blur; OpenCV derives sigma = 2.0 from it


def flip_test(model: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, flip_indices: torch.Tensor) -> torch.Tensor:
    """Average of the heatmaps of x and of its mirror image mapped back (docs/numerics.md, "Flip test"):
    (f(x) + f(x.flip(W)).flip(W)[:, flip_indices]) / 2. Both halves run as one batch."""
    out = model(torch.cat((x, x.flip(-1))))
    plain, mirrored = out.chunk(2)
    return (plain + mirrored.flip(-1)[:, flip_indices.to(out.device)]) / 2


@functools.lru_cache(maxsize=8)
def _gaussian_kernel(size: int, device: torch.device) -> torch.Tensor:
    # made once per device: a host -> device copy per frame makes the host wait
    sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8  # OpenCV's default for sigma = 0
    x = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    k = torch.exp(-(x**2) / (2 * sigma**2))
    return (k / k.sum()).float().to(device)


def _local_log_blur(heatmaps: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The DARK log map (docs/numerics.md, "Heatmap decoding", steps 2-3) on the 3x3 neighbourhood of each peak.

    heatmaps (N, K, h, w); x, y (N, K) integer peak positions inside the map. Returns
    (N, K, 3, 3) values at rows y-1..y+1, columns x-1..x+1, with neighbours outside
    the map taken from the border (the official edge padding).

    Only a 15x15 window around each peak is blurred instead of the whole map, which
    makes decoding cheap on a CPU. The official modulation divides by the maximum of
    the whole blurred map; the maximum of the 5x5 blurred block around the peak is
    used instead. A constant factor only shifts the log and cancels in the Newton
    step, so the result is the same unless the 0.001 clip engages next to the peak
    (maps whose peak is ~0.001 or less: keypoints nobody would trust).
    """
    n, k, h, w = heatmaps.shape
    r = BLUR_KERNEL // 2 + 2  # blur radius + the 5x5 block around the peak
    size = 2 * r + 1
    maps = F.pad(heatmaps.reshape(n * k, h, w), (r, r, r, r))  # zeros, as the reference pads before blurring
    offsets = torch.arange(size, device=heatmaps.device)
    rows = y.reshape(-1, 1).long() + offsets  # window rows y-r..y+r in map coordinates
    cols = x.reshape(-1, 1).long() + offsets
    index = (rows[:, :, None] * (w + 2 * r) + cols[:, None, :]).reshape(n * k, -1)
    window = maps.reshape(n * k, -1).gather(1, index).view(n * k, 1, size, size)
    g = _gaussian_kernel(BLUR_KERNEL, heatmaps.device)
    block = F.conv2d(window, (g[:, None] * g[None, :])[None, None])[:, 0]  # (nk, 5, 5) around the peak

    d = torch.arange(-2, 3, device=heatmaps.device)
    inside = ((y.reshape(-1, 1) + d)[:, :, None].clamp(0, h - 1) == (y.reshape(-1, 1) + d)[:, :, None]) & (
        (x.reshape(-1, 1) + d)[:, None, :].clamp(0, w - 1) == (x.reshape(-1, 1) + d)[:, None, :])
    block_peak = torch.where(inside, block, torch.full_like(block, -torch.inf)).amax(dim=(1, 2), keepdim=True)
    peak = heatmaps.reshape(n * k, -1).amax(dim=1)[:, None, None]
    safe = torch.where(block_peak > 0, block_peak, torch.ones_like(block_peak))
    logmap = (block * (peak / safe)).clamp(0.001, 50).log()

    # 3x3 neighbourhood, neighbours outside the map replaced by the border value
    d1 = torch.arange(-1, 2, device=heatmaps.device)
    ry = (y.reshape(-1, 1).long() + d1).clamp(0, h - 1) - y.reshape(-1, 1).long() + 2  # (nk, 3) block rows
    rx = (x.reshape(-1, 1).long() + d1).clamp(0, w - 1) - x.reshape(-1, 1).long() + 2
    picked = logmap.gather(1, ry[:, :, None].expand(-1, -1, 5))
    picked = picked.gather(2, rx[:, None, :].expand(-1, 3, -1))
    return picked.view(n, k, 3, 3)


def decode_heatmaps(heatmaps: torch.Tensor, input_hw: tuple[int, int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """UDP heatmaps (N, K, h, w) -> keypoints (N, K, 2) in crop-input px and scores (N, K).

    Argmax, then one DARK Newton step on the log of the blurred map (docs/numerics.md, "Heatmap decoding").
    Scores are the raw maxima; keypoints with score <= 0 are left at the unrefined
    location (-1, -1) scaled to input px: mask them by score. `input_hw` (H, W)
    defaults to 4x the heatmap (1024x768 for 256x192)."""
    n, k, h, w = heatmaps.shape
    if input_hw is None:
        input_hw = (4 * h, 4 * w)
    heatmaps = heatmaps.float()
    scores, flat = heatmaps.reshape(n, k, h * w).max(dim=-1)
    valid = scores > 0
    x = torch.where(valid, (flat % w).float(), torch.full_like(scores, -1.0))
    y = torch.where(valid, (flat // w).float(), torch.full_like(scores, -1.0))

    near = _local_log_blur(heatmaps, x.long().clamp(0, w - 1), y.long().clamp(0, h - 1))

    # The Newton step in float64 where the device has it (the reference runs numpy float64).
    prec = torch.float32 if heatmaps.device.type == "mps" else torch.float64

    def at(dy: int, dx: int) -> torch.Tensor:
        return near[..., dy + 1, dx + 1].to(prec)

    i = at(0, 0)
    ix1, ix1_, iy1, iy1_ = at(0, 1), at(0, -1), at(1, 0), at(-1, 0)
    ix1y1, ix1_y1_ = at(1, 1), at(-1, -1)
    dx, dy = (ix1 - ix1_) / 2, (iy1 - iy1_) / 2
    dxx, dyy = ix1 - 2 * i + ix1_, iy1 - 2 * i + iy1_
    dxy = (ix1y1 - ix1 - iy1 + 2 * i - ix1_ - iy1_ + ix1_y1_) / 2
    eps = torch.finfo(torch.float32).eps
    a, d = dxx + eps, dyy + eps  # (Hessian + eps I)^-1 (dx, dy), written out for 2x2
    det = a * d - dxy * dxy
    ok = valid & (det != 0)
    det = torch.where(ok, det, torch.ones_like(det))
    off_x = torch.where(ok, (d * dx - dxy * dy) / det, torch.zeros_like(det))
    off_y = torch.where(ok, (a * dy - dxy * dx) / det, torch.zeros_like(det))
    x = (x.to(prec) - off_x) * (input_hw[1] / (w - 1))
    y = (y.to(prec) - off_y) * (input_hw[0] / (h - 1))
    return torch.stack((x, y), dim=-1).float(), scores


def flip_indices_tensor(device=None) -> torch.Tensor:
    """The 308-keypoint mirror table of `realtime.data` as a long tensor."""
    from realtime.data import flip_indices

    return torch.as_tensor(flip_indices(), dtype=torch.long, device=device)


def make_constants(device: torch.device | str) -> None:
    """Make this module's per-device constants now rather than with the first frame."""
    _gaussian_kernel(BLUR_KERNEL, torch.device(device))


__all__ = ["flip_test", "decode_heatmaps", "flip_indices_tensor", "make_constants"]
