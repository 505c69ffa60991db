"""Motion beyond walking, by category: foot contacts and the avatar's feet through the run's own stages.

The corpus (`bench/corpus.py`): the CMU trials of `--corpus DIR` (or `$SAPIENS_MOCAP_DIR`; jump, dance, turn,
side step, backward, crouch, lunge, brisk and slow walk) and the project's own clips in tests/data/mocap (walks,
runs, a turning walk, stylised walks and a hop), each at `--fps` (24, 30, 60: the 60 fps clips resampled, the 30 fps
ones too, by a cubic spline), seen from `--views` (front: the body faces the camera on its first half second; side:
it faces across the view; 45: between), with `--seeds` of measurement noise. Seen as bench/rig.py sees a walk: its
camera (tests/ground_synthetic.py: 1.5 m up, 15 degrees down), its noise (`bench.rig._measured`: 1 px on the 2D
keypoints, 1.5 cm and 2 % scale jitter on the 3D) and its scene (`bench.rig.scene_maps`: the floor and a back wall
as a pointmap with the person drawn in), the pointmap every DEPTH_PERIOD seconds. The clip's path is centred in
front of the camera, at least 4 m out and far enough that it stays in view.

The frames go through the run's own stages, as `sapiens-rt run --camera static` runs them: egomotion (static) ->
ground -> world -> motion (`realtime.stages`). The floor is known when the clip starts: WARMUP_DEPTH_FRAMES depth
frames of the same clip (another track) come first, as on a camera that has been running.

Measured per category, view and frame rate (pooled over the clips and seeds), against the truth from the clean
motion (`bench.corpus.true_contacts`: a heel or the toes on the floor and still):
- contact precision and recall (`Person.contacts`, per foot and frame), a decision within TOLERANCE (67 ms) of a
  true touchdown or lift-off counting neither way;
- slide: the avatar's feet (forward kinematics of `Person.bones`, placed in the world stage's world) along the
  floor between two frames of true contact, mm per 1/30 s (so frame rates compare): the ankle (the foot bone's
  head) while the heel is down, the toes (the toes bone's head) while the toes are; the mean;
- float and penetration: on the frames a foot is held, the avatar's foot above (below) where it rests on the floor
  (its ankle and toes against their true resting heights), the 95th percentile, cm. The heights are above the floor
  as the world stage defines it, where the planted feet's lowest keypoints stand (`planted_level`: 1-2.5 cm above the
  corpus's y = 0, its lowest foot point's 2nd percentile). Below is measured against the lower of the resting height
  and where the true point is on that frame (`sinking`), above against the higher of the two (`floating`: the lower
  of the ankle and toes above them), so the clean motion scores 0 on both (a flat foot's true ankle and toes wander
  1-2 cm about their resting heights during a stance, and some stances of a clip stand over 2 cm above them);
- airborne held: frames a foot is held while no foot is truly near the floor (both feet in the air), outside the
  tolerance of that foot's own touchdown and lift-off; of the airborne frames;
- root jitter: the avatar's root in the world less the true hips there, off a quadratic through it over 0.2 s,
  RMS mm (the error's shake; its slow part, as the live filter's lag, is left out);
- 30 vs 60 fps agreement: the share of common timestamps (every 1/30 s) at which the 30 and 60 fps runs of the same
  clip, view and seed decide each foot alike. Each frame's noise is keyed by its timestamp (`measured_by_time`), so the
  two runs see the same measurements on their common frames, as a 60 fps video and the same video with every other
  frame dropped do: what differs is the rate alone.
The last line: the worst of each, and the clip, view and rate it is on, over the held-out clips
(`bench.corpus.HELD_OUT` and every clip of an `--extra` folder; each clip, view and frame rate pooled over the seeds),
against the goals of issue 51.
`--extra DIR` (again for more folders): clips beyond the corpus, e.g. CMU trials of other subjects, named as the
corpus's are (`<category>_cmu_<subject>_<trial>.bvh`: the category from the name), every one held out.
Run: python bench/motion.py [--corpus DIR] [--extra DIR ...] [--fps 24 30 60] [--views front side 45] [--seeds 0 1]
     [--clips NAME ...] [--categories NAME ...] [--held-out-only] [--fast] [--json FILE]
`--json FILE` also writes the table's rows and each clip's measures unrounded (a measure not measured is null).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.signal import savgol_filter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import corpus  # noqa: E402
from bench import rig as rig_bench  # noqa: E402
from bench.corpus import NAMES, Motion, Truth  # noqa: E402
from realtime.errors import UserError  # noqa: E402
from realtime.export.staging import check_output, staged  # noqa: E402
from realtime.frames import DenseMaps, Frame  # noqa: E402
from realtime.options import CONTACT_DECIDERS  # noqa: E402
from realtime.outputs import check_writable  # noqa: E402
from realtime.pipeline import flush_through, through  # noqa: E402
from realtime.rig.bones import bone_table  # noqa: E402
from realtime.rig.contact_model import ContactNet  # noqa: E402
from realtime.rig.leg_ik import FOOT_POINTS  # noqa: E402
from realtime.rig.solver import Skeleton, camera_to_rig, forward_kinematics  # noqa: E402
from realtime.rig.world import RIG_FROM_CAMERA, transform_points  # noqa: E402
from realtime.stages import EgomotionStage, GroundStage, MotionStage, WorldStage  # noqa: E402
from tests.ground_synthetic import CENTRE, FOCAL, Walk, camera_pose  # noqa: E402

TOLERANCE = 0.067  # s: a decision this close to a true touchdown or lift-off counts neither way (2 frames at 30 fps)
DEPTH_PERIOD = rig_bench.DEPTH_EVERY / rig_bench.FPS  # s: the pointmap (and 3D keypoints) every this often
WARMUP_DEPTH_FRAMES = 46  # depth frames before the clip: past the world floor's first fit (the 40th: 30 after the first 10)
SLIDE_PER = 1 / 30  # s: slide is reported per this much time
JITTER_WINDOW = 0.2  # s: root jitter is the root's distance from a quadratic through it over this span
FLOAT_PERCENTILE = 95
NOISE_TICK = 1 / 1200  # s: timestamps key the measurement noise to this grid (24, 30 and 60 fps frames all fall on it)
FPS_RATES = (24.0, 30.0, 60.0)
VIEWS = {"front": 0.0, "side": 90.0, "45": 45.0}  # degrees the body's facing is turned away from the camera
MIN_DISTANCE, NEAREST, HALF_VIEW = 4.0, 2.5, np.radians(28.0)  # m, m, rad: the clip's path in view
FAST_SECONDS = 2.0  # --fast: the first this many seconds of each clip, one seed
HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]
GOALS = {  # issue 51: (measure, the goal's bound, True: at least, False: at most)
    "precision": (0.9, True), "recall": (0.9, True), "slide_mm": (2.0, False), "float_cm": (2.0, False),
    "penetration_cm": (1.0, False), "airborne_held": (0, False), "agreement": (0.95, True)}
_IMAGE = np.zeros((2 * int(CENTRE[1]), 2 * int(CENTRE[0]), 3), np.uint8)  # the camera's frame size (never drawn)
_BONES = bone_table()
_BONE_INDEX = {b.name: i for i, b in enumerate(_BONES)}
_FOOT = [_BONE_INDEX["leftFoot"], _BONE_INDEX["rightFoot"]]  # heads: the ankles
_TOES = [_BONE_INDEX["leftToes"], _BONE_INDEX["rightToes"]]  # heads: the toes' midpoints


# ---- the measures (pure functions of tracks) ----

def near_events(truth: np.ndarray, times: np.ndarray, tolerance: float = TOLERANCE) -> np.ndarray:
    """(T, ...) True at frames within `tolerance` seconds of a change of the boolean track `truth` (T, ...); a change
    between two frames happens midway between their timestamps."""
    truth = np.asarray(truth, bool)
    out = np.zeros(truth.shape, bool)
    changes = truth[1:] != truth[:-1]
    middle = (times[1:] + times[:-1]) / 2
    for index in zip(*np.nonzero(changes)):
        at = middle[index[0]]
        rest = index[1:]
        out[(slice(None), *rest)] |= np.abs(times - at) <= tolerance + 1e-9
    return out


def contact_counts(decided: np.ndarray, truth: np.ndarray, times: np.ndarray, valid: np.ndarray | None = None,
                   tolerance: float = TOLERANCE) -> tuple[int, int, int]:
    """(true, false, missed) contact decisions of (T, 2) `decided` against (T, 2) `truth` on the `valid` (T,) frames,
    leaving out those within `tolerance` of a true touchdown or lift-off."""
    decided, truth = np.asarray(decided, bool), np.asarray(truth, bool)
    counted = ~near_events(truth, times, tolerance)
    if valid is not None:
        counted &= np.asarray(valid, bool)[:, None]
    return (int((decided & truth & counted).sum()), int((decided & ~truth & counted).sum()),
            int((~decided & truth & counted).sum()))


def slide_steps(points: np.ndarray, contact: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Each step along the floor (x-z; y is up) of (T, 3) world `points` between two frames both in `contact` (T,),
    in mm per SLIDE_PER seconds."""
    both = np.asarray(contact, bool)[1:] & np.asarray(contact, bool)[:-1]
    move = np.diff(points, axis=0)[..., [0, 2]]
    ok = both & np.isfinite(move).all(axis=-1)
    return 1000 * np.linalg.norm(move[ok], axis=-1) * SLIDE_PER / np.diff(times)[ok]


