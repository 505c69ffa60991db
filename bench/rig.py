"""Grounded body every frame on synthetic ground truth: lifting between depth frames, the metric
scale, the floor, foot contact and foot locking.

Ground truth: `tests/ground_synthetic.py`'s walker (exact foot plants) seen by a camera tilted
15 degrees down. Measurements: 2D keypoints every frame with NOISE_PX pixel noise; 3D keypoints
(the pointmap's) with NOISE_M metres of noise per point and SCALE_JITTER of per-frame scale
jitter, either every frame ("depth every frame") or every DEPTH_EVERY-th frame. The pipeline's
`GroundStage` runs on those frames, causal, frame by frame: each depth frame's scale stabilised
against the person's bone lengths (`realtime.rig.scale`), 3D lifted in between
(`realtime.rig.lift.Lifter`), the floor from the depth frames' feet (`FloorEstimator`: first
fitted after 30 depth frames = 5 s, then refitted every 10; its tilt from the pointmap's background,
`realtime.rig.floor_scene`), contacts (`ContactDetector`). Then
what the VMC sink does with them: its live filter (one euro, smoothness 0.5) and foot locking
(`FootLock`).

Reported: joint error (mean over the 24 body and foot points) of the stage's 3D on the frames
without depth against the truth and against depth-every-frame; the per-frame scale error (std of
each depth frame's least-squares scale against the truth, from the second second on) of the raw
pointmap and of the stage's output; the floor normal's angle to the true up when first fitted
(5 s) and at the end, and the fitted floor's height above the true one at the planted heels (cm:
their true height above the true floor less their height above the fitted one); contact precision /
recall against the planted frames once the floor is known; foot sliding during the true contacts
(the ankle's travel along the floor per frame, mm, and per contact, cm) before and after locking, on
the same frames.
Scene: on depth frames the camera's view as a pointmap (MAP_WH, rays through the camera's intrinsics:
the true floor, and a back wall WALL_Z metres out where the floor is further; the person drawn over
it as limbs at their depth and marked in the seg) with the keypoints' noise: the frame's scale
jitter on the whole map and NOISE_M on each point. The floor's tilt is then the background's; the
printout adds the floor measured feet-only (no pointmap, as before) for comparison (`--floor`).
Real motion: `--motion mocap` runs each CMU clip of tests/data/mocap; `--motion walks` only its everyday
walks (`tests.mocap_clips.WALKS`, 3.7 s each: shorter than the floor's first fit, so each is measured
after two earlier passes of itself, and at each of `--headings`: 0 = as captured, straight away from the
camera, the case the lifted frames measure worst; 45 and 90 across the view); `--motion held-out` the same for
the everyday walks added after all the tuning (`tests.mocap_clips.HELD_OUT`: CMU 35_05, 16_32 and 39_03, three other subjects);
`--motion other` the same for the other gaits added after the tuning (`tests.mocap_clips.OTHER_GAITS`: CMU 16_18, a walk
turning 90 degrees left, 35_24, a 1.2 s run at 3.5 m/s, measured after five earlier passes of itself, and 09_03, another
subject's 1.0 s run, held out from the running rules); `--motion unseen` the same for three more everyday walks
(`tests.mocap_clips.UNSEEN`: CMU 38_01, 55_04 and 05_01, three more subjects) added after all the tuning and measured
once.
`held_foot_up_cm`: on the frames the detector holds a foot, the most its lowest true point (heel or toes) is above
where that point is lowest in the clip (its 2nd percentile): a foot pinned in the air shows here, a foot on its toes
after heel-off does not. `ankle_in_contact_shown_mm` / `_locked_mm`: the ankle's mean distance from the truth over
the true contacts, as the live filter shows it and as the lock holds it (the slide counts how far a held foot moves,
this where it is held). `false_contacts_foot_still_pct`: of the frames held that the truth has lifted, the share
where the true foot is planted and still (its ankle slower than 0.15 m/s, its heel within 5 cm of its lowest): the
truth ends a stance when the heel point is 3 cm above its lowest, which on some clips is while the foot stands still
(CMU 08_11 settles 3-5 cm above its heel-strike low); `contact_precision_foot_still` is the precision with those
frames counted as contacts. `contact_precision_on_toes`: the precision with the frames counted as contacts where the
true toes (the big and small toe's midpoint) stand on the floor, within TOES_HEIGHT of their lowest and slower than
TOES_SPEED along it: a foot on its toes from heel-off to toe-off is on the floor (issue 51's truth, bench/corpus.py's,
is a heel or the toes down), which the heel's truth here calls lifted.
Frame rate (`--fps`, several to compare): the same motion sampled at each rate over the same seconds
(`tests.ground_synthetic.at_rate`; the walker is a function of time), the pointmap at the same rate in seconds
(every 5th frame at 30 fps, every 10th at 60, every 4th at 24), the noise per frame as at 30 fps. At a rate other
than 30 the slides are also given per 1/30 s (`_mm_per_30th_s`), and with several rates each run's contact
decisions are compared with the first rate's on the timestamps both have (`agree_with_<fps>fps`: the share of feet
and timestamps with the same decision; `_within_frame`: a decision counts as the same when the other rate makes it
within one frame of the slower rate).
Run: python bench/rig.py [--frames 300] [--seeds 0 1 2 3] [--no-stabilise]
     [--motion walker|mocap|walks|held-out|other|unseen]
     [--floor both|scene|feet] [--fps 30 [60 24]]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from realtime.frames import DenseMaps, Frame, Person  # noqa: E402
from realtime.rig.leg_ik import FOOT_POINTS, SIDES  # noqa: E402
from realtime.rig.lock import FootLock  # noqa: E402
from realtime.stages import Filter3D, GroundStage  # noqa: E402
from tests.ground_synthetic import CENTRE, FOCAL, at_rate, camera_pose, walk  # noqa: E402
from tests.mocap_synthetic import NAMES  # noqa: E402

DEPTH_EVERY = 5  # at FPS: the pointmap 6 times a second
NOISE_PX, NOISE_M, SCALE_JITTER = 1.0, 0.015, 0.02
FPS = 30.0
HEELS = [NAMES.index("left_heel"), NAMES.index("right_heel")]
ANKLES = [NAMES.index("left_ankle"), NAMES.index("right_ankle")]
STILL_SPEED, STILL_HEIGHT = 0.15, 0.05  # m/s, m: a true foot planted and still (`_foot_still`)
TOES_SPEED, TOES_HEIGHT = 0.2, 0.03  # m/s, m: true toes standing on the floor (`_toes_down`; bench/corpus.py's gates)
WARMUP_FRAMES = 180  # earlier frames of a short clip before it is measured: 36 depth frames, past the floor's first fit (30)
_IMAGE = np.zeros((2, 2, 3), np.uint8)
MAP_WH = (80, 45)  # the scene's pointmap: the 1280 x 720 camera at 1/16
WALL_Z = 8.0  # m: the back wall (world z) the camera sees beyond the floor
LIMB_RADIUS = 0.07  # m: the person's limbs as drawn into the pointmap and the seg
_LIMBS = (
    ("left_hip", "left_knee"), ("left_knee", "left_ankle"), ("right_hip", "right_knee"), ("right_knee", "right_ankle"),
    ("left_ankle", "left_heel"), ("left_heel", "left_big_toe"), ("right_ankle", "right_heel"),
    ("right_heel", "right_big_toe"), ("left_hip", "right_hip"), ("left_hip", "neck"), ("right_hip", "neck"),
    ("left_shoulder", "right_shoulder"), ("left_shoulder", "left_elbow"), ("left_elbow", "left_wrist"),
    ("right_shoulder", "right_elbow"), ("right_elbow", "right_wrist"), ("neck", "nose"))


def _measured(truth, rng):
    """What the pipeline sees of a walk: noisy 2D every frame, noisy and scale-jittered 3D, and each
    frame's scale (T,) (the pointmap's: the 3D keypoints are sampled from it)."""
    pixels = truth.pixels + rng.normal(0, NOISE_PX, truth.pixels.shape)
    scale = 1.0 + rng.normal(0, SCALE_JITTER, (len(truth.times), 1, 1))
    depth = truth.camera * scale + rng.normal(0, NOISE_M, truth.camera.shape)
    scores = np.where(np.isfinite(pixels[..., 0]), 0.9, 0.0).astype(np.float32)
    return pixels, depth, scores, scale[:, 0, 0]


def scene_rays() -> np.ndarray:
    """(h, w, 3) camera-frame rays (z = 1) through the pixel centres of the MAP_WH pointmap."""
    w, h = MAP_WH
    sx, sy = w / (2 * CENTRE[0]), h / (2 * CENTRE[1])
    u, v = (np.arange(w) + 0.5) / sx - 0.5, (np.arange(h) + 0.5) / sy - 0.5
    uu, vv = np.meshgrid(u, v)
    return np.stack([(uu - CENTRE[0]) / FOCAL, (vv - CENTRE[1]) / FOCAL, np.ones_like(uu)], axis=-1)


def scene_background() -> np.ndarray:
    """(h, w, 3) camera metres: the floor (y = 0 in the world) seen by the bench's camera, and the back
    wall (z = WALL_Z) where the floor is further or above the horizon."""
    rotation, centre = camera_pose()
    rays = scene_rays()
    directions = rays @ rotation  # world directions (camera_pose's rows are the camera's axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        to_floor = np.where(directions[..., 1] < 0, -centre[1] / directions[..., 1], np.inf)
        to_wall = np.where(directions[..., 2] > 0, (WALL_Z - centre[2]) / directions[..., 2], np.inf)
    return rays * np.minimum(to_floor, to_wall)[..., None]  # rays have z = 1: the distance is the depth


def scene_maps(background: np.ndarray, person: np.ndarray, scale: float, rng) -> DenseMaps:
    """One depth frame's maps: the background with the person (K, 3 true camera metres, NaN where not
    placed) drawn over it as limbs at their depth, marked in the seg (1 = person), then the frame's
    `scale` on the whole map and NOISE_M on each point."""
    w, h = MAP_WH
    f = FOCAL * w / (2 * CENTRE[0])
    depth = np.full((h, w), np.inf, np.float32)
    seg = np.zeros((h, w), np.uint8)
    index = {n: i for i, n in enumerate(NAMES)}
    for a, b in _LIMBS:
        pa, pb = person[index[a]], person[index[b]]
        if not (np.isfinite(pa).all() and np.isfinite(pb).all()) or min(pa[2], pb[2]) < 0.2:
            continue
        z = float(pa[2] + pb[2]) / 2
        ends = [tuple(int(round(c)) for c in (f * p[:2] / p[2] + (np.array([w, h]) / 2 - 0.5))) for p in (pa, pb)]
        thick = max(1, int(round(2 * LIMB_RADIUS * f / z)))
        cv2.line(depth, ends[0], ends[1], z, thick)
        cv2.line(seg, ends[0], ends[1], 1, thick)
    rays = scene_rays()
    points = np.where(seg[..., None] > 0, rays * depth[..., None], background)
    pointmap = points * scale + rng.normal(0, NOISE_M, points.shape)
    return DenseMaps(seg=seg, pointmap=pointmap.astype(np.float32))


def _person(track: int, pixels, scores, depth, depth_frame: bool) -> Person:
    return Person(box=np.array([0, 0, 10, 10], np.float32), track_id=track, keypoints=pixels.astype(np.float32),
                  keypoint_scores=scores, keypoints3d=depth.astype(np.float32) if depth_frame else None)


def _frame(index: int, timestamp: float, person: Person, maps: DenseMaps | None) -> Frame:
    dense = None if maps is None else DenseMaps(computed_on=index, seg=maps.seg, pointmap=maps.pointmap)
    return Frame(index=index, timestamp=timestamp, image=_IMAGE, people=(person,), dense=dense)


def depth_every_at(fps: float) -> int:
    """The pointmap's frame interval at `fps`: DEPTH_EVERY frames at FPS, the same rate in seconds at any other."""
    return max(1, int(round(DEPTH_EVERY * fps / FPS)))


