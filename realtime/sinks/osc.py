"""Live motion over OSC/UDP: VMC protocol bones and face (`VmcSink`) and raw keypoints (`OscKeypointSink`).

Both send OSC bundles from a non-blocking UDP socket: nothing waits for a receiver; a
datagram that does not fit the socket's buffer, or a receiver that is absent, is lost
and counted (`summary_lines`). Every datagram is at most DATAGRAM_LIMIT (1,400) bytes
(`--vmc-bundle single` keeps one bundle per frame for VMC), so it is never IP-fragmented
and a python-osc server (8,192-byte reads) gets it whole.

VMC (https://protocol.vmc.info/marionette-spec), per processed frame and person, in
bundles of at most 1,400 bytes (the spec asks for "within 1500 bytes"):

    /VMC/Ext/Root/Pos   (s)"root" (f)p.x p.y p.z (f)q.x q.y q.z q.w    origin, identity
    /VMC/Ext/Bone/Pos   (s)name   (f)p.x p.y p.z (f)q.x q.y q.z q.w    every bone, local
    /VMC/Ext/Blend/Val  (s)name (f)weight                              ARKit names and VRM 1.0 presets, [0, 1]
    /VMC/Ext/Blend/Apply                                               after the weights (last bundle)
    /VMC/Ext/OK         (i)loaded=1 (i)calibration state=3 (i)calibration mode=0 (i)tracking   last bundle
    /VMC/Ext/T          (f)time (the frame's timestamp, s)                                     last message

Bone names are Unity's HumanBodyBones (VRM names capitalised; VRM 1.0's thumb
Metacarpal/Proximal/Distal are Unity's Thumb Proximal/Intermediate/Distal). Poses are
local to the parent bone, in Unity's axes (left-handed, Y up, the avatar facing +Z,
metres): our rig (right-handed, +X = the character's left) mirrored in X, positions
(-x, y, z), quaternions (x, -y, -z, w). Rotations are relative to the T-pose with all
bone rotations identity, as VRM's normalised bones are. `Hips` carries the body's
translation; the other bones' positions (the protocol has no rotation-only message)
are our solver's bone offsets, which a receiver that applies bone positions
(EVMC4U's BonePositionSynchronize) puts onto a differently built avatar: turn that off.

Raw keypoints (`--osc`), per frame:

    /sapiens/frame (i)index (f)time (i)people                 one bundle, before the people
    then per tracked person and region (body, feet, left_hand, right_hand, face), bundles of at most 1,400 bytes:
    /sapiens/person/<id>/frame (i)index                       first in every bundle
    /sapiens/person/<id>/<keypoint> (f)x (f)y (f)z (f)score   metres, camera frame (x right, y down, z forward)
    /sapiens/person/<id>/<keypoint> (f)x (f)y (f)score        image pixels, when the run has no 3D (no depth task)

Both send 3D on every frame when depth runs every N frames: between depth frames the
person's 2D keypoints are lifted (`realtime.rig.lift.Lifter`).
"""

from __future__ import annotations

import logging
import socket
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np
from pythonosc.parsing import osc_types

from realtime.errors import UserError
from realtime.frames import Frame, Person

log = logging.getLogger(__name__)

DEFAULT_VMC_PORT = 39539
LOST_AFTER_SECONDS = 1.0  # the followed person unseen this long: pick the largest again
DATAGRAM_LIMIT = 1400  # bytes per UDP datagram: under a 1,500-byte Ethernet/Wi-Fi MTU, so never IP-fragmented
MAX_PERFORMERS = 16  # --vmc-person all: ports P .. P+15


