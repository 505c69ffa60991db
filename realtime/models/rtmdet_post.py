"""RTMDet person detector: letterbox pre-processing and box post-processing.

Pure functions, tensors in and out, following docs/numerics.md, "Letterbox",
"Candidate boxes" and "Person selection" (mmdet's test pipeline, `predict_by_feat` with `nms=None`, and
the Sapiens2 demo's person selection).
"""

from __future__ import annotations

import functools

import cv2
import numpy as np
import torch
import torch.nn.functional as F

INPUT_SIZE = 640
PAD_VALUE = 114
STRIDES = (8, 16, 32)
# BGR order: the network consumes BGR (mmdet's bgr_to_rgb is False).
MEAN_BGR = (103.53, 116.28, 123.675)
STD_BGR = (57.375, 57.12, 58.395)
SCORE_THR = 0.05  # test_cfg.score_thr
NMS_PRE = 1000  # test_cfg.nms_pre, per level
MAX_PER_IMG = 100  # test_cfg.max_per_img
DEMO_BBOX_THR = 0.3  # vis_pose.py --bbox-thr default
DEMO_NMS_THR = 0.3  # vis_pose.py --nms-thr default


def letterbox_size(height: int, width: int, size: int = INPUT_SIZE) -> tuple[int, int, float, float]:
    """(new_h, new_w, w_scale, h_scale) of mmcv's keep-ratio resize to `size`
    (long side to `size`, small images upscaled, per-axis actual ratios)."""
    scale = min(size / max(height, width), size / min(height, width))
    new_w, new_h = int(width * scale + 0.5), int(height * scale + 0.5)
    return new_h, new_w, new_w / width, new_h / height


def letterbox_cv2(image: np.ndarray, size: int = INPUT_SIZE) -> tuple[np.ndarray, float, float]:
    """Exact mmdet letterbox: cv2 INTER_LINEAR on uint8, pad bottom/right with 114.

    image: (H, W, 3) uint8. Returns ((size, size, 3) uint8, w_scale, h_scale).
    """
    new_h, new_w, w_scale, h_scale = letterbox_size(image.shape[0], image.shape[1], size)
    resized = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    padded = np.full((size, size, 3), PAD_VALUE, dtype=np.uint8)
    padded[:new_h, :new_w] = resized
    return padded, w_scale, h_scale


def letterbox_torch(image: torch.Tensor, size: int = INPUT_SIZE) -> tuple[torch.Tensor, float, float]:
    """The letterbox on the image's device (GPU runs): bilinear resize without
    antialiasing, rounded to whole grey levels; matches cv2 within +-1 level.

    image: (H, W, 3) uint8 tensor. Returns ((size, size, 3) float32 with integer
    values, w_scale, h_scale).
    """
    new_h, new_w, w_scale, h_scale = letterbox_size(image.shape[0], image.shape[1], size)
    chw = image.permute(2, 0, 1)[None].float()
    resized = F.interpolate(chw, size=(new_h, new_w), mode="bilinear", align_corners=False, antialias=False)
    resized = resized.round_().clamp_(0, 255)[0].permute(1, 2, 0)
    padded = torch.full((size, size, 3), float(PAD_VALUE), dtype=torch.float32, device=image.device)
    padded[:new_h, :new_w] = resized
    return padded, w_scale, h_scale


def normalize(padded: torch.Tensor, *, rgb: bool = False) -> torch.Tensor:
    """(S, S, 3) uint8/float letterboxed image -> (1, 3, S, S) float32 network input.

    rgb: the image is RGB; its channels are reversed here (cheaper than on the full frame).
    """
    x = padded.float()
    if rgb:
        x = x.flip(-1)
    mean, std = mean_std(x.device)
    return ((x - mean) / std).permute(2, 0, 1)[None].contiguous()


