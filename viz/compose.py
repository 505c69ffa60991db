"""Compose one display image from a `Frame`: the overlay pane plus depth / normal panes.

The same function feeds the live viewer and the video writer.

Layout: `Layers.panes`, fixed when the `Layers` is built (the `viz.panes.Pane`s of the
enabled tasks, handed in by the caller) and never changed by toggling a flag or by which
maps a frame carries, so a video writer gets one frame size for the whole run. A pane
whose flag is toggled off, or whose map has not arrived yet, stays in place as a dark
placeholder saying so.

    1 pane   [ overlay ]                      H x W
    2 panes  [ overlay | depth or normal ]    H x 2W
    3 panes  [ overlay | depth  ]             H x (W + W/2): the two previews at half
             [         | normal ]             size stacked on the right
    k+1      [ overlay | k previews stacked ] H x (W + W/k), each preview at 1/k size

Sizes are rounded up to even numbers (H.264 yuv420p): see `compose_size`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from realtime.frames import Frame

from .keypoints import SkeletonAnnotator, draw_text
from .maps import BACKGROUND_GRAY, overlay_seg
from .panes import BUILTIN, Pane

DEFAULT_PREVIEWS = ("depth", "normal")  # the panes of `Layers()`


class Layers:
    """What to draw; mutable on purpose: the viewer's hot keys flip these flags while the
    render stage reads them (single bool writes are atomic in CPython).

    skeleton: boxes, IDs and keypoints on the overlay pane.
    seg:      body-part colours on the overlay pane.
    legend:   the class legend on the overlay pane.
    panes:    the layout, fixed at construction: "overlay" followed by preview `Pane`s
              (`viz.panes`; the task table hands in those of a run's tasks), or the names
              of the built-in ones ("depth", "normal", "albedo").
    **shown:  a flag per preview pane (e.g. depth=False): shown or hidden (the pane keeps
              its place). Without `panes`, the layout is "overlay" plus "depth" and
              "normal" and any other built-in pane given True, minus those given False.
    Read and flip a pane's flag as an attribute: `layers.depth = False`.
    `layers.panes` holds the names in layout order, `layers.previews` the `Pane` by name.
    """

    def __init__(self, skeleton: bool = True, seg: bool = True, legend: bool = False,
                 panes: Optional[Sequence[str | Pane]] = None, **shown: bool) -> None:
        self.skeleton, self.seg, self.legend = skeleton, seg, legend
        flags = {**{name: True for name in DEFAULT_PREVIEWS}, **shown}
        if panes is None:
            panes = ("overlay",) + tuple(name for name, on in flags.items() if on)
        panes = tuple(panes)
        previews = [_pane(p) for p in panes[1:]]
        self.panes = panes[:1] + tuple(p.name for p in previews)
        _pane_boxes((2, 2), self.panes)  # validates the layout
        self.previews: dict[str, Pane] = {p.name: p for p in previews}
        self.shown = {**flags, **{name: flags.get(name, True) for name in self.panes[1:]}}

    def __getattr__(self, name: str):
        shown = self.__dict__.get("shown", {})
        if name in shown:
            return shown[name]
        raise AttributeError(f"Layers has no flag {name!r}")

    def __setattr__(self, name: str, value) -> None:
        if name in self.__dict__.get("shown", {}):
            self.shown[name] = value
        else:
            object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        return f"Layers(skeleton={self.skeleton}, seg={self.seg}, legend={self.legend}, panes={self.panes}, shown={self.shown})"


def _pane(pane: str | Pane) -> Pane:
    if isinstance(pane, Pane):
        return pane
    if pane not in BUILTIN:
        raise ValueError(f"unknown pane {pane!r}: pass a viz.panes.Pane, or one of {', '.join(BUILTIN)}")
    return BUILTIN[pane]


def active_panes(layers: Layers) -> tuple[str, ...]:
    """The panes `compose` lays out for `layers`, in order ("overlay" always first)."""
    return layers.panes


def _even(n: int) -> int:
    return n + (n % 2)


def _pane_boxes(image_hw: tuple[int, int], panes: Sequence[str]) -> list[tuple[int, int, int, int]]:
    """(y, x, h, w) of each pane on the canvas, in `panes` order: the overlay, then one
    preview beside it at full size, or k >= 2 previews stacked at 1/k size."""
    if not panes or panes[0] != "overlay" or len(set(panes)) != len(panes):
        raise ValueError(f"panes must be 'overlay' followed by distinct preview panes, got {tuple(panes)}")
    h, w = image_hw
    k = len(panes) - 1
    if k <= 1:
        return [(0, 0, h, w)] + [(0, w, h, w)] * k
    ph, pw = h // k, w // k
    return [(0, 0, h, w)] + [(i * ph, w, ph, pw) for i in range(k)]


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
    if len(panes) > 2:
        k = len(panes) - 1
        canvas[k * (image_h // k) :, image_w:] = BACKGROUND_GRAY

    foreground = dense.seg > 0 if dense is not None and dense.seg is not None else None
    previews = layers.previews
    for name, (y, x, h, w) in zip(panes, boxes):
        title = overlay_title(layers) if name == "overlay" else previews[name].title
        if name != "overlay":
            shown = getattr(layers, name)
            pane = previews[name].render(dense, foreground, (h, w)) if shown and dense is not None else None
            if pane is not None:
                canvas[y : y + h, x : x + w] = pane
            else:
                canvas[y : y + h, x : x + w] = BACKGROUND_GRAY
                title += ": no data yet" if shown else ": off"
        _label(canvas, title, (y, x))
    if caption:
        draw_text(canvas, caption, (0, image_hw[0]), anchor="bottom")
    return canvas


def overlay_title(layers: Layers) -> str:
    """The overlay pane's title: what is drawn on it ("pose + body parts", "pose", ...)."""
    drawn = [what for what, on in (("pose", layers.skeleton), ("body parts", layers.seg)) if on]
    return " + ".join(drawn) or "image"


def _label(canvas: np.ndarray, title: str, origin_yx: tuple[int, int]) -> None:
    draw_text(canvas, title, (origin_yx[1], origin_yx[0]))