def evaluate(frames: int = 300, seed: int = 0, *, stabilise: bool = True, truth=None, warmup=(),
             scene: bool = True, depth_every: int | None = None, record: dict | None = None,
             fps: float = FPS, contacts: str = "rules") -> dict[str, float]:
    """truth: a `tests.ground_synthetic.Walk` (default: the synthetic walker; `tests.mocap_clips.clip_walk`
    gives real motion capture seen by the same camera). warmup: walks the same static camera saw
    before (other tracks, their own noise), so a clip shorter than the floor's first fit (30 depth
    frames, 5 s) is measured with the floor already known, as on a camera that has been running;
    the measures are then of `truth` only. scene: depth frames carry the scene's pointmap and seg
    (`scene_maps`; the floor's tilt from the background); False: 3D keypoints only (the floor from
    the feet). The keypoints' noise is the same either way (the map's noise has a generator of its own).
    depth_every: the pointmap (3D keypoints and scene) on every this many frames (None: 6 times a second,
    `depth_every_at`). record: a dict given here gets the run's per-frame arrays (camera metres): `lifted` (the ground
    stage's 3D), `filtered` (the live filter's), `contacts` (the detector's), `truth_contacts`, `grounded` (frames with
    the floor known) and `times`. fps: the synthetic walker's rate (`frames` frames at it; a `truth` has its own).
    contacts: the ground stage's decider, "rules" (default: the detector this bench's heel-only truth, counted with no
    tolerance, was made for) or "learned" (bench/motion.py judges it against its heel-or-toes truth)."""
    truth = walk(frames, fps) if truth is None else truth
    frames = len(truth.times)
    rate = 1.0 / float(np.median(np.diff(truth.times)))
    depth_every = depth_every_at(rate) if depth_every is None else depth_every
    rng = np.random.default_rng(seed)
    map_rng = np.random.default_rng([seed, 1])
    background = scene_background() if scene else None
    body = np.flatnonzero(np.isfinite(truth.camera[0]).all(axis=1))
    stage = GroundStage(NAMES, stabilise_scale=stabilise, contacts=contacts)

    def maps(seen, t, scale):
        if background is None or t % depth_every:
            return None
        return scene_maps(background, seen.camera[t], scale[t], map_rng)

    start = 0.0
    for k, earlier in enumerate(warmup):
        w_pixels, w_depth, w_scores, w_scale = _measured(earlier, rng)
        for t in range(len(earlier.times)):
            person = _person(100 + k, w_pixels[t], w_scores[t], w_depth[t], t % depth_every == 0)
            stage.process(_frame(t, start + earlier.times[t], person, maps(earlier, t, w_scale)))
        start += earlier.times[-1] + 1.0
    pixels, depth, scores, scale = _measured(truth, rng)
    live_filter, lock = Filter3D("one_euro", 0.5, len(NAMES)), FootLock(NAMES)  # what the VMC sink does
    lifted, filtered, locked = (np.full_like(depth, np.nan) for _ in range(3))
    contacts = np.zeros((frames, 2), bool)
    grounded = np.zeros(frames, bool)  # frames with contacts (the floor known)
    floor_first = stage.floor
    for t in range(frames):
        person = _person(1, pixels[t], scores[t], depth[t], t % depth_every == 0)
        out = stage.process(_frame(t, start + truth.times[t], person, maps(truth, t, scale))).people[0]
        if floor_first is None and stage.floor is not None:
            floor_first = stage.floor
        if out.keypoints3d is None:
            continue
        lifted[t] = out.keypoints3d
        filtered[t] = live_filter(start + truth.times[t], 1, lifted[t], None)
        locked[t] = filtered[t]
        if out.contacts is not None:
            grounded[t], contacts[t] = True, out.contacts
            locked[t] = lock.apply(start + truth.times[t], filtered[t], out.contacts)
    depth_frame = np.arange(frames) % depth_every == 0
    between = ~depth_frame & np.isfinite(lifted[:, body]).all(axis=(1, 2))

    def joint_error(a, b):  # on the lifted frames (none with depth on every frame)
        if not between.any():
            return float("nan")
        return float(np.linalg.norm(a[between][:, body] - b[between][:, body], axis=2).mean())

    def scale_error(points):
        rows = depth_frame & (truth.times >= 1.0)
        if not rows.any():  # a clip of a second or less
            return float("nan")
        p, q = points[rows][:, body], truth.camera[rows][:, body]
        return 100 * float(np.std((p * q).sum(axis=(1, 2)) / (q * q).sum(axis=(1, 2))))

    def angle(floor):
        if floor is None:
            return float("nan")
        return float(np.degrees(np.arccos(np.clip(floor.normal @ truth.up, -1, 1))))

    truth_contacts = truth.contacts & grounded[:, None]
    if record is not None:
        record.update(lifted=lifted, filtered=filtered, contacts=contacts, truth_contacts=truth_contacts, grounded=grounded,
                      times=truth.times)
    tp = (contacts & truth_contacts).sum()
    heels = truth.camera[:, HEELS][truth_contacts]
    heel_heights = truth.world[:, HEELS, 1][truth_contacts]
    held_up = []  # each held frame's foot: its lowest point above where that point is lowest in the clip
    for s, side in enumerate(SIDES):  # the foot is on the floor where the lowest of its points is
        low = truth.world[:, [NAMES.index(f"{side}_{part}") for part in FOOT_POINTS], 1].min(axis=1)
        held_up.append(low[contacts[:, s]] - np.nanpercentile(low, 2))
    held_up = np.concatenate(held_up)
    still = _foot_still(truth)
    false_contacts = contacts & ~truth_contacts & grounded[:, None]

    def ankle_error(points):  # in true contacts: where the foot is held (or shown), not how far it moves
        if not truth_contacts.any():
            return float("nan")
        return 1000 * float(np.linalg.norm(points[:, ANKLES] - truth.camera[:, ANKLES], axis=-1)[truth_contacts].mean())

    floor = stage.floor  # None when the clip (and its warm-up) gave too few depth frames for a first fit
    up = truth.up if floor is None else floor.normal
    slide_before, per_contact_before = _sliding(filtered, truth_contacts, up)
    slide_after, per_contact_after = _sliding(locked, truth_contacts, up)
    per_30th = {} if abs(rate - FPS) < 1e-3 * FPS else {  # a frame's travel at another rate, per 1/30 s
        "slide_before_mm_per_30th_s": slide_before * rate / FPS, "slide_after_mm_per_30th_s": slide_after * rate / FPS}
    return {
        "joint_error_lifted_mm": 1000 * joint_error(lifted, truth.camera),
        "joint_error_depth_every_frame_mm": 1000 * joint_error(depth, truth.camera),
        "lifted_vs_depth_every_frame_mm": 1000 * joint_error(lifted, depth),
        "scale_error_raw_pct": scale_error(depth),
        "scale_error_stabilised_pct": scale_error(lifted),
        "floor_up_error_5s_deg": angle(floor_first),
        "floor_up_error_end_deg": angle(floor),
        # the fitted floor above the true one (cm, at the planted heels: their true height less the fitted one)
        "floor_height_error_cm": (100 * float(np.median(heel_heights - floor.height(heels))) if floor is not None
                                  and len(heels) else float("nan")),
        "contact_precision": float(tp / max(contacts.sum(), 1)),
        "contact_recall": float(tp / max(truth_contacts.sum(), 1)),
        "slide_before_mm_per_frame": slide_before,
        "slide_after_mm_per_frame": slide_after,
        "slide_before_cm_per_contact": per_contact_before,
        "slide_after_cm_per_contact": per_contact_after,
        "held_foot_up_cm": 100 * float(held_up.max()) if len(held_up) else 0.0,
        "false_contacts_foot_still_pct": 100 * float((false_contacts & still).sum() / max(false_contacts.sum(), 1)),
        "contact_precision_foot_still": float((tp + (false_contacts & still).sum()) / max(contacts.sum(), 1)),
        "contact_precision_on_toes": float((tp + (false_contacts & _toes_down(truth)).sum()) / max(contacts.sum(), 1)),
        "ankle_in_contact_shown_mm": ankle_error(filtered),
        "ankle_in_contact_locked_mm": ankle_error(locked),
        **per_30th,
    }


