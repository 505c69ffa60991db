"""Image transforms between the frame and the networks, as tensor ops on any device
(numpy for the pointmap sampling): crop geometry of the person boxes, resizes and
padding, normalisation, the dense tasks' maps back to image size, and keypoints
sampled from the pointmap. Every size is (H, W); the default input is the trained
size `INPUT_HW` of `realtime.models.archs`.

Crops follow the official top-down codec (docs/numerics.md, "Person crops"); resizes follow the
OpenCV calls of the official demos (docs/numerics.md, "Dense tasks"): INTER_AREA is an exact box
filter (two small matrix products) when every side shrinks and OpenCV's 2-tap
"area" coefficients when one grows; INTER_LINEAR uses OpenCV's taps and, on
uint8, its fixed-point arithmetic; INTER_CUBIC is PyTorch's bicubic (a = -0.75,
half-pixel centres). From uint8 the result is rounded like OpenCV's uint8
output; against OpenCV 5 it is exact or off by one grey level at a small share
of the pixels (see tests).

    center, scale = box_to_center_scale(boxes)                  # person crops
    crops = normalize(crop_persons(image, center, scale))       # (N, 3, 1024, 768)
    sampling = crop_sampling(scale_np)                          # bilinear / bicubic, picked on the host
    keypoints = keypoints_to_image(kpts_in_crop, center, scale)
    x, pad = resize_pad(image)                                  # whole image, aspect kept
    xyz = pointmap_postprocess(points, scale, pad, (h, w))
    kpts3d = sample_keypoints_3d(xyz_numpy, keypoints, scores, (H, W))
"""

from __future__ import annotations

import functools
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.models.archs import INPUT_HW, PIXEL_MEAN, PIXEL_STD

BOX_PADDING = 1.25  # person boxes are enlarged by this before cropping
Padding = tuple[int, int, int, int]  # (left, right, top, bottom) px of the model input


# ----------------------------------------------------------------------------- normalisation


def normalize(x: torch.Tensor) -> torch.Tensor:
    """RGB 0-255 (N, 3, h, w) -> the model's input: (x - mean) / std per channel (docs/numerics.md, "Input normalisation")."""
    mean, std = _mean_std(x.device)
    return (x.float() - mean) / std


# Constants are made once per device (`make_constants` at construction): a host -> device
# copy per frame would make the host wait for the GPU.


