"""One Euro filter (Casiez, Roussel, Vogel, CHI 2012), vectorised over (persons, K, D).

    cutoff = min_cutoff + beta * |filtered speed| / size
    x_hat  = x_hat_prev + alpha(cutoff, dt) * (x - x_hat_prev)

Slow motion gets a low cutoff (little jitter), fast motion a high one (little
lag). As in MediaPipe's landmark smoother, the speed is divided by the person's
size (e.g. box height, px) before it sets the cutoff, so one `beta` works for
near and far people; `beta` is in Hz per (size / s). The speed is the norm of
the D-dimensional velocity, so the filter does not depend on image orientation.

Real timestamps drive `alpha`, so variable frame rates and dropped frames need
nothing special. The first valid sample of a keypoint passes through unchanged.
A keypoint without a valid measurement (NaN, or score below `min_score`) keeps
its last filtered value and is reported as predicted.

Rows: the state holds one row per person. `rows` says which state row each
input person uses (default 0..N-1), so a caller can keep long-lived rows for
track IDs and filter only the persons present in a frame.
"""

from __future__ import annotations

import warnings

import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from trackers.regions import per_keypoint, smoothness_factor

# Defaults at smoothness 0.5. min_cutoff in Hz, beta in Hz per (size / s),
# tuned on bench/smoothing.py for a jitter cut >= 3x at no more than the raw
# error: the body (wrists, elbows) needs the most speed response, the noisy
# hands the least.
ONE_EURO_DEFAULTS: dict[str, dict[str, float]] = {
    "body": {"min_cutoff": 0.5, "beta": 15.0},
    "foot": {"min_cutoff": 0.5, "beta": 12.0},
    "left_hand": {"min_cutoff": 0.5, "beta": 8.0},
    "right_hand": {"min_cutoff": 0.5, "beta": 8.0},
    "extra": {"min_cutoff": 0.5, "beta": 10.0},
    "face": {"min_cutoff": 0.5, "beta": 10.0},
}
D_CUTOFF_HZ = 1.0  # cutoff of the speed estimate, as in the paper


def one_euro_parameters(smoothness: float = 0.5, num_keypoints: int = 308) -> tuple[np.ndarray, np.ndarray]:
    """Per-keypoint (min_cutoff (K,) Hz, beta (K,)) for a smoothness in [0, 1].

    Smoothness scales min_cutoff over two decades (x10 at 0, x0.1 at 1) and beta
    over one decade, so 0 is barely filtered and 1 is heavily filtered.
    """
    cutoff_scale = smoothness_factor(smoothness, decades=2.0)
    beta_scale = smoothness_factor(smoothness, decades=1.0)
    min_cutoff = per_keypoint({r: p["min_cutoff"] for r, p in ONE_EURO_DEFAULTS.items()}, num_keypoints)
    beta = per_keypoint({r: p["beta"] for r, p in ONE_EURO_DEFAULTS.items()}, num_keypoints)
    return min_cutoff * cutoff_scale, beta * beta_scale


def smoothing_factor(cutoff_hz: np.ndarray, dt: np.ndarray) -> np.ndarray:
    """alpha = 1 / (1 + tau / dt) with tau = 1 / (2 pi cutoff), the paper's exponential smoothing factor."""
    tau = 1.0 / (2.0 * np.pi * cutoff_hz)
    return 1.0 / (1.0 + tau / dt)


