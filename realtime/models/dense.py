"""Pre- and post-processing of the dense tasks (seg, normal, pointmap, albedo) as
the official demos do it (SPEC §4.4-4.7), as tensor ops on any device.

Images come in as (3, H, W) RGB, uint8 or float 0-255. Resizes follow the
OpenCV calls of the demos: INTER_AREA is an exact box filter (two small matrix
products), INTER_LINEAR on uint8 repeats OpenCV's fixed-point arithmetic, and
INTER_CUBIC is PyTorch's bicubic (a = -0.75, half-pixel centres). From uint8
the result is rounded like OpenCV's uint8 output; against OpenCV 5 it is exact
or off by one grey level at well under 1 % of the pixels (see tests).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from realtime.codec import normalize
from realtime.models.archs import INPUT_HW

Padding = tuple[int, int, int, int]  # (left, right, top, bottom) px of the model input


def _area_weights(n_in: int, n_out: int, device) -> torch.Tensor:
    """(n_out, n_in) box-filter weights: output i averages source span [i*r, (i+1)*r)."""
    r = n_in / n_out
    start = torch.arange(n_out, device=device, dtype=torch.float64)[:, None] * r
    j = torch.arange(n_in, device=device, dtype=torch.float64)[None, :]
    overlap = (torch.minimum(j + 1, start + r) - torch.maximum(j, start)).clamp(min=0)
    return (overlap / r).float()


def _linear_taps(n_in: int, n_out: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """OpenCV's INTER_LINEAR source indices and 11-bit fixed-point weights along one axis."""
    f = (torch.arange(n_out, device=device, dtype=torch.float64) + 0.5) * (n_in / n_out) - 0.5
    s = torch.floor(f)
    f, s = f - s, s.long()
    f = torch.where((s < 0) | (s >= n_in - 1), torch.zeros_like(f), f)
    s = s.clamp(0, n_in - 1)
    w0 = torch.round((1 - f) * 2048).long()
    return s, (s + 1).clamp(max=n_in - 1), w0, 2048 - w0


