"""Kalman filtering of keypoints: constant velocity (or acceleration) per keypoint.

Every keypoint coordinate is a 1-D kinematic state [p, p', (p'')] with
filterpy's discretised continuous white-noise model: F(dt) is the Taylor
transition and Q(dt) is `filterpy.common.Q_continuous_white_noise` times the
spectral density q. The x and y (and z) coordinates of a keypoint share F, Q,
H and R, so they share one covariance P: the state is x (..., K, D, dim) and
P (..., K, dim, dim).

The equations are filterpy's (`filterpy.kalman.predict`, `update` with the
Joseph form, `rts_smoother`), written with batched matmuls so one call filters
all persons x 308 keypoints; tests/test_trackers_filters.py and
tests/test_trackers_offline.py check them against filterpy's KalmanFilter and
rts_smoother to 1e-9.

Units: the estimate depends only on the ratios of Q, R and P0, so R is relative
(1 / score^2, a score-1 measurement has variance 1) and q is set from a cutoff
frequency: the steady-state smoother passes 1 / (1 + (f / cutoff)^(2 dim)) with
q = dt_ref * (2 pi cutoff)^(2 dim) for a unit-variance measurement every
dt_ref seconds. The filter is therefore the same for pixels and metres, near
and far people.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from trackers.regions import per_keypoint, smoothness_factor

# Cutoffs (Hz) at smoothness 0.5, tuned on bench/smoothing.py for a jitter cut
# >= 3x at an error below the raw one: the face moves least for its noise, so it
# gets less bandwidth.
KALMAN_CUTOFF_HZ: dict[str, float] = {
    "body": 2.5,
    "foot": 2.5,
    "left_hand": 2.5,
    "right_hand": 2.5,
    "extra": 2.5,
    "face": 2.0,
}
DT_REF = 1.0 / 30.0  # the frame interval the cutoffs refer to, s
VELOCITY_PRIOR = 1e4  # initial velocity variance, in units of R / DT_REF^2: effectively unknown
MIN_SCORE_FOR_R = 0.05  # scores are clipped here before R = 1 / score^2


def kalman_cutoffs(smoothness: float = 0.5, num_keypoints: int = 308) -> np.ndarray:
    """(K,) cutoff frequencies in Hz; smoothness scales them over one decade (x3.2 at 0, x0.32 at 1)."""
    values = per_keypoint(KALMAN_CUTOFF_HZ, num_keypoints)
    return values * smoothness_factor(smoothness, decades=1.0)


def spectral_density(cutoff_hz: np.ndarray | float, dim: int, dt_ref: float = DT_REF) -> np.ndarray:
    """Process noise spectral density q for a unit-variance measurement every dt_ref s."""
    return dt_ref * (2.0 * np.pi * np.asarray(cutoff_hz, dtype=np.float64)) ** (2 * dim)


@lru_cache(maxsize=None)
def _taylor_table(dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients 1/(j-i)!, powers j-i) of the upper-triangular transition, zero below the diagonal."""
    i, j = np.indices((dim, dim))
    power = np.clip(j - i, 0, None)
    coeff = np.vectorize(lambda p: 1.0 / math.factorial(p))(power) * (j >= i)
    return coeff, power


@lru_cache(maxsize=None)
def _unit_process_noise(dim: int) -> np.ndarray:
    # imported here: filterpy loads scipy.stats (0.3 s), which a run whose smoother is not Kalman never needs
    from filterpy.common import Q_continuous_white_noise

    return Q_continuous_white_noise(dim, dt=1.0, spectral_density=1.0)


def transition(dt: np.ndarray, dim: int) -> np.ndarray:
    """F(dt): (..., dim, dim) kinematic transition, F[i, j] = dt^(j-i) / (j-i)! for j >= i."""
    coeff, power = _taylor_table(dim)
    return coeff * np.asarray(dt, dtype=np.float64)[..., None, None] ** power


def process_noise(dt: np.ndarray, dim: int) -> np.ndarray:
    """Q(dt) for spectral density 1: (..., dim, dim), filterpy's Q_continuous_white_noise(dim, dt).

    Q(dt) = dt * S Q(1) S with S = diag(dt^(dim-1), ..., dt, 1), which makes
    filterpy's table exact for any array of dt.
    """
    dt = np.asarray(dt, dtype=np.float64)[..., None]
    scale = dt ** np.arange(dim - 1, -1, -1)  # (..., dim)
    return dt[..., None] * scale[..., :, None] * _unit_process_noise(dim) * scale[..., None, :]