@functools.lru_cache(maxsize=8)
def mean_std(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Made once per device: a host -> device copy per frame would make the host wait."""
    return (torch.tensor(MEAN_BGR, dtype=torch.float32, device=device),
            torch.tensor(STD_BGR, dtype=torch.float32, device=device))


def candidates_from_outputs(
    cls_logits: list[torch.Tensor],
    dists: list[torch.Tensor],
    w_scale: float,
    h_scale: float,
    *,
    input_size: int = INPUT_SIZE,
    strides: tuple[int, ...] = STRIDES,
) -> tuple[torch.Tensor, torch.Tensor]:
    """All candidate boxes of one image (docs/numerics.md, "Candidate boxes", before the cut to 100), in float32.

    cls_logits: per level (1, 1, H, W) raw logits; dists: per level (1, 4, H, W)
    (left, top, right, bottom) pixels of the network input.
    Returns boxes (K, 4) xyxy original-image pixels and scores (K,), sorted by score.
    """
    boxes_per_level, scores_per_level = [], []
    for logit, dist, stride in zip(cls_logits, dists, strides):
        height, width = logit.shape[-2:]
        score = logit[0, 0].float().sigmoid().reshape(-1)
        dist = dist[0].float().permute(1, 2, 0).reshape(-1, 4)
        valid = torch.nonzero(score > SCORE_THR).reshape(-1)
        kept, order = score[valid].sort(descending=True)
        keep = valid[order[:NMS_PRE]]
        # Priors at offset 0: the top-left corner of each cell, row-major.
        xs = (keep % width).float() * stride
        ys = torch.div(keep, width, rounding_mode="floor").float() * stride
        d = dist[keep]
        box = torch.stack([xs - d[:, 0], ys - d[:, 1], xs + d[:, 2], ys + d[:, 3]], dim=1)
        boxes_per_level.append(box)
        scores_per_level.append(kept[:NMS_PRE])
    boxes = torch.cat(boxes_per_level).clamp_(0, input_size)  # clipped to the padded input
    scores = torch.cat(scores_per_level)
    # mmdet multiplies by reciprocals computed in double, then cast to float32.
    factors = torch.tensor([1 / w_scale, 1 / h_scale, 1 / w_scale, 1 / h_scale], dtype=torch.float32, device=boxes.device)
    boxes = boxes * factors
    valid = ((boxes[:, 2] - boxes[:, 0]) > 0) & ((boxes[:, 3] - boxes[:, 1]) > 0)
    boxes, scores = boxes[valid], scores[valid]
    scores, order = scores.sort(descending=True)
    return boxes[order], scores


def top_candidates(
    cls_logits: list[torch.Tensor],
    dists: list[torch.Tensor],
    w_scale: float,
    h_scale: float,
    *,
    input_size: int = INPUT_SIZE,
    strides: tuple[int, ...] = STRIDES,
) -> torch.Tensor:
    """`candidates_from_outputs(...)[:MAX_PER_IMG]` with shapes that do not depend on the
    data, so a GPU never has to tell the host how many candidates it found.

    Returns (k, 5) float32 rows (x1, y1, x2, y2, score), k = min(MAX_PER_IMG, all cells),
    sorted by score; rows that the reference drops (score <= SCORE_THR, empty box) have
    score -1. `keep_candidates` removes them on the host."""
    boxes_per_level, scores_per_level = [], []
    for logit, dist, stride in zip(cls_logits, dists, strides):
        width = logit.shape[-1]
        score = logit[0, 0].float().sigmoid().reshape(-1)
        dist = dist[0].float().permute(1, 2, 0).reshape(-1, 4)
        # topk of all cells then the threshold = the threshold then the top NMS_PRE
        kept, keep = score.topk(min(NMS_PRE, score.numel()))
        xs = (keep % width).float() * stride
        ys = torch.div(keep, width, rounding_mode="floor").float() * stride
        d = dist[keep]
        boxes_per_level.append(torch.stack([xs - d[:, 0], ys - d[:, 1], xs + d[:, 2], ys + d[:, 3]], dim=1))
        scores_per_level.append(kept)
    boxes = torch.cat(boxes_per_level).clamp_(0, input_size)
    scores = torch.cat(scores_per_level)
    # The reference's float32 reciprocals; a float32-exact Python scalar multiplies identically.
    fx, fy = float(np.float32(1 / w_scale)), float(np.float32(1 / h_scale))
    boxes = torch.stack((boxes[:, 0] * fx, boxes[:, 1] * fy, boxes[:, 2] * fx, boxes[:, 3] * fy), dim=1)
    valid = ((boxes[:, 2] - boxes[:, 0]) > 0) & ((boxes[:, 3] - boxes[:, 1]) > 0) & (scores > SCORE_THR)
    scores = torch.where(valid, scores, torch.full_like(scores, -1.0))
    scores, order = scores.topk(min(MAX_PER_IMG, scores.numel()))
    return torch.cat((boxes[order], scores[:, None]), dim=1)


def keep_candidates(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host side of `top_candidates`: (k, 5) rows -> boxes (M, 4) and scores (M,) float32,
    the reference's candidates (still sorted by score)."""
    rows = rows[rows[:, 4] > SCORE_THR]
    return np.ascontiguousarray(rows[:, :4], np.float32), np.ascontiguousarray(rows[:, 4], np.float32)


def demo_nms_np(boxes: np.ndarray, scores: np.ndarray, iou_thr: float = DEMO_NMS_THR) -> np.ndarray:
    """`demo_nms` on host arrays (float32 arithmetic, as on the device): kept indices (M,) int64."""
    boxes, scores = boxes.astype(np.float32), scores.astype(np.float32)
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    inter_w = np.clip(np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None]) + 1, 0, None)
    inter_h = np.clip(np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None]) + 1, 0, None)
    inter = inter_w * inter_h
    overlaps = inter / (areas[:, None] + areas[None] - inter) > iou_thr
    suppressed = np.zeros(len(scores), bool)
    keep = []
    for i in np.argsort(-scores, kind="stable"):
        if not suppressed[i]:
            keep.append(i)
            suppressed |= overlaps[i]
    return np.array(keep, np.int64)


