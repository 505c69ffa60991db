"""Pre- and post-processing of the dense tasks (seg, normal, pointmap, albedo) as
the official demos do it (SPEC §4.4-4.7), as tensor ops on any device.

Images come in as (3, H, W) RGB, uint8 or float 0-255. Resizes follow the
OpenCV calls of the demos: INTER_AREA is an exact box filter (two small matrix
products) when every side shrinks and OpenCV's 2-tap "area" coefficients when
one grows; INTER_LINEAR uses OpenCV's taps and, on uint8, its fixed-point
arithmetic; INTER_CUBIC is PyTorch's bicubic (a = -0.75, half-pixel centres).
From uint8 the result is rounded like OpenCV's uint8 output; against OpenCV 5
it is exact or off by one grey level at a small share of the pixels (see tests).
"""

from __future__ import annotations

import functools

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


def _linear_taps(n_in: int, n_out: int, area: bool, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """OpenCV's 2-tap source indices and 11-bit fixed-point weights of the first tap along
    one axis. `area`: the coefficients OpenCV's INTER_AREA uses when a side grows."""
    dst = torch.arange(n_out, device=device, dtype=torch.float64)
    inv_scale = n_out / n_in
    scale = 1.0 / inv_scale  # as OpenCV computes it: floor() of exact multiples depends on this rounding
    if area:
        s = torch.floor(dst * scale)
        f = (dst + 1) - (s + 1) * inv_scale
        f = torch.where(f <= 0, torch.zeros_like(f), f - torch.floor(f))
    else:
        pos = (dst + 0.5) * scale - 0.5
        s = torch.floor(pos)
        f = pos - s
    s = s.long()
    f = torch.where((s < 0) | (s >= n_in - 1), torch.zeros_like(f), f.float().double())  # OpenCV keeps fx as float
    s = s.clamp(0, n_in - 1)
    return s, (s + 1).clamp(max=n_in - 1), torch.round((1 - f) * 2048).long()


def _resize_linear(image: torch.Tensor, size_hw: tuple[int, int], area: bool) -> torch.Tensor:
    """2-tap (bilinear) resize of (3, H, W) with OpenCV's taps. On uint8 it repeats OpenCV's
    integer arithmetic (its vectorised rounding), so it equals cv2.resize at nearly every pixel."""
    ys0, ys1, wy0 = _linear_taps(image.shape[-2], size_hw[0], area, image.device)
    xs0, xs1, wx0 = _linear_taps(image.shape[-1], size_hw[1], area, image.device)
    wy0, wx0 = wy0[:, None], wx0
    if image.dtype == torch.uint8:
        x = image.long()
        rows = x[:, :, xs0] * wx0 + x[:, :, xs1] * (2048 - wx0)  # scaled by 2^11
        top, bottom = rows[:, ys0], rows[:, ys1]
        out = (((wy0 * (top >> 4)) >> 16) + (((2048 - wy0) * (bottom >> 4)) >> 16) + 2) >> 2
        return out.clamp(0, 255).float()[None]
    x = image.float()
    ax, ay = wx0 / 2048, wy0 / 2048
    rows = x[:, :, xs0] * ax + x[:, :, xs1] * (1 - ax)
    return (rows[:, ys0] * ay + rows[:, ys1] * (1 - ay))[None]


def _resize(image: torch.Tensor, size_hw: tuple[int, int], interpolation: str) -> torch.Tensor:
    """cv2.resize of (3, H, W) to size_hw with INTER_LINEAR / INTER_AREA / INTER_CUBIC
    ("linear", "area", "cubic") -> (1, 3, h, w) float 0-255, rounded and clipped for uint8 input."""
    H, W = image.shape[-2:]
    if interpolation == "linear" or (interpolation == "area" and (size_hw[0] > H or size_hw[1] > W)):
        return _resize_linear(image, size_hw, area=interpolation == "area")
    x = image.float()
    if interpolation == "area":  # every side shrinks: a box filter with fractional coverage
        wy = _area_weights(H, size_hw[0], x.device)
        wx = _area_weights(W, size_hw[1], x.device)
        out = (wy @ x @ wx.T)[None]
    else:
        out = F.interpolate(x[None], size=size_hw, mode="bicubic", align_corners=False)
    if not image.is_floating_point():
        out = out.round_().clamp_(0, 255)
    return out


def seg_preprocess(image: torch.Tensor, size_hw: tuple[int, int] = INPUT_HW) -> torch.Tensor:
    """(3, H, W) RGB -> (1, 3, h, w) normalised: stretched to size_hw (aspect not kept),
    INTER_AREA when the width shrinks, else INTER_CUBIC, as the official demo."""
    interpolation = "area" if size_hw[1] < image.shape[-1] else "cubic"
    return normalize(_resize(image, size_hw, interpolation))


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
    resized = _resize(image, (nh, nw), "linear")
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


@functools.lru_cache(maxsize=8)
def _blur_taps(sigma: float, device: torch.device) -> torch.Tensor:
    """Made once per device: a host -> device copy per frame makes the host wait."""
    k = torch.exp(-torch.tensor([-1.0, 0.0, 1.0], device=device) ** 2 / (2 * sigma**2))
    return k / k.sum()


def make_constants(device: torch.device | str) -> None:
    """Make the per-device constants now rather than with the first frame."""
    _blur_taps(0.8, torch.device(device))


def _gaussian_blur3(x: torch.Tensor, sigma: float = 0.8) -> torch.Tensor:
    """torchvision-style 3x3 Gaussian blur with reflect padding, per channel."""
    k = _blur_taps(sigma, x.device)
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
