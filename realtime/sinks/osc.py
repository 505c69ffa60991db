"""Live motion over OSC/UDP: VMC protocol bones and face (`VmcSink`) and raw keypoints (`OscKeypointSink`).

Both send OSC bundles from a non-blocking UDP socket: nothing waits for a receiver; a
datagram that does not fit the socket's buffer, or a receiver that is absent, is lost
and counted (`summary_lines`). Every datagram is at most DATAGRAM_LIMIT (1,400) bytes
(`--vmc-bundle single` keeps one bundle per frame for VMC), so it is never IP-fragmented
and a python-osc server (8,192-byte reads) gets it whole.

VMC (https://protocol.vmc.info/marionette-spec), per processed frame and person, in
bundles of at most 1,400 bytes (the spec asks for "within 1500 bytes"):

    /VMC/Ext/Root/Pos   (s)"root" (f)p.x p.y p.z (f)q.x q.y q.z q.w    origin, identity
    /VMC/Ext/Cam        (s)"Camera" (f)p.x p.y p.z (f)q.x q.y q.z q.w (f)fov   the camera, when people are in the world
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

The camera (`/VMC/Ext/Cam`, VMC 2.3's camera message): on the frames whose people are in the
world (`Frame.camera.world`: the world stage saw the camera move, `--camera auto|moving`), the
camera's pose in that same world (where `Hips` is), in Unity's axes like the bones (X mirrored)
and as a Unity camera (looking down its +Z, +Y up), with its vertical field of view in degrees
(Unity's `Camera.fieldOfView`). Not sent while people are camera-relative or with face_only.

Raw keypoints (`--osc`), per frame:

    /sapiens/frame (i)index (f)time (i)people                 one bundle, before the people
    then per tracked person and region (body, feet, left_hand, right_hand, face), bundles of at most 1,400 bytes:
    /sapiens/person/<id>/frame (i)index                       first in every bundle
    /sapiens/person/<id>/<keypoint> (f)x (f)y (f)z (f)score   metres, camera frame (x right, y down, z forward)
    /sapiens/person/<id>/<keypoint> (f)x (f)y (f)score        image pixels, when the run has no 3D (no depth task)

Both only encode what a frame holds: the bones (`Person.bones`, the motion stage), the face
(`Person.face`, `lips_open`, `head_rotation`, the face stage) and the keypoints
(`keypoints3d_smoothed`, else `keypoints3d`, at pose rate from the ground stage). They solve,
lift and filter nothing; `realtime.stages.live` builds them and sends at each frame's time.
A run with 3D sends only 3D keypoints: a person without 3D yet is skipped (and counted).
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
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.expressions import BLEND_NAMES, blend_values
from realtime.frames import Bones, Camera, Frame, Person
from realtime.options import CLI, Caller

log = logging.getLogger(__name__)

DEFAULT_VMC_PORT = 39539
LOST_AFTER_SECONDS = 1.0  # the followed person unseen this long: pick the largest again
DATAGRAM_LIMIT = 1400  # bytes per UDP datagram: under a 1,500-byte Ethernet/Wi-Fi MTU, so never IP-fragmented
MAX_PERFORMERS = 16  # --vmc-person all: ports P .. P+15


def shown(text: str, limit: int = 60) -> str:
    """`text` as an error message quotes it: repr, cut to `limit` characters (a hostile value may be huge)."""
    text = repr(text)
    return text if len(text) <= limit else text[:limit - 4] + "...'"


def parse_endpoint(text: str, option: str, default_port: Optional[int] = None, caller: Caller = CLI) -> tuple[str, int]:
    """'127.0.0.1:39539' -> ('127.0.0.1', 39539); '[::1]:39539' -> ('::1', 39539); a bare host takes `default_port`.
    option: the option's name (`vmc` or `--vmc`), named in errors as `caller` writes it."""
    option = option.lstrip("-").replace("-", "_")
    text = text.strip()
    if text.startswith("["):  # IPv6 literal: [addr] or [addr]:port
        host, close, rest = text[1:].partition("]")
        sep, port = rest[:1], rest[1:]
        if not close or (rest and sep != ":"):
            host = ""
    else:
        host, sep, port = text.rpartition(":")
        if ":" in host:  # a bare IPv6 address, ambiguous with a port
            raise UserError(f"{caller.said(option, text)}: write an IPv6 address in brackets, like "
                            f"{caller.given(option, f'[::1]:{default_port or 9000}')}.")
    if not sep and default_port is not None:
        if not text.startswith("["):
            host = text
        port = str(default_port)
    if not host or not (port.isascii() and port.isdecimal() and len(port) <= 5) or not 0 < int(port) < 65536:
        raise UserError(f"{caller.said(option, text)} is not HOST:PORT; write it like "
                        f"{caller.given(option, f'127.0.0.1:{default_port or 9000}')}.")
    return host, int(port)