def airborne_held(decided: np.ndarray, airborne: np.ndarray, truth: np.ndarray, times: np.ndarray,
                  tolerance: float = TOLERANCE) -> int:
    """Frames a foot is held ((T, 2) `decided`) while the body is `airborne` (T,), outside `tolerance` of that
    foot's own true touchdowns and lift-offs ((T, 2) `truth`)."""
    held = np.asarray(decided, bool) & np.asarray(airborne, bool)[:, None] & ~near_events(truth, times, tolerance)
    return int(held.any(axis=1).sum())


def agreement(times_a: np.ndarray, decided_a: np.ndarray, times_b: np.ndarray, decided_b: np.ndarray,
              valid_a: np.ndarray | None = None, valid_b: np.ndarray | None = None) -> tuple[int, int]:
    """(decisions alike, decisions compared) of two runs (T, 2) at their common timestamps (to the millisecond)."""
    valid_a = np.ones(len(times_a), bool) if valid_a is None else np.asarray(valid_a, bool)
    valid_b = np.ones(len(times_b), bool) if valid_b is None else np.asarray(valid_b, bool)
    key_a, key_b = np.round(np.asarray(times_a) * 1000).astype(np.int64), np.round(np.asarray(times_b) * 1000).astype(np.int64)
    common, ia, ib = np.intersect1d(key_a[valid_a], key_b[valid_b], return_indices=True)
    a, b = np.asarray(decided_a)[valid_a][ia], np.asarray(decided_b)[valid_b][ib]
    return int((a == b).sum()), int(a.size)


