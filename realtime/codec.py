"""Top-down pose geometry and heatmap decoding as batched tensor ops (SPEC §4.1-4.3).

Everything runs on the tensors' device: crops are one `grid_sample`, the DARK
blur is a small convolution around each peak, so only keypoints need to leave the GPU. Sizes are
`(w, h)` pairs as in the official codec (`input_size = (768, 1024)`).

    center, scale = box_to_center_scale(boxes)
    crops = normalize(crop_persons(image, center, scale))
    heatmaps = flip_test(model, crops, flip_idx)            # or model(crops)
    kpts_in, scores = decode_heatmaps(heatmaps)
    kpts = keypoints_to_image(kpts_in, center, scale)       # (N, 308, 2) image px
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from realtime.models.archs import PIXEL_MEAN, PIXEL_STD

POSE_INPUT_SIZE = (768, 1024)  # (w, h)
BOX_PADDING = 1.25
BLUR_KERNEL = 11  # DARK refinement blur; OpenCV derives sigma = 2.0 from it


def box_to_center_scale(
    boxes: torch.Tensor, input_size: tuple[int, int] = POSE_INPUT_SIZE, padding: float = BOX_PADDING
) -> tuple[torch.Tensor, torch.Tensor]:
    """Boxes (N, 4) xyxy px -> center (N, 2) px and scale (N, 2) px: the box padded by
    `padding`, then widened or heightened to the input's aspect w/h (SPEC §4.2 steps 2-3)."""
    boxes = boxes.float() if not boxes.is_floating_point() else boxes
    center = (boxes[:, :2] + boxes[:, 2:]) / 2
    scale = (boxes[:, 2:] - boxes[:, :2]) * padding
    aspect = input_size[0] / input_size[1]
    w, h = scale[:, 0], scale[:, 1]
    wide = w > aspect * h
    scale = torch.stack((torch.where(wide, w, h * aspect), torch.where(wide, w / aspect, h)), dim=1)
    return center, scale


def box_to_center_scale_np(
    boxes: np.ndarray, input_size: tuple[int, int] = POSE_INPUT_SIZE, padding: float = BOX_PADDING
) -> tuple[np.ndarray, np.ndarray]:
    """`box_to_center_scale` on the host: the same float32 arithmetic, so the same numbers,
    without a round trip to the device (the Predictor uploads the result in one copy)."""
    boxes = np.asarray(boxes, np.float32)
    center = (boxes[:, :2] + boxes[:, 2:]) / np.float32(2)
    scale = (boxes[:, 2:] - boxes[:, :2]) * np.float32(padding)
    aspect = np.float32(input_size[0] / input_size[1])
    w, h = scale[:, 0], scale[:, 1]
    wide = w > aspect * h
    scale = np.stack((np.where(wide, w, h * aspect), np.where(wide, w / aspect, h)), axis=1).astype(np.float32)
    return center.astype(np.float32), scale


def udp_warp_matrix(center: torch.Tensor, scale: torch.Tensor, input_size: tuple[int, int] = POSE_INPUT_SIZE) -> torch.Tensor:
    """(N, 2, 3) affine image px -> crop px, unbiased (UDP): box edges land on pixel
    centres 0 and size-1 (SPEC §4.2 step 4)."""
    kx = (input_size[0] - 1) / scale[:, 0]
    ky = (input_size[1] - 1) / scale[:, 1]
    zero = torch.zeros_like(kx)
    row0 = torch.stack((kx, zero, kx * (scale[:, 0] / 2 - center[:, 0])), dim=1)
    row1 = torch.stack((zero, ky, ky * (scale[:, 1] / 2 - center[:, 1])), dim=1)
    return torch.stack((row0, row1), dim=1)


def crop_persons(
    image: torch.Tensor, center: torch.Tensor, scale: torch.Tensor, input_size: tuple[int, int] = POSE_INPUT_SIZE
) -> torch.Tensor:
    """One image (3, H, W) RGB, uint8 or float 0-255 -> crops (N, 3, h, w) float32 0-255.

    Matches `cv2.warpAffine` with the UDP matrix and a black border: bilinear where
    the crop shrinks, bicubic (a = -0.75) where it enlarges. From uint8 the result is
    rounded and clipped like OpenCV's uint8 output; it differs from OpenCV by at most
    a couple of grey levels (OpenCV uses fixed-point weights)."""
    n = center.shape[0]
    w, h = input_size
    H, W = image.shape[-2:]
    if n == 0:
        return torch.zeros(0, 3, h, w, device=image.device)
    src = image.float()[None]
    matrix = udp_warp_matrix(center.float(), scale.float(), input_size).to(image.device)
    # Crop pixel (u, v) samples image point A^-1 ((u, v) - t); the UDP A is diagonal, so its
    # inverse is elementwise (torch.linalg.inv would check for errors on the host).
    kx, ky = matrix[:, 0, 0], matrix[:, 1, 1]
    v, u = torch.meshgrid(
        torch.arange(h, device=image.device, dtype=torch.float32),
        torch.arange(w, device=image.device, dtype=torch.float32),
        indexing="ij",
    )
    px = (u[None] - matrix[:, 0, 2, None, None]) * (1 / kx)[:, None, None]  # (N, h, w)
    py = (v[None] - matrix[:, 1, 2, None, None]) * (1 / ky)[:, None, None]
    grid = torch.stack((2 * px / max(W - 1, 1) - 1, 2 * py / max(H - 1, 1) - 1), dim=-1)
    # All crops in one call: stack their grids vertically against the single image.
    grid = grid.reshape(1, n * h, w, 2)
    shrink = torch.minimum(kx.abs(), ky.abs()) < 1  # (N,)

    def sample(mode: str) -> torch.Tensor:
        sampled = F.grid_sample(src, grid, mode=mode, padding_mode="zeros", align_corners=True)
        return sampled.view(3, n, h, w).transpose(0, 1)

    if image.device.type == "cpu":  # reading the flags costs nothing here: sample only the modes used
        out = torch.empty(n, 3, h, w, device=image.device)
        for mode, chosen in (("bilinear", shrink), ("bicubic", ~shrink)):
            if chosen.any():
                out[chosen] = sample(mode)[chosen]
    else:  # on a GPU, both and a select: no host wait for the flags
        out = torch.where(shrink[:, None, None, None], sample("bilinear"), sample("bicubic"))
    if not image.is_floating_point():
        out = out.round_().clamp_(0, 255)
    return out