class UdpSender:
    """Non-blocking UDP datagrams to one address; a send that cannot go now is dropped (and counted)."""

    def __init__(self, host: str, port: int, option: str):
        try:
            family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        except (socket.gaierror, UnicodeError, ValueError):  # unknown; a name too long for DNS; a NUL in it
            raise UserError(f"{option}: cannot resolve the host {shown(host)}; give an IP address such as 127.0.0.1.") from None
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


def pack_bundles(messages: Messages, *, head: Messages = (), tail: Messages = (),
                 limit: Optional[int] = DATAGRAM_LIMIT) -> list[bytes]:
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


CAMERA_NAME = "Camera"  # the /VMC/Ext/Cam message's name argument
UNITY_MIRROR = np.diag([-1.0, 1.0, 1.0])  # our world (right-handed) -> Unity's (left-handed), as `to_unity`
CAMERA_TO_UNITY = np.diag([1.0, -1.0, 1.0])  # a camera's axes, ours (y down) -> a Unity camera's (y up)


def unity_camera(camera: Camera) -> Optional[np.ndarray]:
    """(8,) the /VMC/Ext/Cam numbers of a frame's camera: position x, y, z, rotation x, y, z, w (w >= 0)
    in Unity's axes, vertical field of view (degrees); None without intrinsics. The field of view is
    2 atan((cy + 0.5) / fy): the picture's height, 2 cy + 1, when the principal point is at its centre
    (a Unity camera has no other), taken from the camera alone so a replayed tracks file, whose frames
    carry no picture, sends the very same bytes."""
    if camera.intrinsics is None:
        return None
    pose = camera.world_from_camera
    # the camera's right, up and forward in Unity's world: mirror the world, turn y down to y up
    rotation = Rotation.from_matrix(UNITY_MIRROR @ pose[:3, :3] @ CAMERA_TO_UNITY).as_quat()
    rotation = rotation if rotation[3] >= 0 else -rotation
    fov = np.degrees(2 * np.arctan((camera.intrinsics[3] + 0.5) / camera.intrinsics[1]))
    return np.concatenate([UNITY_MIRROR @ pose[:3, 3], rotation, [fov]])


VMC_BUNDLES = ("split", "single")
FACE_ONLY_BONES = ("hips", "spine", "chest", "neck", "head")  # --vmc-face-only: a person at a desk
FINGER_WORDS = ("Thumb", "Index", "Middle", "Ring", "Little")  # in the names of the finger bones


def parse_vmc_person(text: Optional[str], caller: Caller = CLI) -> Optional[int | str]:
    """--vmc-person: None (the largest person), a track id, or "all" (person k to port P+k)."""
    if text is None or (isinstance(text, int) and not isinstance(text, bool) and text >= 0) or text == "all":
        return text
    digits = str(text).strip()
    if not (digits.isascii() and digits.isdecimal() and len(digits) <= 18):  # not '²', '-1', True or a 10,000-digit id
        raise UserError(f"{caller.said('vmc_person', text)} is neither a track id nor all; write e.g. "
                        f"{caller.given('vmc_person', 3)} or {caller.given('vmc_person', 'all')}.")
    return int(digits)


def _area(person: Person) -> float:
    x1, y1, x2, y2 = (float(v) for v in np.round(person.box, 2))  # as the tracks file keeps it: a replay picks the same person
    return max(x2 - x1, 0.0) * max(y2 - y1, 0.0)


