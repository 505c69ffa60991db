"""Draw 308-keypoint skeletons, boxes and identities on an RGB image.

Colours and links come from `keypoints308.json` (`realtime.data.keypoint_table()`):
17 body + 6 foot + 7 extra points and their 25 links are drawn large and thick; the
238 face points and the 40 hand points (with their 40 finger links) small and fine.
Sizes follow the image (a 4K and a 480p frame both look right) and are capped by
the person's box height, so a far-away person is not buried under fat lines.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional, Sequence

import cv2
import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD, keypoint_groups, keypoint_table
from realtime.frames import Person

# Fixed-point drawing (coordinates * 2**_SHIFT) keeps sub-pixel positions with LINE_AA.
_SHIFT = 4
_ONE = 1 << _SHIFT

# Box / label colours by track id (RGB), a wrap-around palette as in supervision's ColorPalette.
TRACK_COLORS = np.array(
    [
        (230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48),
        (145, 30, 180), (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212),
    ],
    dtype=np.uint8,
)
NO_TRACK_COLOR = (200, 200, 200)


@lru_cache(maxsize=None)
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Precomputed drawing tables.

    Returns point_colors (K, 3) int, point_fine (K,) bool, links (L, 2) int,
    link_colors (L, 3) int, link_fine (L,) bool.
    """
    table = keypoint_table()
    point_colors = np.array([k["color_rgb"] for k in table["keypoints"]], dtype=np.int64)
    groups = keypoint_groups()
    fine = np.zeros(len(point_colors), dtype=bool)
    for name in ("face", "left_hand", "right_hand"):
        fine[groups[name]] = True
    links = np.array([link["indices"] for link in table["skeleton_links"]], dtype=np.int64)
    link_colors = np.array([link["color_rgb"] for link in table["skeleton_links"]], dtype=np.int64)
    # A finger link has at least one hand point; wrist-to-finger links count as fine too.
    link_fine = fine[links[:, 0]] | fine[links[:, 1]]
    return point_colors, fine, links, link_colors, link_fine


@lru_cache(maxsize=None)
def _disk_offsets(radius: int) -> tuple[np.ndarray, np.ndarray]:
    """(dy, dx) int offsets of the pixels of a filled disk of `radius` px."""
    r = np.arange(-radius, radius + 1)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    inside = dy**2 + dx**2 <= radius**2 + radius  # +radius: rounder small disks
    return dy[inside], dx[inside]


def _stamp_disks(out: np.ndarray, xy: np.ndarray, colors: np.ndarray, radius: int) -> None:
    """Paint filled disks in place. xy: (n, 2) int px; colors: (n, 3) uint8."""
    if len(xy) == 0:
        return
    dy, dx = _disk_offsets(radius)
    ys = xy[:, 1:2] + dy  # (n, m) pixel rows of every disk
    xs = xy[:, 0:1] + dx
    values = np.broadcast_to(colors[:, None, :], ys.shape + (3,))
    h, w = out.shape[:2]
    if xy.min() >= radius and xy[:, 1].max() < h - radius and xy[:, 0].max() < w - radius:
        out[ys, xs] = values  # all inside: no clipping needed
        return
    inside = (ys >= 0) & (ys < h) & (xs >= 0) & (xs < w)
    out[ys[inside], xs[inside]] = values[inside]


def track_color(track_id: Optional[int]) -> tuple[int, int, int]:
    """RGB colour of a track id (wraps around the palette); grey for untracked persons."""
    if track_id is None:
        return NO_TRACK_COLOR
    return tuple(int(c) for c in TRACK_COLORS[track_id % len(TRACK_COLORS)])