def normalize(x: torch.Tensor) -> torch.Tensor:
    """RGB 0-255 (N, 3, h, w) -> the model's input: (x - mean) / std per channel (SPEC §4.1)."""
    mean, std = _mean_std(x.device)
    return (x.float() - mean) / std


@functools.lru_cache(maxsize=8)
def _mean_std(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    # Constants are made once per device: a host -> device copy per frame makes the host wait.
    return (torch.tensor(PIXEL_MEAN, device=device, dtype=torch.float32).view(1, 3, 1, 1),
            torch.tensor(PIXEL_STD, device=device, dtype=torch.float32).view(1, 3, 1, 1))


def flip_test(model: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, flip_indices: torch.Tensor) -> torch.Tensor:
    """Average of the heatmaps of x and of its mirror image mapped back (SPEC §4.2 step 6):
    (f(x) + f(x.flip(W)).flip(W)[:, flip_indices]) / 2. Both halves run as one batch."""
    out = model(torch.cat((x, x.flip(-1))))
    plain, mirrored = out.chunk(2)
    return (plain + mirrored.flip(-1)[:, flip_indices.to(out.device)]) / 2


@functools.lru_cache(maxsize=8)
def _gaussian_kernel(size: int, device: torch.device) -> torch.Tensor:
    sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8  # OpenCV's default for sigma = 0
    x = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    k = torch.exp(-(x**2) / (2 * sigma**2))
    return (k / k.sum()).float().to(device)


def _local_log_blur(heatmaps: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The DARK log map (SPEC §4.3 steps 2.1-2.3) on the 3x3 neighbourhood of each peak.

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


def decode_heatmaps(heatmaps: torch.Tensor, input_size: tuple[int, int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """UDP heatmaps (N, K, h, w) -> keypoints (N, K, 2) in crop-input px and scores (N, K).

    Argmax, then one DARK Newton step on the log of the blurred map (SPEC §4.3).
    Scores are the raw maxima; keypoints with score <= 0 are left at the unrefined
    location (-1, -1) scaled to input px: mask them by score. `input_size` (w, h)
    defaults to 4x the heatmap (768x1024 for 192x256)."""
    n, k, h, w = heatmaps.shape
    if input_size is None:
        input_size = (4 * w, 4 * h)
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
    x = (x.to(prec) - off_x) * (input_size[0] / (w - 1))
    y = (y.to(prec) - off_y) * (input_size[1] / (h - 1))
    return torch.stack((x, y), dim=-1).float(), scores


def keypoints_to_image(
    keypoints_in: torch.Tensor, center: torch.Tensor, scale: torch.Tensor, input_size: tuple[int, int] = POSE_INPUT_SIZE
) -> torch.Tensor:
    """Crop-input px (N, K, 2) -> original image px (N, K, 2) (SPEC §4.2 step 8)."""
    size = _size_tensor(tuple(input_size), keypoints_in.dtype, keypoints_in.device)
    scale = scale.to(keypoints_in)[:, None, :]
    center = center.to(keypoints_in)[:, None, :]
    return keypoints_in / size * scale + center - scale / 2


@functools.lru_cache(maxsize=16)
def _size_tensor(size: tuple[int, int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(size, dtype=dtype, device=device)


def flip_indices_tensor(device=None) -> torch.Tensor:
    """The 308-keypoint mirror table of `realtime.data` as a long tensor."""
    from realtime.data import flip_indices

    return torch.as_tensor(flip_indices(), dtype=torch.long, device=device)


__all__ = [
    "box_to_center_scale", "box_to_center_scale_np", "udp_warp_matrix", "crop_persons", "normalize", "flip_test",
    "decode_heatmaps", "keypoints_to_image", "flip_indices_tensor", "POSE_INPUT_SIZE",
]


def make_constants(device: torch.device | str, input_sizes=()) -> None:
    """Make the per-device constants of this module now (a construction-time cost) rather
    than with the first frame. input_sizes: the (w, h) sizes keypoints will be mapped from."""
    device = torch.device(device)
    _mean_std(device)
    _gaussian_kernel(BLUR_KERNEL, device)
    for size in input_sizes:
        _size_tensor(tuple(size), torch.float32, device)