class OneEuroFilter:
    """One Euro filters for many persons x K keypoints x D coordinates.

    min_cutoff: scalar or (K,) Hz, > 0.
    beta:       scalar or (K,) Hz per (size / s), >= 0.
    d_cutoff:   Hz, cutoff of the speed low-pass.
    min_score:  keypoints scored below this are not measured (held, reported predicted).
    """

    def __init__(
        self,
        min_cutoff: float | np.ndarray = 1.0,
        beta: float | np.ndarray = 8.0,
        d_cutoff: float = D_CUTOFF_HZ,
        min_score: float = KEYPOINT_SCORE_THRESHOLD,
    ) -> None:
        self.min_cutoff = np.asarray(min_cutoff, dtype=np.float64)
        self.beta = np.asarray(beta, dtype=np.float64)
        if np.any(self.min_cutoff <= 0) or d_cutoff <= 0 or np.any(self.beta < 0):
            raise ValueError("One Euro cutoffs must be > 0 and beta >= 0")
        self.d_cutoff = float(d_cutoff)
        self.min_score = float(min_score)
        self._x_hat = np.zeros((0, 0, 0))  # (rows, K, D) last filtered position
        self._dx_hat = np.zeros((0, 0, 0))  # (rows, K, D) last filtered velocity, units/s
        self._t_prev = np.zeros((0, 0))  # (rows, K) time of the last measurement, NaN = never

    @property
    def num_rows(self) -> int:
        return self._t_prev.shape[0]

    def reset(self, rows: np.ndarray | None = None) -> None:
        """Forget the state of `rows` (all rows when None); their next sample passes through."""
        if rows is None:
            self._t_prev[:] = np.nan
        else:
            self._t_prev[np.asarray(rows)] = np.nan

    def _ensure_rows(self, num_rows: int, num_keypoints: int, dim: int) -> None:
        if self._x_hat.shape[1:] not in ((0, 0), (num_keypoints, dim)):
            raise ValueError(f"filter holds (K, D) = {self._x_hat.shape[1:]}, got ({num_keypoints}, {dim})")
        grow = num_rows - self.num_rows
        if grow > 0:
            self._x_hat = np.concatenate([self._x_hat.reshape(-1, num_keypoints, dim), np.zeros((grow, num_keypoints, dim))])
            self._dx_hat = np.concatenate([self._dx_hat.reshape(-1, num_keypoints, dim), np.zeros((grow, num_keypoints, dim))])
            self._t_prev = np.concatenate([self._t_prev.reshape(-1, num_keypoints), np.full((grow, num_keypoints), np.nan)])

    def __call__(
        self,
        t: float | np.ndarray,
        x: np.ndarray,
        sizes: np.ndarray | None = None,
        scores: np.ndarray | None = None,
        rows: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Filter one frame.

        t:      seconds, scalar or (N,) per person.
        x:      (N, K, D) positions (px or metres); NaN = not measured.
        sizes:  (N,) person size in the units of x (box height); None, 0 or NaN =
                the height of the person's measured keypoints.
        scores: (N, K) keypoint scores; None = all valid.
        rows:   (N,) state row of each person; None = 0..N-1.
        Returns (filtered (N, K, D) float64, predicted (N, K) bool). A keypoint
        never measured yet and unmeasured now is returned as given (maybe NaN).
        """
        x = np.asarray(x, dtype=np.float64)
        n, k, d = x.shape
        rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
        self._ensure_rows(int(rows.max()) + 1 if n else 0, k, d)
        t_now = np.broadcast_to(np.asarray(t, dtype=np.float64), (n,))[:, None]  # (N, 1)
        size = _person_scale(x, sizes)[:, None]

        valid = np.isfinite(x).all(axis=-1)
        if scores is not None:
            valid &= np.asarray(scores) >= self.min_score
        x_hat, dx_hat, t_prev = self._x_hat[rows], self._dx_hat[rows], self._t_prev[rows]
        started = np.isfinite(t_prev)
        step = valid & started
        first = valid & ~started

        # Time since this keypoint's last measurement; a non-increasing clock counts as 1 us.
        dt = np.maximum(np.where(step, t_now - np.where(started, t_prev, 0.0), 1.0), 1e-6)[..., None]
        dx = np.where(step[..., None], (np.where(valid[..., None], x, 0.0) - x_hat) / dt, 0.0)
        a_d = smoothing_factor(np.float64(self.d_cutoff), dt)
        dx_new = dx_hat + a_d * (dx - dx_hat)
        speed = np.linalg.norm(dx_new, axis=-1) / size  # sizes per second
        cutoff = self.min_cutoff + self.beta * speed  # (N, K) Hz
        a = smoothing_factor(cutoff, dt[..., 0])[..., None]
        x_new = x_hat + a * (np.where(valid[..., None], x, 0.0) - x_hat)

        # Measured: filtered. Not measured: held. Never measured before: passed through as given.
        out = np.where(~started[..., None], x, np.where(step[..., None], x_new, x_hat))
        self._x_hat[rows] = np.where(valid[..., None], out, x_hat)
        self._dx_hat[rows] = np.where(step[..., None], dx_new, np.where(first[..., None], 0.0, dx_hat))
        self._t_prev[rows] = np.where(valid, t_now, t_prev)
        return out, ~valid


def _person_scale(x: np.ndarray, sizes: np.ndarray | None) -> np.ndarray:
    """(N,) sizes; a missing, zero or NaN size falls back to the height (y extent) of the person's keypoints, then to 1."""
    n = x.shape[0]
    size = np.full(n, np.nan) if sizes is None else np.asarray(sizes, dtype=np.float64).reshape(n)
    bad = ~(np.isfinite(size) & (size > 0))
    if bad.any():
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN persons
            extent = np.nanmax(x[..., 1], axis=1) - np.nanmin(x[..., 1], axis=1)
        size = np.where(bad, np.where(np.isfinite(extent) & (extent > 0), extent, 1.0), size)
    return size
