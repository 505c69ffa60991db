"""OpenPose-style JSON: one `<stem>_<frame:012d>_keypoints.json` per frame, as OpenPose's --write_json.

Each file: {"version": 1.3, "people": [{"person_id": [id], "pose_keypoints_2d": [...],
"face_keypoints_2d": [], "hand_left_keypoints_2d": [...], "hand_right_keypoints_2d": [...],
"pose_keypoints_3d": [], "face_keypoints_3d": [], "hand_left_keypoints_3d": [],
"hand_right_keypoints_3d": []}]}, flat [x, y, c, ...] lists in pixels. As in
OpenPose, an unknown point is written 0, 0, 0; confidences are clipped to [0, 1].

Where the 308 points go (by name, see `BODY_25` and `hand_21` below):
- pose_keypoints_2d, BODY_25 order: nose, Neck, right shoulder/elbow/wrist,
  left shoulder/elbow/wrist, MidHip, right hip/knee/ankle, left hip/knee/ankle,
  right eye, left eye, right ear, left ear, left big toe/small toe/heel,
  right big toe/small toe/heel. Neck = midpoint of the shoulders (OpenPose's
  definition; the Sapiens `neck` point sits higher and is not used) and
  MidHip = midpoint of the hips, each known only when both ends are, with the
  smaller of the two scores.
- hand_*_keypoints_2d, OpenPose hand order (21): wrist, then per finger
  (thumb, index, middle, ring, little) from the palm to the tip: Sapiens
  `<finger>_third_joint`, `<finger>2`, `<finger>3`, `<finger>4` (the tip).
- face_keypoints_2d is empty: the 238 Sapiens face points are a different
  landmark set from OpenPose's 70 and have no mapping.
The other 308 points (the 7 "extra" points and the face) are not in this format.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from realtime.errors import UserError
from realtime.export.derived import hip_center, shoulder_center
from realtime.export.tracks import PersonTrack, Tracks

log = logging.getLogger(__name__)

NECK, MID_HIP = "<shoulder_center>", "<hip_center>"
BODY_25 = [
    "nose", NECK, "right_shoulder", "right_elbow", "right_wrist", "left_shoulder", "left_elbow", "left_wrist",
    MID_HIP, "right_hip", "right_knee", "right_ankle", "left_hip", "left_knee", "left_ankle",
    "right_eye", "left_eye", "right_ear", "left_ear",
    "left_big_toe", "left_small_toe", "left_heel", "right_big_toe", "right_small_toe", "right_heel",
]
_FINGERS = ("thumb", "forefinger", "middle_finger", "ring_finger", "pinky_finger")


def hand_21(side: str) -> list[str]:
    """The 308 names of OpenPose's 21 hand points for side "left" or "right"."""
    joints = [f"{side}_wrist"]
    for finger in _FINGERS:
        joints += [f"{side}_{finger}_third_joint", f"{side}_{finger}2", f"{side}_{finger}3", f"{side}_{finger}4"]
    return joints


LEFT_HAND, RIGHT_HAND = hand_21("left"), hand_21("right")


def _block(person: PersonTrack, row: int, names: list[str], index: dict[str, int], derived: dict) -> list[float]:
    """Flat [x, y, c] * len(names) for one person in frame `row`; unknown -> 0, 0, 0."""
    points, scores = person.keypoints, person.scores
    flat = []
    for name in names:
        if name in derived:
            xy, score = derived[name][0][row], derived[name][1][row]
        else:
            xy, score = points[row, index[name]], scores[row, index[name]]
        if np.isfinite(xy).all():
            score = float(np.clip(score, 0.0, 1.0)) if np.isfinite(score) else 0.0
            flat += [round(float(xy[0]), 2), round(float(xy[1]), 2), round(score, 3)]
        else:
            flat += [0.0, 0.0, 0.0]
    return flat


def write_openpose(tracks: Tracks, out_dir: str | Path, *, stem: str) -> Path:
    """Write one OpenPose JSON per frame into `out_dir`; returns the folder."""
    out_dir = Path(out_dir)
    names = tracks.keypoint_names
    needed = {n for n in BODY_25 + LEFT_HAND + RIGHT_HAND if not n.startswith("<")}
    missing = sorted(needed - set(names))
    if missing:
        raise UserError(f"OpenPose export needs the Sapiens 308 keypoints, these tracks lack {', '.join(missing[:3])}; use CSV "
                        "or NPZ instead.")
    index = {name: k for k, name in enumerate(names)}
    def derive(person: PersonTrack) -> dict:
        return {NECK: shoulder_center(person.keypoints, names, person.scores),
                MID_HIP: hip_center(person.keypoints, names, person.scores)}

    def entry(person: PersonTrack, row: int, person_id: int, derived: dict) -> dict:
        return {
            "person_id": [person_id],
            "pose_keypoints_2d": _block(person, row, BODY_25, index, derived),
            "face_keypoints_2d": [],
            "hand_left_keypoints_2d": _block(person, row, LEFT_HAND, index, derived),
            "hand_right_keypoints_2d": _block(person, row, RIGHT_HAND, index, derived),
            "pose_keypoints_3d": [], "face_keypoints_3d": [], "hand_left_keypoints_3d": [], "hand_right_keypoints_3d": [],
        }

    people = [(person, derive(person)) for person in tracks.people.values()]
    # People without an identity (stills): OpenPose's own "no id", -1; one row per person.
    nobody = tracks.unidentified.as_person() if tracks.unidentified is not None else None
    nobody_derived = derive(nobody) if nobody is not None else {}

    out_dir.mkdir(parents=True, exist_ok=True)
    for row, frame in enumerate(tracks.frames):
        entries = [entry(person, row, int(person.id), derived) for person, derived in people if person.present[row]]
        if nobody is not None:
            entries += [entry(nobody, i, -1, nobody_derived) for i in np.flatnonzero(tracks.unidentified.rows == row)]
        target = out_dir / f"{stem}_{int(frame):012d}_keypoints.json"
        target.write_text(json.dumps({"version": 1.3, "people": entries}, separators=(",", ":")), encoding="utf-8")
    log.info("wrote %d OpenPose JSON files to %s", len(tracks), out_dir)
    return out_dir