def root_jitter(root: np.ndarray, fps: float, window: float = JITTER_WINDOW) -> float:
    """RMS distance (mm) of the (T, 3) root track (or its error against the truth) from a quadratic through it over
    `window` seconds (Savitzky-Golay), over its finite stretch; NaN when that is shorter than the window."""
    ok = np.isfinite(root).all(axis=1)
    length = max(5, int(round(window * fps)) | 1)
    if ok.sum() < length:
        return float("nan")
    track = root[np.flatnonzero(ok)[0]:np.flatnonzero(ok)[-1] + 1]
    if not np.isfinite(track).all():
        return float("nan")
    residual = track - savgol_filter(track, length, 2, axis=0)
    return 1000 * float(np.sqrt((residual ** 2).sum(axis=1).mean()))


def elevations(feet: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """(T, 2) each foot's height above where it rests: the lower of its points' heights above their resting heights
    (`feet` (T, 2, P, 3) world, y up; `rest` (2, P) m)."""
    return np.min(feet[..., 1] - rest[None], axis=2)


def floating(feet: np.ndarray, rest: np.ndarray, true_heights: np.ndarray) -> np.ndarray:
    """(T, 2) how far each foot is above where it rests (0 where it is not): the lower of its points' heights above both
    their resting heights and the true points' heights on that frame (`feet` (T, 2, P, 3) world, y up; `rest` (2, P) m;
    `true_heights` (T, 2, P) m). As `sinking` below: the true foot itself never floats (a truly held foot stands 1-2.6
    cm over one resting height on some stances of a clip; a foot held where the true one is counts in P, not here)."""
    return np.maximum(np.min(feet[..., 1] - np.maximum(rest[None], true_heights), axis=2), 0.0)


def sinking(feet: np.ndarray, rest: np.ndarray, true_heights: np.ndarray) -> np.ndarray:
    """(T, 2) how far each foot is below where it rests (0 where it is not): the most any of its points is below both
    its resting height and the true point's height on that frame (`feet` (T, 2, P, 3) world, y up; `rest` (2, P) m;
    `true_heights` (T, 2, P) m, the true points' heights on the same floor). The true foot itself never sinks: a
    stance's ankle and toes wander about their resting heights, and an avatar that follows them is not in the floor."""
    return np.maximum(np.max(np.minimum(rest[None], true_heights) - feet[..., 1], axis=2), 0.0)


# ---- a run through the stages ----

@dataclass
class Run:
    """One clip at one rate, view and seed through the stages: per frame (T), the decisions (T, 2) and where they
    exist (T,), the avatar's feet in the world (T, 2, 2, 3: left/right, ankle/toes), its root (T, 3), the truth."""

    name: str
    category: str
    fps: float
    view: str
    seed: int
    times: np.ndarray
    truth: Truth
    decided: np.ndarray
    valid: np.ndarray
    feet: np.ndarray
    root: np.ndarray
    true_root: np.ndarray  # (T, 3) the true hips in the same world (the world stage's camera on the true camera)
    rest: np.ndarray  # (2, 2) the true ankle's and toes' heights when the foot rests flat, m above `planted_level`
    true_heights: np.ndarray  # (T, 2, 2) the true ankle's and toes' heights on every frame, m above `planted_level`


def seen(motion: Motion, view: str, truth: Truth) -> Walk:
    """The motion turned so that its body faces `view` (VIEWS) on its first half second, its path centred in front of
    bench/rig.py's camera, as that camera sees it (a `tests.ground_synthetic.Walk`; contacts: `truth`'s). The facing
    and the path's extent are read on the frames every DEPTH_PERIOD, instants every frame rate has, so the motion is
    placed alike at 24, 30 and 60 fps."""
    on_grid = np.abs(motion.times / DEPTH_PERIOD - np.round(motion.times / DEPTH_PERIOD)) < 1e-6
    first = motion.joints[on_grid & (motion.times < 0.5)]
    left = (first[:, HIPS[0]] - first[:, HIPS[1]]).mean(axis=0)
    facing = np.degrees(np.arctan2(left[0], -left[2]))  # the body's forward, left x up = (-left z, 0, left x): atan2(z, x)
    # the camera looks along +z: facing it is -z (-90 degrees); turned away by `view` towards +x
    target = -90.0 + VIEWS[view]
    moved = corpus.turned(motion, facing - target)
    world = moved.joints.copy()
    hips = world[on_grid][:, HIPS].mean(axis=1)
    low, high = np.nanmin(hips, axis=0), np.nanmax(hips, axis=0)
    half = (high - low) / 2
    distance = max(MIN_DISTANCE, half[2] + NEAREST, half[0] / np.tan(HALF_VIEW) + half[2])
    world -= np.array([(low[0] + high[0]) / 2, 0.0, (low[2] + high[2]) / 2 - distance])
    rotation, centre = camera_pose()
    camera = (world - centre) @ rotation.T
    pixels = FOCAL * camera[..., :2] / camera[..., 2:] + CENTRE
    return Walk(world, camera, pixels, truth.contact, rotation @ np.array([0.0, 1.0, 0.0]), motion.times)


def planted_level(world: np.ndarray, truth: Truth) -> float:
    """The height (m, y up) the clean motion's planted feet stand at, as the world stage's floor is defined (the
    feet's lowest keypoints, `realtime.rig.floor.FloorEstimator`'s soles): the median, over the frames a foot stands
    flat (heel and toes truly down), of its lowest heel or toe keypoint; of every frame's lower foot where no foot
    ever does. The corpus's y = 0 is its lowest foot point's 2nd percentile over the clip, 1-2.5 cm below this."""
    points = world[:, [NAMES.index(f"{side}_{p}") for side in ("left", "right") for p in FOOT_POINTS]]
    lowest = points[..., 1].reshape(len(world), 2, len(FOOT_POINTS)).min(axis=2)  # (T, 2)
    flat = truth.heel & truth.toes
    return float(np.median(lowest[flat]) if flat.sum() >= 3 else np.median(lowest.min(axis=1)))


def foot_heights(world: np.ndarray) -> np.ndarray:
    """(T, 2, 2) each foot's ankle and toes (the big and small toe's midpoint) height, y up, as `world` has them."""
    _, toes = corpus.foot_points(world)
    ankles = world[:, [NAMES.index("left_ankle"), NAMES.index("right_ankle")]]
    return np.stack([ankles[..., 1], toes[..., 1]], axis=2)


def resting_heights(world: np.ndarray, truth: Truth) -> np.ndarray:
    """(2, 2) each foot's ankle and toes height when the foot stands flat (heel and toes truly down): the median over
    those frames; where a foot never does, the 5th percentile of each. Heights as `world` has them (y up)."""
    heights = foot_heights(world)
    out = np.zeros((2, 2))
    for side in range(2):
        flat = truth.heel[:, side] & truth.toes[:, side]
        for p in range(2):
            values = heights[:, side, p]
            out[side, p] = np.median(values[flat]) if flat.sum() >= 3 else np.percentile(values, 5)
    return out


def _rest_height(bones) -> float:
    """The motion stage's camera-relative root height at rest: its skeleton's `floor_height` (`LiveSolver`)."""
    return Skeleton(_BONES, np.asarray(bones.offsets, np.float64), np.zeros((len(_BONES), 3))).floor_height()


def camera_origin(person) -> np.ndarray | None:
    """On a performer's first frame of camera-relative bones: where the motion stage put the root's origin (rig
    axes of the camera: `LiveSolver` places the root at the hips less it, raised to the rest height), from the hips
    it solved from (`Person.keypoints3d_smoothed`); None without them. Nothing moves the root off the hips on a
    performer's first frame (no foot is pinned yet)."""
    bones, points = person.bones, person.keypoints3d_smoothed
    if bones is None or points is None:
        return None
    hips = camera_to_rig(np.asarray(points, np.float64)[HIPS].mean(axis=0))
    origin = hips - np.asarray(bones.root_position) + np.array([0.0, _rest_height(bones), 0.0])
    return origin if np.isfinite(origin).all() else None


def avatar_world(frame: Frame, person, origin: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The avatar of `person` (its `Person.bones`) in the frame's world: ((2, 2, 3) the feet's ankle and toes heads,
    (3,) the root), by forward kinematics. On frames in the world (`Frame.camera.world`) the bones' root is there
    already; on a static camera's frames (camera-relative bones) the root is taken back to the camera with the
    performer's `origin` (`camera_origin` of its first such frame) and placed in the world of the world stage's
    camera, the body turned with it (as `realtime.rig.world.bones_to_world`); without `origin`, at the hips the
    motion stage solved from (`Person.keypoints3d_smoothed`: what the root moves with but for the feet's pins).
    None before the world is grounded or without bones."""
    bones, camera = person.bones, frame.camera
    if bones is None or camera is None or not camera.grounded:
        return None
    if tuple(bones.names) != tuple(b.name for b in _BONES):
        raise ValueError("Person.bones is not in realtime.rig.bones.bone_table's order: the bench needs that table")
    skeleton = Skeleton(_BONES, np.asarray(bones.offsets, np.float64), np.zeros((len(_BONES), 3)))
    heads, _ = forward_kinematics(skeleton, np.asarray(bones.root_position)[None], np.asarray(bones.rotations)[None])
    heads = heads[0]
    if camera.world:
        return heads[[_FOOT, _TOES]].transpose(1, 0, 2), heads[0]
    world_from_camera = camera.world_from_camera
    if origin is not None:
        hips = camera_to_rig(np.asarray(bones.root_position) + origin - np.array([0.0, _rest_height(bones), 0.0]))
    elif person.keypoints3d_smoothed is not None:
        hips = np.asarray(person.keypoints3d_smoothed, np.float64)[HIPS].mean(axis=0)
    else:
        return None
    root = transform_points(world_from_camera, hips)
    turn = world_from_camera[:3, :3] @ RIG_FROM_CAMERA
    placed = root + (heads - heads[0]) @ turn.T
    return placed[[_FOOT, _TOES]].transpose(1, 0, 2), root


def _frame(index: int, timestamp: float, person, maps: DenseMaps | None) -> Frame:
    dense = None if maps is None else DenseMaps(computed_on=index, seg=maps.seg, pointmap=maps.pointmap)
    return Frame(index=index, timestamp=timestamp, image=_IMAGE, people=(person,), dense=dense)


def run_clip(motion: Motion, view: str, seed: int, truth: Truth | None = None, record: dict | None = None,
             lag: float = 0.0, contacts: str = "rules", contact_model: ContactNet | None = None) -> Run:
    """`motion` (at its rate) seen from `view` with noise `seed`, through egomotion (static) -> ground -> world ->
    motion; the floor learnt first from WARMUP_DEPTH_FRAMES depth frames of the same motion (another track).
    truth: its true contacts at its timestamps (default: `bench.corpus.true_contacts` of `motion`). record: a dict
    that gets, per frame of the clip, the frame out of the stages ("frames") and the true keypoints in the camera
    ("true_camera", (T, K, 3)), for diagnostics (bench/avatar_chain.py). lag: the ground stage's hindsight (s,
    `--motion-lag`); contacts: the ground stage's decider ("learned" or "rules"); contact_model: the learned
    decider's weights (None: the package's, `--contact-weights`)."""
    truth = corpus.true_contacts(motion) if truth is None else truth
    truth_walk = seen(motion, view, truth)
    stages = [EgomotionStage(camera="static"), GroundStage(NAMES, lag=lag, contacts=contacts, contact_model=contact_model),
              WorldStage(NAMES, camera="static"),
              MotionStage(NAMES)]
    count = len(motion.times)
    decided = np.zeros((count, 2), bool)
    valid = np.zeros(count, bool)
    feet = np.full((count, 2, 2, 3), np.nan)
    root, true_root = np.full((count, 3), np.nan), np.full((count, 3), np.nan)
    true_hips = truth_walk.camera[:, HIPS].mean(axis=1)
    origin = None  # the motion stage's root origin of the clip's performer (camera-relative bones)
    for frame in run_frames(stages, motion, truth_walk, seed):
        t = frame.index - WARMUP_DEPTH_FRAMES
        if t < 0:
            continue
        if record is not None:
            record.setdefault("frames", []).append(frame)
        out = frame.people[0]
        if out.contacts is not None:
            decided[t], valid[t] = out.contacts, True
        if origin is None and frame.camera is not None and not frame.camera.world:
            origin = camera_origin(out)
        avatar = avatar_world(frame, out, origin)
        if avatar is not None:
            feet[t], root[t] = avatar
            true_root[t] = transform_points(frame.camera.world_from_camera, true_hips[t])
    for stage in stages:
        stage.close()
    if record is not None:
        record["true_camera"] = truth_walk.camera
    level = planted_level(truth_walk.world, truth)
    return Run(motion.name, motion.category, motion.fps, view, seed, motion.times, truth, decided, valid, feet, root,
               true_root, resting_heights(truth_walk.world, truth) - level, foot_heights(truth_walk.world) - level)


def _tick(time: float) -> int:
    """A timestamp as a whole number of NOISE_TICK: the key of that instant's noise."""
    return int(round(float(time) / NOISE_TICK))