def parse_endpoint(text: str, option: str, default_port: Optional[int] = None) -> tuple[str, int]:
    """'127.0.0.1:39539' -> ('127.0.0.1', 39539); '[::1]:39539' -> ('::1', 39539); a bare host takes `default_port`."""
    text = text.strip()
    if text.startswith("["):  # IPv6 literal: [addr] or [addr]:port
        host, close, rest = text[1:].partition("]")
        sep, port = rest[:1], rest[1:]
        if not close or (rest and sep != ":"):
            host = ""
    else:
        host, sep, port = text.rpartition(":")
        if ":" in host:  # a bare IPv6 address, ambiguous with a port
            raise UserError(f"{option} {text}: write an IPv6 address in brackets, like {option} [::1]:{default_port or 9000}.")
    if not sep and default_port is not None:
        if not text.startswith("["):
            host = text
        port = str(default_port)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"{option} {text} is not HOST:PORT; write it like {option} 127.0.0.1:{default_port or 9000}.")
    return host, int(port)


class UdpSender:
    """Non-blocking UDP datagrams to one address; a send that cannot go now is dropped (and counted)."""

    def __init__(self, host: str, port: int, option: str):
        try:
            family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        except socket.gaierror:
            raise UserError(f"{option}: cannot resolve the host {host!r}; give an IP address such as 127.0.0.1.") from None
        self.address = address
        self.label = f"{option} {_address_text(host, port)}"
        self.sock = socket.socket(family, kind, proto)
        self.sock.setblocking(False)
        self.sent = self.dropped = 0  # datagrams
        self.largest = 0  # bytes, of the largest datagram sent

    def send(self, payload: bytes) -> bool:
        try:
            self.sock.sendto(payload, self.address)
        except OSError as err:  # BlockingIOError (buffer full), refused (nobody listens), too big...
            if self.dropped == 0:
                log.warning("%s: %s; dropping datagrams until they go through", self.label, err)
            self.dropped += 1
            return False
        self.sent += 1
        self.largest = max(self.largest, len(payload))
        return True

    def summary(self) -> str:
        return f"{self.label}: {self.sent} datagrams sent, {self.dropped} dropped (largest {self.largest} bytes)"

    def close(self) -> None:
        if self.dropped:
            log.warning("%s: %d of %d datagrams could not be sent", self.label, self.dropped, self.sent + self.dropped)
        self.sock.close()


