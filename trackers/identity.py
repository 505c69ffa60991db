"""Who is who across frames: stable integer IDs for the people of a video.

Each frame's people are matched to the known tracks with the Hungarian method
(`scipy.optimize.linear_sum_assignment`) on a similarity that mixes box IoU and
keypoint similarity (COCO OKS with the 308 Sapiens sigmas), both measured
against where each track is predicted to be now (constant velocity of the
box, in pixels per second, so dropped frames are handled by the timestamps).

Life of a track:
  * birth: a new detection starts a *tentative* track; it gets an ID after
    `confirm_hits` consecutive matches (false positives of a single frame never do);
  * coasting: a confirmed track that is not matched keeps being predicted for up
    to `max_misses` frames and can be matched again by overlap (short occlusions);
  * re-identification: a confirmed track missing since an earlier frame (coasting,
    or *lost* after `max_misses`) is remembered for `reid_seconds`; a person left
    unmatched by overlap who appears near where it vanished (or where it was
    heading), with a similar size, takes its ID back (someone walking out of view
    and back, or out from behind someone else);
  * death: unseen for longer than `reid_seconds`; its ID is never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import numpy as np
from scipy.optimize import linear_sum_assignment

from realtime.data import KEYPOINT_SCORE_THRESHOLD, keypoint_sigmas

TENTATIVE = -1  # id returned for detections whose track is not confirmed yet


@dataclass
class _Track:
    box: np.ndarray  # (4,) xyxy px at `last_seen`
    velocity: np.ndarray  # (4,) px/s of each box coordinate
    keypoints: Optional[np.ndarray]  # (K, 2) px at `last_seen`
    keypoint_scores: Optional[np.ndarray]  # (K,)
    last_seen: float  # s
    hits: int = 1
    misses: int = 0
    track_id: int = TENTATIVE

    @property
    def confirmed(self) -> bool:
        return self.track_id != TENTATIVE

    def predicted_box(self, timestamp: float) -> np.ndarray:
        return self.box + self.velocity * (timestamp - self.last_seen)

    def predicted_keypoints(self, timestamp: float) -> Optional[np.ndarray]:
        if self.keypoints is None:
            return None
        shift = (self.velocity[:2] + self.velocity[2:]) / 2 * (timestamp - self.last_seen)
        return self.keypoints + shift


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(A, 4) x (B, 4) xyxy -> (A, B) intersection over union."""
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area_a = np.prod(np.clip(a[:, 2:] - a[:, :2], 0, None), axis=1)
    area_b = np.prod(np.clip(b[:, 2:] - b[:, :2], 0, None), axis=1)
    union = area_a[:, None] + area_b[None] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-9), 0.0)