def measured_by_time(walk: Walk, seed: int):
    """`bench.rig._measured` of each frame of `walk` with its own generator, keyed by `seed` and the frame's timestamp:
    the same instant gets the same noise at every frame rate, as a 30 fps video of a 60 fps one (every other frame
    dropped) shows the network the same images there. Returns (pixels, depth, scores, scale) as `_measured` does."""
    frames = [rig_bench._measured(replace(walk, camera=walk.camera[t:t + 1], pixels=walk.pixels[t:t + 1],
                                          times=walk.times[t:t + 1]), np.random.default_rng([seed, _tick(at)]))
              for t, at in enumerate(walk.times)]
    return tuple(np.concatenate(part) for part in zip(*frames))


def run_frames(stages: list, motion: Motion, truth_walk: Walk, seed: int, by_time: bool = True):
    """The frames out of `stages` (in order; a stage that holds frames is flushed at the end) for `motion` as
    `truth_walk` shows it, measured with noise `seed`: first the warm-up (WARMUP_DEPTH_FRAMES depth frames of the
    motion every DEPTH_PERIOD, played forward and back, as another track: frame indices below WARMUP_DEPTH_FRAMES),
    then every frame of the clip (index WARMUP_DEPTH_FRAMES + its frame), a second later. by_time: each frame's
    noise (keypoints and pointmap) keyed by its timestamp (`measured_by_time`: a clip's 30 and 60 fps runs see the
    same noise on their common frames); False: one draw per clip and rate in frame order (what the committed contact
    weights were trained on, bench/train_contacts.py)."""
    background = rig_bench.scene_background()
    every = max(1, int(round(DEPTH_PERIOD * motion.fps)))
    if by_time:
        pixels, depth, scores, scale = measured_by_time(truth_walk, seed)

        def map_rng(t):
            return np.random.default_rng([seed, _tick(motion.times[t]), 1])
    else:
        rng, maps_rng = np.random.default_rng([seed, int(motion.fps)]), np.random.default_rng([seed, int(motion.fps), 1])
        pixels, depth, scores, scale = rig_bench._measured(truth_walk, rng)

        def map_rng(t):
            return maps_rng
    count = len(motion.times)
    index = np.arange(WARMUP_DEPTH_FRAMES) * every % max(2 * count - 2, 1)
    index = np.where(index < count, index, 2 * count - 2 - index)
    for k, t in enumerate(index):
        person = rig_bench._person(2, pixels[t], scores[t], depth[t], True)
        maps = rig_bench.scene_maps(background, truth_walk.camera[t], scale[t], map_rng(t))
        yield from through(stages, _frame(k, k * DEPTH_PERIOD, person, maps))
    start = WARMUP_DEPTH_FRAMES * DEPTH_PERIOD + 1.0
    for t in range(count):
        depth_frame = t % every == 0
        person = rig_bench._person(1, pixels[t], scores[t], depth[t], depth_frame)
        maps = rig_bench.scene_maps(background, truth_walk.camera[t], scale[t], map_rng(t)) if depth_frame else None
        yield from through(stages, _frame(WARMUP_DEPTH_FRAMES + t, start + motion.times[t], person, maps))
    yield from flush_through(stages)