def _foot_still(truth) -> np.ndarray:
    """(T, 2) the true foot planted and still, where the truth's heel gate may say lifted: its ankle slower than
    STILL_SPEED (3D, frame to frame) and its heel within STILL_HEIGHT of where it is lowest in the clip."""
    fps = 1.0 / np.median(np.diff(truth.times))
    speed = np.linalg.norm(np.diff(truth.world[:, ANKLES], axis=0, prepend=truth.world[:1, ANKLES]), axis=-1) * fps
    heels = truth.world[:, HEELS, 1]
    return (speed < STILL_SPEED) & (heels - np.nanpercentile(heels, 2, axis=0) < STILL_HEIGHT)


def _toes_down(truth) -> np.ndarray:
    """(T, 2) the true toes (the big and small toe's midpoint) on the floor and still: within TOES_HEIGHT of where
    they are lowest in the clip (their 2nd percentile) and slower than TOES_SPEED along the floor (frame to frame)."""
    fps = 1.0 / np.median(np.diff(truth.times))
    toes = np.stack([truth.world[:, [NAMES.index(f"{side}_big_toe"), NAMES.index(f"{side}_small_toe")]].mean(axis=1)
                     for side in SIDES], axis=1)
    along = np.diff(toes[..., [0, 2]], axis=0, prepend=toes[:1, :, [0, 2]])
    speed = np.linalg.norm(along, axis=-1) * fps
    heights = toes[..., 1]
    return (speed < TOES_SPEED) & (heights - np.nanpercentile(heights, 2, axis=0) < TOES_HEIGHT)


