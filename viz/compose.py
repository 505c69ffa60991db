"""Compose one display image from a `Frame`: the overlay pane plus depth / normal panes.

The same function feeds the live viewer and the video writer.

Layout: `Layers.panes`, fixed when the `Layers` is built (from its initial depth /
normal flags, i.e. the enabled tasks) and never changed by toggling a flag or by which
maps a frame carries, so a video writer gets one frame size for the whole run. A pane
whose flag is toggled off, or whose map has not arrived yet, stays in place as a dark
placeholder saying so.

    1 pane   [ overlay ]                      H x W
    2 panes  [ overlay | depth or normal ]    H x 2W
    3 panes  [ overlay | depth  ]             H x (W + W/2): the two previews at half
             [         | normal ]             size stacked on the right

Sizes are rounded up to even numbers (H.264 yuv420p): see `compose_size`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from realtime.frames import Frame

from .maps import BACKGROUND_GRAY, depth_to_rgb, normal_to_rgb, overlay_seg
from .skeleton import SkeletonAnnotator, draw_text

PANES = ("overlay", "depth", "normal")
_TITLES = {"overlay": "pose + body parts", "depth": "depth", "normal": "normals"}


@dataclass
class Layers:
    """What to draw; mutable on purpose: the viewer's hot keys flip these flags while the
    render stage reads them (single bool writes are atomic in CPython).

    skeleton: boxes, IDs and keypoints on the overlay pane.
    seg:      body-part colours on the overlay pane.
    depth:    show the depth preview (build with False when the depth task is off).
    normal:   show the normal preview (build with False when the normal task is off).
    legend:   the class legend on the overlay pane.
    panes:    the layout, fixed at construction: "overlay" plus "depth" / "normal" for
              the flags that were True then (or given explicitly).
    """

    skeleton: bool = True
    seg: bool = True
    depth: bool = True
    normal: bool = True
    legend: bool = False
    panes: Optional[tuple[str, ...]] = None

    def __post_init__(self) -> None:
        if self.panes is None:
            self.panes = ("overlay",) + tuple(name for name in ("depth", "normal") if getattr(self, name))
        self.panes = tuple(self.panes)
        _pane_boxes((2, 2), self.panes)  # validates the names


def active_panes(layers: Layers) -> tuple[str, ...]:
    """The panes `compose` lays out for `layers`, in order ("overlay" always first)."""
    return layers.panes


def _even(n: int) -> int:
    return n + (n % 2)


def _pane_boxes(image_hw: tuple[int, int], panes: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """(y, x, h, w) of each pane on the canvas, in `panes` order."""
    unknown = [p for p in panes if p not in PANES]
    if unknown or not panes or panes[0] != "overlay" or len(set(panes)) != len(panes):
        raise ValueError(f"panes must be 'overlay' followed by distinct names from {PANES}, got {tuple(panes)}")
    h, w = image_hw
    if len(panes) == 1:
        return [(0, 0, h, w)]
    if len(panes) == 2:
        return [(0, 0, h, w), (0, w, h, w)]
    half_h, half_w = h // 2, w // 2
    return [(0, 0, h, w), (0, w, half_h, half_w), (half_h, w, half_h, half_w)]


def compose_size(image_hw: tuple[int, int], panes: Sequence[str]) -> tuple[int, int]:
    """(H', W') of `compose`'s output for an image of (H, W) and these panes (both even)."""
    boxes = _pane_boxes(image_hw, panes)
    return _even(max(y + h for y, _, h, _ in boxes)), _even(max(x + w for _, x, _, w in boxes))


@lru_cache(maxsize=1)
def _default_annotator() -> SkeletonAnnotator:
    return SkeletonAnnotator()


def compose(
    frame: Frame,
    layers: Layers,
    caption: Optional[str] = None,
    annotator: Optional[SkeletonAnnotator] = None,
) -> np.ndarray:
    """Draw `frame` as a (H', W', 3) uint8 RGB image; H', W' = `compose_size` of its panes.

    caption: a line such as "24.8 fps  41 ms", drawn at the bottom left of the overlay.
    annotator: the skeleton style (default `SkeletonAnnotator()`).
    The frame is not modified.
    """
    panes = active_panes(layers)
    image_h, image_w = image_hw = frame.image.shape[:2]
    dense = frame.dense
    out_h, out_w = compose_size(image_hw, panes)
    boxes = _pane_boxes(image_hw, panes)
    # Draw straight into the canvas (cv2 draws into row-contiguous views): no extra copies.
    canvas = np.empty((out_h, out_w, 3), np.uint8)
    overlay = canvas[:image_h, :image_w]
    overlay[:] = frame.image
    if layers.seg and dense is not None and dense.seg is not None:
        overlay_seg(overlay, dense.seg, legend=layers.legend, inplace=True)
    if layers.skeleton and frame.people:
        annotator = annotator if annotator is not None else _default_annotator()
        annotator.draw(overlay, frame.people, inplace=True)
    # Padding to even sizes, and the gap under the half-size panes when H is odd.
    canvas[image_h:] = BACKGROUND_GRAY
    canvas[:, max(x + w for _, x, _, w in boxes) :] = BACKGROUND_GRAY
    if len(panes) == 3:
        canvas[2 * (image_h // 2) :, image_w:] = BACKGROUND_GRAY

    foreground = dense.seg > 0 if dense is not None and dense.seg is not None else None
    for name, (y, x, h, w) in zip(panes, boxes):
        title = _TITLES[name]
        if name != "overlay":
            pane = _preview(name, dense, foreground, (h, w)) if getattr(layers, name) else None
            if pane is not None:
                canvas[y : y + h, x : x + w] = pane
            else:
                canvas[y : y + h, x : x + w] = BACKGROUND_GRAY
                title += ": no data yet" if getattr(layers, name) else ": off"
        _label(canvas, title, (y, x))
    if caption:
        draw_text(canvas, caption, (0, image_hw[0]), anchor="bottom")
    return canvas


def _preview(name: str, dense, foreground: Optional[np.ndarray], size_hw: tuple[int, int]) -> Optional[np.ndarray]:
    """The depth or normal pane at `size_hw`, or None when the frame has no such map yet."""
    if name == "depth" and dense is not None and dense.depth is not None:
        return depth_to_rgb(dense.depth, foreground, size_hw)
    if name == "normal" and dense is not None and dense.normal is not None:
        return normal_to_rgb(dense.normal, foreground, size_hw)
    return None


def _label(canvas: np.ndarray, title: str, origin_yx: tuple[int, int]) -> None:
    draw_text(canvas, title, (origin_yx[1], origin_yx[0]))