class SkeletonAnnotator:
    """Draws people (boxes, ID labels, 308-keypoint skeletons) on an RGB image.

    Style is fixed at construction; `draw` never changes the `Person` data.

    score_threshold: keypoints with a score below it (and links touching them) are
                     hidden; default the official demo's `kpt_thr` (realtime.data.KEYPOINT_SCORE_THRESHOLD).
    scale:           multiplies every line width and radius (1.0 = automatic size).
    draw_fine:       draw face and hand points and finger links.
    draw_boxes:      draw each person's box.
    draw_labels:     draw the "ID <track> <box score>" label above the box.
    """

    def __init__(
        self,
        score_threshold: float = KEYPOINT_SCORE_THRESHOLD,
        scale: float = 1.0,
        draw_fine: bool = True,
        draw_boxes: bool = True,
        draw_labels: bool = True,
    ) -> None:
        if scale <= 0:
            raise ValueError(f"scale must be > 0, got {scale}")
        self.score_threshold = float(score_threshold)
        self.scale = float(scale)
        self.draw_fine = draw_fine
        self.draw_boxes = draw_boxes
        self.draw_labels = draw_labels
        point_colors, self._point_fine, self._links, link_colors, self._link_fine = _tables()
        # cv2 wants plain tuples of Python ints; convert once.
        self._point_color = [tuple(int(v) for v in c) for c in point_colors]
        self._point_colors_u8 = point_colors.astype(np.uint8)
        # Links grouped by (fine, colour): one cv2.polylines call per group instead of one
        # cv2.line per link (65 Python calls per person would cost more than the drawing).
        self._link_groups = [
            (fine, tuple(int(v) for v in color), np.flatnonzero((self._link_fine == fine) & np.all(link_colors == color, axis=1)))
            for fine in (True, False)  # fine links first, body links drawn over them
            for color in np.unique(link_colors[self._link_fine == fine], axis=0)
        ]

    def sizes(self, image_hw: tuple[int, int], box_height: float) -> dict[str, int]:
        """Line widths and radii in pixels for an image of (H, W) and a person box height (px)."""
        unit = min(image_hw) / 720.0 * self.scale  # 1.5 at 1080p, 0.67 at 480p, 3 at 4K
        cap = max(box_height, 1.0) if np.isfinite(box_height) else float(min(image_hw))
        return {
            "link": max(1, min(round(3 * unit), round(cap / 40))),
            "point": max(2, min(round(3 * unit), round(cap / 30))),
            "fine_link": max(1, min(round(1 * unit), round(cap / 150))),
            "fine_point": max(1, min(round(1 * unit), round(cap / 150))),
            "box": max(1, round(1.3 * unit)),
        }

    def draw(self, image: np.ndarray, people: Sequence[Person], inplace: bool = False) -> np.ndarray:
        """Draw `people` on `image` ((H, W, 3) uint8 RGB); returns the drawn image.

        Uses each person's `best_keypoints` (K, 2) px, `keypoint_scores` (K,) (all shown
        when None), `box` (4,) xyxy px and `track_id`. A copy is drawn on unless `inplace`.
        """
        if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            raise ValueError(f"image must be (H, W, 3) uint8 RGB, got {image.shape} {image.dtype}")
        out = image if inplace else image.copy()
        if out.strides[1:] != (3, 1):
            raise ValueError("image rows must be contiguous RGB pixels to draw in place")
        for person in people:
            box = np.asarray(person.box, dtype=np.float64)
            size = self.sizes(out.shape[:2], box[3] - box[1])
            color = track_color(person.track_id)
            if self.draw_boxes and np.all(np.isfinite(box)):
                self._draw_box(out, box, color, size["box"])
            if person.best_keypoints is not None:
                self._draw_keypoints(out, person, size)
            if self.draw_labels and np.all(np.isfinite(box)):
                self._draw_label(out, box, person, color, size["box"])
        return out

    def _visible(self, person: Person) -> tuple[np.ndarray, np.ndarray]:
        """Fixed-point (K, 2) int coordinates and (K,) bool visibility of one person."""
        xy = np.asarray(person.best_keypoints, dtype=np.float64)
        visible = np.all(np.isfinite(xy), axis=1)
        if person.keypoint_scores is not None:
            visible &= np.asarray(person.keypoint_scores) >= self.score_threshold
        if not self.draw_fine:
            visible &= ~self._point_fine
        fixed = np.zeros(xy.shape, dtype=np.int32)
        fixed[visible] = np.round(xy[visible] * _ONE).astype(np.int32)
        return fixed, visible

    def _draw_keypoints(self, out: np.ndarray, person: Person, size: dict[str, int]) -> None:
        fixed, visible = self._visible(person)
        pts = fixed.tolist()
        shown = visible[self._links[:, 0]] & visible[self._links[:, 1]]
        # Fine links first, body links over them, then fine points and body points on top.
        for fine, color, links in self._link_groups:
            links = links[shown[links]]
            if links.size:
                width = size["fine_link"] if fine else size["link"]
                line_type = cv2.LINE_8 if fine else cv2.LINE_AA  # thin finger links need no AA
                cv2.polylines(out, fixed[self._links[links]], False, color, width, line_type, _SHIFT)
        fine = visible & self._point_fine
        # ~280 tiny points per person: stamping them with numpy beats one cv2.circle call each.
        _stamp_disks(out, (fixed[fine] + _ONE // 2) >> _SHIFT, self._point_colors_u8[fine], size["fine_point"])
        for k in np.flatnonzero(visible & ~self._point_fine):
            cv2.circle(out, pts[k], size["point"] * _ONE, self._point_color[k], -1, cv2.LINE_AA, _SHIFT)

    @staticmethod
    def _draw_box(out: np.ndarray, box: np.ndarray, color: tuple[int, int, int], width: int) -> None:
        x0, y0, x1, y1 = np.round(box).astype(np.int64).tolist()
        cv2.rectangle(out, (x0, y0), (x1, y1), color, width, cv2.LINE_8)  # axis-aligned: no AA needed

    @staticmethod
    def _draw_label(out: np.ndarray, box: np.ndarray, person: Person, color, width: int) -> None:
        text = f"ID {person.track_id}" if person.track_id is not None else "person"
        text += f" {person.box_score:.2f}"
        draw_text(out, text, (box[0], box[1]), background=color, foreground=(0, 0, 0), anchor="bottom")


def text_scale(image_hw: tuple[int, int]) -> float:
    """cv2 font scale that reads well on an image of (H, W) (0.5 at 720p)."""
    return max(0.35, min(image_hw) / 720.0 * 0.5)


def draw_text(
    out: np.ndarray,
    text: str,
    origin: tuple[float, float],
    background: Optional[tuple[int, int, int]] = (0, 0, 0),
    foreground: tuple[int, int, int] = (255, 255, 255),
    anchor: str = "top",
    font_scale: Optional[float] = None,
) -> tuple[int, int]:
    """Draw `text` in place on a filled background box; returns the box's (width, height) px.

    origin: (x, y) px of the box's left edge and its top (anchor="top") or bottom
    (anchor="bottom") edge; the box is moved inside the image when it would leave it.
    """
    h, w = out.shape[:2]
    scale = font_scale if font_scale is not None else text_scale((h, w))
    thickness = max(1, round(scale * 2))
    (tw, th), baseline = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, thickness)
    pad = max(2, round(th * 0.3))
    bw, bh = tw + 2 * pad, th + baseline + 2 * pad
    x = int(min(max(origin[0], 0), max(w - bw, 0)))
    y = int(origin[1]) - (bh if anchor == "bottom" else 0)
    y = int(min(max(y, 0), max(h - bh, 0)))
    if background is not None:
        cv2.rectangle(out, (x, y), (x + bw - 1, y + bh - 1), background, -1)
    cv2.putText(out, text, (x + pad, y + pad + th), cv2.FONT_HERSHEY_SIMPLEX, scale, foreground, thickness, cv2.LINE_AA)
    return bw, bh