def _sliding(points: np.ndarray, contacts: np.ndarray, up: np.ndarray) -> tuple[float, float]:
    """The ankle's travel along the floor during true contacts: mean mm per frame, mean cm per contact."""
    steps, per_contact = [], []
    for side, name in enumerate(("left_ankle", "right_ankle")):
        ankle = points[:, NAMES.index(name)]
        travel = 0.0
        for t in range(1, len(points)):
            if contacts[t, side] and contacts[t - 1, side] and np.isfinite(ankle[[t - 1, t]]).all():
                move = ankle[t] - ankle[t - 1]
                step = float(np.linalg.norm(move - (move @ up) * up))
                steps.append(step)
                travel += step
            elif contacts[t - 1, side] and not contacts[t, side]:
                per_contact.append(travel)
                travel = 0.0
    if not steps:  # no true contact measured (no floor fitted, or none in the clip)
        return float("nan"), float("nan")
    return 1000 * float(np.mean(steps)), 100 * float(np.mean(per_contact)) if per_contact else float("nan")


def agreement(a: dict, b: dict, tolerance: float = 0.0) -> float:
    """The share of feet and timestamps, among those both runs have with the floor known, on which the contact
    decisions of two runs (`evaluate`'s `record`, at two rates) agree. Timestamps within a quarter of the faster
    rate's frame are the same (a clip's 0.033333 s frames against 1/60 s ones). tolerance (s): a decision counts as
    the same when the other run makes it on any of its frames within this of the timestamp."""
    times_a, times_b = a["times"], b["times"]
    same_time = 0.25 * min(np.median(np.diff(times_a)), np.median(np.diff(times_b)))
    both = np.abs(times_b[None, :] - times_a[:, None]) < same_time  # (Ta, Tb) the same timestamp
    rows, cols = np.nonzero(both & a["grounded"][:, None] & b["grounded"][None, :])
    if not len(rows):
        return float("nan")
    same = a["contacts"][rows] == b["contacts"][cols]
    if tolerance > 0:
        near = np.abs(times_b[None, :] - times_a[rows, None]) <= tolerance + same_time  # (N, Tb)
        for side in (0, 1):
            for k in np.flatnonzero(~same[:, side]):
                frames = np.flatnonzero(near[k] & b["grounded"])
                same[k, side] = bool((b["contacts"][frames, side] == a["contacts"][rows[k], side]).any())
    return float(same.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300, help="frames at 30 fps (at another --fps: the same seconds)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--no-stabilise", action="store_true", help="leave the pointmap's per-frame scale as it is")
    parser.add_argument("--headings", type=float, nargs="+", default=[0.0, 45.0, 90.0],
                        help="the everyday walks turned this many degrees about the vertical (0: as captured)")
    parser.add_argument("--motion", choices=("walker", "mocap", "walks", "held-out", "other", "unseen"), default="walker",
                        help="the synthetic walker; each CMU clip of tests/data/mocap (real motion capture); "
                             "only its everyday walks; held-out: the everyday walks added after the tuning (CMU 35_05, "
                             "16_32, 39_03); other: the other gaits added after the tuning (CMU 16_18 turning, 35_24 and "
                             "09_03 running); unseen: three more everyday walks added after all the tuning, measured once "
                             "(CMU 38_01, 55_04, 05_01)")
    parser.add_argument("--floor", choices=("both", "scene", "feet"), default="both",
                        help="scene: depth frames carry the scene's pointmap (the floor's tilt from the background); "
                             "feet: 3D keypoints only (the floor from the feet); both: scene, plus the floor rows "
                             "measured feet-only")
    parser.add_argument("--depth-every", type=int, default=None,
                        help="the pointmap on every N-th frame (1: every frame, as a fast GPU runs `--dense-every 1`; "
                             "default: 6 times a second, every 5th frame at 30 fps)")
    parser.add_argument("--fps", type=float, nargs="+", default=[FPS],
                        help="the frame rates to measure the same motion at (the first is the reference of "
                             "agree_with_<fps>fps)")
    args = parser.parse_args()
    if not all(np.isfinite(f) and 1.0 <= f <= 1000.0 for f in args.fps):
        parser.error(f"--fps {' '.join(map(str, args.fps))}: give frame rates between 1 and 1000, e.g. --fps 30 60")
    if args.frames < 2 or (args.depth_every is not None and args.depth_every < 1):
        parser.error("--frames takes 2 or more and --depth-every 1 or more")
    options = {"stabilise": not args.no_stabilise, "depth_every": args.depth_every}

    def measured(run) -> list[dict]:
        """run(seed, scene, fps, record) -> results per seed and rate; with --floor both, the feet-only floor rows
        added; with several rates, each run's decisions against the first rate's."""
        blocks = []
        for fps in args.fps:
            records = [{} for _ in args.seeds]
            results = [run(seed, args.floor != "feet", fps, record) for seed, record in zip(args.seeds, records)]
            if args.floor == "both":
                for result, feet in zip(results, (run(seed, False, fps, None) for seed in args.seeds)):
                    result.update({f"{key}_feet_only": feet[key] for key in ("floor_up_error_5s_deg", "floor_up_error_end_deg")})
            blocks.append((fps, results, records))
        reference = blocks[0]
        for fps, results, records in blocks[1:]:
            slower = 1.0 / min(fps, reference[0])
            for result, record, first in zip(results, records, reference[2]):
                result[f"agree_with_{reference[0]:g}fps"] = agreement(first, record)
                result[f"agree_with_{reference[0]:g}fps_within_frame"] = agreement(first, record, slower)
        return blocks

    def show(title: str, blocks) -> None:
        for fps, results, _ in blocks:
            print(title if len(blocks) == 1 else f"{title} at {fps:g} fps")
            print_per_seed(results, args.seeds, 36)

    if args.motion == "walker":
        show("the synthetic walker", measured(lambda seed, scene, fps, record: evaluate(
            int(round(args.frames * fps / FPS)), seed, scene=scene, record=record, fps=fps, **options)))
        return
    from tests.mocap_clips import CLIPS, HELD_OUT, OTHER_GAITS, UNSEEN, WALKS, clip_walk, load_clips

    for clip in load_clips(CLIPS if args.motion == "mocap" else ()):
        show(clip.name, measured(lambda seed, scene, fps, record, clip=clip: evaluate(
            seed=seed, truth=at_rate(clip_walk(clip, args.frames), fps), scene=scene, record=record, **options)))
    for clip in load_clips({"held-out": HELD_OUT, "other": OTHER_GAITS, "unseen": UNSEEN}.get(args.motion, WALKS)):
        for heading in args.headings:
            blocks = measured(lambda seed, scene, fps, record, clip=clip, heading=heading: evaluate_walk(
                clip, heading, [seed], args.frames, scene=scene, fps=fps, record=record, **options)[0])
            show(f"{clip.name} turned {heading:g} deg (the floor learnt from {warmup_passes(clip)} earlier passes)", blocks)


