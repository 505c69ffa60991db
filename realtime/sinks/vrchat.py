"""VRChat over OSC (`VrchatSink`, `--vrchat`): full-body trackers from the solved bones, the head for
VRChat's alignment, and the face as VRCFaceTracking's Unified Expressions.

Per processed frame, for one performer, in OSC bundles of at most DATAGRAM_LIMIT (1,400) bytes (all
in one bundle when they fit; the trackers and the head always in the first):

    /tracking/trackers/N/position (f)x (f)y (f)z    metres, Unity's axes, N = 1..8 (TRACKERS)
    /tracking/trackers/N/rotation (f)x (f)y (f)z    Euler angles in degrees (Unity's Quaternion.Euler)
    /tracking/trackers/head/position, .../rotation   every frame, for VRChat's alignment
    /avatar/parameters/FT/v2/<Key> (f)value          the face, on frames it is read (UNIFIED_KEYS), in [0, 1]
    /tracking/eye/EyesClosedAmount (f)closed         with the face: VRChat's own eye tracking, closed in [0, 1],
    /tracking/eye/CenterPitchYaw (f)pitch (f)yaw     and where the eyes look, degrees (`realtime.expressions.eye_look`)

VRChat's "OSC Trackers" (https://docs.vrchat.com/docs/osc-trackers): up to 8 trackers - hip, chest,
2 feet, 2 knees, 2 elbows (upper arms) - and the optional head pair "to aid in aligning your sender
app's tracking space with VRChat's", each address 3 floats, "world-space positions and euler angles",
in Unity's coordinate system (left-handed, +y up, 1.0 = 1 m); "it's not always best to send all 8":
hip and feet, our default. The page gives no role per number; ours are fixed (TRACKERS).

Trackers: the forward kinematics of `Person.bones` (`bone_world_poses`), the bones' world being the
motion stage's (rig axes: right-handed, Y up; the world stage's floor at y = 0 on frames whose
`Frame.camera.world` is set, else the root placed from the first hips at standing height), taken to
Unity's axes by the VMC sender's conversion (`realtime.sinks.osc.to_unity`: X mirrored). A tracker
sits at a bone's head (a joint) and turns with a bone: its rotation is that bone's world rotation
relative to the T-pose, so a performer standing in the rig's T-pose, facing +Z, sends identity
rotations. Euler angles: Unity's `Quaternion.Euler(x, y, z)` turns z degrees about Z, then x about
X, then y about Y (about the fixed axes): R = Ry Rx Rz, scipy's extrinsic "zxy"; sent as (x, y, z).

The scale: positions are multiplied by s = height / stature about the origin (the floor stays at
y = 0), `height` the user's height as VRChat knows it (`--vrchat-height`) and `stature` the
performer's measured height (`Person.height`, the world stage's); without `--vrchat-height`, or
before the stature is measured, s = 1 (VRChat wants real metres, which is what the run measures).

The face: VRChat's "OSC Face Tracking" (https://creators.vrchat.com/avatars/face-tracking/osc) takes
"the Unified Expressions tracking keys established by VRCFaceTracking"; VRCFaceTracking drives an
avatar's parameters named `<prefix>/v2/<Key>` (https://docs.vrcft.io/docs/tutorial-avatars/
tutorial-avatars-extras/parameters), which VRChat's OSC takes at /avatar/parameters/<name>
(https://docs.vrchat.com/docs/osc-avatar-parameters); FT is the prefix avatars use.

Nothing non-finite is sent: a frame whose performer has no bones, or none seen, sends no trackers (the
head is then the last one sent; none before the first bones), and a value that is not finite is not sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.expressions import UNIFIED_KEYS, eye_look, unified_expressions
from realtime.frames import Bones, Frame, Person
from realtime.options import CLI, Caller
from realtime.sinks.osc import (
    DATAGRAM_LIMIT,
    LOST_AFTER_SECONDS,
    UdpSender,
    _area,
    _sendable,
    element_head,
    float_elements,
    pack_elements,
    shown,
    to_unity,
)

DEFAULT_VRCHAT_PORT = 9000  # VRChat's OSC input port
FACE_PREFIX = "/avatar/parameters/FT/v2/"
EYES_CLOSED, EYE_LOOK = "/tracking/eye/EyesClosedAmount", "/tracking/eye/CenterPitchYaw"  # VRChat's OSC eye tracking


@dataclass(frozen=True)
class Tracker:
    slot: str        # N of /tracking/trackers/N (1..8, or head)
    label: str
    at: str          # the bone at whose head it sits
    turns_with: str  # the bone whose world rotation it has


TRACKERS = (
    Tracker("1", "hip", "hips", "hips"),
    Tracker("2", "left foot", "leftFoot", "leftFoot"),  # at the ankle
    Tracker("3", "right foot", "rightFoot", "rightFoot"),
    Tracker("4", "chest", "chest", "chest"),
    Tracker("5", "left knee", "leftLowerLeg", "leftUpperLeg"),  # at the knee, on the thigh
    Tracker("6", "right knee", "rightLowerLeg", "rightUpperLeg"),
    Tracker("7", "left elbow", "leftLowerArm", "leftUpperArm"),  # at the elbow, on the upper arm
    Tracker("8", "right elbow", "rightLowerArm", "rightUpperArm"),
)
HEAD = Tracker("head", "head", "head", "head")  # the head bone's pivot, where the skull turns on the neck
TRACKER_WORDS = {"hip": (1,), "feet": (2, 3), "chest": (4,), "knees": (5, 6), "elbows": (7, 8)}  # --vrchat-trackers
DEFAULT_TRACKERS = "hip,feet"
HEIGHT_RANGE = (0.5, 3.0)  # metres: --vrchat-height, and a measured stature worth scaling by

# The VRM 1.0 humanoid hierarchy of the bones the solver drives (`realtime.rig.bones.bone_table`; the
# sinks may not import the rig, and tests/test_vrchat.py checks the two agree).
VRM_PARENTS = {"hips": None, "spine": "hips", "chest": "spine", "neck": "chest", "head": "neck",
               **{name.format(side=side): parent.format(side=side) for side in ("left", "right") for name, parent in (
                   ("{side}Shoulder", "chest"), ("{side}UpperArm", "{side}Shoulder"), ("{side}LowerArm", "{side}UpperArm"),
                   ("{side}Hand", "{side}LowerArm"), ("{side}UpperLeg", "hips"), ("{side}LowerLeg", "{side}UpperLeg"),
                   ("{side}Foot", "{side}LowerLeg"), ("{side}Toes", "{side}Foot"))}}


def missing_bones(names: Sequence[str]) -> list[str]:
    """The bones of VRM_PARENTS that `names` (a skeleton's bone names) lacks: the trackers need them all."""
    return [name for name in VRM_PARENTS if name not in set(names)]


def bone_world_poses(bones: Bones, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Forward kinematics: the heads (N, 3) and world rotations (N, 3, 3) of the bones `names`, in the
    bones' own world (rig axes, metres). head = parent head + parent rotation @ offset; rotation =
    parent rotation @ local rotation; the root's head is `root_position`."""
    index = {name: i for i, name in enumerate(bones.names)}
    local = Rotation.from_quat(np.asarray(bones.rotations, np.float64)).as_matrix()
    offsets = np.asarray(bones.offsets, np.float64)
    done: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def pose(name: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in done:
            parent = VRM_PARENTS[name]
            if parent is None:
                done[name] = (np.asarray(bones.root_position, np.float64), local[index[name]])
            else:
                head, rotation = pose(parent)
                done[name] = (head + rotation @ offsets[index[name]], rotation @ local[index[name]])
        return done[name]

    found = [pose(name) for name in names]
    return np.array([p for p, _ in found]).reshape(-1, 3), np.array([r for _, r in found]).reshape(-1, 3, 3)


def unity_euler(rotations: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rig-axes world rotations -> (N, 3) Unity Euler angles x, y, z in degrees: the rotation
    in Unity's axes (`to_unity`) is Quaternion.Euler(x, y, z) = Ry(y) Rx(x) Rz(z)."""
    quats = Rotation.from_matrix(rotations).as_quat()
    _, unity = to_unity(np.zeros((len(quats), 3)), quats)
    m = Rotation.from_quat(unity).as_matrix()
    # R = Ry Rx Rz: R[1, 2] = -sin x; y from R[0, 2], R[2, 2] and z from R[1, 0], R[1, 1] (cos x >= 0). In closed form
    # rather than scipy's as_euler("zxy"), which warns at gimbal lock (x = +-90) and needs scipy 1.17 to be told not to.
    x = np.arcsin(np.clip(-m[:, 1, 2], -1.0, 1.0))
    locked = np.hypot(m[:, 1, 0], m[:, 1, 1]) < 1e-9  # cos x = 0: only y - z (or y + z) is defined; z = 0
    y = np.where(locked, np.arctan2(-m[:, 2, 0], m[:, 0, 0]), np.arctan2(m[:, 0, 2], m[:, 2, 2]))
    z = np.where(locked, 0.0, np.arctan2(m[:, 1, 0], m[:, 1, 1]))
    return np.degrees(np.stack([x, y, z], axis=-1))


def tracker_values(bones: Bones, trackers: Sequence[Tracker], scale: float = 1.0) -> np.ndarray:
    """(N, 6) what each tracker sends: Unity position x, y, z (metres, times `scale`) and Euler x, y, z (degrees)."""
    names = [t.at for t in trackers] + [t.turns_with for t in trackers]
    heads, rotations = bone_world_poses(bones, names)
    positions, _ = to_unity(scale * heads[:len(trackers)], np.zeros((len(trackers), 4)))
    return np.concatenate([positions, unity_euler(rotations[len(trackers):])], axis=1)


def parse_trackers(value, caller: Caller = CLI) -> tuple[int, ...]:
    """--vrchat-trackers: a comma list (or a list) of hip, feet, chest, knees, elbows -> tracker numbers."""
    option = caller.name("vrchat_trackers")
    words = value.split(",") if isinstance(value, str) else value
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise UserError(f"{caller.said('vrchat_trackers', value)} is not a comma list; write e.g. "
                        f"{caller.given('vrchat_trackers', 'hip,feet')}.")
    words = [w.strip().lower() for w in words]
    choices = ", ".join(TRACKER_WORDS)
    if not words or not all(words):
        raise UserError(f"{option} has an empty name; give a comma list of {choices}, e.g. hip,feet.")
    unknown = [w for w in words if w not in TRACKER_WORDS]
    if unknown:
        raise UserError(f"{option}: {shown(unknown[0])} is not a tracker; choose from {choices}, e.g. hip,feet.")
    if len(set(words)) < len(words):
        twice = next(w for w in words if words.count(w) > 1)
        raise UserError(f"{option} names {twice} twice; give each of {choices} once.")
    return tuple(sorted(n for w in words for n in TRACKER_WORDS[w]))


def parse_height(value, caller: Caller = CLI) -> Optional[float]:
    """--vrchat-height: None, or metres within HEIGHT_RANGE."""
    if value is None:
        return None
    try:
        height = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        height = float("nan")
    low, high = HEIGHT_RANGE
    if not low <= height <= high:  # also NaN
        raise UserError(f"{caller.said('vrchat_height', value)} is not a height from {low:g} to {high:g} metres; give the "
                        f"height VRChat knows you by, e.g. {caller.given('vrchat_height', 1.8)}.")
    return height


def parse_person(value, caller: Caller = CLI) -> Optional[int]:
    """--vrchat-person: None (the largest person) or a track id."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    if isinstance(value, str) and value.strip().isdecimal() and value.strip().isascii() and len(value.strip()) <= 18:
        return int(value)
    if str(value) == "all":
        raise UserError(f"{caller.said('vrchat_person', 'all')}: VRChat takes one performer; give a track id, e.g. "
                        f"{caller.given('vrchat_person', 3)} (default: the largest person).")
    raise UserError(f"{caller.said('vrchat_person', value)} is not a track id; write e.g. {caller.given('vrchat_person', 3)} "
                    "(default: the largest person).")


class VrchatSink:
    """Streams one performer's trackers, head and face to VRChat (see the module's docstring).

    trackers: tracker numbers (`parse_trackers`); height: the user's height in VRChat (metres) to scale
    to, None: real metres; person: a track id to follow, None: the largest person, kept until unseen
    for LOST_AFTER_SECONDS. The head goes out on every frame from the first whose performer's bones
    were seen (then held while they are not): before that there is no head to align to."""

    name = "vrchat"
    needs_3d = True  # the trackers hang from bones solved from 3D keypoints (checked by the builder)

    def __init__(self, host: str, port: int, *, trackers: Sequence[int] = (1, 2, 3), height: Optional[float] = None,
                 person: Optional[int] = None):
        self.sender = UdpSender(host, port, "--vrchat")
        self.trackers = tuple(t for t in TRACKERS if int(t.slot) in set(trackers))
        self.height, self.person = height, person
        self.track: Optional[int] = None
        self.last_seen = -np.inf
        self.head: Optional[np.ndarray] = None  # the last head sent (6,)
        self._tracker_heads = [element_head(f"/tracking/trackers/{t.slot}/{kind}", "fff")
                               for t in (*self.trackers, HEAD) for kind in ("position", "rotation")]
        self._face_heads = [element_head(FACE_PREFIX + key, "f") for key in UNIFIED_KEYS]
        self._eye_heads = (element_head(EYES_CLOSED, "f"), element_head(EYE_LOOK, "ff"))
        self.frames = self.tracker_frames = self.head_frames = self.face_frames = 0
        self.unscaled = 0  # frames with trackers at scale 1 while --vrchat-height waited for the stature
        self.scale_range = (np.inf, -np.inf)  # the smallest and largest scale sent, for the summary
        self.dropped_values = 0  # trackers or face values not sent for not being finite

    def performer(self, frame: Frame) -> Optional[Person]:
        """The person this frame streams: the track id asked for, else the largest tracked person, held
        while it is unseen for at most LOST_AFTER_SECONDS (None: nobody to stream this frame)."""
        people = [p for p in frame.people if p.track_id is not None and p.keypoints is not None]
        if self.person is not None:
            return next((p for p in people if p.track_id == self.person), None)
        followed = next((p for p in people if p.track_id == self.track), None)
        if followed is None and self.track is not None and frame.timestamp - self.last_seen <= LOST_AFTER_SECONDS:
            return None  # briefly lost: do not jump to someone else
        if followed is None and people:
            followed = max(people, key=_area)
            self.track = followed.track_id
        if followed is not None:
            self.last_seen = frame.timestamp
        return followed

    def scale(self, person: Person) -> Optional[float]:
        """height / the performer's measured stature; None without --vrchat-height or a stature (scale 1)."""
        stature = person.height[0] if person.height is not None else float("nan")
        if self.height is None or not HEIGHT_RANGE[0] <= stature <= HEIGHT_RANGE[1]:
            return None
        return self.height / stature

    def values(self, frame: Frame) -> tuple[Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]:
        """This frame's numbers, each None when not sent: trackers (N, 6), the head (6,), the face (len(UNIFIED_KEYS) + 3,):
        the Unified Expressions keys, then the eyes closed, their pitch and yaw (`eye_look`)."""
        person = self.performer(frame)
        trackers = face = None
        bones = person.bones if person is not None else None
        if bones is not None and not (bones.root_held and bones.held.all()):  # something of the body seen
            scale = self.scale(person)
            with np.errstate(over="ignore", invalid="ignore"):  # a hostile file's huge bones: refused just below
                values = tracker_values(bones, [*self.trackers, HEAD], 1.0 if scale is None else scale)
            if _sendable(values):  # finite, and within the float32 each is sent as
                trackers, self.head = values[:-1], values[-1]
                if scale is not None:
                    self.scale_range = (min(self.scale_range[0], scale), max(self.scale_range[1], scale))
                elif self.height is not None:
                    self.unscaled += 1
            else:
                self.dropped_values += 1
        if person is not None and person.face is not None:
            face = np.concatenate([unified_expressions(person.face), eye_look(person.face)])
            if not np.isfinite(face).all():
                face, self.dropped_values = None, self.dropped_values + 1
        return trackers, self.head, face

    def datagrams(self, frame: Frame) -> list[bytes]:
        """One frame's bundles (the encoding of `write`, without the sending)."""
        trackers, head, face = self.values(frame)
        body: list[bytes] = []
        if head is not None:  # position, rotation, position, ... rows of 3
            rows = [head] if trackers is None else [*trackers, head]
            body += float_elements(self._tracker_heads[-2 * len(rows):], np.reshape(rows, (-1, 3)))
        if face is not None:
            keys = len(UNIFIED_KEYS)
            body += float_elements(self._face_heads, face[:keys, None])
            body += float_elements(self._eye_heads[:1], face[keys:keys + 1, None])
            body += float_elements(self._eye_heads[1:], face[None, keys + 1:])
        self.frames += 1
        self.tracker_frames += trackers is not None
        self.head_frames += head is not None
        self.face_frames += face is not None
        return pack_elements(body, limit=DATAGRAM_LIMIT) if body else []

    def write(self, frame: Frame) -> None:
        self.send(self.datagrams(frame))

    def send(self, datagrams: list[bytes]) -> None:
        for payload in datagrams:
            self.sender.send(payload)

    def summary_lines(self) -> list[str]:
        names = ", ".join(t.label for t in self.trackers)
        lines = [self.sender.summary(),
                 f"--vrchat: trackers ({names}) on {self.tracker_frames} of {self.frames} frames (none where the "
                 f"performer's bones were not seen), the head on {self.head_frames} (every frame from the first with "
                 f"bones), the face on {self.face_frames}"]
        if self.height is not None:
            low, high = self.scale_range
            scaled = (f"positions scaled by {low:.3f} to {high:.3f} (height / measured stature)" if low <= high
                      else "the stature was never measured")
            lines.append(f"--vrchat-height {self.height:g}: {scaled}; {self.unscaled} frames with trackers at scale 1 "
                         f"before it was")
        if self.dropped_values:
            lines.append(f"--vrchat: {self.dropped_values} frames' trackers or face not sent for holding a non-finite value")
        return lines

    def close(self) -> None:
        self.sender.close()