def keypoint_similarity(
    a: np.ndarray, a_visible: np.ndarray, b: np.ndarray, b_visible: np.ndarray, areas: np.ndarray, sigmas: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """COCO object keypoint similarity between every pose of `a` and of `b`.

    a: (A, K, 2) px, a_visible: (A, K) bool; b, b_visible likewise (B, ...);
    areas: (A,) px^2, the object scale of each `a` pose; sigmas: (K,).
    Returns (A, B) OKS in [0, 1] over keypoints visible in both, and (A, B) bool
    "at least one keypoint in common" (OKS is meaningless where False).
    """
    d2 = np.sum((a[:, None] - b[None]) ** 2, axis=-1)  # (A, B, K)
    variances = (2 * sigmas) ** 2
    e = d2 / variances / (2 * np.maximum(areas, 1.0)[:, None, None])
    both = a_visible[:, None] & b_visible[None]
    count = both.sum(axis=-1)
    oks = np.where(both, np.exp(-e), 0.0).sum(axis=-1) / np.maximum(count, 1)
    return oks, count > 0


class IdentityTracker:
    """Stable person IDs from per-frame boxes and keypoints (numpy in, numpy out).

    confirm_hits:       consecutive matches before a new track gets an ID.
    max_misses:         frames a confirmed track coasts (predicted) before it is lost.
    reid_seconds:       how long an unseen track is remembered (and can take its ID back).
    reid_distance:      re-identification gate: distance from where the track vanished
                        (or its predicted position), in units of its box height.
    reid_size_ratio:    re-identification gate: the box heights differ by at most this factor.
    iou_weight:         weight of box IoU against keypoint OKS in the similarity.
    min_similarity:     pairs below this similarity are never matched.
    min_keypoint_score: keypoints scoring at or below this are ignored.
    velocity_smoothing: weight of each new velocity measurement (box noise / dt is large).
    """

    def __init__(
        self,
        *,
        confirm_hits: int = 3,
        max_misses: int = 10,
        reid_seconds: float = 2.0,
        reid_distance: float = 1.0,
        reid_size_ratio: float = 1.33,
        iou_weight: float = 0.5,
        min_similarity: float = 0.2,
        min_keypoint_score: float = KEYPOINT_SCORE_THRESHOLD,
        velocity_smoothing: float = 0.2,
    ) -> None:
        if confirm_hits < 1 or max_misses < 0 or reid_seconds <= 0:
            raise ValueError("confirm_hits >= 1, max_misses >= 0 and reid_seconds > 0 are required")
        self.confirm_hits = confirm_hits
        self.max_misses = max_misses
        self.reid_seconds = reid_seconds
        self.reid_distance = reid_distance
        self.reid_size_ratio = reid_size_ratio
        self.iou_weight = iou_weight
        self.min_similarity = min_similarity
        self.min_keypoint_score = min_keypoint_score
        self.velocity_smoothing = velocity_smoothing
        self.reset()

    def reset(self) -> None:
        """Forget every track (IDs restart from 0)."""
        self._tracks: list[_Track] = []
        self._next_id = 0

    def update(
        self,
        boxes: np.ndarray,
        keypoints: Optional[np.ndarray],
        scores: Optional[np.ndarray],
        timestamp: float,
    ) -> np.ndarray:
        """Match one frame's people to the tracks.

        boxes: (N, 4) xyxy px; keypoints: (N, K, 2) px (NaN where unknown) or None
        (boxes only); scores: (N, K) keypoint confidences, or None (all trusted);
        timestamp: s, from the source, increasing (gaps from dropped frames are fine).
        Returns ids (N,) int64: the stable ID of each person, or -1 (`TENTATIVE`)
        while its track is not confirmed yet.
        """
        boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        n = len(boxes)
        if keypoints is not None:
            keypoints = np.asarray(keypoints, dtype=np.float64).reshape(n, -1, 2)
            if scores is None:
                scores = np.ones(keypoints.shape[:2])
            scores = np.nan_to_num(np.asarray(scores, dtype=np.float64).reshape(keypoints.shape[:2]))
            known = np.isfinite(keypoints).all(axis=-1)
            scores = np.where(known, scores, 0.0)  # unknown keypoints never count as visible
            keypoints = np.where(known[..., None], keypoints, 0.0)
        det_of_track: dict[int, int] = {}
        self._forget(timestamp)
        active = [i for i, t in enumerate(self._tracks) if t.misses <= self.max_misses]
        pairs = self._match(active, boxes, keypoints, scores, timestamp)
        det_of_track.update(pairs)
        # Confirmed tracks missing since an earlier frame (coasting or lost) may take a free person back.
        missing = [i for i, t in enumerate(self._tracks) if t.confirmed and t.misses > 0 and i not in det_of_track]
        free = [d for d in range(n) if d not in det_of_track.values()]
        det_of_track.update(self._reidentify(missing, free, boxes, timestamp))

        ids = np.full(n, TENTATIVE, dtype=np.int64)
        for ti, d in det_of_track.items():
            track = self._tracks[ti]
            self._observe(track, boxes[d], _row(keypoints, d), _row(scores, d), timestamp)
            ids[d] = track.track_id
        for ti, track in enumerate(self._tracks):
            if ti not in det_of_track:
                track.misses += 1
                track.hits = 0
        matched = set(det_of_track.values())
        for d in range(n):
            if d not in matched:
                self._tracks.append(_Track(boxes[d].copy(), np.zeros(4), _row(keypoints, d), _row(scores, d), timestamp))
                ids[d] = self._maybe_confirm(self._tracks[-1])
        self._forget(timestamp)
        return ids

    def _match(self, tracks: list[int], boxes, keypoints, scores, timestamp: float) -> dict[int, int]:
        """Hungarian matching of `tracks` (indices) to detections on IoU + OKS."""
        if not tracks or len(boxes) == 0:
            return {}
        predicted = np.stack([self._tracks[i].predicted_box(timestamp) for i in tracks])
        similarity = box_iou(predicted, boxes)
        if keypoints is not None and all(
            self._tracks[i].keypoints is not None and self._tracks[i].keypoints.shape == keypoints.shape[1:] for i in tracks
        ):
            track_kp = np.stack([self._tracks[i].predicted_keypoints(timestamp) for i in tracks])
            track_vis = np.stack([self._tracks[i].keypoint_scores for i in tracks]) > self.min_keypoint_score
            areas = np.prod(predicted[:, 2:] - predicted[:, :2], axis=1)
            oks, comparable = keypoint_similarity(
                track_kp, track_vis, keypoints, scores > self.min_keypoint_score, areas, _sigmas(keypoints.shape[1])
            )
            mixed = self.iou_weight * similarity + (1 - self.iou_weight) * oks
            similarity = np.where(comparable, mixed, similarity)
        rows, cols = linear_sum_assignment(-similarity)
        return {tracks[r]: int(c) for r, c in zip(rows, cols) if similarity[r, c] >= self.min_similarity}

    def _reidentify(self, lost: list[int], free: list[int], boxes, timestamp: float) -> dict[int, int]:
        """Give missing IDs back to new people near where they vanished (or were heading), of similar size."""
        lost = [i for i in lost if timestamp - self._tracks[i].last_seen <= self.reid_seconds]
        if not lost or not free:
            return {}
        cost = np.full((len(lost), len(free)), np.inf)
        for r, ti in enumerate(lost):
            track = self._tracks[ti]
            height = max(track.box[3] - track.box[1], 1.0)
            for c, d in enumerate(free):
                ratio = (boxes[d, 3] - boxes[d, 1]) / height
                if not 1 / self.reid_size_ratio <= ratio <= self.reid_size_ratio:
                    continue
                centre = (boxes[d, :2] + boxes[d, 2:]) / 2
                distance = min(
                    np.linalg.norm(centre - (box[:2] + box[2:]) / 2) for box in (track.box, track.predicted_box(timestamp))
                )
                if distance <= self.reid_distance * height:
                    cost[r, c] = distance / height
        finite = np.where(np.isfinite(cost), cost, 1e6)
        rows, cols = linear_sum_assignment(finite)
        return {lost[r]: free[c] for r, c in zip(rows, cols) if np.isfinite(cost[r, c])}

    def _observe(self, track: _Track, box, keypoints, scores, timestamp: float) -> None:
        dt = timestamp - track.last_seen
        if dt > 0 and track.misses <= self.max_misses:
            measured = (box - track.box) / dt
            a = self.velocity_smoothing  # box noise divided by dt is large: average it
            track.velocity = a * measured + (1 - a) * track.velocity
        elif track.misses > self.max_misses:
            track.velocity = np.zeros(4)  # re-identified after a gap: the old motion says nothing
        track.box, track.keypoints, track.keypoint_scores = box.copy(), keypoints, scores
        track.last_seen, track.misses = timestamp, 0
        track.hits += 1
        self._maybe_confirm(track)

    def _maybe_confirm(self, track: _Track) -> int:
        if not track.confirmed and track.hits >= self.confirm_hits:
            track.track_id = self._next_id
            self._next_id += 1
        return track.track_id

    def _forget(self, timestamp: float) -> None:
        """Tentative tracks die at their first miss, any track unseen for longer than `reid_seconds`."""
        self._tracks = [
            t for t in self._tracks if (t.confirmed or t.misses == 0) and timestamp - t.last_seen <= self.reid_seconds
        ]


def _row(array: Optional[np.ndarray], i: int) -> Optional[np.ndarray]:
    return None if array is None else array[i].copy()


@lru_cache(maxsize=4)
def _sigmas(k: int) -> np.ndarray:
    """The 308 Sapiens OKS sigmas; a uniform 0.05 for other keypoint counts."""
    table = keypoint_sigmas().astype(np.float64)
    return table if len(table) == k else np.full(k, 0.05)
