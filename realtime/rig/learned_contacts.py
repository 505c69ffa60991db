"""One person's foot contacts from the learned model (`realtime.rig.contact_model`), live and offline.

`LearnedContacts` keeps one person's recent frames and decides each foot with hysteresis in probability
(`LearnedGates`: `on` to plant, `off` to release): `update` with no hindsight (what the lifter holds on the next
frame), `decide` for a frame already seen with up to `future` grid steps after it (a fixed lag). It runs the model on
a live path (`_live_sample`, `_LiveNet`): the same features and weights as `contact_model.frame_sample`, `windows` and
`ContactNet.probabilities` (the reference, what training reads, and `BatchContacts` here) in fewer numpy calls: their
overhead, not arithmetic, is the cost on arrays this small (bench/contact_speed.py; tests/test_contact_live.py holds
them alike). `hindsight_contacts` decides a recorded person's frames with the model's whole hindsight, for offline
work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from realtime.rig.contact_model import (
    _ANGLES,
    _CAMERA,
    _COLUMNS,
    _HEIGHTS,
    _P,
    _POINTS,
    _UP,
    FARTHEST,
    RAW,
    ContactNet,
    _filled,
    _Index,
    default_model,
    frame_sample,
    windows,
)
from realtime.rig.floor import Floor
from realtime.rig.leg_ik import SIDES

# The live path (`LearnedContacts`): what `frame_sample`, `windows` and `ContactNet.probabilities` give, to float
# rounding, in fewer numpy calls (on arrays this small each call's overhead is most of the cost). A kept frame is one
# row: its sample with RAW's columns reordered so that each group read is one slice (`_LIVE`), its time, and the
# sample's change per second to the next frame (0 on the newest), so that a grid point's sample is one gathered row.
# The grid's samples go through one matrix (`_projection`) to what the features are made of; both feet's features
# are one table (`_TABLE`) from which `_LiveNet` gathers each foot's patches.
_LIVE = np.r_[_POINTS.reshape(-1), _CAMERA:RAW, _HEIGHTS, _ANGLES, _UP:_UP + 3]  # 15 + 3 + 5 + 4 + 3
_TIME, _SLOPE = RAW, RAW + 1  # a kept row: its sample (`_LIVE`'s order), its time, its slope
_ROW = 2 * RAW + 1
_FEET = np.array([[0, 1, 2, 3, 4, 5, 18, 19], [6, 7, 8, 9, 10, 11, 20, 21]])  # each foot's heel, toes, their heights
# the live table's columns in `windows`' table: heights, angles, up speeds, speeds along and across the line of sight
# of each point side by side, known
_TABLE = np.r_[0:_P, 4 * _P:4 * _P + 4, _P:2 * _P, np.c_[3 * _P:4 * _P, 2 * _P:3 * _P].reshape(-1), 4 * _P + 4]
# (13, 12) from `_Index`'s points: the heels, the toes (the mean of the big and the small), the hips' middle (as
# `_POINTS`), then the angles' u (hip - knee, knee - ankle) and v (ankle - knee, toes - ankle) in `_ANGLES`' order
_LINEAR = np.zeros((13, 12))
for _row, _terms in enumerate(([(0, 1)], [(2, .5), (3, .5)], [(1, 1)], [(4, .5), (5, .5)], [(10, .5), (11, .5)],
                               [(10, 1), (8, -1)], [(8, 1), (6, -1)], [(11, 1), (9, -1)], [(9, 1), (7, -1)],
                               [(6, 1), (8, -1)], [(2, .5), (3, .5), (6, -1)], [(7, 1), (9, -1)], [(4, .5), (5, .5), (7, -1)])):
    for _column, _weight in _terms:
        _LINEAR[_row, _column] = _weight


def _live_sample(points: np.ndarray, floor: Floor, index: _Index, camera: Optional[np.ndarray]) -> tuple[np.ndarray, bool]:
    """(`frame_sample` in `_LIVE`'s order, whether a value of it is missing (NaN, inf)): where every point is known,
    near and the floor has a direction, its few numbers in plain Python (cheaper than numpy calls on arrays of 3)."""
    p = np.asarray(points, np.float64).take(index.rows, axis=0)
    if np.abs(p).max() <= FARTHEST:  # False for NaN, inf or absurd: the reference marks those unknown
        nx, ny, nz = np.asarray(floor.normal, np.float64).tolist()
        norm = math.sqrt(nx * nx + ny * ny + nz * nz)
        if 0 < norm < math.inf:
            nx, ny, nz = nx / norm, ny / norm, nz / norm
            px, py, pz = np.asarray(floor.point, np.float64).tolist()
            q = (_LINEAR @ p).tolist()  # the five points, then the angles' u and v
            out = [c for point in q[:5] for c in point]
            out += [0.0, 0.0, 0.0] if camera is None else np.asarray(camera, np.float64).tolist()
            out += [(x - px) * nx + (y - py) * ny + (z - pz) * nz for x, y, z in q[:5]]  # heights above the floor
            for (ux, uy, uz), (vx, vy, vz) in zip(q[5:9], q[9:]):
                length = math.sqrt((ux * ux + uy * uy + uz * uz) * (vx * vx + vy * vy + vz * vz))
                out.append(math.acos(min(max((ux * vx + uy * vy + uz * vz) / length, -1.0), 1.0)) if length > 0 else math.nan)
            out += [nx, ny, nz]
            return np.array(out), not math.isfinite(sum(out))
    sample = frame_sample(points, floor, index, camera)[_LIVE]
    return sample, not np.isfinite(sample).all()


def _kept_rows(times: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """(T, _ROW) the kept rows of frames at `times` (T,) s with `samples` (T, RAW) (`_LIVE`'s order)."""
    rows = np.zeros((len(times), _ROW))
    rows[:, :RAW], rows[:, _TIME] = samples, times
    rows[:-1, _SLOPE:] = np.diff(samples, axis=0) / np.diff(times)[:, None]
    return rows


def _projection_terms() -> tuple[np.ndarray, ...]:
    """`_projection`'s non-zero entries: (the term of [e1 / step, e2 / step, e1, -e2, n / step, 1] (16) each is,
    times its weight, at its flat index)."""
    out = np.zeros((16, RAW, 34))
    for point in range(5):
        for axis in range(3):
            row = 3 * point + axis
            out[axis, row, 2 * point] = out[3 + axis, row, 2 * point + 1] = 1.0  # motion along the floor, over step
            out[6 + axis, row, 10 + 2 * point] = out[9 + axis, row, 11 + 2 * point] = 1.0  # sight: the point ...
            out[6 + axis, 15 + axis, 10 + 2 * point] = out[9 + axis, 15 + axis, 11 + 2 * point] = -1.0  # ... - camera
            out[12 + axis, row, 20 + point] = 1.0  # height along the up, over step
    out[15, 18:27, 25:] = np.eye(9)  # the heights above the floor and the angles as they are
    term, at = np.nonzero(out.reshape(16, -1))  # one term at each index
    return term, out.reshape(16, -1)[term, at], at


_PROJECTION_TERM, _PROJECTION_WEIGHT, _PROJECTION_AT = _projection_terms()


@lru_cache(maxsize=64)
def _projection(x: float, y: float, z: float, step: float) -> np.ndarray:
    """(RAW, 34) a grid point's sample (`_LIVE`'s order) -> what its table is made of, for the floor's up (x, y, z) at
    the frame decided: the five points' positions along the floor over `step` (10: complex numbers of two unit vectors
    along the floor, real and imaginary parts side by side: their differences are the motion along the floor),
    their lines of sight along the floor, conjugated (10: the conjugate times the motion, over the sight's length, is
    the speed along the line of sight, its real part, and across it, its imaginary part), their heights along the up
    over `step` (5), then the heights above the floor and the angles (9). NaN where the up has no direction."""
    norm = math.sqrt(x * x + y * y + z * z)
    x, y, z = (x / norm, y / norm, z / norm) if 0 < norm < math.inf else (math.nan,) * 3
    # two unit vectors orthogonal to the up and each other (Duff et al. 2017, "Building an Orthonormal Basis, Revisited")
    sign = math.copysign(1.0, z)
    a = -1.0 / (sign + z)
    b = x * y * a
    e1, e2 = (1.0 + sign * x * x * a, sign * b, -sign * x), (b, sign + y * y * a, -y)
    terms = [c / step for c in e1 + e2] + list(e1) + [-c for c in e2] + [x / step, y / step, z / step, 1.0]
    out = np.zeros(RAW * 34)
    out[_PROJECTION_AT] = np.array(terms)[_PROJECTION_TERM] * _PROJECTION_WEIGHT
    out.flags.writeable = False
    return out.reshape(RAW, 34)


class _LiveNet:
    """`ContactNet` as the live path runs it: the features' normalisation folded into the first convolution's
    weights; each foot's patches of the first convolution gathered from the window's one table (`_TABLE`, then a
    column of ones) at once; each layer's bias a weight of a constant 1 in its input (the table's ones, then an output
    of each layer that is always 1), so that a layer is one product and a ReLU."""

    def __init__(self, net: ContactNet):
        h1, h2, channels, width = len(net.b1), len(net.b2), len(net.mean), net.width
        w1 = net.w1.astype(np.float64) / net.scale.astype(np.float64)[:, None]  # (H1, C, 3) over the raw features
        k1 = np.zeros((3 * channels + 1, h1 + 1))
        k1[:-1, :h1] = w1.transpose(2, 1, 0).reshape(-1, h1)  # tap, then feature
        k1[-1] = *(net.b1 - np.einsum("oct,c->o", w1, net.mean.astype(np.float64))), 1.0
        k2 = np.zeros((3, h1 + 1, h2 + 1))
        k2[:, :h1, :h2] = net.w2.transpose(2, 1, 0)
        k2[0, h1] = *net.b2, 1.0
        k3 = np.zeros((width - 6, h2 + 1))
        k3[:, :h2] = net.w3.reshape(h2, -1).T  # torch flattens (H2, W2)
        k3[0, h2] = net.b3
        self.k1, self.k2 = k1.astype(np.float32), k2.reshape(-1, h2 + 1).astype(np.float32)
        self.k3 = k3.reshape(-1).astype(np.float32)
        # the first convolution's patches in a window's table (W, 26) flattened: per foot (left, right) and output time,
        # each tap's features, then the ones; the second's (dilation 2) in the first's outputs: output time, tap
        columns = len(_TABLE) + 1
        time = np.arange(width - 2)[:, None, None] + np.arange(3)[:, None]
        first = np.broadcast_to(time * columns + np.argsort(_TABLE)[_COLUMNS][:, None, None], (2, width - 2, 3, channels))
        ones = np.broadcast_to(np.arange(width - 2)[:, None] * columns + columns - 1, (2, width - 2, 1))
        self.first = np.concatenate((first.reshape(2, width - 2, -1), ones), axis=2).reshape(-1)
        self.second = (np.arange(width - 6)[:, None] + 2 * np.arange(3)).reshape(-1)
        self.width = width
        self.offsets, self.step, self.past = net.offsets, net.step, net.past
        self._offsets = net.offsets.tolist()
        # [f] -> the grid's offsets seeing f steps after the frame decided: those after it held at the last seen
        self._seen = np.minimum(net.offsets, net.step * np.arange(net.future + 1)[:, None])
        # the table's last two columns, known and ones, where the grid's points from k0 to k1 (both included) are known:
        # [k0, k1] -> (W, 2)
        points = len(net.offsets)
        self._tails = np.zeros((points + 1, points, width, 2), np.float32)
        self._tails[..., 1] = 1.0
        for k0 in range(points + 1):
            for k1 in range(points):
                self._tails[k0, k1, max(k0 - 1, 0):k1, 0] = 1.0  # the table's point j is the grid's j + 1

    def probabilities(self, times: np.ndarray, rows: np.ndarray, centres: np.ndarray, future: np.ndarray) -> list:
        """[[left, right], ...] probabilities of contact at `centres` (M,) s, each seeing `future` (M,) grid steps (at
        most the net's), from the kept `rows` (T, _ROW) of frames at `times` (T,) (no value missing): `windows`'
        grid, its points before the frames and after the last one seen repeating the nearest, and its mask."""
        m, first = len(centres), float(times[0])
        # known: the grid's points from the first at or after the frames' first (within 1e-6 s) to the last seen
        starts, ends, lasts = [], [], []
        for centre, steps in zip(centres.tolist(), future.tolist()):
            start = 0
            while start < len(self._offsets) and centre + self._offsets[start] < first - 1e-6:
                start += 1
            starts.append(start)
            ends.append(self.past + 1 + steps)
            lasts.append(centre + steps * self.step)
        tails = self._tails[starts[0], ends[0]][None] if m == 1 else self._tails[starts, ends]  # (M, W, 2)
        if min(centres.tolist()) + self._offsets[0] >= first:  # no point before the first frame: `windows`' grid
            grid = centres[:, None] + (self._seen[future[0]] if m == 1 else self._seen[future])  # (M, W + 1)
        else:  # the points before the first frame held at it
            grid = np.minimum(np.maximum(centres[:, None] + self.offsets, first), np.array(lasts)[:, None])
        before = rows.take(times.searchsorted(grid, side="right") - 1, axis=0)  # the frame at or before each point
        samples = before[..., :RAW] + before[..., _SLOPE:] * (grid - before[..., _TIME])[..., None]
        ups = samples[:, self.past + 1, RAW - 3:].tolist()  # the floor's up at each frame decided
        if ups.count(ups[0]) == m:
            x = (samples.reshape(-1, RAW) @ _projection(*ups[0], self.step)).reshape(m, len(self.offsets), -1)
        else:
            x = samples @ np.array([_projection(*up, self.step) for up in ups])  # (M, W + 1, 34)
        velocity = x[:, 1:, :25] - x[:, :-1, :25]  # along the floor (complex), [unused], up
        sight = x[:, 1:, 10:20].view(np.complex128)
        speeds = velocity[..., :10].view(np.complex128) * sight
        speeds /= np.maximum(np.abs(sight), 1e-9)  # along the line of sight (real), across it (imaginary)
        table = np.concatenate((x[:, 1:, 25:], velocity[..., 20:], np.abs(speeds.view(np.float64)), tails), axis=2,
                               dtype=np.float32)  # (M, W, 26): `_TABLE`, ones
        return [[1.0 / (1.0 + math.exp(min(max(-logit, -60.0), 60.0))) for logit in feet]
                for feet in self.logits(table).tolist()]

    def logits(self, table: np.ndarray) -> np.ndarray:
        """(M, W, 26) live tables -> (M, 2) logits of contact (left, right): `ContactNet.logits` of both feet."""
        m = len(table)
        h = table.reshape(m, -1).take(self.first, axis=1).reshape(m * 2 * (self.width - 2), -1) @ self.k1
        np.maximum(h, 0.0, out=h)
        h = h.reshape(m * 2, self.width - 2, -1).take(self.second, axis=1).reshape(m * 2 * (self.width - 6), -1) @ self.k2
        np.maximum(h, 0.0, out=h)
        return (h.reshape(m * 2, -1) @ self.k3).reshape(m, 2)


@lru_cache(maxsize=8)
def _live_net(net: ContactNet) -> _LiveNet:
    """`net` as the live path runs it, made once per model (about 1 ms), not once per person."""
    return _LiveNet(net)


@dataclass(frozen=True)
class LearnedGates:
    """The learned decider's hysteresis, in the model's probability of contact: a foot is planted once it reaches
    `on` and released once it falls below `off`. The weights carry their own `on` and `off`, picked by
    `bench/train_contacts.py` on its training runs, where the model is all but sure (in-sample, they tell nothing);
    these are picked on tuning clips left out of a training: a lower `off` keeps the stances the model doubts, a
    lower `on` plants a running foot in flight (bench/RESULTS.md, "the learned contact model, ... (twelfth stop)").
    """

    on: float = 0.5
    off: float = 0.3

    def __post_init__(self) -> None:
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (self.on, self.off))
        if not numbers or not 0 < self.off <= self.on < 1:
            raise ValueError(f"LearnedGates needs 0 < off <= on < 1, got on {self.on!r}, off {self.off!r}")


class LearnedContacts:
    """One person's foot contacts from `ContactNet` (see the module's docstring): the calls of
    `realtime.rig.contacts.ContactDetector` (`update`, `state`, `floor`), and `decide` for hindsight.

    floor: the floor now (the caller sets the latest refit); keypoint_names: the points' order; net: the model (None:
    the package's); lag: the hindsight `decide` gives (s): the model's grid steps after a frame it sees (at most its
    `future`), and the frames kept for it; gates: the hysteresis (`LearnedGates`; None: its defaults)."""

    def __init__(self, floor: Floor, keypoint_names: Sequence[str], *, net: Optional[ContactNet] = None, lag: float = 0.0,
                 gates: Optional[LearnedGates] = None):
        self.floor = floor
        self.net = net or default_model()
        self.gates = gates or LearnedGates()
        self.index = _Index(keypoint_names)
        self._live = _live_net(self.net)
        # grid steps of hindsight: a lag within 5 % of a step reaches it (33 ms is one 1/30 s step); each decision still
        # sees only the steps its frames cover (`update`, `decide`)
        self.future = min(self.net.future, int(np.floor(max(float(lag), 0.0) / self.net.step + 0.05)))
        self.keep = (self.net.past + 2) * self.net.step + max(float(lag), 0.0) + 1e-6  # s of frames kept
        # frame time -> [left, right]: whether each foot decided with hindsight would stay planted on it (its
        # probability at or above `off`, heel and toes known) had it been on the frame before; kept where a dict
        # (`hindsight_contacts` reads a stance's beginning from it), not live
        self.stays: Optional[dict[float, list]] = None
        self._start()

    def _start(self) -> None:
        # the frames kept, in [_first, _end): times (s), rows (`_LIVE`), each foot's heel and toes known, a value
        # missing (NaN, inf); after _end: zeros (no slope yet), True, False
        self._times, self._rows = np.zeros(64), np.zeros((64, _ROW))
        self._feet, self._missing = np.ones((64, 2), bool), np.zeros(64, bool)
        self._first = self._end = 0
        self._began = math.nan  # the time of the track's first frame
        self._kept_missing = 0  # frames kept with a value missing
        self.state = dict.fromkeys(SIDES, False)  # the last frame's decisions with no hindsight ...
        self._now = [False, False]  # ... as a list
        self._decided = [False, False]  # the last decision with hindsight (its hysteresis) ...
        self._decided_at = -math.inf  # ... and the time of its frame
        self._ready: dict[float, np.ndarray] = {}  # frame time -> its decision with hindsight, made by `update`

    @property
    def last_sample(self) -> Optional[tuple[float, np.ndarray]]:
        """(time s, raw sample (see RAW)) of the newest frame, or None."""
        if self._end == self._first:
            return None
        return float(self._times[self._end - 1]), self._rows[self._end - 1, :RAW][np.argsort(_LIVE)]

    def update(self, timestamp: float, points3d: np.ndarray, camera: Optional[np.ndarray] = None,
               hindsight: Sequence[float] = ()) -> np.ndarray:
        """(K, 3) metres at `timestamp` s -> (2,) bool contact (left, right) with no hindsight. Points in the camera
        frame, or in the world (with the floor there) and `camera` the camera's centre there. A time not after the
        last frame's starts over (the source started again). hindsight: times of earlier frames whose lag has passed
        with this one: decided now, in the same pass of the model, for `decide`."""
        timestamp = self.remember(timestamp, points3d, camera)
        centres, future = [timestamp], [0]
        for centre in hindsight:
            centres.append(float(centre))
            future.append(max(0, min(self.future, math.floor((timestamp - centres[-1]) / self.net.step + 1e-6))))
        p = self._probabilities(np.array(centres), np.array(future))
        self._now = self._hysteresis(p[0], self._now, timestamp)
        if timestamp - self._began < self.net.step - 1e-6:
            # no motion seen yet (the model's grid reads a velocity over one step): a foot just lifted, low and flat,
            # reads as planted, and the lifter would then pin it where it is, so that the next frames show it still
            self._now = [False, False]
        self.state = {SIDES[0]: self._now[0], SIDES[1]: self._now[1]}
        for centre, q in zip(centres[1:], p[1:]):
            self._ready[centre] = self._lagged(centre, q)
        return np.array(self._now)

    def remember(self, timestamp: float, points3d: np.ndarray, camera: Optional[np.ndarray] = None) -> float:
        """`update`'s frame kept for the windows of later decisions, none made for it (the model not run): a caller
        that will want decisions later keeps the window warm cheaply. Returns the timestamp as a float."""
        timestamp = float(timestamp)
        if not math.isfinite(timestamp):
            raise ValueError(f"LearnedContacts.update needs a finite timestamp in seconds, got {timestamp!r}")
        if self._end > self._first and timestamp <= self._times[self._end - 1]:
            self._start()
        if self._end == self._first:
            self._began = timestamp
        self._append(timestamp, *self._sample(points3d, camera))
        return timestamp

    def decide(self, timestamp: float) -> np.ndarray:
        """(2,) bool contact of the frame at `timestamp` (given to `update`, still kept) seeing `future` grid steps
        after it (fewer where the frames kept end sooner): as `update`'s hindsight made it, or made now. Frames are
        decided in time order (the hysteresis)."""
        timestamp = float(timestamp)
        ready = self._ready.pop(timestamp, None)
        if ready is not None:
            return ready
        future = min(self.future, math.floor((self._times[self._end - 1] - timestamp) / self.net.step + 1e-6))
        return self._lagged(timestamp, self._probabilities(np.array([timestamp]), np.array([max(future, 0)]))[0])

    def _sample(self, points3d: np.ndarray, camera: Optional[np.ndarray]) -> tuple[np.ndarray, bool]:
        """The frame's raw sample in `_LIVE`'s order, and whether a value of it is missing."""
        return _live_sample(points3d, self.floor, self.index, camera)

    def _append(self, timestamp: float, sample: np.ndarray, missing: bool) -> None:
        if self._end == len(self._times):  # full: the frames kept to the front, or larger buffers
            count, kept = self._end - self._first, slice(self._first, self._end)
            size = len(self._times) * (2 if count > len(self._times) // 2 else 1)
            for name, fill in (("_times", 0), ("_rows", 0), ("_feet", True), ("_missing", False)):
                old = getattr(self, name)
                new = np.full((size, *old.shape[1:]), fill, old.dtype)
                new[:count] = old[kept]
                setattr(self, name, new)
            self._first, self._end = 0, count
        end = self._end
        if end > self._first:  # the previous frame's slope to this one
            slope = self._rows[end - 1, _SLOPE:]
            np.subtract(sample, self._rows[end - 1, :RAW], out=slope)
            slope /= timestamp - self._times[end - 1]
        self._times[end] = self._rows[end, _TIME] = timestamp
        self._rows[end, :RAW] = sample
        if missing:
            self._missing[end], self._feet[end] = True, np.isfinite(sample[_FEET]).all(axis=1)
            self._kept_missing += 1
        self._end += 1
        while timestamp - self._times[self._first] > self.keep:
            self._kept_missing -= bool(self._missing[self._first])
            self._first += 1

    def _probabilities(self, centres: np.ndarray, future: np.ndarray) -> list:
        """[[left, right], ...] the model's probability of contact of each foot at `centres` seeing `future` steps."""
        times, rows = self._times[self._first:self._end], self._rows[self._first:self._end]
        if self._kept_missing:  # filled from the nearest frames kept, as `windows` fills them
            rows = _kept_rows(times, _filled(rows[:, :RAW]))
        return self._live.probabilities(times, rows, centres, future)

    def _lagged(self, timestamp: float, p: Sequence[float]) -> np.ndarray:
        """The decision with hindsight of the frame at `timestamp` (its hysteresis from the last one before it)."""
        if self.stays is not None:
            self.stays[timestamp] = self._hysteresis(p, [True, True], timestamp)
        self._decided = self._hysteresis(p, self._decided if timestamp > self._decided_at else [False, False], timestamp)
        self._decided_at = timestamp
        return np.array(self._decided)

    def _hysteresis(self, p: Sequence[float], before: Sequence[bool], timestamp: float) -> list:
        """Planted once the model's probability reaches `on`, released once it falls below `off`; a foot whose heel
        or toes are unknown on the frame at `timestamp` (kept) is off."""
        on, off = self.gates.on, self.gates.off
        out = [bool(p[0] >= off if before[0] else p[0] >= on), bool(p[1] >= off if before[1] else p[1] >= on)]
        if self._kept_missing:
            kept = self._times[self._first:self._end]
            feet = self._feet[self._first + min(int(kept.searchsorted(timestamp)), len(kept) - 1)]
            out = [out[0] and bool(feet[0]), out[1] and bool(feet[1])]
        return out


class BatchContacts(LearnedContacts):
    """`LearnedContacts` deciding from `frame_sample`, `windows` and `ContactNet.probabilities` over the frames kept:
    the path the live one replaced (the same bookkeeping and hysteresis), the reference it is tested against
    (tests/test_contact_live.py) and timed against (bench/contact_speed.py)."""

    def _sample(self, points3d: np.ndarray, camera: Optional[np.ndarray]) -> tuple[np.ndarray, bool]:
        sample = frame_sample(points3d, self.floor, self.index, camera)
        return sample[_LIVE], not np.isfinite(sample).all()

    def _probabilities(self, centres: np.ndarray, future: np.ndarray) -> list:
        raw = self._rows[self._first:self._end, :RAW][:, np.argsort(_LIVE)]
        x = windows(self._times[self._first:self._end], raw, centres, future, self.net)
        return self.net.probabilities(x.reshape(-1, *x.shape[2:])).reshape(-1, 2).tolist()


def hindsight_contacts(times: np.ndarray, points3d: np.ndarray, keypoint_names: Sequence[str], *,
                       camera: Optional[np.ndarray] = None, floor: Optional[Floor] = None,
                       net: Optional[ContactNet] = None) -> np.ndarray:
    """(T, 2) bool contacts (left, right) of one person's frames, each decided seeing the model's whole hindsight (its
    `future` grid steps after the frame, 0.2 s): what `LearnedContacts` decides live with that lag, its hysteresis
    read both ways, for offline work: a stance holds the frames before its plant back to where the probability rose
    to `off`, as it holds those after until it falls below `off` (live, a plant waits for `on`).
    times: (T,) s, increasing; points3d: (T, K, 3) metres in the world (y up, the floor at y = 0) with `camera` (T, 3)
    the camera's centre there on each frame, or in the camera frame with `floor` there (camera None)."""
    net = net or default_model()
    times = np.asarray(times, np.float64)
    if len(times) > 1 and not (np.diff(times) > 0).all():
        raise ValueError("hindsight_contacts needs increasing times")
    floor = floor or Floor(np.array([0.0, 1.0, 0.0]), np.zeros(3))
    lag = net.future * net.step
    contacts = LearnedContacts(floor, keypoint_names, net=net, lag=lag)
    contacts.stays = {}
    out = np.zeros((len(times), 2), bool)
    waiting = 0  # the first frame not decided yet
    for i, t in enumerate(times):
        due = np.arange(waiting, i)[times[waiting:i] <= t - lag + 1e-6]
        contacts.update(t, points3d[i], None if camera is None else camera[i], hindsight=times[due].tolist())
        for j in due:
            out[j] = contacts.decide(times[j])
        waiting += len(due)
    for j in range(waiting, len(times)):
        out[j] = contacts.decide(times[j])
    stays = np.array([contacts.stays[t] for t in times.tolist()], bool).reshape(-1, 2)
    for j in range(len(times) - 2, -1, -1):  # each stance back to where it rose to `off`
        out[j] |= out[j + 1] & stays[j]
    return out