ROOT_MESSAGE = ("/VMC/Ext/Root/Pos", ("root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0))  # origin, identity


@lru_cache(maxsize=64)
def _static_element(address: str, args: tuple) -> bytes:
    """A message that is the same every frame, encoded once."""
    return _element(osc_message(address, args))


@dataclass(frozen=True)
class VmcPose:
    """What one performer sends in one frame, in Unity's axes.

    names:     the bones (Unity HumanBodyBones names).
    positions: (B, 3) local positions, metres; rotations (B, 4) local quaternions x, y, z, w.
    blend:     (len(BLEND_NAMES),) weights in [0, 1], or None while the face is not seen.
    tracking:  1 while the person is seen; time: the frame's timestamp (s).
    camera:    (8,) the /VMC/Ext/Cam numbers (`unity_camera`), or None: no camera message.
    """

    names: Sequence[str]
    positions: np.ndarray
    rotations: np.ndarray
    blend: Optional[np.ndarray]
    tracking: int
    time: float
    camera: Optional[np.ndarray] = None

    def messages(self) -> tuple[list, list]:
        """(body, closing) as (address, args) messages."""
        body: list = [(ROOT_MESSAGE[0], list(ROOT_MESSAGE[1]))]
        if self.camera is not None:
            body.append(("/VMC/Ext/Cam", [CAMERA_NAME, *self.camera]))
        body += [("/VMC/Ext/Bone/Pos", [name, *p, *q]) for name, p, q in zip(self.names, self.positions, self.rotations)]
        closing: list = []
        if self.blend is not None:
            body += [("/VMC/Ext/Blend/Val", [name, value]) for name, value in zip(BLEND_NAMES, self.blend)]
            closing.append(("/VMC/Ext/Blend/Apply", []))
        closing += [("/VMC/Ext/OK", [1, 3, 0, self.tracking]), ("/VMC/Ext/T", [self.time])]
        return body, closing

    def datagrams(self, limit: Optional[int]) -> list[bytes]:
        """`messages` encoded, in bundles of at most `limit` bytes (None: one bundle)."""
        body = [_static_element(*ROOT_MESSAGE)]
        if self.camera is not None:
            body += float_elements([element_head("/VMC/Ext/Cam", "sffffffff", CAMERA_NAME)], self.camera[None])
        heads = [element_head("/VMC/Ext/Bone/Pos", "sfffffff", name) for name in self.names]
        body += float_elements(heads, np.concatenate([self.positions, self.rotations], axis=1))
        closing = b""
        if self.blend is not None:
            body += float_elements([element_head("/VMC/Ext/Blend/Val", "sf", name) for name in BLEND_NAMES], self.blend[:, None])
            closing = _static_element("/VMC/Ext/Blend/Apply", ())
        closing += _static_element("/VMC/Ext/OK", (1, 3, 0, self.tracking))
        closing += element_head("/VMC/Ext/T", "f") + struct.pack(">f", self.time)
        return pack_elements(body, closing=closing, limit=limit)


class _Slot:
    """One VMC port's performer: the track it streams and what it sent last (held while unseen)."""

    def __init__(self, rest: Bones):
        self.track: Optional[int] = None
        self.last_seen = -np.inf
        self.bones = rest

    def reset(self, track: Optional[int], rest: Bones) -> None:
        self.track, self.bones = track, rest


class VmcSink:
    """Streams a frame's solved bones and face as VMC protocol messages (a "Performer" to a "Marionette").

    person: follow this track id; None: the largest person, kept until it is unseen for
    LOST_AFTER_SECONDS; "all": every tracked person, person k (in order of appearance,
    a slot freed after LOST_AFTER_SECONDS) to port + k. bundle: "split" (datagrams of at
    most DATAGRAM_LIMIT bytes) or "single" (one bundle per frame and person). face_only:
    hips, spine, chest and neck at rest, the head turned by the face, and the face weights:
    needs no 3D keypoints. rest: the skeleton at rest (`realtime.stages.motion.rest_bones`),
    sent for a performer not seen yet and as the body of face_only.
    """

    name = "vmc"

    def __init__(self, host: str, port: int, *, rest: Bones, person: Optional[int | str] = None, fingers: bool = False,
                 bundle: str = "split", face_only: bool = False):
        self.host, self.port = host, port
        self.person = person
        self.fingers = fingers
        self.limit = DATAGRAM_LIMIT if bundle == "split" else None
        self.face_only = face_only
        self.needs_3d = not face_only  # bones solved from 3D keypoints (checked by the builder)
        self.rest = rest
        self.senders: dict[int, UdpSender] = {}
        self.slots: dict[int, _Slot] = {}
        self._sender(0)  # checks the address now
        self.frames = 0
        if face_only:
            index = [i for i, name in enumerate(rest.names) if name in FACE_ONLY_BONES]
            self._face_only = ([unity_bone_name(rest.names[i]) for i in index], rest.positions[index])

    def _sender(self, slot: int) -> UdpSender:
        if slot not in self.senders:
            self.senders[slot] = UdpSender(self.host, self.port + slot, "--vmc")
        return self.senders[slot]

    def _slot(self, slot: int) -> _Slot:
        if slot not in self.slots:
            self.slots[slot] = _Slot(self.rest)
        return self.slots[slot]

    def _cast(self, frame: Frame) -> dict[int, Optional[Person]]:
        """Slot -> the person it streams this frame (None: hold the last pose, tracking 0)."""
        people = [p for p in frame.people if p.keypoints is not None]
        if self.person == "all":
            tracked = {p.track_id: p for p in people if p.track_id is not None}
            cast: dict[int, Optional[Person]] = {}
            for index, slot in self.slots.items():
                if slot.track in tracked:
                    cast[index] = tracked.pop(slot.track)
                else:
                    if slot.track is not None and frame.timestamp - slot.last_seen > LOST_AFTER_SECONDS:
                        slot.track = None  # free: the next newcomer takes this port
                    cast[index] = None
            for person in sorted(tracked.values(), key=lambda p: p.track_id):
                free = [s for s in range(MAX_PERFORMERS) if s not in self.slots or self.slots[s].track is None]
                if not free:
                    break
                self._slot(free[0]).reset(person.track_id, self.rest)
                cast[free[0]] = person
            return dict(sorted(cast.items())) if cast else {0: None}
        slot = self._slot(0)
        if isinstance(self.person, int):
            return {0: next((p for p in people if p.track_id == self.person), None)}
        followed = next((p for p in people if p.track_id is not None and p.track_id == slot.track), None)
        if followed is not None:
            return {0: followed}
        if slot.track is not None and frame.timestamp - slot.last_seen <= LOST_AFTER_SECONDS:
            return {0: None}  # briefly lost: hold the pose rather than jump to someone else
        if not people:
            return {0: None}
        largest = max(people, key=_area)
        if largest.track_id != slot.track or slot.track is None:
            slot.reset(largest.track_id, self.rest)
        return {0: largest}

    def pose(self, frame: Frame, slot: _Slot, person: Optional[Person]) -> VmcPose:
        """What one performer sends for one frame: the person's bones and face, encoded."""
        if person is not None:
            slot.last_seen = frame.timestamp
        blend = None
        if person is not None and person.face is not None:
            blend = blend_values(person.face, person.lips_open or 0.0)
        if self.face_only:
            names, positions = self._face_only
            rotations = np.tile([0.0, 0.0, 0.0, 1.0], (len(names), 1))
            seen = person is not None and person.head_rotation is not None
            if seen:
                rotations[-1] = person.head_rotation  # rig axes, relative to the calibrated neutral head
            tracking = int(person is not None and person.face is not None)
        else:
            fresh = person is not None and person.bones is not None and _finite(person.bones)  # else: the last pose held
            if fresh:
                slot.bones = person.bones
            bones = slot.bones
            tracking = int(fresh and not bones.held.all())
            keep = _bone_subset(bones.names, self.fingers)
            names = _unity_names(tuple(bones.names[i] for i in keep))
            positions, rotations = bones.positions[keep], bones.rotations[keep]
        positions, rotations = to_unity(positions, rotations)
        camera = None
        if not self.face_only and frame.camera is not None and frame.camera.world:  # the camera in the bones' world
            camera = unity_camera(frame.camera)
            camera = camera if camera is not None and _sendable(camera) else None  # nothing non-finite is sent
        return VmcPose(names, positions, rotations, blend, tracking, float(round(frame.timestamp, 6)), camera)

    def messages(self, frame: Frame, slot: _Slot, person: Optional[Person]) -> tuple[list, list]:
        """(body messages, closing messages) as (address, args) for one performer and frame: what `write` sends, readable."""
        return self.pose(frame, slot, person).messages()

    def write(self, frame: Frame) -> None:
        self.send(self.datagrams(frame))

    def datagrams(self, frame: Frame) -> list[tuple[int, list[bytes]]]:
        """(slot, its datagrams) for one frame: the encoding of `write`, without the sending (the live
        stage encodes a frame, waits for its time when pacing, then sends)."""
        out = [(index, self.pose(frame, self._slot(index), person).datagrams(self.limit))
               for index, person in self._cast(frame).items()]
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


def _sendable(values) -> bool:
    """Every number is finite and fits the float32 it is sent as."""
    return bool(np.abs(values).max() <= np.finfo(np.float32).max)  # False with a NaN too


def _finite(bones: Bones) -> bool:
    """Every number a VMC frame would send of these bones is sendable."""
    return _sendable(np.concatenate([np.ravel(bones.rotations), np.ravel(bones.offsets), np.ravel(bones.root_position)]))


@lru_cache(maxsize=8)
def _bone_subset_cached(names: tuple[str, ...], fingers: bool) -> np.ndarray:
    return np.array([i for i, n in enumerate(names) if fingers or not any(w in n for w in FINGER_WORDS)], dtype=int)


def _bone_subset(names: Sequence[str], fingers: bool) -> np.ndarray:
    """Indices of the bones a sender sends: all, or all but the fingers."""
    return _bone_subset_cached(tuple(names), fingers)


@lru_cache(maxsize=8)
def _unity_names(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(unity_bone_name(n) for n in names)


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
    /sapiens/person/<id>/frame (i)index so a receiver can put every datagram in its frame.

    three_d: the run has 3D keypoints, so only 3D (metres) is sent: a person without 3D yet is
    skipped and counted (`skipped`), never sent in pixels into a stream of metres. Without
    3D: pixels. The 3D sent is `keypoints3d_smoothed` (the live filter), else `keypoints3d`."""

    name = "osc"

    def __init__(self, host: str, port: int, keypoint_names: Sequence[str], *, three_d: bool = False):
        self.sender = UdpSender(host, port, "--osc")
        self.keypoint_names = list(keypoint_names)
        self.three_d = three_d
        self.regions = keypoint_regions(self.keypoint_names)
        self._keypoint_heads: dict[tuple[int, int], list[bytes]] = {}  # (track id, numbers per message) -> encoded heads
        self.frames = 0
        self.skipped = 0  # person-frames without 3D yet in a 3D run

    def write(self, frame: Frame) -> None:
        self.send(self.datagrams(frame))

    def _values(self, person: Person) -> Optional[np.ndarray]:
        if not self.three_d:
            return np.asarray(person.best_keypoints, dtype=np.float64)
        points = person.keypoints3d_smoothed if person.keypoints3d_smoothed is not None else person.keypoints3d
        return None if points is None else np.asarray(points, dtype=np.float64)

    def datagrams(self, frame: Frame) -> list[bytes]:
        """One frame's datagrams: the encoding of `write` without the sending (see `VmcSink.datagrams`)."""
        people = [p for p in frame.people if p.track_id is not None and p.keypoints is not None]  # receivers key on the id
        values = [self._values(p) for p in people]
        self.skipped += sum(v is None for v in values)
        sent = [(p, v) for p, v in zip(people, values) if v is not None]
        out = [osc_bundle([("/sapiens/frame", [int(frame.index), float(frame.timestamp), len(sent)])])]
        for person, points in sent:
            scores = person.keypoint_scores if person.keypoint_scores is not None else np.full(len(self.keypoint_names), np.nan)
            heads = self._heads(int(person.track_id), points.shape[1] + 1)
            rows = np.concatenate([points, np.asarray(scores, dtype=np.float64)[:, None]], axis=1)  # x y [z] score
            known = np.isfinite(rows).all(axis=-1)  # a point without a score (a replayed null) is not sent either
            opening = element_head(f"/sapiens/person/{int(person.track_id)}/frame", "i") + struct.pack(">i", int(frame.index))
            for _, indices in self.regions:
                chosen = indices[known[indices]]
                if len(chosen):
                    out += pack_elements(float_elements(heads, rows, chosen), opening=opening)
        present = {int(p.track_id) for p in people}
        if len(self._keypoint_heads) > 64:  # forget the encoded heads of people gone
            self._keypoint_heads = {k: v for k, v in self._keypoint_heads.items() if k[0] in present}
        self.frames += 1
        return out

    def _heads(self, track: int, columns: int) -> list[bytes]:
        """Encoded /sapiens/person/<track>/<keypoint> (f) x `columns` message heads, one per keypoint."""
        key = (track, columns)
        if key not in self._keypoint_heads:
            self._keypoint_heads[key] = [element_head(f"/sapiens/person/{track}/{name}", "f" * columns)
                                         for name in self.keypoint_names]
        return self._keypoint_heads[key]

    def send(self, datagrams: list[bytes]) -> None:
        for payload in datagrams:
            self.sender.send(payload)

    def summary_lines(self) -> list[str]:
        lines = [self.sender.summary()]
        if self.skipped:
            lines.append(f"--osc: {self.skipped} person-frames skipped before the person had 3D keypoints")
        return lines

    def close(self) -> None:
        self.sender.close()