def _address_text(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def osc_message(address: str, args: Sequence) -> bytes:
    """One OSC message: str -> s, int -> i, anything else -> f (python-osc's type encoders).
    The reference encoder: the per-frame paths below build the same bytes faster."""
    tags, data = ",", b""
    for value in args:
        if isinstance(value, str):
            tags, data = tags + "s", data + osc_types.write_string(value)
        elif isinstance(value, (int, np.integer)):
            tags, data = tags + "i", data + osc_types.write_int(int(value))
        else:
            tags, data = tags + "f", data + osc_types.write_float(float(value))
    return osc_types.write_string(address) + osc_types.write_string(tags) + data


_BUNDLE_HEAD = osc_types.write_string("#bundle") + (1).to_bytes(8, "big")  # time tag 1: "immediately"

Messages = Sequence[tuple[str, Sequence]]


def osc_bundle(messages: Messages) -> bytes:
    """One OSC bundle (time tag: immediately) of (address, args) messages."""
    return _BUNDLE_HEAD + b"".join(_element(osc_message(address, args)) for address, args in messages)


def _element(message: bytes) -> bytes:
    return osc_types.write_int(len(message)) + message


# Per frame, the address, the type tags and a leading name repeat: they are encoded once
# (`element_head`), and a frame packs only its numbers, all rows at once, as big-endian
# float32 (numpy's cast is the rounding of python-osc's struct.pack(">f")). The bytes equal
# `osc_message`'s (tests/test_live_encoding.py compares them).

@lru_cache(maxsize=16384)
def element_head(address: str, tags: str, name: Optional[str] = None) -> bytes:
    """The start of a bundle element: its size, address, type tags and, when given, the leading
    string argument `name`; the rest are len(tags) (less the name) 4-byte numbers."""
    head = osc_types.write_string(address) + osc_types.write_string("," + tags)
    if name is not None:
        head += osc_types.write_string(name)
    return osc_types.write_int(len(head) + 4 * (len(tags) - (name is not None))) + head


def float_elements(heads: Sequence[bytes], values: np.ndarray, rows: Optional[np.ndarray] = None) -> list[bytes]:
    """Bundle elements: heads[k] (from `element_head`) followed by row k of `values` (N, M) as
    float32; with `rows`, only those rows (indices), in that order."""
    values = np.asarray(values)
    data = np.ascontiguousarray(values, dtype=">f4").tobytes()
    width = 4 * values.shape[1]
    picked = range(len(values)) if rows is None else rows.tolist()
    return [heads[k] + data[k * width:(k + 1) * width] for k in picked]


def pack_bundles(messages: Messages, *, head: Messages = (), tail: Messages = (), limit: Optional[int] = DATAGRAM_LIMIT) -> list[bytes]:
    """Messages in order into as few bundles of at most `limit` bytes as it takes (limit None: one bundle).

    `head` messages open every bundle (e.g. the frame index); `tail` messages close the
    last one, so a receiver that acts on them has seen everything before.
    """
    return pack_elements([_element(osc_message(a, v)) for a, v in messages],
                         opening=b"".join(_element(osc_message(a, v)) for a, v in head),
                         closing=b"".join(_element(osc_message(a, v)) for a, v in tail), limit=limit)


def pack_elements(body: Sequence[bytes], *, opening: bytes = b"", closing: bytes = b"",
                  limit: Optional[int] = DATAGRAM_LIMIT) -> list[bytes]:
    """`pack_bundles` for encoded bundle elements: `opening` starts every bundle, `closing` ends the last."""
    if limit is None:
        return [_BUNDLE_HEAD + opening + b"".join(body) + closing]
    room = limit - len(_BUNDLE_HEAD) - len(opening)
    if room < len(closing) or any(len(e) > room for e in body):
        raise ValueError(f"an OSC message does not fit a {limit}-byte datagram")
    bundles, current, size = [], [], 0
    for element in [*body, closing] if closing else body:
        if current and size + len(element) > room:
            bundles.append(_BUNDLE_HEAD + opening + b"".join(current))
            current, size = [], 0
        current.append(element)
        size += len(element)
    if current or not bundles:
        bundles.append(_BUNDLE_HEAD + opening + b"".join(current))
    return bundles


class Filter3D:
    """The live keypoint filter (`trackers.live.LiveSmoother`) on 3D keypoints, per track id.
    Points not measured in a frame stay unknown (NaN): the solver holds those bones."""

    def __init__(self, method: Optional[str], smoothness: float, num_keypoints: int):
        self.smoother = None
        if method and method != "none":
            from trackers.live import LiveSmoother

            self.smoother = LiveSmoother(method=method, smoothness=smoothness, num_keypoints=num_keypoints)

    def __call__(self, timestamp: float, track_id: int, points: np.ndarray, scores: Optional[np.ndarray]) -> np.ndarray:
        points = np.asarray(points, dtype=np.float64)
        known = np.isfinite(points).all(axis=-1)
        if self.smoother is None or not known.any():
            return points
        scores = np.ones(len(points)) if scores is None else np.asarray(scores, dtype=np.float64)
        scores = np.where(known, np.nan_to_num(scores, nan=1.0), 0.0)
        smoothed, _ = self.smoother.update(timestamp, np.array([track_id]), np.nan_to_num(points)[None], scores[None],
                                           np.array([np.nan]))  # size: the person's own extent
        return np.where(known[:, None], smoothed[0].astype(np.float64), np.nan)


def unity_bone_name(vrm: str) -> str:
    """VRM 1.0 humanoid bone name -> Unity HumanBodyBones name (what VMC receivers expect)."""
    for old, new in (("ThumbProximal", "ThumbIntermediate"), ("ThumbMetacarpal", "ThumbProximal")):
        if old in vrm:
            vrm = vrm.replace(old, new)
            break
    return vrm[0].upper() + vrm[1:]


def to_unity(position: np.ndarray, rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rig axes (right-handed, +X = character's left) -> Unity's (left-handed): mirror X.
    position (..., 3), rotation (..., 4) x, y, z, w."""
    return position * [-1.0, 1.0, 1.0], rotation * [1.0, -1.0, -1.0, 1.0]


VMC_BUNDLES = ("split", "single")
FACE_ONLY_BONES = ("hips", "spine", "chest", "neck", "head")  # --vmc-face-only: a person at a desk


def motion_sinks(*, vmc: Sequence[str] = (), vmc_person: Optional[str] = None, vmc_fingers: bool = False,
                 vmc_bundle: str = "split", vmc_face_only: bool = False, face_calibrate: float = 2.0,
                 osc: Optional[str] = None, tasks: Sequence[str] = ("pose",), smooth: Optional[str] = "one_euro",
                 smoothness: float = 0.5) -> list:
    """The sinks that `--vmc` (repeatable) / `--osc` ask for (an empty list when neither does); checks the options first."""
    from realtime.data import keypoint_names

    vmc = [vmc] if isinstance(vmc, str) else list(vmc or ())
    if not vmc and (vmc_person is not None or vmc_fingers or vmc_face_only or vmc_bundle != "split"):
        raise UserError("--vmc-person, --vmc-fingers, --vmc-bundle and --vmc-face-only go with --vmc HOST:PORT; add --vmc 127.0.0.1:39539.")
    if vmc_bundle not in VMC_BUNDLES:
        raise UserError(f"--vmc-bundle {vmc_bundle} is not one of {', '.join(VMC_BUNDLES)}; use split (datagrams of at most "
                        f"{DATAGRAM_LIMIT} bytes) or single (one bundle per frame).")
    if (vmc or osc) and "pose" not in tasks:
        raise UserError(f"{'--vmc' if vmc else '--osc'} streams keypoints, so it needs the pose task; add it, e.g. --tasks pose,depth.")
    if vmc and not vmc_face_only and "pointmap" not in tasks:
        raise UserError("--vmc needs 3D keypoints from the depth (pointmap) task; run with --tasks pose,depth "
                        "(or --vmc-face-only for head and face alone).")
    person = parse_vmc_person(vmc_person)
    if face_calibrate < 0:
        raise UserError(f"--face-calibrate {face_calibrate} is negative; give the seconds of neutral face to learn from, e.g. 2.")
    names = keypoint_names()
    sinks: list = []
    for target in vmc:
        host, port = parse_endpoint(target, "--vmc", DEFAULT_VMC_PORT)
        sinks.append(VmcSink(host, port, names, person=person, fingers=vmc_fingers, bundle=vmc_bundle, face_only=vmc_face_only,
                             face_calibrate=face_calibrate, filter_method=smooth, smoothness=smoothness))
    if osc:
        host, port = parse_endpoint(osc, "--osc")
        sinks.append(OscKeypointSink(host, port, names, filter_method=smooth, smoothness=smoothness))
    return sinks


def parse_vmc_person(text: Optional[str]) -> Optional[int | str]:
    """--vmc-person: None (the largest person), a track id, or "all" (person k to port P+k)."""
    if text is None or isinstance(text, int) or text == "all":
        return text
    if not str(text).lstrip("-").isdigit():
        raise UserError(f"--vmc-person {text} is neither a track id nor all; write e.g. --vmc-person 3 or --vmc-person all.")
    return int(text)


def _area(person: Person) -> float:
    x1, y1, x2, y2 = (float(v) for v in person.box)
    return max(x2 - x1, 0.0) * max(y2 - y1, 0.0)


ROOT_MESSAGE = ("/VMC/Ext/Root/Pos", ("root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0))  # origin, identity


@lru_cache(maxsize=64)
def _static_element(address: str, args: tuple) -> bytes:
    """A message that is the same every frame, encoded once."""
    return _element(osc_message(address, args))


@lru_cache(maxsize=1)
def blend_names() -> tuple[str, ...]:
    """The /VMC/Ext/Blend/Val names in order: the ARKit names, then the VRM 1.0 presets."""
    from realtime.rig.face import ARKIT_NAMES, VRM_PRESETS

    return ARKIT_NAMES + VRM_PRESETS


@dataclass(frozen=True)
class VmcPose:
    """What one performer sends in one frame, in Unity's axes.

    names:     the bones (Unity HumanBodyBones names).
    positions: (B, 3) local positions, metres; rotations (B, 4) local quaternions x, y, z, w.
    blend:     (len(blend_names()),) weights in [0, 1], or None while the face is not seen.
    tracking:  1 while the person is seen; time: the frame's timestamp (s).
    """

    names: Sequence[str]
    positions: np.ndarray
    rotations: np.ndarray
    blend: Optional[np.ndarray]
    tracking: int
    time: float

    def messages(self) -> tuple[list, list]:
        """(body, closing) as (address, args) messages."""
        body: list = [(ROOT_MESSAGE[0], list(ROOT_MESSAGE[1]))]
        body += [("/VMC/Ext/Bone/Pos", [name, *p, *q]) for name, p, q in zip(self.names, self.positions, self.rotations)]
        closing: list = []
        if self.blend is not None:
            body += [("/VMC/Ext/Blend/Val", [name, value]) for name, value in zip(blend_names(), self.blend)]
            closing.append(("/VMC/Ext/Blend/Apply", []))
        closing += [("/VMC/Ext/OK", [1, 3, 0, self.tracking]), ("/VMC/Ext/T", [self.time])]
        return body, closing

    def datagrams(self, limit: Optional[int]) -> list[bytes]:
        """`messages` encoded, in bundles of at most `limit` bytes (None: one bundle)."""
        body = [_static_element(*ROOT_MESSAGE)]
        heads = [element_head("/VMC/Ext/Bone/Pos", "sfffffff", name) for name in self.names]
        body += float_elements(heads, np.concatenate([self.positions, self.rotations], axis=1))
        closing = b""
        if self.blend is not None:
            body += float_elements([element_head("/VMC/Ext/Blend/Val", "sf", name) for name in blend_names()], self.blend[:, None])
            closing = _static_element("/VMC/Ext/Blend/Apply", ())
        closing += _static_element("/VMC/Ext/OK", (1, 3, 0, self.tracking))
        closing += element_head("/VMC/Ext/T", "f") + struct.pack(">f", self.time)
        return pack_elements(body, closing=closing, limit=limit)


class _Performer:
    """What VMC keeps per streamed person: the live solver and the face reader."""

    def __init__(self, keypoint_names: Sequence[str], fingers: bool, face_calibrate: float):
        from realtime.rig.face import FaceSolver
        from realtime.rig.ground import FootLock
        from realtime.rig.lift import Lifter
        from realtime.rig.solver import LiveSolver

        self.solver = LiveSolver(list(keypoint_names), fingers=fingers)
        self.face = FaceSolver(list(keypoint_names), calibrate_seconds=face_calibrate)
        self.lifter = Lifter(list(keypoint_names))
        self.lock = FootLock(list(keypoint_names))
        self.track: Optional[int] = None
        self.last_seen = -np.inf
        self.face_only_rest: Optional[tuple] = None  # (skeleton, bone names, positions) of --vmc-face-only

    def reset(self, track: Optional[int]) -> None:
        self.track = track
        self.solver.reset()
        self.face.reset()
        self.lifter.reset()


class VmcSink:
    """Streams solved bones and face weights as VMC protocol messages (a "Performer" to a "Marionette").

    person: follow this track id; None: the largest person, kept until it is unseen for
    LOST_AFTER_SECONDS; "all": every tracked person, person k (in order of appearance,
    a slot freed after LOST_AFTER_SECONDS) to port + k. bundle: "split" (datagrams of at
    most DATAGRAM_LIMIT bytes) or "single" (one bundle per frame and person). face_only:
    hips, spine, chest and neck at rest, the head turned by the face, and the face weights:
    needs no 3D keypoints. `filter_method`/`smoothness`: the live filter for the 3D keypoints.
    """

    name = "vmc"

    def __init__(self, host: str, port: int, keypoint_names: Sequence[str], *, person: Optional[int | str] = None,
                 fingers: bool = False, bundle: str = "split", face_only: bool = False, face_calibrate: float = 2.0,
                 filter_method: Optional[str] = "one_euro", smoothness: float = 0.5):
        from realtime.rig.bones import bone_table

        self.host, self.port = host, port
        self.person = person
        self.fingers = fingers
        self.limit = DATAGRAM_LIMIT if bundle == "split" else None
        self.face_only = face_only
        self.face_calibrate = face_calibrate
        self.keypoint_names = list(keypoint_names)
        self.num_keypoints = len(keypoint_names)
        self.filter = Filter3D(filter_method, smoothness, self.num_keypoints)
        bones = bone_table(fingers)
        self.bone_names = [unity_bone_name(b.name) for b in bones]
        self.senders: dict[int, UdpSender] = {}
        self.performers: dict[int, _Performer] = {}
        self._sender(0)  # checks the address now
        self.frames = 0

    def _sender(self, slot: int) -> UdpSender:
        if slot not in self.senders:
            self.senders[slot] = UdpSender(self.host, self.port + slot, "--vmc")
        return self.senders[slot]

    def _performer(self, slot: int) -> _Performer:
        if slot not in self.performers:
            self.performers[slot] = _Performer(self.keypoint_names, self.fingers, self.face_calibrate)
        return self.performers[slot]

    def _cast(self, frame: Frame) -> dict[int, Optional[Person]]:
        """Slot -> the person it streams this frame (None: hold the last pose, tracking 0)."""
        people = [p for p in frame.people if p.keypoints is not None]
        if self.person == "all":
            tracked = {p.track_id: p for p in people if p.track_id is not None}
            cast: dict[int, Optional[Person]] = {}
            for slot, performer in self.performers.items():
                if performer.track in tracked:
                    cast[slot] = tracked.pop(performer.track)
                elif performer.track is not None and frame.timestamp - performer.last_seen > LOST_AFTER_SECONDS:
                    performer.track = None  # free: the next newcomer takes this port
                    cast[slot] = None
                else:
                    cast[slot] = None
            for person in sorted(tracked.values(), key=lambda p: p.track_id):
                free = [s for s in range(MAX_PERFORMERS) if s not in self.performers or self.performers[s].track is None]
                if not free:
                    break
                self._performer(free[0]).reset(person.track_id)
                cast[free[0]] = person
            return dict(sorted(cast.items())) if cast else {0: None}
        performer = self._performer(0)
        if isinstance(self.person, int):
            return {0: next((p for p in people if p.track_id == self.person), None)}
        followed = next((p for p in people if p.track_id is not None and p.track_id == performer.track), None)
        if followed is not None:
            return {0: followed}
        if performer.track is not None and frame.timestamp - performer.last_seen <= LOST_AFTER_SECONDS:
            return {0: None}  # briefly lost: hold the pose rather than jump to someone else
        if not people:
            return {0: None}
        largest = max(people, key=_area)
        if largest.track_id != performer.track or performer.track is None:
            performer.reset(largest.track_id)
        return {0: largest}

    def pose(self, frame: Frame, performer: _Performer, person: Optional[Person]) -> VmcPose:
        """What one performer sends for one frame (solving the body and reading the face)."""
        if person is not None:
            performer.last_seen = frame.timestamp
        face = None
        if person is not None:
            face = performer.face.update(frame.timestamp, person.best_keypoints, person.keypoint_scores)  # its own --face-calibrate
        if self.face_only:
            names, positions, rotations = self._face_only_pose(performer, face)
            tracking = int(face is not None)
        else:
            points = np.full((self.num_keypoints, 3), np.nan)
            measured = None if person is None else performer.lifter.update(person.best_keypoints, person.keypoints3d,
                                                                            person.keypoint_scores)  # lifted between depth frames
            if measured is not None:
                track = person.track_id if person.track_id is not None else -1
                points = self.filter(frame.timestamp, track, measured, person.keypoint_scores)
                if person.contacts is not None:  # a foot on the floor stays where it landed (no added latency)
                    points = performer.lock.apply(points, person.contacts)
            pose = performer.solver.update(points)
            tracking = int(person is not None and not pose.held.all())
            positions = pose.skeleton.offsets.copy()
            positions[0] = pose.root_position
            positions, rotations = to_unity(positions, pose.rotations)
            names = self.bone_names
        blend = None
        if face is not None:
            from realtime.rig.face import vmc_blend_values

            blend = np.array([value for _, value in vmc_blend_values(face)])
        return VmcPose(names, positions, rotations, blend, tracking, float(frame.timestamp))

    def messages(self, frame: Frame, performer: _Performer, person: Optional[Person]) -> tuple[list, list]:
        """(body messages, closing messages) as (address, args) for one performer and frame: what `write` sends, readable."""
        return self.pose(frame, performer, person).messages()

    def _face_only_pose(self, performer: _Performer, face) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Hips, spine, chest, neck at their rest offsets and rotations; the head turned as the face."""
        skeleton = performer.solver.rest_skeleton()  # face-only never updates the solver: always the default skeleton
        if performer.face_only_rest is None or performer.face_only_rest[0] is not skeleton:
            index = [i for i, b in enumerate(skeleton.bones) if b.name in FACE_ONLY_BONES]
            positions = skeleton.offsets[index].copy()
            positions[0] = [0.0, skeleton.floor_height(), 0.0]
            performer.face_only_rest = (skeleton, [unity_bone_name(skeleton.bones[i].name) for i in index], positions)
        _, names, positions = performer.face_only_rest
        rotations = np.zeros((len(names), 4))
        rotations[:, 3] = 1.0
        if face is not None and face.head_rotation is not None:
            rotations[-1] = face.head_rotation  # rig axes, relative to the calibrated neutral head
        positions, rotations = to_unity(positions, rotations)
        return names, positions, rotations

    def write(self, frame: Frame) -> None:
        self.send(self.datagrams(frame))

    def datagrams(self, frame: Frame) -> list[tuple[int, list[bytes]]]:
        """(slot, its datagrams) for one frame: the solving and encoding of `write`, without the sending
        (`sapiens-rt stream` prepares a frame before its time comes, then sends it on time)."""
        out = [(slot, self.pose(frame, self._performer(slot), person).datagrams(self.limit))
               for slot, person in self._cast(frame).items()]
        self.frames += 1
        return out

    def send(self, prepared: list[tuple[int, list[bytes]]]) -> None:
        """Send what `datagrams` prepared."""
        for slot, datagrams in prepared:
            sender = self._sender(slot)
            for payload in datagrams:
                sender.send(payload)

    def summary_lines(self) -> list[str]:
        return [sender.summary() for _, sender in sorted(self.senders.items())]

    def close(self) -> None:
        for sender in self.senders.values():
            sender.close()


def keypoint_regions(keypoint_names: Sequence[str]) -> list[tuple[str, np.ndarray]]:
    """(region, keypoint indices) for the raw OSC datagrams: body (with the extra points), feet, hands, face."""
    from realtime.data import keypoint_table

    groups = {name: g["names"] for name, g in keypoint_table()["groups"].items()}
    index = {n: i for i, n in enumerate(keypoint_names)}
    regions = [("body", groups["body"] + groups["extra"]), ("feet", groups["foot"]), ("left_hand", groups["left_hand"]),
               ("right_hand", groups["right_hand"]), ("face", groups["face"])]
    out = [(region, np.array(sorted(index[n] for n in names if n in index), dtype=int)) for region, names in regions]
    covered = set(np.concatenate([idx for _, idx in out]).tolist())
    rest = np.array([i for i in range(len(keypoint_names)) if i not in covered], dtype=int)
    if len(rest):
        out.append(("other", rest))
    return [(region, idx) for region, idx in out if len(idx)]


class OscKeypointSink:
    """Streams every tracked person's known keypoints as /sapiens/person/<id>/<keypoint> messages,
    in datagrams of at most DATAGRAM_LIMIT bytes (per person and body region), each opened by
    /sapiens/person/<id>/frame (i)index so a receiver can put every datagram in its frame."""

    name = "osc"

    def __init__(self, host: str, port: int, keypoint_names: Sequence[str], *, filter_method: Optional[str] = "one_euro",
                 smoothness: float = 0.5):
        self.sender = UdpSender(host, port, "--osc")
        self.keypoint_names = list(keypoint_names)
        self.regions = keypoint_regions(self.keypoint_names)
        self.filter = Filter3D(filter_method, smoothness, len(keypoint_names))
        self.lifters: dict[int, tuple] = {}  # track id -> (Lifter, last seen): 3D between depth frames
        self._keypoint_heads: dict[tuple[int, int], list[bytes]] = {}  # (track id, numbers per message) -> encoded heads
        self.frames = 0

    def _lift(self, frame: Frame, person: Person) -> Optional[np.ndarray]:
        from realtime.rig.lift import Lifter

        lifter = self.lifters.get(person.track_id, (None, 0.0))[0] or Lifter(self.keypoint_names)
        self.lifters[person.track_id] = (lifter, frame.timestamp)
        for track in [k for k, (_, seen) in self.lifters.items() if frame.timestamp - seen > LOST_AFTER_SECONDS]:
            del self.lifters[track]
        return lifter.update(person.best_keypoints, person.keypoints3d, person.keypoint_scores)

    def write(self, frame: Frame) -> None:
        self.send(self.datagrams(frame))

    def datagrams(self, frame: Frame) -> list[bytes]:
        """One frame's datagrams: the work of `write` without the sending (see `VmcSink.datagrams`)."""
        people = [p for p in frame.people if p.track_id is not None and p.keypoints is not None]  # receivers key on the id
        out = [osc_bundle([("/sapiens/frame", [int(frame.index), float(frame.timestamp), len(people)])])]
        for person in people:
            scores = person.keypoint_scores if person.keypoint_scores is not None else np.full(len(self.keypoint_names), np.nan)
            points3d = self._lift(frame, person)
            if points3d is not None:
                values = self.filter(frame.timestamp, person.track_id, points3d, scores)
            else:
                values = np.asarray(person.best_keypoints, dtype=np.float64)
            known = np.isfinite(values).all(axis=-1)
            heads = self._heads(int(person.track_id), values.shape[1] + 1)
            rows = np.concatenate([values, np.asarray(scores, dtype=np.float64)[:, None]], axis=1)  # x y [z] score
            opening = element_head(f"/sapiens/person/{int(person.track_id)}/frame", "i") + struct.pack(">i", int(frame.index))
            for _, indices in self.regions:
                chosen = indices[known[indices]]
                if len(chosen):
                    out += pack_elements(float_elements(heads, rows, chosen), opening=opening)
        for key in [key for key in self._keypoint_heads if key[0] not in self.lifters]:  # people gone for good
            del self._keypoint_heads[key]
        self.frames += 1
        return out

    def _heads(self, track: int, columns: int) -> list[bytes]:
        """Encoded /sapiens/person/<track>/<keypoint> (f) x `columns` message heads, one per keypoint."""
        key = (track, columns)
        if key not in self._keypoint_heads:
            self._keypoint_heads[key] = [element_head(f"/sapiens/person/{track}/{name}", "f" * columns) for name in self.keypoint_names]
        return self._keypoint_heads[key]

    def send(self, datagrams: list[bytes]) -> None:
        for payload in datagrams:
            self.sender.send(payload)

    def summary_lines(self) -> list[str]:
        return [self.sender.summary()]

    def close(self) -> None:
        self.sender.close()