@functools.lru_cache(maxsize=8)
def _mean_std(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return (torch.tensor(PIXEL_MEAN, device=device, dtype=torch.float32).view(1, 3, 1, 1),
            torch.tensor(PIXEL_STD, device=device, dtype=torch.float32).view(1, 3, 1, 1))


@functools.lru_cache(maxsize=16)
def _size_wh(input_hw: tuple[int, int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(input_hw[::-1], dtype=dtype, device=device)  # (w, h): x, y order


@functools.lru_cache(maxsize=8)
def _blur_taps(sigma: float, device: torch.device) -> torch.Tensor:
    k = torch.exp(-torch.tensor([-1.0, 0.0, 1.0], device=device) ** 2 / (2 * sigma**2))
    return k / k.sum()


def make_constants(device: torch.device | str, input_sizes=()) -> None:
    """Make the per-device constants now (input_sizes: the (H, W) crop sizes keypoints
    come from) rather than with the first frame."""
    device = torch.device(device)
    _mean_std(device)
    _blur_taps(0.8, device)
    for input_hw in input_sizes:
        _size_wh(tuple(input_hw), torch.float32, device)


# ----------------------------------------------------------------------------- person crops


def box_to_center_scale(
    boxes: torch.Tensor, input_hw: tuple[int, int] = INPUT_HW, padding: float = BOX_PADDING
) -> tuple[torch.Tensor, torch.Tensor]:
    """Boxes (N, 4) xyxy px -> center (N, 2) px and scale (N, 2) px: the box padded by
    `padding`, then widened or heightened to the input's aspect W/H (docs/numerics.md, "Person crops", steps 1-2)."""
    boxes = boxes.float() if not boxes.is_floating_point() else boxes
    center = (boxes[:, :2] + boxes[:, 2:]) / 2
    scale = (boxes[:, 2:] - boxes[:, :2]) * padding
    aspect = input_hw[1] / input_hw[0]
    w, h = scale[:, 0], scale[:, 1]
    wide = w > aspect * h
    scale = torch.stack((torch.where(wide, w, h * aspect), torch.where(wide, w / aspect, h)), dim=1)
    return center, scale


def box_to_center_scale_np(
    boxes: np.ndarray, input_hw: tuple[int, int] = INPUT_HW, padding: float = BOX_PADDING
) -> tuple[np.ndarray, np.ndarray]:
    """`box_to_center_scale` on the host: the same float32 arithmetic, so the same numbers,
    without a round trip to the device (the Predictor uploads the result in one copy)."""
    boxes = np.asarray(boxes, np.float32)
    center = (boxes[:, :2] + boxes[:, 2:]) / np.float32(2)
    scale = (boxes[:, 2:] - boxes[:, :2]) * np.float32(padding)
    aspect = np.float32(input_hw[1] / input_hw[0])
    w, h = scale[:, 0], scale[:, 1]
    wide = w > aspect * h
    scale = np.stack((np.where(wide, w, h * aspect), np.where(wide, w / aspect, h)), axis=1)
    return center.astype(np.float32), scale.astype(np.float32)


def udp_warp_matrix(center: torch.Tensor, scale: torch.Tensor, input_hw: tuple[int, int] = INPUT_HW) -> torch.Tensor:
    """(N, 2, 3) affine image px -> crop px, unbiased (UDP): box edges land on pixel
    centres 0 and size-1 (docs/numerics.md, "Person crops", step 3)."""
    kx = (input_hw[1] - 1) / scale[:, 0]
    ky = (input_hw[0] - 1) / scale[:, 1]
    zero = torch.zeros_like(kx)
    row0 = torch.stack((kx, zero, kx * (scale[:, 0] / 2 - center[:, 0])), dim=1)
    row1 = torch.stack((zero, ky, ky * (scale[:, 1] / 2 - center[:, 1])), dim=1)
    return torch.stack((row0, row1), dim=1)


# How person crops are sampled (`crop_persons(sampling=...)`, `Predictor(crop_sampling=...)`):
#   "official": per crop, bilinear when the crop shrinks the image (a large person) and
#               bicubic (a = -0.75) when it enlarges it (a small person), as the official
#               demo's cv2.warpAffine (docs/numerics.md, "Person crops"); the golden fixtures are made this way.
#   "bilinear" / "bicubic": every crop so (faster / sharper; not the official crops).
CROP_SAMPLING = ("official", "bilinear", "bicubic")


def crop_shrinks_np(scale: np.ndarray, input_hw: tuple[int, int] = INPUT_HW) -> np.ndarray:
    """(N,) bool: the crop of each (N, 2) float32 scale row shrinks the image (crop pixels per
    image pixel below 1 along some axis), computed on the host with the same float32 operations
    as `udp_warp_matrix` on the device (1 / scale, times size - 1), so both agree exactly."""
    scale = np.asarray(scale, np.float32).reshape(-1, 2)
    kx = (np.float32(1) / scale[:, 0]) * np.float32(input_hw[1] - 1)
    ky = (np.float32(1) / scale[:, 1]) * np.float32(input_hw[0] - 1)
    return np.minimum(np.abs(kx), np.abs(ky)) < 1


def crop_sampling(scale: np.ndarray, input_hw: tuple[int, int] = INPUT_HW, policy: str = "official") -> Optional[str]:
    """The sampling of one batch of crops, chosen on the host from its scale rows (N, 2), so the
    device samples only what is used and nothing waits for it: "bilinear" or "bicubic" when
    every crop takes that one (one person: always), None for a batch that mixes small and large
    people under the "official" policy (`crop_persons` then samples both and picks per crop)."""
    if policy not in CROP_SAMPLING:
        raise ValueError(f"crop sampling must be one of {CROP_SAMPLING}, got {policy!r}")
    if policy != "official":
        return policy
    shrinks = crop_shrinks_np(scale, input_hw)
    if shrinks.all():
        return "bilinear"
    return "bicubic" if not shrinks.any() else None


def crop_persons(
    image: torch.Tensor, center: torch.Tensor, scale: torch.Tensor, input_hw: tuple[int, int] = INPUT_HW,
    sampling: Optional[str] = None,
) -> torch.Tensor:
    """One image (3, H, W) RGB, uint8 or float 0-255 -> crops (N, 3, h, w) float32 0-255.

    Matches `cv2.warpAffine` with the UDP matrix and a black border: bilinear where
    the crop shrinks, bicubic (a = -0.75) where it enlarges. From uint8 the result is
    rounded and clipped like OpenCV's uint8 output; it differs from OpenCV by at most
    a couple of grey levels (OpenCV uses fixed-point weights).

    sampling: "bilinear" or "bicubic" samples every crop so (what `crop_sampling` picks on
    the host when all crops agree: one grid_sample); None picks per crop here (on a GPU
    both are sampled and selected, since reading the choice would make the host wait)."""
    n = center.shape[0]
    h, w = input_hw
    H, W = image.shape[-2:]
    if n == 0:
        return torch.zeros(0, 3, h, w, device=image.device)
    src = image.float()[None]
    matrix = udp_warp_matrix(center.float(), scale.float(), input_hw).to(image.device)
    # Crop pixel (u, v) samples image point A^-1 ((u, v) - t); the UDP A is diagonal, so its
    # inverse is elementwise (torch.linalg.inv would check for errors on the host).
    kx, ky = matrix[:, 0, 0], matrix[:, 1, 1]
    v, u = torch.meshgrid(
        torch.arange(h, device=image.device, dtype=torch.float32),
        torch.arange(w, device=image.device, dtype=torch.float32),
        indexing="ij",
    )
    px = (u[None] - matrix[:, 0, 2, None, None]) * (1 / kx)[:, None, None]  # (N, h, w) image px
    py = (v[None] - matrix[:, 1, 2, None, None]) * (1 / ky)[:, None, None]
    grid = torch.stack((2 * px / max(W - 1, 1) - 1, 2 * py / max(H - 1, 1) - 1), dim=-1)
    # All crops in one call: stack their grids vertically against the single image.
    grid = grid.reshape(1, n * h, w, 2)

    def sample(mode: str) -> torch.Tensor:
        sampled = F.grid_sample(src, grid, mode=mode, padding_mode="zeros", align_corners=True)
        return sampled.view(3, n, h, w).transpose(0, 1)

    if sampling is not None:  # chosen on the host
        if sampling not in ("bilinear", "bicubic"):
            raise ValueError(f"sampling must be 'bilinear', 'bicubic' or None, got {sampling!r}")
        out = sample(sampling)
    elif image.device.type == "cpu":  # reading the flags costs nothing here: sample only the modes used
        shrink = torch.minimum(kx.abs(), ky.abs()) < 1  # (N,)
        out = torch.empty(n, 3, h, w, device=image.device)
        for mode, chosen in (("bilinear", shrink), ("bicubic", ~shrink)):
            if chosen.any():
                out[chosen] = sample(mode)[chosen]
    else:  # on a GPU: both, then a select; reading the flags would make the host wait
        shrink = torch.minimum(kx.abs(), ky.abs()) < 1  # (N,)
        out = torch.where(shrink[:, None, None, None], sample("bilinear"), sample("bicubic"))
    if not image.is_floating_point():
        out = out.round_().clamp_(0, 255)
    return out


def keypoints_to_image(
    keypoints_in: torch.Tensor, center: torch.Tensor, scale: torch.Tensor, input_hw: tuple[int, int] = INPUT_HW
) -> torch.Tensor:
    """Crop-input px (N, K, 2) -> original image px (N, K, 2) (docs/numerics.md, "Person crops", step 5)."""
    size = _size_wh(tuple(input_hw), keypoints_in.dtype, keypoints_in.device)  # (w, h): x, y order
    scale = scale.to(keypoints_in)[:, None, :]
    center = center.to(keypoints_in)[:, None, :]
    return keypoints_in / size * scale + center - scale / 2


# ----------------------------------------------------------------------------- resizes and padding


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


def resize(image: torch.Tensor, size_hw: tuple[int, int], interpolation: str) -> torch.Tensor:
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
    return normalize(resize(image, size_hw, interpolation))


def seg_postprocess(logits: torch.Tensor, out_hw: tuple[int, int]) -> torch.Tensor:
    """Logits (B, C, h, w) -> labels (B, H, W) uint8 at out_hw (bilinear logits, then argmax;
    logits already at out_hw, as `SegHead(out_hw=...)` makes them, go straight to the argmax)."""
    if tuple(logits.shape[-2:]) != tuple(out_hw):
        logits = F.interpolate(logits.float(), size=out_hw, mode="bilinear", align_corners=False)
    return logits.argmax(dim=1).to(torch.uint8)


def resize_pad(image: torch.Tensor, size_hw: tuple[int, int] = INPUT_HW) -> tuple[torch.Tensor, Padding]:
    """(3, H, W) RGB -> ((1, 3, h, w) normalised, (left, right, top, bottom)): aspect-kept
    bilinear resize into size_hw and centred black padding (black before normalising)."""
    H, W = image.shape[-2:]
    r = min(size_hw[1] / W, size_hw[0] / H)
    nw, nh = int(W * r), int(H * r)
    resized = resize(image, (nh, nw), "linear")
    left, top = (size_hw[1] - nw) // 2, (size_hw[0] - nh) // 2
    pad = (left, size_hw[1] - nw - left, top, size_hw[0] - nh - top)
    return normalize(F.pad(resized, pad, value=0.0)), pad


def crop_padding(x: torch.Tensor, pad: Padding) -> torch.Tensor:
    left, right, top, bottom = pad
    return x[..., top : x.shape[-2] - bottom, left : x.shape[-1] - right]


def normal_postprocess(raw: torch.Tensor, pad: Padding, out_hw: tuple[int, int]) -> torch.Tensor:
    """Raw normals (B, 3, h, w) -> unit normals (B, 3, H, W) at out_hw: normalised first,
    padding cropped, bilinear resize (not renormalised afterwards, as officially)."""
    n = raw.float()
    n = n / n.norm(dim=1, keepdim=True).clamp(min=1e-8)
    return F.interpolate(crop_padding(n, pad), size=out_hw, mode="bilinear", align_corners=False)


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
    points = crop_padding(pointmap.float() / scale.float().view(-1, 1, 1, 1), pad)
    if out_hw[0] > points.shape[-2] or out_hw[1] > points.shape[-1]:
        for _ in range(4):
            points = _gaussian_blur3(points)
    return F.interpolate(points, size=out_hw, mode="bilinear", align_corners=False)


def albedo_postprocess(raw: torch.Tensor, pad: Padding, out_hw: tuple[int, int]) -> torch.Tensor:
    """Raw albedo (B, 3, h, w) -> RGB (B, 3, H, W) in [0, 1] at out_hw (clamp, crop, resize)."""
    rgb = crop_padding(raw.float().clamp(0, 1), pad)
    return F.interpolate(rgb, size=out_hw, mode="bilinear", align_corners=False)


# ----------------------------------------------------------------------------- keypoints from the pointmap


def sample_keypoints_3d(
    pointmap: np.ndarray,
    keypoints: np.ndarray,
    scores: np.ndarray,
    image_hw: tuple[int, int],
    foreground: Optional[np.ndarray] = None,
    min_score: float = KEYPOINT_SCORE_THRESHOLD,
) -> np.ndarray:
    """Camera-space 3D keypoints by bilinear sampling of a metric pointmap.

    pointmap:   (h, w, 3) float metres, camera frame; NaN/inf where unknown.
    keypoints:  (N, K, 2) float pixels of the original image (may contain NaN).
    scores:     (N, K) float confidences.
    image_hw:   (H, W) of the original image.
    foreground: (h', w') bool person mask (e.g. segmentation > 0) covering the image, or None;
                resampled (nearest) to the pointmap grid when its size differs.
    min_score:  keypoints with a lower (or NaN) score get NaN.

    Returns (N, K, 3) float32 metres; NaN where the score is below `min_score`,
    the point lies outside the image, its nearest pointmap pixel is background,
    or none of its 4 neighbours is usable. Bilinear weights are renormalised
    over the neighbours that are finite (and foreground), so a keypoint on a
    silhouette edge does not mix in the depth of the background behind it.

    Pixel (i, j) covers [j, j+1) x [i, i+1), centre (j + 0.5, i + 0.5). A pointmap of
    (h, w) covers the field of view of the (H, W) image, so image point (x, y) sits at
    pointmap pixel u = (x + 0.5) * w / W - 0.5, v = (y + 0.5) * h / H - 0.5 (the
    align_corners=False convention of cv2.resize and torch interpolate).
    """
    pointmap = np.asarray(pointmap, dtype=np.float64)
    h, w = pointmap.shape[:2]
    height, width = image_hw
    keypoints = np.asarray(keypoints, dtype=np.float64)
    u = (keypoints[..., 0] + 0.5) * (w / width) - 0.5
    v = (keypoints[..., 1] + 0.5) * (h / height) - 0.5

    with np.errstate(invalid="ignore"):
        ok = (np.asarray(scores, dtype=np.float64) >= min_score) & (u > -0.5) & (u < w - 0.5) & (v > -0.5) & (v < h - 0.5)
    u = np.where(ok, u, 0.0)
    v = np.where(ok, v, 0.0)
    usable = np.isfinite(pointmap).all(axis=-1)
    if foreground is not None:
        foreground = _resample_nearest(np.asarray(foreground, dtype=bool), h, w)
        ok &= foreground[np.clip(np.round(v).astype(int), 0, h - 1), np.clip(np.round(u).astype(int), 0, w - 1)]
        usable &= foreground

    u0 = np.clip(np.floor(u).astype(int), 0, w - 1)
    v0 = np.clip(np.floor(v).astype(int), 0, h - 1)
    u1, v1 = np.minimum(u0 + 1, w - 1), np.minimum(v0 + 1, h - 1)
    fu, fv = np.clip(u - u0, 0.0, 1.0), np.clip(v - v0, 0.0, 1.0)

    total = np.zeros(keypoints.shape[:-1] + (3,))
    weight_sum = np.zeros(keypoints.shape[:-1])
    clean = np.where(usable[..., None], pointmap, 0.0)
    for vi, ui, weight in ((v0, u0, (1 - fu) * (1 - fv)), (v0, u1, fu * (1 - fv)), (v1, u0, (1 - fu) * fv), (v1, u1, fu * fv)):
        weight = weight * usable[vi, ui]
        total += weight[..., None] * clean[vi, ui]
        weight_sum += weight
    ok &= weight_sum > 1e-9
    out = total / np.where(ok, weight_sum, 1.0)[..., None]
    return np.where(ok[..., None], out, np.nan).astype(np.float32)


def _resample_nearest(mask: np.ndarray, h: int, w: int) -> np.ndarray:
    """(h', w') -> (h, w) by nearest pixel centre (same convention as the keypoint mapping)."""
    if mask.shape == (h, w):
        return mask
    rows = np.minimum(((np.arange(h) + 0.5) * mask.shape[0] / h).astype(int), mask.shape[0] - 1)
    cols = np.minimum(((np.arange(w) + 0.5) * mask.shape[1] / w).astype(int), mask.shape[1] - 1)
    return mask[np.ix_(rows, cols)]