def _resize_linear_u8(image: torch.Tensor, size_hw: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of uint8 (3, H, W) with OpenCV's integer arithmetic (its vectorised
    rounding), so the result equals cv2.resize(INTER_LINEAR) at nearly every pixel."""
    ys0, ys1, wy0, wy1 = _linear_taps(image.shape[-2], size_hw[0], image.device)
    xs0, xs1, wx0, wx1 = _linear_taps(image.shape[-1], size_hw[1], image.device)
    x = image.long()
    rows = x[:, :, xs0] * wx0 + x[:, :, xs1] * wx1  # scaled by 2^11
    top, bottom = rows[:, ys0], rows[:, ys1]
    out = (((wy0[:, None] * (top >> 4)) >> 16) + ((wy1[:, None] * (bottom >> 4)) >> 16) + 2) >> 2
    return out.clamp(0, 255).float()[None]


def _resize(image: torch.Tensor, size_hw: tuple[int, int], mode: str) -> torch.Tensor:
    """(3, H, W) -> (1, 3, h, w) float 0-255; rounded and clipped when the input is uint8."""
    x = image.float()
    if mode == "bilinear" and image.dtype == torch.uint8:
        return _resize_linear_u8(image, size_hw)
    if mode == "area":
        wy = _area_weights(x.shape[-2], size_hw[0], x.device)
        wx = _area_weights(x.shape[-1], size_hw[1], x.device)
        out = (wy @ x @ wx.T)[None]
    else:
        out = F.interpolate(x[None], size=size_hw, mode=mode, align_corners=False)
    if not image.is_floating_point():
        out = out.round_().clamp_(0, 255)
    return out


def seg_preprocess(image: torch.Tensor, size_hw: tuple[int, int] = INPUT_HW) -> torch.Tensor:
    """(3, H, W) RGB -> (1, 3, h, w) normalised: stretched to size_hw (aspect not kept);
    box filter when the width shrinks and both sides shrink, bicubic when the width grows."""
    H, W = image.shape[-2:]
    if size_hw[1] < W:
        mode = "area" if size_hw[0] <= H else "bilinear"
    else:
        mode = "bicubic"
    return normalize(_resize(image, size_hw, mode))


def seg_postprocess(logits: torch.Tensor, out_hw: tuple[int, int]) -> torch.Tensor:
    """Logits (B, C, h, w) -> labels (B, H, W) uint8 at out_hw (bilinear logits, then argmax)."""
    logits = F.interpolate(logits.float(), size=out_hw, mode="bilinear", align_corners=False)
    return logits.argmax(dim=1).to(torch.uint8)


def resize_pad(image: torch.Tensor, size_hw: tuple[int, int] = INPUT_HW) -> tuple[torch.Tensor, Padding]:
    """(3, H, W) RGB -> ((1, 3, h, w) normalised, (left, right, top, bottom)): aspect-kept
    bilinear resize into size_hw and centred black padding (black before normalising)."""
    H, W = image.shape[-2:]
    r = min(size_hw[1] / W, size_hw[0] / H)
    nw, nh = int(W * r), int(H * r)
    resized = _resize(image, (nh, nw), "bilinear")
    left, top = (size_hw[1] - nw) // 2, (size_hw[0] - nh) // 2
    pad = (left, size_hw[1] - nw - left, top, size_hw[0] - nh - top)
    return normalize(F.pad(resized, pad, value=0.0)), pad


def _crop(x: torch.Tensor, pad: Padding) -> torch.Tensor:
    left, right, top, bottom = pad
    return x[..., top : x.shape[-2] - bottom, left : x.shape[-1] - right]


def normal_postprocess(raw: torch.Tensor, pad: Padding, out_hw: tuple[int, int]) -> torch.Tensor:
    """Raw normals (B, 3, h, w) -> unit normals (B, 3, H, W) at out_hw: normalised first,
    padding cropped, bilinear resize (not renormalised afterwards, as officially)."""
    n = raw.float()
    n = n / n.norm(dim=1, keepdim=True).clamp(min=1e-8)
    return F.interpolate(_crop(n, pad), size=out_hw, mode="bilinear", align_corners=False)


def _gaussian_blur3(x: torch.Tensor, sigma: float = 0.8) -> torch.Tensor:
    """torchvision-style 3x3 Gaussian blur with reflect padding, per channel."""
    k = torch.exp(-torch.tensor([-1.0, 0.0, 1.0], device=x.device) ** 2 / (2 * sigma**2))
    k = k / k.sum()
    c = x.shape[1]
    x = F.pad(x, (1, 1, 1, 1), mode="reflect")
    x = F.conv2d(x, k.view(1, 1, 1, 3).expand(c, 1, 1, 3), groups=c)
    return F.conv2d(x, k.view(1, 1, 3, 1).expand(c, 1, 3, 1), groups=c)


def pointmap_postprocess(pointmap: torch.Tensor, scale: torch.Tensor, pad: Padding, out_hw: tuple[int, int]) -> torch.Tensor:
    """Canonical pointmap (B, 3, h, w) and scale (B, 1) -> metric XYZ (B, 3, H, W) at out_hw
    (Z is depth). Each image divides by its own scale; before enlarging, 4 rounds of a
    3x3 sigma-0.8 blur smooth the upsampling as the demo does."""
    points = _crop(pointmap.float() / scale.float().view(-1, 1, 1, 1), pad)
    if out_hw[0] > points.shape[-2] or out_hw[1] > points.shape[-1]:
        for _ in range(4):
            points = _gaussian_blur3(points)
    return F.interpolate(points, size=out_hw, mode="bilinear", align_corners=False)


def albedo_postprocess(raw: torch.Tensor, pad: Padding, out_hw: tuple[int, int]) -> torch.Tensor:
    """Raw albedo (B, 3, h, w) -> RGB (B, 3, H, W) in [0, 1] at out_hw (clamp, crop, resize)."""
    rgb = _crop(raw.float().clamp(0, 1), pad)
    return F.interpolate(rgb, size=out_hw, mode="bilinear", align_corners=False)
