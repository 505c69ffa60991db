"""Colour the dense maps: body-part segmentation, depth and surface normals.

All functions take numpy arrays and return new (H, W, 3) uint8 RGB images. Maps may
come at a lower resolution than the image they go with (see `DenseMaps`): labels are
resized with nearest neighbour, colourised depth and normals with linear interpolation
(colouring happens at the map's own resolution, which is cheaper and keeps NaN
background out of the interpolation).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

import cv2
import numpy as np

from realtime.data import seg_class_names, seg_palette

from .keypoints import draw_text, text_scale

BACKGROUND_GRAY = 18  # dark background of the depth and normal previews (R = G = B)
BACKGROUND_RGB = (BACKGROUND_GRAY,) * 3


def resize_map(array: np.ndarray, size_hw: tuple[int, int], labels: bool = False) -> np.ndarray:
    """Resize a (h, w) or (h, w, C) map to `size_hw`; nearest for labels, else linear."""
    if array.shape[:2] == tuple(size_hw):
        return array
    interpolation = cv2.INTER_NEAREST if labels else cv2.INTER_LINEAR
    return cv2.resize(array, (size_hw[1], size_hw[0]), interpolation=interpolation)


@lru_cache(maxsize=None)
def _seg_lut() -> np.ndarray:
    """(256, 1, 3) uint8 user colormap: class index -> palette RGB (unknown classes black)."""
    lut = np.zeros((256, 1, 3), np.uint8)
    palette = seg_palette()
    lut[: len(palette), 0] = palette
    return lut


def colorize_seg(seg: np.ndarray) -> np.ndarray:
    """(h, w) uint8 class indices -> (h, w, 3) uint8 RGB palette colours (`seg29.json`)."""
    return cv2.applyColorMap(np.ascontiguousarray(seg, dtype=np.uint8), _seg_lut())


def overlay_seg(
    image: np.ndarray,
    seg: np.ndarray,
    alpha: float = 0.5,
    legend: bool = False,
    inplace: bool = False,
) -> np.ndarray:
    """Blend the body-part palette over `image` ((H, W, 3) uint8 RGB) where `seg` > 0.

    seg: (h, w) uint8 class indices at any resolution (nearest-resized to the image).
    alpha: colour weight, 0.5 as in the official demo (`0.5 * image + 0.5 * colour`);
    background pixels (class 0) keep the image untouched. `legend` lists the classes
    present in the top-right corner.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"image must be (H, W, 3) uint8 RGB, got {image.shape} {image.dtype}")
    out = image if inplace else image.copy()
    labels = np.asarray(seg, dtype=np.uint8)
    foreground = labels > 0
    # Work only inside the rectangles around groups of foreground columns (roughly one
    # per person): at 1080p that is a few milliseconds instead of whole-frame passes.
    (h, w), (big_h, big_w) = labels.shape, out.shape[:2]
    for lx0, lx1 in _column_runs(foreground.any(axis=0), min_gap=max(4, w // 64)):
        rows = np.flatnonzero(foreground[:, lx0:lx1].any(axis=1))
        ly0, ly1 = rows[0], rows[-1] + 1
        y0, y1 = ly0 * big_h // h, min(big_h, -(-ly1 * big_h // h))
        x0, x1 = lx0 * big_w // w, min(big_w, -(-lx1 * big_w // w))
        roi_labels = resize_map(np.ascontiguousarray(labels[ly0:ly1, lx0:lx1]), (y1 - y0, x1 - x0), labels=True)
        roi = out[y0:y1, x0:x1]
        blended = cv2.addWeighted(roi, 1.0 - alpha, colorize_seg(roi_labels), alpha, 0.0)
        cv2.copyTo(blended, (roi_labels > 0).view(np.uint8), roi)
    if legend:
        draw_seg_legend(out, np.flatnonzero(np.bincount(labels.ravel(), minlength=256)))
    return out


def _column_runs(occupied: np.ndarray, min_gap: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of True in `occupied` (w,), merging runs closer than `min_gap`."""
    columns = np.flatnonzero(occupied)
    if columns.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(columns) > min_gap)
    starts = np.concatenate([[columns[0]], columns[breaks + 1]])
    stops = np.concatenate([columns[breaks], [columns[-1]]]) + 1
    return list(zip(starts.tolist(), stops.tolist()))


def draw_seg_legend(out: np.ndarray, classes: np.ndarray) -> None:
    """Draw, in place, a legend of `classes` (class indices; background skipped) at top right."""
    names, palette = seg_class_names(), seg_palette()
    scale = text_scale(out.shape[:2]) * 0.8
    (_, text_h), _ = cv2.getTextSize("Ag", cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    classes = [int(c) for c in classes if 0 < c < len(names)]
    if not classes:
        return
    widths = [cv2.getTextSize(names[c], cv2.FONT_HERSHEY_SIMPLEX, scale, 1)[0][0] for c in classes]
    x = out.shape[1] - max(widths) - 3 * text_h
    y = text_h // 2
    for c in classes:
        color = tuple(int(v) for v in palette[c])
        cv2.rectangle(out, (x, y), (x + text_h, y + text_h), color, -1)
        _, box_h = draw_text(out, names[c], (x + text_h, y - text_h // 4), font_scale=scale)
        y += box_h


@lru_cache(maxsize=None)
def turbo_rgb() -> np.ndarray:
    """(256, 1, 3) uint8 RGB turbo colormap (index 0 = dark blue, 255 = dark red)."""
    ramp = np.arange(256, dtype=np.uint8).reshape(-1, 1)
    return np.ascontiguousarray(cv2.applyColorMap(ramp, cv2.COLORMAP_TURBO)[:, :, ::-1])


def _on_background(colors: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """`colors` where `valid` ((h, w) bool), the dark background elsewhere."""
    out = np.full(colors.shape, BACKGROUND_GRAY, np.uint8)
    cv2.copyTo(colors, valid.view(np.uint8), out)
    return out


def depth_to_rgb(
    depth: np.ndarray,
    foreground: Optional[np.ndarray] = None,
    size_hw: Optional[tuple[int, int]] = None,
    percentiles: tuple[float, float] = (1.0, 99.0),
    depth_range: Optional[tuple[float, float]] = None,
) -> np.ndarray:
    """Depth preview: turbo colours of inverse depth over the person foreground.

    depth:       (h, w) float metres (NaN / <= 0 = unknown).
    foreground:  (h, w) bool, e.g. seg > 0; default: every finite positive depth.
    size_hw:     output size (H, W); default the map's own size.
    percentiles: robust per-frame range, computed over foreground depths only.
    depth_range: fixed (near, far) metres instead of the per-frame percentiles.
    Returns (H, W, 3) uint8 RGB: near = red, far = blue (as the official demo's
    inverse-depth turbo), background `BACKGROUND_RGB`.
    """
    depth = np.asarray(depth, dtype=np.float32)
    valid = np.isfinite(depth) & (depth > 0)
    if foreground is not None:
        valid &= resize_map(np.asarray(foreground, np.uint8), depth.shape, labels=True) > 0
    if not valid.any():
        out = np.full(depth.shape + (3,), BACKGROUND_GRAY, np.uint8)
        return resize_map(out, size_hw) if size_hw is not None else out
    if depth_range is None:
        values = depth[valid]
        values = values[:: max(1, values.size // 100_000)]  # a sample is plenty for percentiles
        depth_range = tuple(np.percentile(values, percentiles))
    near = float(max(depth_range[0], 1e-3))
    far = float(max(depth_range[1], near * (1 + 1e-6)))
    # Inverse depth spreads the colours where detail is (close up), like the official demo.
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(1.0, depth, dtype=np.float32)
        t -= 1.0 / far
        t *= 255.0 / (1.0 / near - 1.0 / far)
        np.maximum(t, 0.0, out=t)
    index = cv2.convertScaleAbs(t)  # rounds and saturates at 255; unknown pixels are masked below
    out = _on_background(cv2.applyColorMap(index, turbo_rgb()), valid)
    return resize_map(out, size_hw) if size_hw is not None else out


def normal_to_rgb(
    normal: np.ndarray,
    foreground: Optional[np.ndarray] = None,
    size_hw: Optional[tuple[int, int]] = None,
) -> np.ndarray:
    """Normal preview: RGB = (n + 1) / 2 * 255 for camera-space unit normals.

    normal:     (h, w, 3) float (x right, y down, z forward); NaN = unknown.
    foreground: (h, w) bool, e.g. seg > 0; default: every finite normal.
    size_hw:    output size (H, W); default the map's own size.
    Returns (H, W, 3) uint8 RGB, background `BACKGROUND_RGB`.
    """
    normal = np.asarray(normal, dtype=np.float32)
    valid = np.isfinite(normal[..., 0]) & np.isfinite(normal[..., 1]) & np.isfinite(normal[..., 2])
    if foreground is not None:
        valid &= resize_map(np.asarray(foreground, np.uint8), normal.shape[:2], labels=True) > 0
    rgb = cv2.convertScaleAbs(normal, alpha=127.5, beta=127.5)  # NaN pixels are masked below
    out = _on_background(rgb, valid)
    return resize_map(out, size_hw) if size_hw is not None else out


def albedo_to_rgb(
    albedo: np.ndarray,
    foreground: Optional[np.ndarray] = None,
    size_hw: Optional[tuple[int, int]] = None,
) -> np.ndarray:
    """Albedo preview: the base colour as it is.

    albedo:     (h, w, 3) float RGB in [0, 1]; NaN = unknown.
    foreground: (h, w) bool, e.g. seg > 0; default: every finite pixel.
    size_hw:    output size (H, W); default the map's own size.
    Returns (H, W, 3) uint8 RGB, background `BACKGROUND_RGB`.
    """
    albedo = np.asarray(albedo, dtype=np.float32)
    valid = np.isfinite(albedo).all(axis=-1)
    if foreground is not None:
        valid &= resize_map(np.asarray(foreground, np.uint8), albedo.shape[:2], labels=True) > 0
    rgb = cv2.convertScaleAbs(np.nan_to_num(albedo), alpha=255.0)
    out = _on_background(rgb, valid)
    return resize_map(out, size_hw) if size_hw is not None else out