# ---- pooling ----

@dataclass
class Pool:
    """Measures pooled over runs."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    slides: list = field(default_factory=list)
    floats: list = field(default_factory=list)
    sinkings: list = field(default_factory=list)
    airborne_held: int = 0
    airborne: int = 0
    jitters: list = field(default_factory=list)
    alike: int = 0
    compared: int = 0
    runs: int = 0

    def add(self, run: Run) -> None:
        tp, fp, fn = contact_counts(run.decided, run.truth.contact, run.times, run.valid)
        self.tp, self.fp, self.fn, self.runs = self.tp + tp, self.fp + fp, self.fn + fn, self.runs + 1
        for side in range(2):
            for p, down in enumerate((run.truth.heel[:, side], run.truth.toes[:, side])):
                self.slides.append(slide_steps(run.feet[:, side, p], down, run.times))
        held = run.decided & run.valid[:, None] & np.isfinite(run.feet[..., 1]).all(axis=2)
        self.floats.append(floating(run.feet, run.rest, run.true_heights)[held])
        self.sinkings.append(sinking(run.feet, run.rest, run.true_heights)[held])
        self.airborne_held += airborne_held(run.decided & run.valid[:, None], run.truth.airborne & run.valid,
                                            run.truth.contact, run.times)
        self.airborne += int((run.truth.airborne & run.valid).sum())
        self.jitters.append(root_jitter(run.root - run.true_root, run.fps))

    def add_pair(self, a: Run, b: Run) -> None:
        alike, compared = agreement(a.times, a.decided, b.times, b.decided, a.valid, b.valid)
        self.alike, self.compared = self.alike + alike, self.compared + compared

    def measures(self) -> dict[str, float]:
        slides = np.concatenate(self.slides) if self.slides else np.zeros(0)
        heights = np.concatenate(self.floats) if self.floats else np.zeros(0)
        sunk = np.concatenate(self.sinkings) if self.sinkings else np.zeros(0)
        jitters = [j for j in self.jitters if np.isfinite(j)]
        return {
            "precision": self.tp / (self.tp + self.fp) if self.tp + self.fp else float("nan"),
            "recall": self.tp / (self.tp + self.fn) if self.tp + self.fn else float("nan"),
            "slide_mm": float(slides.mean()) if len(slides) else float("nan"),
            "float_cm": 100 * float(np.percentile(heights, FLOAT_PERCENTILE)) if len(heights) else 0.0,
            "penetration_cm": 100 * float(np.percentile(sunk, FLOAT_PERCENTILE)) if len(sunk) else 0.0,
            "airborne_held": self.airborne_held,
            "airborne": self.airborne,
            "jitter_mm": float(np.sqrt(np.mean(np.square(jitters)))) if jitters else float("nan"),
            "agreement": self.alike / self.compared if self.compared else float("nan"),
        }


HEADER = (f"{'category':11s} {'view':5s} {'fps':>3s} {'clips':>5s} {'P':>5s} {'R':>5s} {'slide':>6s} {'float':>6s} "
          f"{'pen':>5s} {'air held':>9s} {'jitter':>6s} {'30v60':>6s}")
UNITS = (f"{'':11s} {'':5s} {'':>3s} {'':>5s} {'':>5s} {'':>5s} {'mm/30':>6s} {'cm p95':>6s} {'cm':>5s} "
         f"{'frames':>9s} {'mm':>6s} {'agree':>6s}")


def row(category: str, view: str, fps: float, clips: int, m: dict) -> str:
    def f(value, width, digits):
        return f"{value:{width}.{digits}f}" if np.isfinite(value) else f"{'-':>{width}s}"

    held = f"{m['airborne_held']}/{m['airborne']}"
    return (f"{category:11s} {view:5s} {fps:3.0f} {clips:5d} {f(m['precision'], 5, 2)} {f(m['recall'], 5, 2)} "
            f"{f(m['slide_mm'], 6, 2)} {f(m['float_cm'], 6, 2)} {f(m['penetration_cm'], 5, 2)} {held:>9s} "
            f"{f(m['jitter_mm'], 6, 1)} {f(m['agreement'], 6, 3)}")


def worst_line(per_clip: dict[tuple, dict]) -> str:
    """The worst of each measure over `per_clip` ((clip, view, fps) -> measures), against GOALS, and where it is (the
    first such clip, view and rate: a category's rows pool its clips, which can hide one)."""
    parts = []
    for name, (goal, at_least) in GOALS.items():
        values = [(m[name], key) for key, m in per_clip.items() if np.isfinite(m[name])]
        if not values:
            parts.append(f"{name} - (goal {'>=' if at_least else '<='} {goal:g}: not measured)")
            continue
        worst, (clip, view, fps) = (min if at_least else max)(values, key=lambda value: value[0])
        met = worst >= goal if at_least else worst <= goal
        shown = f"{worst:d}" if isinstance(worst, (int, np.integer)) else f"{worst:.3g}"
        parts.append(f"{name} {shown} ({'>=' if at_least else '<='} {goal:g}: {'met' if met else 'NOT met'}; "
                     f"{clip} {view} {fps:g} fps)")
    jitters = [m["jitter_mm"] for m in per_clip.values() if np.isfinite(m["jitter_mm"])]
    if jitters:
        parts.append(f"jitter_mm {max(jitters):.3g}")
    return "held-out worst: " + "; ".join(parts)


def select(args) -> list[Motion]:
    """The motions the options name: every clip of the corpus, the project and the --extra folders, narrowed by
    --clips, --categories and --held-out-only (the default corpus folder is read only when some of them come from
    it)."""
    project = list(corpus.PROJECT)
    extras = {path.stem: path for path in corpus.extra_files(args.extra or [])}
    need_corpus = args.corpus is not None or not args.clips or any(name not in corpus.PROJECT and name not in extras
                                                                    for name in args.clips)
    files = corpus.corpus_files(args.corpus) if need_corpus else []
    available = {path.stem: path for path in files}
    available.update({name: corpus.PROJECT_FOLDER / f"{name}.bvh" for name in project})
    taken = sorted(set(available) & set(extras))
    if taken:
        raise corpus.CorpusError(f"--extra: {extras[taken[0]]} has the name of a clip of the corpus or the project "
                                 f"({taken[0]}): rename it")
    available.update(extras)
    if args.clips:
        unknown = [name for name in args.clips if name not in available]
        if unknown:
            raise corpus.CorpusError(f"--clips: no clip named {', '.join(unknown)} (the clips are the corpus's file names "
                                     f"without .bvh and {', '.join(project)})")
        names = list(dict.fromkeys(args.clips))
    else:
        names = list(available)
    motions = [corpus.load_motion(available[n], corpus.PROJECT.get(n), n in extras) for n in names]
    if args.categories:
        wanted = [c for item in args.categories for c in item.split(",") if c]  # "run,kick" as "run kick"
        known = {m.category for m in motions}
        if not wanted:
            raise corpus.CorpusError(f"--categories: name at least one category (these are: {', '.join(sorted(known))})")
        unknown = [c for c in wanted if c not in known]
        if unknown:
            raise corpus.CorpusError(f"--categories: no clip of {', '.join(unknown)} (these are: {', '.join(sorted(known))})")
        motions = [m for m in motions if m.category in wanted]
    if args.held_out_only:
        motions = [m for m in motions if m.held_out]
    if not motions:
        raise corpus.CorpusError("no clip left to measure: name fewer --clips / --categories, or drop --held-out-only")
    return motions


def measure(motions: list[Motion], rates, views, seeds, fast: bool = False, log=None, lag: float = 0.0,
            contacts: str = "rules", contact_model: ContactNet | None = None) -> dict:
    """Every motion at every rate, view and seed: {(clip, view, fps): Pool} and the runs' count and seconds; progress
    to `log` (default: stderr). lag, contacts, contact_model: `run_clip`'s."""
    log = log or sys.stderr
    pools: dict[tuple, Pool] = {}
    started, cpu, count = time.perf_counter(), time.process_time(), 0
    for motion in motions:
        if fast:
            motion = replace(motion, joints=motion.joints[: int(FAST_SECONDS * motion.fps) + 1])
        # at the clip's own rate: every rate is judged by the same truth. Above the clip's rate every clip frame is
        # kept and an instant midway between two is in contact only where both are (the foot there is halfway down,
        # not yet still); below it frames are dropped, and the nearest keeps a clip's contact of one frame
        truth = corpus.true_contacts(motion)
        for view in views:
            for seed in seeds:
                runs = {}
                for fps in rates:
                    begun = time.perf_counter()
                    at_rate = corpus.resample(motion, fps)
                    midway = "both" if fps > motion.fps + 1e-6 else "later"
                    runs[fps] = run_clip(at_rate, view, seed, truth.at(at_rate.times, midway=midway), lag=lag,
                                         contacts=contacts, contact_model=contact_model)
                    count += 1
                    pools.setdefault((motion.name, view, fps), Pool()).add(runs[fps])
                    print(f"{motion.name} {view} {fps:g} fps seed {seed}: {len(runs[fps].times)} frames in "
                          f"{time.perf_counter() - begun:.1f} s", file=log, flush=True)
                if 30.0 in runs and 60.0 in runs:
                    for fps in rates:
                        pools[(motion.name, view, fps)].add_pair(runs[30.0], runs[60.0])
    return {"pools": pools, "runs": count, "seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu}


def report(motions: list[Motion], pools: dict, rates, views, out=None) -> list[dict]:
    """A table per category and view (tuning clips, then held-out clips) to `out` (default: stdout); the last line:
    the held-out worst. Returns the table's rows unrounded (category, view, fps, clips, held_out and the measures)."""
    out = out or sys.stdout
    category_of = {m.name: m.category for m in motions}
    rows = []
    for title, held in (("clips fitted and tuned on", False), ("held-out clips", True)):
        names = [m.name for m in motions if m.held_out == held]
        if not names:
            continue
        print(f"\n{title}: {', '.join(names)}", file=out)
        print(HEADER, file=out)
        print(UNITS, file=out)
        for category in sorted({category_of[n] for n in names}):
            clips = [n for n in names if category_of[n] == category]
            for view in views:
                for fps in rates:
                    pool = Pool()
                    for name in clips:
                        part = pools[(name, view, fps)]
                        for key in ("tp", "fp", "fn", "airborne_held", "airborne", "alike", "compared", "runs"):
                            setattr(pool, key, getattr(pool, key) + getattr(part, key))
                        pool.slides += part.slides
                        pool.floats += part.floats
                        pool.sinkings += part.sinkings
                        pool.jitters += part.jitters
                    measures = pool.measures()
                    print(row(category, view, fps, len(clips), measures), file=out)
                    rows.append({"category": category, "view": view, "fps": fps, "clips": len(clips),
                                 "held_out": held, **measures})
    held = {m.name for m in motions if m.held_out}
    held_out = {key: pool.measures() for key, pool in pools.items() if key[0] in held}
    print("", file=out)
    print(worst_line(held_out) if held_out else "held-out worst: no held-out clip measured", file=out)
    return rows


def write_json(path: Path, rows: list[dict], pools: dict, settings: dict) -> None:
    """The report's rows and each clip's measures (clip, view, fps), unrounded, as JSON at `path`, written whole or not
    at all (`realtime.export.staging.staged`); a measure that is not a finite number is null. UserError (one sentence)
    when it cannot be written."""
    def clean(measures: dict) -> dict:
        return {k: (v if isinstance(v, str) or np.isfinite(v) else None) for k, v in measures.items()}

    clips = [{"clip": clip, "view": view, "fps": fps, **clean(pool.measures())}
             for (clip, view, fps), pool in pools.items()]
    text = json.dumps({**settings, "goals": {k: v[0] for k, v in GOALS.items()}, "rows": [clean(r) for r in rows],
                       "clips": clips}, indent=1)
    staged(path, lambda temporary: temporary.write_text(text + "\n"), option="--json")


def check_json(path: Path) -> None:
    """UserError (one sentence) when --json cannot be written at `path`: the exports' own checks (a folder, a pipe or
    a device, a folder not writable), and a clip's name. Checked before the bench runs, so a long run is not lost."""
    if path.suffix.lower() == ".bvh":
        raise UserError(f"--json {path} would overwrite a clip; give a .json file name.")
    check_output(path, option="--json", example="motion.json")
    check_writable(path, option="--json")


def load_weights(path: Path) -> ContactNet:
    """The contact model's weights at `path` (`--contact-weights`); ValueError (one sentence) for a file that is not
    such a weights file."""
    if not path.is_file():
        raise ValueError(f"--contact-weights: no weights file at {path}: give the .npz that bench/train_contacts.py --out wrote")
    try:
        net = ContactNet.load(path)
    except (OSError, ValueError, KeyError, TypeError, EOFError) as error:
        raise ValueError(f"--contact-weights: {path} is not a contact model's weights ({type(error).__name__}: {error}): "
                         "give the .npz that bench/train_contacts.py --out wrote") from None
    arrays = (net.w1, net.b1, net.w2, net.b2, net.w3, net.mean, net.scale)
    if not all(np.isfinite(a).all() for a in arrays) or not np.isfinite(net.b3):
        raise ValueError(f"--contact-weights: {path} holds weights that are not finite numbers: retrain it")
    return net


class _Once(argparse.Action):
    """An option given at most once (a second --corpus would silently replace the first)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest) is not None:
            parser.error(f"{option_string} is given once: a second folder of clips goes to --extra")
        setattr(namespace, self.dest, values)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=None, action=_Once,
                        help="a folder of BVH files by category (default: $SAPIENS_MOCAP_DIR)")
    parser.add_argument("--extra", type=Path, action="append", metavar="DIR",
                        help="a folder of extra clips, every one held out (again for more folders)")
    parser.add_argument("--fps", type=float, nargs="+", default=list(FPS_RATES), help="frame rates (24 30 60)")
    parser.add_argument("--views", nargs="+", choices=list(VIEWS), default=list(VIEWS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--clips", nargs="+", help="only these clips (file names without .bvh)")
    parser.add_argument("--categories", nargs="+", help="only the clips of these categories")
    parser.add_argument("--held-out-only", action="store_true",
                        help="only the held-out clips (bench.corpus.HELD_OUT and the --extra folders)")
    parser.add_argument("--fast", action="store_true",
                        help=f"the first {FAST_SECONDS:g} s of each clip and the first seed only (a quick check)")
    parser.add_argument("--motion-lag", type=float, default=0.0, metavar="MS",
                        help="the ground stage's hindsight, as sapiens-rt run --motion-lag (default 0)")
    parser.add_argument("--contacts", choices=CONTACT_DECIDERS, default="rules",
                        help="the ground stage's contact decision, as sapiens-rt run --contacts: the rule-based detector "
                        "(default) or the learned model")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE",
                        help="also write the table's rows and each clip's measures, unrounded, as JSON to FILE")
    parser.add_argument("--contact-weights", type=Path, default=None, metavar="NPZ",
                        help="the learned model's weights file, as bench/train_contacts.py --out writes it (default: the "
                        "package's realtime/data/contact_model.npz); needs --contacts learned")
    args = parser.parse_args(argv)
    if not (np.isfinite(args.motion_lag) and 0 <= args.motion_lag <= 1000):
        parser.error(f"--motion-lag must be milliseconds from 0 to 1000, got {args.motion_lag:g}")
    if args.motion_lag > 0 and args.contacts != "learned":
        parser.error("--motion-lag gives the learned contact model hindsight; add --contacts learned")
    bad = [f for f in args.fps if not (np.isfinite(f) and 1.0 <= f <= 240.0)]
    if bad:
        parser.error(f"--fps must be between 1 and 240 frames per second, got {bad[0]:g}")
    if args.contact_weights is not None and args.contacts != "learned":
        parser.error("--contact-weights are the learned contact model's; add --contacts learned")
    seeds = args.seeds[:1] if args.fast else args.seeds
    if any(s < 0 for s in seeds):
        parser.error("--seeds must be whole numbers of 0 or more")
    try:
        if args.json is not None:
            check_json(args.json)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        motions = select(args)
    except corpus.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        net = None if args.contact_weights is None else load_weights(args.contact_weights)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rates, views = sorted(set(args.fps)), list(dict.fromkeys(args.views))
    weights = "" if args.contacts != "learned" else f"; weights {args.contact_weights or 'the package default'}"
    print(f"contacts: {args.contacts}{weights}; motion lag {args.motion_lag:g} ms", file=sys.stderr)
    result = measure(motions, rates, views, seeds, fast=args.fast, lag=args.motion_lag / 1000, contacts=args.contacts,
                     contact_model=net)
    rows = report(motions, result["pools"], rates, views)
    if args.json is not None:
        settings = {"argv": list(sys.argv[1:] if argv is None else argv), "contacts": args.contacts,
                    "motion_lag_ms": args.motion_lag, "seeds": seeds, "fps": rates, "views": views}
        try:
            write_json(args.json, rows, result["pools"], settings)
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    print(f"({result['runs']} runs in {result['seconds']:.0f} s, {result['cpu']:.0f} s of CPU)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
