"""Live (causal) smoothing of every tracked person, one call per frame.

`LiveSmoother` keeps one filter state row per track ID. Rows of tracks unseen
for more than `max_gap_seconds` are freed and reused, so the state never grows
beyond the number of people seen at once; a track that returns after a longer
gap starts afresh (its first sample passes through).
"""

from __future__ import annotations

import logging

import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.errors import UserError
from trackers.kalman import KalmanFilter, kalman_cutoffs
from trackers.one_euro import OneEuroFilter, one_euro_parameters
from trackers.regions import check_smoothness

log = logging.getLogger(__name__)

LIVE_METHODS = ("one_euro", "kalman")


class LiveSmoother:
    """Causal keypoint smoothing per track ID.

    method:          "one_euro" (adaptive low-pass, no overshoot) or "kalman"
                     (constant velocity, score-weighted, predicts low-score points).
    smoothness:      0 (lightest) .. 1 (heaviest); 0.5 is the tuned default.
    min_score:       keypoints scored below this are not measured: the filter
                     predicts (Kalman) or holds (One Euro) them and flags them predicted.
    max_gap_seconds: a track unseen for longer is forgotten.
    num_keypoints:   K; per-region parameters need K = 308, other K use the body values.
    """

    def __init__(
        self,
        method: str = "one_euro",
        smoothness: float = 0.5,
        min_score: float = KEYPOINT_SCORE_THRESHOLD,
        max_gap_seconds: float = 1.0,
        num_keypoints: int = 308,
    ) -> None:
        if method not in LIVE_METHODS:
            raise UserError(f"unknown live smoothing method {method!r}; use one of {', '.join(LIVE_METHODS)}.")
        if not max_gap_seconds > 0:
            raise UserError(f"max_gap_seconds must be positive, got {max_gap_seconds}; pass e.g. 1.0.")
        smoothness = check_smoothness(smoothness)
        self.method = method
        self.max_gap_seconds = float(max_gap_seconds)
        self.num_keypoints = num_keypoints
        if method == "one_euro":
            min_cutoff, beta = one_euro_parameters(smoothness, num_keypoints)
            self.filter: OneEuroFilter | KalmanFilter = OneEuroFilter(min_cutoff, beta, min_score=min_score)
        else:
            self.filter = KalmanFilter(kalman_cutoffs(smoothness, num_keypoints), min_score=min_score)
        self._row_of: dict[int, int] = {}  # track ID -> state row
        self._last_seen: dict[int, float] = {}  # track ID -> timestamp, s
        self._free_rows: list[int] = []

    @property
    def track_ids(self) -> list[int]:
        """IDs that currently hold filter state."""
        return sorted(self._row_of)

    @property
    def num_rows(self) -> int:
        """Filter state rows allocated (live tracks + free rows)."""
        return self.filter.num_rows

    def reset(self) -> None:
        """Forget every track."""
        self.filter.reset()
        self._free_rows = sorted(set(self._free_rows) | set(self._row_of.values()))
        self._row_of.clear()
        self._last_seen.clear()

    def _forget(self, track_id: int) -> None:
        self._free_rows.append(self._row_of.pop(track_id))
        del self._last_seen[track_id]

    def _row_for(self, track_id: int) -> int:
        if track_id in self._row_of:
            return self._row_of[track_id]
        if self._free_rows:
            row = self._free_rows.pop()
            self.filter.reset([row])  # a reused row must not inherit the old track's state
        else:
            row = len(self._row_of)  # every existing row is in use: a new one (the filter grows)
        self._row_of[track_id] = row
        return row

    def update(
        self,
        timestamp: float,
        ids: np.ndarray,
        keypoints: np.ndarray,
        scores: np.ndarray,
        sizes: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Smooth one frame.

        timestamp: seconds (the frame's container time).
        ids:       (N,) int track IDs, unique within the frame.
        keypoints: (N, K, 2) px (or any units; D = 3 works too).
        scores:    (N, K) keypoint scores.
        sizes:     (N,) person size in the units of keypoints (box height).
        Returns (smoothed (N, K, D) float32, predicted (N, K) bool).
        """
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        keypoints = np.asarray(keypoints, dtype=np.float64)
        n = ids.shape[0]
        if keypoints.ndim != 3 or keypoints.shape[0] != n or np.shape(scores) != keypoints.shape[:2] or np.shape(sizes) != (n,):
            raise ValueError(
                f"expected ids (N,), keypoints (N, K, D), scores (N, K), sizes (N,); got {ids.shape}, "
                f"{keypoints.shape}, {np.shape(scores)}, {np.shape(sizes)}"
            )
        if keypoints.shape[1] != self.num_keypoints:
            raise ValueError(f"this smoother was built for K = {self.num_keypoints} keypoints, got {keypoints.shape[1]}")
        if len(set(ids.tolist())) != n:
            raise ValueError(f"track IDs must be unique within a frame, got {ids.tolist()}")
        t = float(timestamp)
        for track_id, seen in list(self._last_seen.items()):
            # Unseen too long, or the clock went backwards (a new source): start over.
            if t - seen > self.max_gap_seconds or t < seen:
                log.debug("dropping filter state of track %d (last seen %.3f s, now %.3f s)", track_id, seen, t)
                self._forget(track_id)
        if n == 0:
            return np.zeros((0,) + keypoints.shape[1:], np.float32), np.zeros((0, keypoints.shape[1]), bool)
        rows = np.array([self._row_for(i) for i in ids.tolist()], dtype=np.int64)
        smoothed, predicted = self.filter(t, keypoints, sizes=sizes, scores=scores, rows=rows)
        for i in ids.tolist():
            self._last_seen[i] = t
        return smoothed.astype(np.float32), predicted