def evaluate_walk(clip, heading: float, seeds, frames: int = 300, stabilise: bool = True, scene: bool = True,
                  depth_every: int | None = None, fps: float = FPS, record: dict | None = None,
                  contacts: str = "rules") -> list[dict]:
    """A short real clip (`tests.mocap_clips.WALKS`, ...) turned `heading` degrees about the vertical (0: as
    captured, straight away from the camera; 90: across the view), after earlier passes of the same clip
    (`warmup_passes`; tracks of their own, their own noise), so the floor is known; at `fps` (`at_rate`; `frames`
    at the clip's own rate). record: as `evaluate`'s (the last seed's run)."""
    from tests.mocap_clips import clip_walk

    earlier = [at_rate(clip_walk(clip, heading=heading), fps)] * warmup_passes(clip)
    return [evaluate(frames, seed, stabilise=stabilise, truth=at_rate(clip_walk(clip, frames, heading), fps), warmup=earlier,
                     scene=scene, depth_every=depth_every, record=record, contacts=contacts) for seed in seeds]


def warmup_passes(clip) -> int:
    """Earlier passes of `clip` that give the floor's first fit (30 depth frames) with room to spare: two for the
    3-4 s walks, five for the 1.2 s run (WARMUP_FRAMES at the clip's own rate: the same seconds at any --fps)."""
    return max(2, int(np.ceil(WARMUP_FRAMES / len(clip.joints))))


def print_per_seed(results: list[dict], seeds: list[int], width: int) -> None:
    """One row per measure (the dicts' keys), one column per seed, then their mean."""
    print(f"{'seed':{width}s} " + " ".join(f"{s:8d}" for s in seeds) + "     mean")
    for name in results[0]:
        values = [r[name] for r in results]
        print(f"{name:{width}s} " + " ".join(f"{v:8.2f}" for v in values) + f" {np.mean(values):8.2f}")


if __name__ == "__main__":
    main()
