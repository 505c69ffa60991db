"""The motion corpus by category: real motion capture as world keypoints, and its true foot contacts.

Three sources, by path (nothing of the first and the last is copied into the repository):
- a corpus folder (`--corpus DIR`, or `$SAPIENS_MOCAP_DIR`; the workplace's shared `mocap` folder): CMU trials as BVH,
  one standard body retargeted in Reallusion iClone (joints `CC_Base_*`, centimetres, y up, 60 fps), each
  file named `<category>_cmu_<subject>_<trial>.bvh`;
- the project's own clips, `tests/data/mocap/` (CMU, the cgspeed skeleton, metres, 30 fps; its README),
  by the category of `PROJECT`;
- folders of extra clips (`extra_files`, bench/motion.py's `--extra DIR`), named as the corpus's are, every one
  of them held out of every fit and tuning: e.g. CMU trials of other subjects in the BVH conversion of CMU's own
  skeleton (joints `LeftUpLeg`, `LeftLeg`, ..., lengths in CMU's unit of 1/0.45 inch), read as the cgspeed
  skeleton of the project's clips (`CMU_NAMES`, the unit told by the legs' length).
Each becomes a `Motion`: the 308-keypoint layout in world metres, y up, the floor at y = 0
(`tests.mocap_clips.level_floor`: fitted where the feet touch down; for the corpus only its slope along
the path, as its retarget's vertical is its floor's across it), NaN for keypoints not placed. Leading
frames the hips leave faster than MAX_SPEED (a rest pose at the origin) are dropped. Hips, knees, ankles,
shoulders, elbows, wrists and the neck's base sit at their joints; heels, toes, nose, eyes and ears at
fixed offsets in the frames of the ankle, toe and head joints (for the iClone skeleton, whose joints'
rest axes are not the body's, those offsets are set in the body's axes on one frame, the foot's flattest
and the first, and then carried rigidly by the joint).

`HELD_OUT`: clips held out of every fit and tuning (at least one per category), reported apart; so is every
clip of an extra folder (`Motion.extra`).

The held-out extra clips of CMU subjects outside the project are not in the repository: bench/cmu_clips.json lists
them (the public repository una-dinosauria/cmu-mocap at one commit, each clip's source trial, frames and sha256).
Build them into a folder of your own from the repository's raw URL at that commit (`bench.cmu_clips.RAW_URL`,
https://raw.githubusercontent.com/una-dinosauria/cmu-mocap/5d98bb6b62b4735d89ff5f53e96899de2b92d8b4) or from a
checkout of it, check them, then give the folder to the bench:
    python bench/cmu_clips.py build --source URL_OR_CHECKOUT --out DIR
    python bench/cmu_clips.py check DIR
    python bench/motion.py --corpus ... --extra DIR --held-out-only

True contacts (`true_contacts`), from the clean motion at its own rate, per foot: the heel or the toes
(the midpoint of the big and small toe) within CONTACT_HEIGHT of where that point rests (`rest_height`:
its lowest within REST_WINDOW seconds, at most REST_RISE above its low over the clip) and slower than
CONTACT_SPEED along the floor (the slope of a least-squares line through its positions over SPEED_WINDOW
seconds). Airborne: no point of either foot within CONTACT_HEIGHT of where it rests, and the hips falling
faster than FLIGHT_FALL (a parabola through their heights over ACCEL_WINDOW seconds): a body in flight falls
at g, while a foot whose heel and toes both stand over 3 cm up (a rolled foot, a dancer on the ball of the foot)
holds the hips up. Gates in metres and seconds; `Truth.at` samples a clip's truth at the timestamps of another
frame rate, so every rate is judged by the same truth (bench/motion.py, at a rate above the clip's own: an instant
midway between two of the clip's frames in contact only where both are).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation

from realtime.data import keypoint_names
from tests.mocap_clips import FOLDER as PROJECT_FOLDER
from tests.mocap_clips import Bvh, forward, level_floor, read_bvh, skeleton_keypoints

NAMES = keypoint_names()
ROOT = Path(__file__).resolve().parents[1]


CORPUS_ENV = "SAPIENS_MOCAP_DIR"  # the corpus folder when --corpus is not given


def default_corpus() -> Optional[Path]:
    """The folder `$SAPIENS_MOCAP_DIR` names, or None. (The benches name no folder outside the repository
    themselves: the workplace's corpus is given by path, `--corpus`.)"""
    value = os.environ.get(CORPUS_ENV)
    return Path(value) if value else None

# The project's own clips (tests/data/mocap) by category; the corpus folder's files carry theirs in their names.
PROJECT = {
    "cmu_07_04": "walk", "cmu_07_06": "walk", "cmu_08_11": "walk", "cmu_35_05": "walk", "cmu_16_32": "walk",
    "cmu_39_03": "walk", "cmu_38_01": "walk", "cmu_55_04": "walk", "cmu_05_01": "walk",
    "cmu_35_24": "run", "cmu_09_03": "run",
    "cmu_16_18": "turn",  # a walk turning 90 degrees left
    "cmu_131_01": "stylised", "cmu_131_02": "stylised", "cmu_131_03": "stylised",  # start, walk (hop), stop; feet glide
}
# Held out of every fit and tuning, at least one clip per category (a category of one clip has only that one):
# the corpus's side step, backward, crouch, brisk and slow walks, one of its jumps, dances, turns and lunges (02_07:
# its two feet shift twice; 02_05's never leave the floor); the project's walks of subjects none of its tuning saw
# (tests/mocap_clips.py's `HELD_OUT` and `UNSEEN`), its second run (09_03, already held out of the running rules) and
# one stylised clip.
HELD_OUT = (
    "jump_cmu_02_04", "dance_cmu_05_11", "turn_cmu_06_11", "side_step_cmu_06_08", "backward_cmu_06_06",
    "crouch_cmu_02_06", "lunge_cmu_02_07", "brisk_walk_cmu_07_12", "slow_walk_cmu_07_05",
    "cmu_35_05", "cmu_16_32", "cmu_39_03", "cmu_38_01", "cmu_55_04", "cmu_05_01", "cmu_09_03", "cmu_131_02",
)

# CMU's own skeleton (its ASF's names, as the BVH conversions of CMU's AMC files keep them) -> the cgspeed names the
# project's clips use (tests/mocap_clips.py); the clavicles first, so that the arms can take their names
CMU_NAMES = {"LeftShoulder": "LeftCollar", "RightShoulder": "RightCollar", "LeftUpLeg": "LeftHip", "LeftLeg": "LeftKnee",
             "LeftFoot": "LeftAnkle", "LeftToeBase": "LeftToe", "RightUpLeg": "RightHip", "RightLeg": "RightKnee",
             "RightFoot": "RightAnkle", "RightToeBase": "RightToe", "Neck": "lowerneck", "Neck1": "Neck",
             "LeftArm": "LeftShoulder", "LeftForeArm": "LeftElbow", "LeftHand": "LeftWrist", "RightArm": "RightShoulder",
             "RightForeArm": "RightElbow", "RightHand": "RightWrist"}
# a skeleton's unit, told by its legs (hip to ankle, as long as a person's): metres, centimetres, CMU's 1/0.45 inch
UNITS = {"m": 1.0, "cm": 0.01, "CMU's 1/0.45 inch": 0.0254 / 0.45}
LEG_LENGTH = (0.55, 1.25)  # m, hip to ankle along the bones

CONTACT_HEIGHT = 0.03  # m above where the point rests
CONTACT_SPEED = 0.2  # m/s along the floor
SPEED_WINDOW = 2 / 30  # s: the least-squares line through the positions over this span (centred)
REST_WINDOW = 0.5  # s: a point rests at its lowest within this either side of a frame ...
FLIGHT_FALL = 9.81 / 2  # m/s^2: the hips of a body in flight fall at about g (swinging limbs move them a little)
ACCEL_WINDOW = 0.1  # s: their vertical acceleration from a least-squares parabola over this span (centred)
REST_PERCENTILE, REST_RISE = 2.0, 0.03  # ... at most REST_RISE m above this percentile of its height over the clip

# iClone (Character Creator) joints -> keypoints at the joint
_CC_AT_JOINT = {"left_hip": "CC_Base_L_Thigh", "right_hip": "CC_Base_R_Thigh", "left_knee": "CC_Base_L_Calf",
                "right_knee": "CC_Base_R_Calf", "left_ankle": "CC_Base_L_Foot", "right_ankle": "CC_Base_R_Foot",
                "left_shoulder": "CC_Base_L_Upperarm", "right_shoulder": "CC_Base_R_Upperarm",
                "left_elbow": "CC_Base_L_Forearm", "right_elbow": "CC_Base_R_Forearm", "left_wrist": "CC_Base_L_Hand",
                "right_wrist": "CC_Base_R_Hand", "neck": "CC_Base_NeckTwist01"}
# (keypoint, joint that carries it, offset in the body's axes on the calibration frame: x = the body's left, y up,
# z forward). The heel sits below the ankle at the height of the toe joint (the ball) less 1 cm, 5 cm back; the toes
# as tests/mocap_clips.py places them from the toe joint; the face from the head joint.
_CC_IN_FRAME = [("left_big_toe", "CC_Base_L_ToeBase", (-0.025, -0.01, 0.06)),
                ("left_small_toe", "CC_Base_L_ToeBase", (0.03, -0.01, 0.045)),
                ("right_big_toe", "CC_Base_R_ToeBase", (0.025, -0.01, 0.06)),
                ("right_small_toe", "CC_Base_R_ToeBase", (-0.03, -0.01, 0.045)),
                ("nose", "CC_Base_Head", (0.0, 0.04, 0.1)), ("left_eye", "CC_Base_Head", (0.032, 0.07, 0.08)),
                ("right_eye", "CC_Base_Head", (-0.032, 0.07, 0.08)), ("left_ear", "CC_Base_Head", (0.075, 0.05, -0.01)),
                ("right_ear", "CC_Base_Head", (-0.075, 0.05, -0.01))]
MAX_SPEED = 12.0  # m/s: faster than anyone runs
MAX_EXTENT = 1000.0  # m: no motion capture reaches further from its origin
HEEL_BACK, HEEL_BELOW_BALL = 0.05, 0.01  # m
_PLACED = sorted({NAMES.index(k) for k in _CC_AT_JOINT} | {NAMES.index(k) for k, _, _ in _CC_IN_FRAME}
                 | {NAMES.index("left_heel"), NAMES.index("right_heel")})  # the keypoints both skeletons place


class CorpusError(ValueError):
    """A corpus the caller named cannot be used (the message says what to do)."""


@dataclass(frozen=True)
class Motion:
    name: str
    category: str
    joints: np.ndarray  # (T, K, 3) world metres, y up, the floor at y = 0; NaN where not placed
    fps: float
    extra: bool = False  # from a folder of extra clips: held out

    @property
    def times(self) -> np.ndarray:
        return np.arange(len(self.joints)) / self.fps

    @property
    def held_out(self) -> bool:
        return self.extra or self.name in HELD_OUT


@dataclass(frozen=True)
class Truth:
    """True contacts of a motion at its own rate: contact (T, 2) per foot (left, right), heel and toes (T, 2) each
    point's own contact, airborne (T,) no foot point near the floor and the hips falling as in flight; times (T,)
    seconds."""

    times: np.ndarray
    contact: np.ndarray
    heel: np.ndarray
    toes: np.ndarray
    airborne: np.ndarray

    def at(self, times: np.ndarray, midway: str = "later") -> Truth:
        """The truth at other timestamps (seconds): each takes the nearest of the motion's own frames. A timestamp
        midway between two of them (every other frame of a rate twice the motion's; every fourth at 24 fps of 30, every
        other at 24 of 60) takes the later's (`midway="later"`), or is in contact (airborne) only where both are
        (`"both"`): then a contact begins and ends on the motion's own frames at every rate; the later's begins it half
        a frame early, where the foot is still coming down (a 30 fps clip's run at 60 fps: 1.7-3 m/s)."""
        if midway not in ("later", "both"):
            raise ValueError(f"Truth.at: midway is 'later' or 'both', got {midway!r}")
        times = np.asarray(times, np.float64)
        index = np.clip(np.searchsorted(self.times, times), 1, len(self.times) - 1)
        early, late = times - self.times[index - 1], self.times[index] - times
        tie = np.isclose(early, late, rtol=0.0, atol=1e-9)
        nearest = index - (early < late)
        fields = []
        for values in (self.contact, self.heel, self.toes, self.airborne):
            out = values[nearest]
            if midway == "both":
                out = np.where(tie.reshape(-1, *[1] * (values.ndim - 1)), values[index - 1] & values[index], out)
            fields.append(out)
        return Truth(times, *fields)


def category_of(path: Path) -> str:
    """`jump_cmu_02_04.bvh` -> 'jump' (the corpus's naming); a file named otherwise is its own category."""
    stem = Path(path).stem
    return stem.split("_cmu_")[0] if "_cmu_" in stem else stem


def corpus_files(folder: Path | str | None) -> list[Path]:
    """The BVH files of a corpus folder (None: `default_corpus()`), sorted; CorpusError when there are none."""
    folder = default_corpus() if folder is None else Path(folder)
    if folder is None:
        raise CorpusError(f"no motion corpus given: give --corpus a folder of BVH files by category (or set ${CORPUS_ENV})")
    if not folder.is_dir():
        raise CorpusError(f"no motion corpus at {folder}: give --corpus a folder of BVH files by category")
    return _bvh_files(folder, "--corpus", "a folder of BVH files by category")


def extra_files(folders, flag: str = "--extra", kind: str = "extra") -> list[Path]:
    """The BVH files of folders of extra clips (each clip's category from its name, as `category_of` reads it; every
    one held out), in the order of the folders, each sorted. CorpusError for a folder that is missing, not a folder,
    unreadable or without BVH files, and for two clips of one name; `flag` and `kind` ("extra", "training"): the option
    and the clips the messages name."""
    files: dict[str, Path] = {}
    for folder in map(Path, folders):
        if not folder.exists():
            raise CorpusError(f"no folder of {kind} clips at {folder}: give {flag} a folder of BVH files")
        if not folder.is_dir():
            raise CorpusError(f"{folder} is not a folder: give {flag} a folder of BVH files")
        for path in _bvh_files(folder, flag, "a folder of BVH files"):
            if path.stem in files:
                raise CorpusError(f"two {kind} clips named {path.stem} ({files[path.stem]} and {path}): rename one")
            files[path.stem] = path
    return list(files.values())


def _bvh_files(folder: Path, flag: str, what: str) -> list[Path]:
    try:
        os.listdir(folder)
    except OSError as error:
        raise CorpusError(f"cannot read {folder} ({error.strerror}): give {flag} {what} you can read") from None
    files = sorted(path for path in folder.glob("*.bvh") if path.is_file())
    if not files:
        raise CorpusError(f"no .bvh files in {folder}: give {flag} {what}")
    return files


@lru_cache(maxsize=None)
def load_motion(path: Path | str, category: str | None = None, extra: bool = False) -> Motion:
    """One BVH file as a `Motion` (its skeleton recognised by its joint names: iClone `CC_Base_*` in centimetres,
    the CMU cgspeed names of tests/data/mocap in metres, or CMU's own names, `CMU_NAMES`, in the unit its legs tell);
    `extra`: a clip of an extra folder, held out. CorpusError for a file that is not such a BVH."""
    path = Path(path)
    try:
        bvh = read_bvh(path)
    except (OSError, UnicodeDecodeError, ValueError, IndexError) as error:
        raise CorpusError(f"{path} is not a readable BVH file ({error}): give a BVH of the CMU or iClone skeleton") from None
    if len(bvh.motion) < 2 or not (np.isfinite(bvh.frame_time) and bvh.frame_time > 0):
        raise CorpusError(f"{path}: fewer than two frames or no frame time: give a BVH with motion")
    if not np.isfinite(bvh.motion).all():
        raise CorpusError(f"{path}: its motion has values that are not finite numbers: give a BVH of finite motion")
    iclone = "CC_Base_Hip" in bvh.names
    if not iclone and "LeftUpLeg" in bvh.names:
        bvh = _as_cgspeed(bvh, path)
    needed = (set(_CC_AT_JOINT.values()) | {j for _, j, _ in _CC_IN_FRAME} if iclone
              else {"LeftHip", "LeftKnee", "LeftAnkle", "LeftToe", "RightAnkle", "RightToe", "Head"})
    missing = sorted(needed - set(bvh.names))
    if missing:
        raise CorpusError(f"{path}: a skeleton this corpus does not know (no joint {', '.join(missing[:3])}): give a BVH "
                          "of the iClone (CC_Base_*), CMU cgspeed or CMU ASF skeleton")
    joints, fps = _iclone_keypoints(bvh) if iclone else skeleton_keypoints(bvh)
    if not np.isfinite(joints[:, _PLACED]).all():
        raise CorpusError(f"{path}: its motion has values that are not finite numbers: give a BVH of finite motion")
    fps = round(fps, 2)  # a frame time of 0.016667 s is 60 fps
    joints = joints[_first_moving(joints, fps):]
    # the iClone retarget's vertical is its floor's across the path (a plane fitted to two foot lines tilts it by up to
    # 5 degrees); the CMU captures of the project's clips are levelled as tests/mocap_clips.py levels them
    joints = level_floor(joints, across=not iclone)
    if not (np.abs(joints[:, _PLACED]) < MAX_EXTENT).all():
        raise CorpusError(f"{path}: its motion reaches further than {MAX_EXTENT:g} m: give a BVH in centimetres or metres")
    return Motion(path.stem, category or category_of(path), joints, float(fps), extra)


def _as_cgspeed(bvh: Bvh, path: Path) -> Bvh:
    """A BVH of CMU's own skeleton as the cgspeed skeleton in metres: its joints renamed (`CMU_NAMES`), its lengths
    and root positions scaled by the unit (`UNITS`) that makes its left leg (hip to ankle) as long as a person's."""
    index = {name: j for j, name in enumerate(bvh.names)}
    if not {"LeftLeg", "LeftFoot"} <= set(index):
        return bvh  # not CMU's skeleton after all: the caller says which joints it lacks
    leg = np.linalg.norm(bvh.offsets[index["LeftLeg"]]) + np.linalg.norm(bvh.offsets[index["LeftFoot"]])
    units = [scale for scale in UNITS.values() if LEG_LENGTH[0] <= leg * scale <= LEG_LENGTH[1]]
    if len(units) != 1:
        raise CorpusError(f"{path}: its legs are {leg:g} units from hip to ankle, a person's in none of "
                          f"{', '.join(UNITS)}: give a BVH of a person in one of them")
    position = np.array([c.endswith("position") for channels in bvh.channels for c in channels])
    motion = bvh.motion.copy()
    motion[:, position] *= units[0]
    return replace(bvh, names=[CMU_NAMES.get(name, name) for name in bvh.names], offsets=bvh.offsets * units[0],
                   motion=motion)


def _first_moving(joints: np.ndarray, fps: float) -> int:
    """The first frame of the motion itself: leading frames from which the hips jump faster than MAX_SPEED to the
    next (a rest pose at the origin, as CMU 07_05 and 07_12 of the corpus start) are not part of it."""
    hips = joints[:, [NAMES.index("left_hip"), NAMES.index("right_hip")]].mean(axis=1)
    first = 0
    while first < len(joints) - 2 and np.linalg.norm(hips[first + 1] - hips[first]) * fps > MAX_SPEED:
        first += 1
    return first


def project_motions(names=None) -> list[Motion]:
    """The project's own clips (tests/data/mocap), by `PROJECT`'s categories."""
    return [load_motion(PROJECT_FOLDER / f"{name}.bvh", PROJECT[name]) for name in (names or PROJECT)]


def corpus_motions(folder: Path | str | None = None) -> list[Motion]:
    return [load_motion(path) for path in corpus_files(folder)]


def _iclone_keypoints(bvh) -> tuple[np.ndarray, float]:
    positions, rotations = forward(bvh)
    positions = positions / 100.0  # centimetres
    index = {n: i for i, n in enumerate(bvh.names)}
    joints = np.full((len(positions), len(NAMES), 3), np.nan)
    for key, joint in _CC_AT_JOINT.items():
        joints[:, NAMES.index(key)] = positions[:, index[joint]]
    body = _body_axes(joints)  # (T, 3, 3) rows: the body's left, up, forward
    for key, joint, offset in _CC_IN_FRAME:
        j = index[joint]
        t0 = 0 if joint == "CC_Base_Head" else _flattest(positions, index, "L" if key.startswith("left") else "R")
        local = rotations[t0, j].T @ (body[t0].T @ np.array(offset))  # the offset in the joint's own axes
        joints[:, NAMES.index(key)] = positions[:, j] + rotations[:, j] @ local
    for side, s in (("left", "L"), ("right", "R")):  # the heel, in the foot joint's axes
        foot, ball = index[f"CC_Base_{s}_Foot"], index[f"CC_Base_{s}_ToeBase"]
        t0 = _flattest(positions, index, s)
        along = positions[t0, ball] - positions[t0, foot]
        forward_ = np.array([along[0], 0.0, along[2]]) / np.linalg.norm([along[0], along[2]])
        heel = np.array([0.0, along[1] - HEEL_BELOW_BALL, 0.0]) - HEEL_BACK * forward_  # down to the ball's height
        local = rotations[t0, foot].T @ heel
        joints[:, NAMES.index(f"{side}_heel")] = positions[:, foot] + rotations[:, foot] @ local
    return joints, 1.0 / bvh.frame_time


def _flattest(positions: np.ndarray, index: dict, s: str) -> int:
    """The frame whose foot (ankle and toe joint) is lowest: flat on the floor."""
    return int(np.argmin(positions[:, index[f"CC_Base_{s}_Foot"], 1] + positions[:, index[f"CC_Base_{s}_ToeBase"], 1]))


def _body_axes(joints: np.ndarray) -> np.ndarray:
    """(T, 3, 3) rows: the body's left (right hip -> left hip, along the floor), up (y), forward (left x up)."""
    left = joints[:, NAMES.index("left_hip")] - joints[:, NAMES.index("right_hip")]
    left[:, 1] = 0.0
    left /= np.maximum(np.linalg.norm(left, axis=1, keepdims=True), 1e-9)  # hips together: a broken frame
    up = np.broadcast_to([0.0, 1.0, 0.0], left.shape)
    return np.stack([left, up, np.cross(left, up)], axis=1)


def resample(motion: Motion, fps: float) -> Motion:
    """The motion at another frame rate (a cubic spline through each coordinate; the same first frame)."""
    if fps == motion.fps:
        return motion
    times = np.arange(0.0, motion.times[-1] + 1e-9, 1.0 / fps)
    known = np.isfinite(motion.joints).all(axis=(0, 2))
    joints = np.full((len(times), *motion.joints.shape[1:]), np.nan)
    joints[:, known] = CubicSpline(motion.times, motion.joints[:, known], axis=0)(times)
    return replace(motion, joints=joints, fps=float(fps))


def turned(motion: Motion, degrees: float) -> Motion:
    """The motion turned `degrees` about the vertical."""
    joints = motion.joints @ Rotation.from_euler("y", degrees, degrees=True).as_matrix().T
    return replace(motion, joints=joints)


def foot_points(joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T, 2, 3) heels and (T, 2, 3) toes (the midpoint of the big and small toe), left then right."""
    heels = joints[:, [NAMES.index("left_heel"), NAMES.index("right_heel")]]
    toes = np.stack([joints[:, [NAMES.index(f"{side}_big_toe"), NAMES.index(f"{side}_small_toe")]].mean(axis=1)
                     for side in ("left", "right")], axis=1)
    return heels, toes


def floor_speed(points: np.ndarray, fps: float, window: float = SPEED_WINDOW) -> np.ndarray:
    """(T, ...) speeds along the floor (m/s) of (T, ..., 3) points: the slope of a least-squares line through the
    x-z positions within `window` seconds centred on each frame (fewer at the ends)."""
    half = max(1, int(round(window * fps / 2)))
    out = np.zeros(points.shape[:-1])
    for t in range(len(points)):
        w = points[max(t - half, 0):t + half + 1][..., [0, 2]]
        dt = (np.arange(len(w)) - (len(w) - 1) / 2) / fps
        slope = np.tensordot(dt, w - w.mean(axis=0), axes=(0, 0)) / (dt @ dt)
        out[t] = np.linalg.norm(slope, axis=-1)
    return out


def vertical_acceleration(heights: np.ndarray, fps: float, window: float = ACCEL_WINDOW) -> np.ndarray:
    """(T,) accelerations (m/s^2) of (T,) heights: twice the leading coefficient of a least-squares parabola through
    the heights within `window` seconds centred on each frame (at least a frame either side; fewer at the ends)."""
    half = max(1, int(round(window * fps / 2)))
    out = np.zeros(len(heights))
    for t in range(len(heights)):
        lo, hi = max(t - half, 0), min(t + half + 1, len(heights))
        if hi - lo < 3:
            continue
        dt = (np.arange(lo, hi) - t) / fps
        out[t] = 2 * np.polyfit(dt, heights[lo:hi], 2)[0]
    return out


def rest_height(heights: np.ndarray, fps: float) -> np.ndarray:
    """(T, ...) where each point rests on the floor at each frame: its lowest within REST_WINDOW seconds either side
    (a capture's floor is not quite flat along a path), at most REST_RISE above its REST_PERCENTILE over the clip
    (a foot held up for long does not rest up there)."""
    half = int(round(REST_WINDOW * fps))
    rolling = np.stack([heights[max(t - half, 0):t + half + 1].min(axis=0) for t in range(len(heights))])
    return np.minimum(rolling, np.percentile(heights, REST_PERCENTILE, axis=0) + REST_RISE)


def true_contacts(motion: Motion, height: float = CONTACT_HEIGHT, speed: float = CONTACT_SPEED) -> Truth:
    """The motion's true contacts (see the module's docstring)."""
    heels, toes = foot_points(motion.joints)
    low = {}
    for name, points in (("heel", heels), ("toes", toes)):
        above = points[..., 1] - rest_height(points[..., 1], motion.fps)
        low[name] = above < height
        low[name + "_still"] = low[name] & (floor_speed(points, motion.fps) < speed)
    contact = low["heel_still"] | low["toes_still"]
    hips = motion.joints[:, [NAMES.index("left_hip"), NAMES.index("right_hip")], 1].mean(axis=1)
    falling = vertical_acceleration(hips, motion.fps) < -FLIGHT_FALL
    airborne = ~(low["heel"] | low["toes"]).any(axis=1) & falling
    return Truth(motion.times, contact, low["heel_still"], low["toes_still"], airborne)