def select_people_np(
    boxes: np.ndarray,
    scores: np.ndarray,
    image_hw: tuple[int, int],
    *,
    bbox_thr: float = DEMO_BBOX_THR,
    nms_thr: float = DEMO_NMS_THR,
) -> tuple[np.ndarray, np.ndarray]:
    """`select_people` on host arrays: boxes (M, 4) and scores (M,) float32, M >= 1."""
    passing = scores > bbox_thr
    boxes, scores = boxes[passing], scores[passing]
    if len(boxes) == 0:
        height, width = image_hw
        return np.array([[0.0, 0.0, width - 1.0, height - 1.0]], np.float32), np.zeros(1, np.float32)
    keep = demo_nms_np(boxes, scores, nms_thr)
    return boxes[keep].astype(np.float32), scores[keep].astype(np.float32)


def demo_nms(boxes: torch.Tensor, scores: torch.Tensor, iou_thr: float = DEMO_NMS_THR) -> torch.Tensor:
    """Greedy NMS of the Sapiens2 demo ("+1 pixel" areas, suppress IoU > thr).

    boxes (N, 4), scores (N,) float32. Returns kept indices (M,) int64, in the order kept.
    """
    boxes, scores = boxes.float(), scores.float()
    x1, y1, x2, y2 = boxes.unbind(1)
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    inter_w = (torch.minimum(x2[:, None], x2[None]) - torch.maximum(x1[:, None], x1[None]) + 1).clamp(min=0)
    inter_h = (torch.minimum(y2[:, None], y2[None]) - torch.maximum(y1[:, None], y1[None]) + 1).clamp(min=0)
    inter = inter_w * inter_h
    iou = inter / (areas[:, None] + areas[None] - inter)
    overlaps = (iou > iou_thr).cpu()
    suppressed = torch.zeros(len(scores), dtype=torch.bool)
    keep = []
    for i in scores.argsort(descending=True).tolist():
        if not suppressed[i]:
            keep.append(i)
            suppressed |= overlaps[i]
    return torch.tensor(keep, dtype=torch.int64)


def select_people(
    boxes: torch.Tensor,
    scores: torch.Tensor,
    image_hw: tuple[int, int],
    *,
    bbox_thr: float = DEMO_BBOX_THR,
    nms_thr: float = DEMO_NMS_THR,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The demo's person boxes: score > bbox_thr, then greedy NMS.

    Returns boxes (M, 4) and scores (M,) float32; M = 0 when nobody was found (the
    demo then takes the whole frame: `realtime.detect.BoxFinder` does that, and
    says so by the box source "frame").
    """
    passing = scores > bbox_thr
    boxes, scores = boxes[passing], scores[passing]
    if len(boxes) == 0:
        return boxes.reshape(0, 4).float(), scores.reshape(0).float()
    keep = demo_nms(boxes, scores, nms_thr).to(boxes.device)
    return boxes[keep], scores[keep]