def initial_covariance(r: np.ndarray, dim: int, dt_ref: float = DT_REF) -> np.ndarray:
    """P0 (..., dim, dim) after a first measurement of variance r: position known to r, derivatives unknown."""
    r = np.asarray(r, dtype=np.float64)
    diag = [r] + [r * VELOCITY_PRIOR ** order / dt_ref ** (2 * order) for order in range(1, dim)]
    return np.stack(diag, axis=-1)[..., None, :] * np.eye(dim)


def initial_state(z: np.ndarray, dim: int) -> np.ndarray:
    """x0 (..., D, dim): position z, zero derivatives."""
    x = np.zeros(z.shape + (dim,))
    x[..., 0] = z
    return x


def predict(x: np.ndarray, P: np.ndarray, F: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched filterpy `predict`. x (..., D, dim), P (..., dim, dim), F (..., dim, dim) broadcastable, Q like P."""
    x = np.einsum("...ij,...dj->...di", F, x)  # x = Fx
    P = F @ P @ np.swapaxes(F, -1, -2) + Q  # P = FPF' + Q
    return x, P


def update(x: np.ndarray, P: np.ndarray, z: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Batched filterpy `update` with H = [1, 0, ...] and the Joseph form.

    x (..., D, dim), P (..., dim, dim), z (..., D) measured positions, r (...) variances.
    """
    y = z - x[..., 0]  # y = z - Hx
    S = P[..., 0, 0] + r  # S = HPH' + R
    K = P[..., :, 0] / S[..., None]  # K = PH'inv(S), (..., dim)
    x = x + y[..., None] * K[..., None, :]  # x = x + Ky
    # Joseph form P = (I-KH)P(I-KH)' + KRK', expanded for H = e0 (no small matmuls):
    # P - K P[0,:] - P[:,0] K' + (P[0,0] + R) K K'
    Kc, Kr = K[..., :, None], K[..., None, :]
    P = P - Kc * P[..., None, 0, :] - P[..., :, 0, None] * Kr + S[..., None, None] * Kc * Kr
    return x, P


def measurement_variance(scores: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """R = 1 / score^2 (relative): a score-0.5 point counts a quarter of a score-1 point."""
    if scores is None:
        return np.ones(shape)
    s = np.clip(np.asarray(scores, dtype=np.float64), MIN_SCORE_FOR_R, 1.0)
    return 1.0 / s**2


class KalmanFilter:
    """Causal Kalman filters for many persons x K keypoints x D coordinates.

    cutoff_hz:      scalar or (K,) bandwidth of each keypoint's filter.
    order:          "velocity" (constant velocity) or "acceleration" (constant acceleration).
    min_score:      keypoints scored below this are predicted, not updated, and reported predicted.
    max_coast_seconds: after this long without a measurement a keypoint stops
                    extrapolating and holds its position (velocity set to 0).
    Rows work as in `OneEuroFilter`: `rows` maps input persons to state rows.
    """

    def __init__(
        self,
        cutoff_hz: float | np.ndarray = 3.0,
        order: str = "velocity",
        min_score: float = KEYPOINT_SCORE_THRESHOLD,
        max_coast_seconds: float = 0.25,
    ) -> None:
        if order not in ("velocity", "acceleration"):
            raise ValueError(f"order must be 'velocity' or 'acceleration', got {order!r}")
        self.dim = 2 if order == "velocity" else 3
        self.q = spectral_density(cutoff_hz, self.dim)  # scalar or (K,)
        self.min_score = float(min_score)
        self.max_coast_seconds = float(max_coast_seconds)
        self._x = np.zeros((0, 0, 0, self.dim))  # (rows, K, D, dim)
        self._P = np.zeros((0, 0, self.dim, self.dim))  # (rows, K, dim, dim)
        self._t_prev = np.zeros(0)  # (rows,) time of the last call, NaN = never
        self._t_meas = np.zeros((0, 0))  # (rows, K) time of the last update, NaN = never measured

    @property
    def num_rows(self) -> int:
        return self._t_prev.shape[0]

    def reset(self, rows: np.ndarray | None = None) -> None:
        """Forget the state of `rows` (all rows when None)."""
        sel = slice(None) if rows is None else np.asarray(rows)
        self._t_prev[sel] = np.nan
        self._t_meas[sel] = np.nan

    def _ensure_rows(self, num_rows: int, num_keypoints: int, dim: int) -> None:
        if self._x.shape[1:3] not in ((0, 0), (num_keypoints, dim)):
            raise ValueError(f"filter holds (K, D) = {self._x.shape[1:3]}, got ({num_keypoints}, {dim})")
        grow = num_rows - self.num_rows
        if grow > 0:
            d = self.dim
            self._x = np.concatenate([self._x.reshape(-1, num_keypoints, dim, d), np.zeros((grow, num_keypoints, dim, d))])
            self._P = np.concatenate([self._P.reshape(-1, num_keypoints, d, d), np.zeros((grow, num_keypoints, d, d))])
            self._t_prev = np.concatenate([self._t_prev, np.full(grow, np.nan)])
            self._t_meas = np.concatenate([self._t_meas.reshape(-1, num_keypoints), np.full((grow, num_keypoints), np.nan)])

    def __call__(
        self,
        t: float | np.ndarray,
        z: np.ndarray,
        sizes: np.ndarray | None = None,
        scores: np.ndarray | None = None,
        rows: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Predict every keypoint to time t, then update the measured ones.

        t:      seconds, scalar or (N,).
        z:      (N, K, D) measured positions; NaN = not measured.
        sizes:  unused (the noise model is in the units of z); taken so that every live
                filter is called alike (`OneEuroFilter` scales its speed by it).
        scores: (N, K); R = 1 / score^2; below min_score = not measured.
        rows:   (N,) state row of each person; None = 0..N-1.
        Returns (filtered positions (N, K, D) float64, predicted (N, K) bool).
        A keypoint never measured yet and unmeasured now is returned as given.
        """
        z = np.asarray(z, dtype=np.float64)
        n, k, d = z.shape
        rows = np.arange(n) if rows is None else np.asarray(rows, dtype=np.int64)
        self._ensure_rows(int(rows.max()) + 1 if n else 0, k, d)
        t_now = np.broadcast_to(np.asarray(t, dtype=np.float64), (n,))
        valid = np.isfinite(z).all(axis=-1)
        if scores is not None:
            valid &= np.asarray(scores) >= self.min_score
        r = measurement_variance(scores, (n, k))

        x, P, t_meas = self._x[rows], self._P[rows], self._t_meas[rows]
        started = np.isfinite(t_meas)  # (N, K)
        dt = t_now - self._t_prev[rows]  # (N,)
        dt = np.where(dt > 0, dt, 0.0)  # first call (NaN) or a clock that did not advance: no motion
        F = transition(dt, self.dim)[:, None]  # (N, 1, dim, dim)
        Q = process_noise(dt, self.dim)[:, None] * np.reshape(self.q, (-1, 1, 1))  # (N, K, dim, dim)
        x, P = predict(x, P, F, Q)

        # Coasting too long: stop extrapolating, keep the position.
        coasting = started & ~valid & (t_now[:, None] - np.where(started, t_meas, np.inf) > self.max_coast_seconds)
        if coasting.any():
            x[..., 1:] = np.where(coasting[..., None, None], 0.0, x[..., 1:])

        z_safe = np.where(valid[..., None], z, 0.0)
        x_upd, P_upd = update(x, P, z_safe, r)
        step = valid & started
        if step.all():
            x, P = x_upd, P_upd
        else:
            x = np.where(step[..., None, None], x_upd, x)
            P = np.where(step[..., None, None], P_upd, P)
        first = valid & ~started
        if first.any():
            x = np.where(first[..., None, None], initial_state(z_safe, self.dim), x)
            P = np.where(first[..., None, None], initial_covariance(r, self.dim), P)

        self._x[rows], self._P[rows] = x, P
        self._t_prev[rows] = t_now
        self._t_meas[rows] = np.where(valid, t_now[:, None], t_meas)
        out = np.where((started | valid)[..., None], x[..., 0], z)
        return out, ~valid
