"""Offline (zero-phase) smoothing of one person's whole keypoint track.

When the whole file is known, the past and the future both inform each frame,
so these smoothers remove more jitter than the live filters and add no lag:

- "rts": Kalman filter forward, Rauch-Tung-Striebel smoother backward
  (filterpy's equations, batched over keypoints; see `trackers.kalman`).
  Handles variable dt natively and weights each sample by its score.
- "savgol": Savitzky-Golay polynomial smoothing (`scipy.signal.savgol_filter`).
- "butterworth": low-pass Butterworth run forward and backward
  (`scipy.signal.butter` + `filtfilt`), zero phase.

Gaps: a keypoint not measured (NaN, or score below `min_score`) for up to
`max_gap_seconds` is bridged (RTS: by the smoother's own prediction; the
others: linear interpolation before filtering). Longer gaps split the track
into independent segments and stay NaN, as does everything before a keypoint's
first and after its last measurement: nothing is invented beyond the limit.

Variable frame rate: savgol and butterworth need a uniform grid, so each
segment is resampled (linearly) to the track's median frame interval,
filtered, and read back at the original timestamps; with a constant frame
rate the grid is the frames themselves.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import butter, filtfilt, savgol_filter

from realtime.data import KEYPOINT_SCORE_THRESHOLD
from realtime.errors import UserError
from trackers.kalman import (
    initial_covariance,
    initial_state,
    measurement_variance,
    predict,
    process_noise,
    spectral_density,
    transition,
    update,
)

OFFLINE_METHODS = ("rts", "savgol", "butterworth")
# Defaults tuned on bench/smoothing.py (30 and 60 fps, pixel noise of 1.5-3.5 px at 400 px height).
RTS_CUTOFF_HZ = 4.0
SAVGOL_WINDOW_SECONDS = 0.3
SAVGOL_POLYORDER = 2
BUTTERWORTH_CUTOFF_HZ = 4.0
BUTTERWORTH_ORDER = 4
_TIME_EPS = 1e-9  # a gap of exactly max_gap_seconds is bridged despite float rounding
_RTS_CHUNK_ELEMENTS = 4_000_000  # T x keypoints x dim^2 per batch: four 32 MB work arrays


def smooth_track(
    t: np.ndarray,
    keypoints: np.ndarray,
    scores: np.ndarray | None = None,
    method: str = "rts",
    *,
    max_gap_seconds: float = 0.5,
    min_score: float = KEYPOINT_SCORE_THRESHOLD,
    **options,
) -> np.ndarray:
    """Smooth one person's track with a zero-phase method.

    t:         (T,) seconds, increasing.
    keypoints: (T, K, D) with D = 2 (px) or 3 (metres); rows of frames where the
               person is absent are NaN.
    scores:    (T, K) keypoint scores, or None (all measured points valid).
    method:    "rts" (options: cutoff_hz=4.0, order="velocity"|"acceleration"),
               "savgol" (window_seconds=0.3, polyorder=2),
               "butterworth" (cutoff_hz=4.0, order=4).
    Returns (T, K, D) float64, NaN where nothing was measured within max_gap_seconds.
    """
    t = np.asarray(t, dtype=np.float64)
    z = np.asarray(keypoints, dtype=np.float64)
    if z.ndim != 3 or z.shape[0] != t.shape[0] or z.shape[2] not in (2, 3):
        raise ValueError(f"expected t (T,) and keypoints (T, K, 2|3), got {t.shape} and {z.shape}")
    if scores is not None and np.shape(scores) != z.shape[:2]:
        raise ValueError(f"scores must be (T, K) = {z.shape[:2]}, got {np.shape(scores)}")
    if np.any(np.diff(t) <= 0):
        raise UserError("track timestamps must be strictly increasing; sort the frames by time and drop duplicates.")
    if method not in OFFLINE_METHODS:
        raise UserError(f"unknown offline smoothing method {method!r}; use one of {', '.join(OFFLINE_METHODS)}.")
    valid = np.isfinite(z).all(axis=-1)
    if scores is not None:
        valid &= np.asarray(scores) >= min_score
    if t.size < 2:  # nothing to smooth over
        return np.where(valid[..., None], z, np.nan)
    covered = covered_frames(t, valid, max_gap_seconds)
    if method == "rts":
        out = _rts(t, z, scores, valid, max_gap_seconds, **options)
    else:
        out = _uniform_grid_filter(t, z, valid, max_gap_seconds, method, **options)
    out[~covered] = np.nan
    return out


def covered_frames(t: np.ndarray, valid: np.ndarray, max_gap_seconds: float) -> np.ndarray:
    """(T, K) bool: valid, or inside a gap no longer than max_gap_seconds between two valid samples."""
    n = t.shape[0]
    idx = np.arange(n)[:, None]
    prev = np.maximum.accumulate(np.where(valid, idx, -1), axis=0)  # last valid index <= i
    nxt = np.minimum.accumulate(np.where(valid, idx, n)[::-1], axis=0)[::-1]  # next valid index >= i
    inside = (prev >= 0) & (nxt < n)
    span = t[np.clip(nxt, 0, n - 1)] - t[np.clip(prev, 0, n - 1)]
    return valid | (inside & (span <= max_gap_seconds + _TIME_EPS))


def _segment_starts(t: np.ndarray, valid: np.ndarray, max_gap_seconds: float) -> np.ndarray:
    """(T, K) bool: valid samples that start a segment (first, or after a gap > max_gap_seconds)."""
    n = t.shape[0]
    idx = np.arange(n)[:, None]
    prev = np.maximum.accumulate(np.where(valid, idx, -1), axis=0)
    prev_before = np.vstack([np.full((1, valid.shape[1]), -1), prev[:-1]])  # last valid index < i
    gap = t[:, None] - t[np.clip(prev_before, 0, None)]
    return valid & ((prev_before < 0) | (gap > max_gap_seconds + _TIME_EPS))


def _rts(
    t: np.ndarray,
    z: np.ndarray,
    scores: np.ndarray | None,
    valid: np.ndarray,
    max_gap_seconds: float,
    cutoff_hz: float = RTS_CUTOFF_HZ,
    order: str = "velocity",
) -> np.ndarray:
    if order not in ("velocity", "acceleration"):
        raise UserError(f"unknown RTS order {order!r}; use velocity or acceleration.")
    if not cutoff_hz > 0:
        raise UserError(f"cutoff_hz must be positive, got {cutoff_hz}; pass e.g. 4.")
    dim = 2 if order == "velocity" else 3
    T, K, _ = z.shape
    starts = _segment_starts(t, valid, max_gap_seconds)
    r = measurement_variance(scores, (T, K))
    chunk = max(1, _RTS_CHUNK_ELEMENTS // max(T * dim * dim, 1))
    out = np.empty_like(z)
    for k0 in range(0, K, chunk):
        sl = slice(k0, k0 + chunk)
        out[:, sl] = _rts_chunk(t, z[:, sl], r[:, sl], valid[:, sl], starts[:, sl], spectral_density(cutoff_hz, dim), dim)
    return out


def _rts_chunk(t, z, r, valid, starts, q, dim) -> np.ndarray:
    """Forward Kalman filter then backward RTS pass for keypoints (T, k, D); segments restart at `starts`."""
    T, k, D = z.shape
    x = np.zeros((k, D, dim))
    P = np.tile(np.eye(dim), (k, 1, 1))
    xs_prior, Ps_prior = np.empty((T, k, D, dim)), np.empty((T, k, dim, dim))
    xs, Ps = np.empty((T, k, D, dim)), np.empty((T, k, dim, dim))
    dts = np.diff(t, prepend=t[0])
    Fs = transition(dts, dim)  # Fs[i] maps step i-1 to step i
    z_safe = np.where(valid[..., None], z, 0.0)
    for i in range(T):
        if i > 0:
            x, P = predict(x, P, Fs[i], process_noise(dts[i], dim) * q)
        xs_prior[i], Ps_prior[i] = x, P
        x_upd, P_upd = update(x, P, z_safe[i], r[i])
        step = valid[i] & ~starts[i]
        x = np.where(step[:, None, None], x_upd, x)
        P = np.where(step[:, None, None], P_upd, P)
        x = np.where(starts[i][:, None, None], initial_state(z_safe[i], dim), x)
        P = np.where(starts[i][:, None, None], initial_covariance(r[i], dim), P)
        xs[i], Ps[i] = x, P

    # Backward pass, filterpy's rts_smoother: C = P F' inv(Pp); x += C (x_next - Fx); P += C (P_next - Pp) C'.
    # No gain across a segment start (independent segments) or before a keypoint's first sample.
    started = np.maximum.accumulate(starts, axis=0)
    for i in range(T - 2, -1, -1):
        link = started[i] & ~starts[i + 1]
        Pp = np.where(link[:, None, None], Ps_prior[i + 1], np.eye(dim))
        F = Fs[i + 1]
        C = np.swapaxes(np.linalg.solve(Pp, F @ Ps[i]), -1, -2)  # P F' inv(Pp), Pp and P symmetric
        C = np.where(link[:, None, None], C, 0.0)
        xs[i] = xs[i] + np.einsum("kij,kdj->kdi", C, xs[i + 1] - xs_prior[i + 1])
        Ps[i] = Ps[i] + C @ (Ps[i + 1] - Pp) @ np.swapaxes(C, -1, -2)
    return xs[..., 0]


def _uniform_grid_filter(
    t: np.ndarray, z: np.ndarray, valid: np.ndarray, max_gap_seconds: float, method: str, **options
) -> np.ndarray:
    steps = np.diff(t)
    dt = float(np.median(steps)) if steps.size else 1.0
    if method == "savgol":
        smooth = _savgol(dt, **options)
    else:
        smooth = _butterworth(dt, **options)
    out = np.full_like(z, np.nan)
    for k in range(z.shape[1]):
        idx = np.flatnonzero(valid[:, k])
        if idx.size == 0:
            continue
        breaks = np.flatnonzero(np.diff(t[idx]) > max_gap_seconds + _TIME_EPS) + 1
        for seg in np.split(idx, breaks):
            ts, zs = t[seg], z[seg, k]
            frames = slice(seg[0], seg[-1] + 1)
            grid = np.linspace(ts[0], ts[-1], int(round((ts[-1] - ts[0]) / dt)) + 1)  # spacing ~dt, exact ends
            on_grid = np.stack([np.interp(grid, ts, zs[:, d]) for d in range(z.shape[2])], axis=1)
            filtered = smooth(on_grid)
            out[frames, k] = np.stack([np.interp(t[frames], grid, filtered[:, d]) for d in range(z.shape[2])], axis=1)
    return out


def _savgol(dt: float, window_seconds: float = SAVGOL_WINDOW_SECONDS, polyorder: int = SAVGOL_POLYORDER):
    """A function smoothing (n, D) samples spaced dt apart with a Savitzky-Golay window of ~window_seconds."""
    window = max(int(round(window_seconds / dt)) | 1, polyorder + 2 | 1)  # odd, longer than the polynomial

    def smooth(y: np.ndarray) -> np.ndarray:
        n = y.shape[0]
        w = min(window, n if n % 2 else n - 1)  # short segment: the longest odd window that fits
        if w <= polyorder:
            return y  # too short to fit the polynomial: left as measured
        return savgol_filter(y, w, polyorder, axis=0)

    return smooth


def _butterworth(dt: float, cutoff_hz: float = BUTTERWORTH_CUTOFF_HZ, order: int = BUTTERWORTH_ORDER):
    """A function low-passing (n, D) samples spaced dt apart, forward and backward (zero phase)."""
    nyquist = 0.5 / dt
    if not 0 < cutoff_hz < nyquist:
        raise UserError(f"the Butterworth cutoff {cutoff_hz} Hz must be between 0 and half the frame rate "
                        f"({nyquist:.1f} Hz); lower it.")
    b, a = butter(order, cutoff_hz / nyquist)
    pad = 3 * max(len(a), len(b))  # filtfilt's default padding

    def smooth(y: np.ndarray) -> np.ndarray:
        if y.shape[0] < 2:
            return y
        return filtfilt(b, a, _odd_extend(y, pad), axis=0, padlen=0)[pad : pad + y.shape[0]]

    return smooth


def _odd_extend(y: np.ndarray, pad: int) -> np.ndarray:
    """y (n, D) with `pad` samples point-reflected about each end, as filtfilt pads.

    Segments shorter than the padding are reflected repeatedly, so a short
    segment still gets a full-length, trend-preserving extension (filtfilt's own
    padding must be shorter than the signal).
    """
    added = 0
    while added < pad:
        k = min(pad - added, y.shape[0] - 1)
        y = np.concatenate([2 * y[0] - y[k:0:-1], y, 2 * y[-1] - y[-2 : -k - 2 : -1]])
        added += k
    return y
