"""Foot contact learned from motion capture: a small temporal convolution per foot over a window of its motion.

What the model sees (`windows`): each frame's heel and toes (the mean of the big and small toe) heights above the
floor, their velocities in m/s (up, and along the floor across and along the line of sight: between depth frames
the lifted depth along it is carried over, so that part is the less trusted), the knee's and ankle's angles, the
other foot's heights and speed, and the hips' height and velocity; sampled on a fixed grid of `step` seconds (1/30 s)
by linear interpolation over the frames' timestamps, from `past` steps before the frame decided to up to `future`
steps after it, so 24, 30 and 60 fps give the model the same input. A grid point outside the frames known (before
the person's first frame, after the last one the decision may see) repeats the nearest one known, its velocities
0, and a mask channel says so. One model decides every foot (the left foot's window is the right's mirror).

The weights (`realtime/data/contact_model.npz`, < 20 kB) come from `bench/train_contacts.py` (its header names the
clips, the command and the data); its grid, window, feature normalisation and decision thresholds travel with them.
`ContactNet` runs it in numpy. One person's recent frames, each foot decided with
hysteresis in probability: `realtime.rig.learned_contacts` (the live path, and offline hindsight); this module's
`frame_sample`, `windows` and `ContactNet.probabilities` are the reference it is tested against and what training
(`bench/train_contacts.py`) reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from realtime.rig.floor import Floor
from realtime.rig.leg_ik import SIDES

WEIGHTS = "contact_model.npz"  # in realtime/data
FEATURES = ("heel_height", "toes_height", "heel_up_speed", "heel_across_speed", "heel_along_speed", "toes_up_speed",
            "toes_across_speed", "toes_along_speed", "knee_angle", "ankle_angle", "other_heel_height",
            "other_toes_height", "other_heel_across_speed", "hips_height", "hips_up_speed", "hips_across_speed",
            "hips_along_speed", "known")
# Each frame's raw sample, per person: per side (left, right) the heel's and toes' positions (camera metres) and
# heights above the floor (m), the knee and ankle angles (rad); the hips' position and height; the floor's up; the
# camera's centre (the line of sight's origin) in the points' frame.
_SIDE = 10  # heel xyz, toes xyz, heel height, toes height, knee angle, ankle angle
_HIPS, _UP, _CAMERA = 2 * _SIDE, 2 * _SIDE + 4, 2 * _SIDE + 7
RAW = 2 * _SIDE + 10
FARTHEST = 1000.0  # m: a point farther from the camera (or the world's origin) is taken as unknown


@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity, for `learned_contacts`' cache of its live form
class ContactNet:
    """The contact model: two 1-D convolutions (kernel 3, the second dilated by 2) with ReLU, then a linear read-out
    of every remaining time step, over `windows`' (N, C, W) features, normalised by the training data's mean and
    spread. `step`, `past`, `future`: the input grid (s) and its steps before and after the frame decided; `on`,
    `off`: the hysteresis in probability. `header`: what `bench/train_contacts.py` wrote of its making."""

    w1: np.ndarray  # (H1, C, 3)
    b1: np.ndarray
    w2: np.ndarray  # (H2, H1, 3), dilation 2
    b2: np.ndarray
    w3: np.ndarray  # (H2 * (W - 6),)
    b3: float
    mean: np.ndarray  # (C,)
    scale: np.ndarray  # (C,)
    step: float
    past: int
    future: int
    on: float
    off: float
    header: dict

    @property
    def width(self) -> int:
        """Grid points in a window: past + 1 + future."""
        return self.past + 1 + self.future

    @property
    def parameters(self) -> int:
        return int(sum(a.size for a in (self.w1, self.b1, self.w2, self.b2, self.w3)) + 1)

    @classmethod
    def load(cls, path: Optional[str | Path] = None) -> "ContactNet":
        """The weights file at `path` (default: the package's)."""
        if path is None:
            return default_model()
        with np.load(Path(path), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        header = json.loads(str(arrays.pop("header")))
        return cls(w1=arrays["w1"], b1=arrays["b1"], w2=arrays["w2"], b2=arrays["b2"], w3=arrays["w3"],
                   b3=float(arrays["b3"]), mean=arrays["mean"], scale=arrays["scale"], step=float(arrays["step"]),
                   past=int(arrays["past"]), future=int(arrays["future"]), on=float(arrays["on"]),
                   off=float(arrays["off"]), header=header)

    def save(self, path: str | Path) -> None:
        np.savez_compressed(Path(path), w1=self.w1.astype(np.float32), b1=self.b1.astype(np.float32),
                            w2=self.w2.astype(np.float32), b2=self.b2.astype(np.float32), w3=self.w3.astype(np.float32),
                            b3=np.float32(self.b3), mean=self.mean.astype(np.float32), scale=self.scale.astype(np.float32),
                            step=np.float64(self.step), past=np.int64(self.past), future=np.int64(self.future),
                            on=np.float64(self.on), off=np.float64(self.off), header=np.array(json.dumps(self.header)))

    def logits(self, x: np.ndarray) -> np.ndarray:
        """(N, W, C) features (time-major: `windows`' per-foot windows) -> (N,) logits of contact: torch's Conv1d,
        ReLU, Conv1d with dilation 2, ReLU, Flatten, Linear over the (N, C, W) transpose, as matrix products over
        each convolution's patches."""
        m1, m2, m3, first, second = self._matrices
        x = (x - self.mean) / self.scale
        n = len(x)
        h = np.maximum(x[:, first].reshape(n, first.shape[0], -1) @ m1 + self.b1, 0.0)  # (N, W1, H1)
        h = np.maximum(h[:, second].reshape(n, second.shape[0], -1) @ m2 + self.b2, 0.0)  # (N, W2, H2)
        return h.reshape(n, -1) @ m3 + self.b3

    @cached_property
    def _matrices(self) -> tuple[np.ndarray, ...]:
        """For `logits`: the weights as matrices over patches ((3 * C, H1), (3 * H1, H2), (W2 * H2,)) and the patches'
        time indices ((W1, 3), (W2, 3))."""
        h1, h2 = len(self.b1), len(self.b2)
        m1 = self.w1.transpose(2, 1, 0).reshape(-1, h1).astype(np.float32)
        m2 = self.w2.transpose(2, 1, 0).reshape(-1, h2).astype(np.float32)
        m3 = self.w3.reshape(h2, -1).T.reshape(-1).astype(np.float32)  # torch flattens (H2, W2)
        first = np.arange(self.width - 2)[:, None] + np.arange(3)
        second = np.arange(self.width - 6)[:, None] + 2 * np.arange(3)
        return m1, m2, m3, first, second

    @cached_property
    def offsets(self) -> np.ndarray:
        """(W + 1,) s: the grid about a frame decided, from one step before the first point (its velocity)."""
        return self.step * np.arange(-self.past - 1, self.future + 1)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(N, W, C) features -> (N,) probability that the foot is on the floor."""
        return 1.0 / (1.0 + np.exp(np.minimum(np.maximum(-self.logits(x), -60.0), 60.0)))


@lru_cache(maxsize=None)
def default_model() -> ContactNet:
    """The package's weights (`realtime/data/contact_model.npz`)."""
    with resources.as_file(resources.files("realtime.data").joinpath(WEIGHTS)) as path:
        return ContactNet.load(path)


class _Index:
    """The keypoints the model reads, in one index array: the heels (left, right), the big and small toes (left big,
    left small, right big, right small), the ankles, the knees, the hips."""

    def __init__(self, keypoint_names: Sequence[str]):
        index = {n: i for i, n in enumerate(keypoint_names)}
        names = ([f"{s}_heel" for s in SIDES] + [f"{s}_{t}" for s in SIDES for t in ("big_toe", "small_toe")]
                 + [f"{s}_{j}" for j in ("ankle", "knee", "hip") for s in SIDES])
        self.rows = np.array([index[n] for n in names])


def frame_sample(points: np.ndarray, floor: Floor, index: _Index, camera: Optional[np.ndarray] = None) -> np.ndarray:
    """(RAW,) one frame's raw sample of a person (see RAW) from its (K, 3) points and the floor in the camera frame, or
    in the world with `camera` the camera's centre there."""
    p = np.asarray(points, np.float64)[index.rows]  # (12, 3), `_Index`'s order
    near = (np.abs(p) <= FARTHEST).all(axis=1)  # False for NaN, inf or absurd: unknown
    if not near.all():
        p[~near] = np.nan
    normal = np.asarray(floor.normal, np.float64)
    normal = normal / np.sqrt(normal @ normal)
    heel, toes = p[0:2], (p[2:6:2] + p[3:6:2]) / 2
    ankle, knee, hip = p[6:8], p[8:10], p[10:12]
    # the knee's angle (hip, knee, ankle) and the ankle's (knee, ankle, toes), both sides
    u = np.concatenate([hip - knee, knee - ankle])
    v = np.concatenate([ankle - knee, toes - ankle])
    length = np.sqrt((u * u).sum(axis=1) * (v * v).sum(axis=1))
    cosine = np.divide((u * v).sum(axis=1), length, out=np.full(4, np.nan), where=length > 0)
    angles = np.arccos(np.minimum(np.maximum(cosine, -1.0), 1.0))  # NaN where a point is unknown or two coincide
    out = np.empty(RAW)
    sides = out[:_HIPS].reshape(2, _SIDE)
    sides[:, 0:3], sides[:, 3:6] = heel, toes
    sides[:, 6:8] = ((np.stack([heel, toes], axis=1) - floor.point) @ normal)
    sides[:, 8], sides[:, 9] = angles[:2], angles[2:]
    out[_HIPS:_HIPS + 3] = (hip[0] + hip[1]) / 2
    out[_HIPS + 3] = (out[_HIPS:_HIPS + 3] - floor.point) @ normal
    out[_UP:_UP + 3] = normal
    out[_CAMERA:] = 0.0 if camera is None else camera
    return out


def _interpolate(times: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """(T,) times, (T, D) values, (...) query times within them -> (..., D), linear between the frames."""
    if len(times) == 1:
        return np.broadcast_to(values[0], (*query.shape, values.shape[1])).copy()
    right = np.minimum(np.maximum(times.searchsorted(query, side="right"), 1), len(times) - 1)
    left = right - 1
    span = times[right] - times[left]
    w = np.minimum(np.maximum((query - times[left]) / np.where(span > 0, span, 1.0), 0.0), 1.0)[..., None]
    return values[left] + (values[right] - values[left]) * w


# The points whose motion the model reads (their xyz columns in a raw sample): left heel, left toes, right heel, right
# toes, hips; their heights' columns; the knee and ankle angles' columns (left knee, left ankle, right knee, right ankle).
_POINTS = np.array([0, 3, _SIDE, _SIDE + 3, _HIPS])[:, None] + np.arange(3)
_HEIGHTS = np.array([6, 7, _SIDE + 6, _SIDE + 7, _HIPS + 3])
_ANGLES = np.array([8, 9, _SIDE + 8, _SIDE + 9])
# A grid point's table (`windows`): the five points' heights, up speeds, speeds across and along the line of sight,
# then the four angles, then known; each foot's FEATURES are columns of it (the right foot's mirror the left's).
_P = 5


def _foot_columns(side: int) -> list[int]:
    own, other, hips = 2 * side, 2 * (1 - side), 4
    return [own, own + 1, _P + own, 2 * _P + own, 3 * _P + own, _P + own + 1, 2 * _P + own + 1, 3 * _P + own + 1,
            4 * _P + own, 4 * _P + own + 1, other, other + 1, 2 * _P + other, hips, _P + hips, 2 * _P + hips,
            3 * _P + hips, 4 * _P + 4]


_COLUMNS = np.array([_foot_columns(0), _foot_columns(1)])  # (2, C)


def windows(times: np.ndarray, raw: np.ndarray, centres: np.ndarray, future: np.ndarray, net: ContactNet) -> np.ndarray:
    """The model's input for frames at `centres` (M,) seconds, each seeing `future` (M,) grid steps after it (at most
    net.future), from a person's frames at `times` (T,) with their raw samples (T, RAW) (`frame_sample`; NaN values are
    filled from the nearest known frame). -> (M, 2, W, C) float32: per frame, the left foot's and the right foot's
    window, time-major (the transpose of torch's (C, W))."""
    times, raw = np.asarray(times, np.float64), _filled(np.asarray(raw, np.float64))
    centres = np.atleast_1d(np.asarray(centres, np.float64))
    future = np.minimum(np.maximum(np.asarray(future), 0), net.future)
    grid = centres[:, None] + net.offsets
    last = (centres + future * net.step)[:, None]
    known = (grid >= times[0] - 1e-6) & (grid <= last + 1e-6)
    samples = _interpolate(times, raw, np.minimum(np.maximum(grid, times[0]), last))  # (M, W + 1, RAW)
    normal = samples[:, net.past + 1, _UP:_UP + 3]  # the floor's up at the frame decided
    normal = normal / np.sqrt((normal * normal).sum(axis=-1, keepdims=True))  # (M, 3)
    column, row = normal[:, None, :, None], normal[:, None, None]  # (M, 1, 3, 1), (M, 1, 1, 3)
    position = samples[..., _POINTS]  # (M, W + 1, 5, 3)
    velocity = (position[:, 1:] - position[:, :-1]) / net.step  # (M, W, 5, 3)
    up = velocity @ column  # (M, W, 5, 1)
    flat = velocity - up * row
    sight = position[:, 1:] - samples[:, 1:, None, _CAMERA:]
    sight = sight - (sight @ column) * row
    along = (flat * sight).sum(axis=-1) / np.maximum(np.sqrt((sight * sight).sum(axis=-1)), 1e-9)
    table = np.empty((*grid.shape[:1], grid.shape[1] - 1, 4 * _P + 5), np.float32)  # (M, W, 25)
    table[..., :_P] = samples[:, 1:, _HEIGHTS]
    table[..., _P:2 * _P] = up[..., 0]
    table[..., 2 * _P:3 * _P] = np.sqrt(np.maximum((flat * flat).sum(axis=-1) - along ** 2, 0.0))
    table[..., 3 * _P:4 * _P] = np.abs(along)
    table[..., 4 * _P:4 * _P + 4] = samples[:, 1:, _ANGLES]
    table[..., 4 * _P + 4] = known[:, 1:]
    return table[:, :, _COLUMNS].transpose(0, 2, 1, 3)  # (M, 2, W, C)


def _filled(raw: np.ndarray) -> np.ndarray:
    """NaN values replaced by the nearest earlier known value of the column (else the nearest later one, else 0)."""
    if np.isfinite(raw).all():
        return raw
    out = raw.copy()
    for column in np.flatnonzero(~np.isfinite(raw).all(axis=0)):
        values = out[:, column]
        known = np.isfinite(values)
        if not known.any():
            values[:] = 0.0
            continue
        at = np.maximum.accumulate(np.where(known, np.arange(len(values)), -1))
        at = np.where(at < 0, np.flatnonzero(known)[0], at)
        out[:, column] = values[at]
    return out
