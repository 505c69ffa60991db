"""Live motion over OSC/UDP: VMC protocol bones (`VmcSink`) and raw keypoints (`OscKeypointSink`).

Both send one UDP datagram (an OSC bundle) per frame and person from a non-blocking
socket: nothing waits for a receiver; a datagram that does not fit the socket's
buffer, or a receiver that is absent, loses that frame only (the next one is newer).

VMC (https://protocol.vmc.info/marionette-spec), per processed frame, for one person:

    /VMC/Ext/Root/Pos (s)"root" (f)p.x p.y p.z (f)q.x q.y q.z q.w      origin, identity
    /VMC/Ext/Bone/Pos (s)name   (f)p.x p.y p.z (f)q.x q.y q.z q.w      every bone, local
    /VMC/Ext/OK       (i)loaded=1 (i)calibration state=3 (i)calibration mode=0 (i)tracking (1 seen, 0 lost)
    /VMC/Ext/T        (f)time (the frame's timestamp, s)

Bone names are Unity's HumanBodyBones (VRM names capitalised; VRM 1.0's thumb
Metacarpal/Proximal/Distal are Unity's Thumb Proximal/Intermediate/Distal). Poses are
local to the parent bone, in Unity's axes (left-handed, Y up, the avatar facing +Z,
metres): our rig (right-handed, +X = the character's left) mirrored in X, positions
(-x, y, z), quaternions (x, -y, -z, w). Rotations are relative to the T-pose with all
bone rotations identity, as VRM's normalised bones are; positions are the solver's
bone offsets, and `Hips` carries the body's translation.

Raw keypoints (`--osc`), per frame and tracked person, every known keypoint:

    /sapiens/person/<id>/<keypoint> (f)x (f)y (f)z (f)score   metres, camera frame (x right, y down, z forward)
    /sapiens/person/<id>/<keypoint> (f)x (f)y (f)score        image pixels, when the run has no 3D (no depth task)
    /sapiens/frame (i)index (f)time                           once per frame, before the people
"""

from __future__ import annotations

import logging
import socket
from typing import Optional, Sequence

import numpy as np
from pythonosc.parsing import osc_types

from realtime.errors import UserError
from realtime.frames import Frame, Person

log = logging.getLogger(__name__)

DEFAULT_VMC_PORT = 39539
LOST_AFTER_SECONDS = 1.0  # the followed person unseen this long: pick the largest again


def parse_endpoint(text: str, option: str, default_port: Optional[int] = None) -> tuple[str, int]:
    """'127.0.0.1:39539' -> ('127.0.0.1', 39539); a bare host takes `default_port`."""
    host, sep, port = text.rpartition(":")
    if not sep and default_port is not None:
        host, port = text, str(default_port)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"{option} {text} is not HOST:PORT; write it like {option} 127.0.0.1:{default_port or 9000}.")
    return host, int(port)


class UdpSender:
    """Non-blocking UDP datagrams to one address; a send that cannot go now is dropped."""

    def __init__(self, host: str, port: int, option: str):
        try:
            family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        except socket.gaierror:
            raise UserError(f"{option}: cannot resolve the host {host!r}; give an IP address such as 127.0.0.1.") from None
        self.address = address
        self.sock = socket.socket(family, kind, proto)
        self.sock.setblocking(False)
        self.sent = self.dropped = 0

    def send(self, payload: bytes) -> bool:
        try:
            self.sock.sendto(payload, self.address)
        except OSError as err:  # BlockingIOError (buffer full), refused (nobody listens), too big...
            if self.dropped == 0:
                log.warning("OSC to %s:%s: %s; dropping frames until it goes through", *self.address[:2], err)
            self.dropped += 1
            return False
        self.sent += 1
        return True

    def close(self) -> None:
        if self.dropped:
            log.warning("OSC to %s:%s: %d of %d frames could not be sent", *self.address[:2], self.dropped, self.sent + self.dropped)
        self.sock.close()


def osc_message(address: str, args: Sequence) -> bytes:
    """One OSC message: str -> s, int -> i, anything else -> f (python-osc's type encoders)."""
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


def osc_bundle(messages: Sequence[tuple[str, Sequence]]) -> bytes:
    """One OSC bundle (time tag: immediately) of (address, args) messages."""
    parts = [_BUNDLE_HEAD]
    for address, args in messages:
        message = osc_message(address, args)
        parts += [osc_types.write_int(len(message)), message]
    return b"".join(parts)


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


def motion_sinks(*, vmc: Optional[str] = None, vmc_person: Optional[int] = None, vmc_fingers: bool = False,
                 osc: Optional[str] = None, tasks: Sequence[str] = ("pose",), smooth: Optional[str] = "one_euro",
                 smoothness: float = 0.5) -> list:
    """The sinks that `--vmc` / `--osc` ask for (an empty list when neither does); checks the options first."""
    from realtime.data import keypoint_names

    if vmc is None and (vmc_person is not None or vmc_fingers):
        raise UserError("--vmc-person and --vmc-fingers go with --vmc HOST:PORT; add --vmc 127.0.0.1:39539.")
    if (vmc or osc) and "pose" not in tasks:
        raise UserError(f"{'--vmc' if vmc else '--osc'} streams keypoints, so it needs the pose task; add it, e.g. --tasks pose,depth.")
    if vmc and "pointmap" not in tasks:
        raise UserError("--vmc needs 3D keypoints from the depth (pointmap) task; run with --tasks pose,depth.")
    names = keypoint_names()
    sinks = []
    if vmc:
        host, port = parse_endpoint(vmc, "--vmc", DEFAULT_VMC_PORT)
        sinks.append(VmcSink(host, port, names, person=vmc_person, fingers=vmc_fingers, filter_method=smooth, smoothness=smoothness))
    if osc:
        host, port = parse_endpoint(osc, "--osc")
        sinks.append(OscKeypointSink(host, port, names, filter_method=smooth, smoothness=smoothness))
    return sinks


def _area(person: Person) -> float:
    x1, y1, x2, y2 = (float(v) for v in person.box)
    return max(x2 - x1, 0.0) * max(y2 - y1, 0.0)


class VmcSink:
    """Streams one person's solved bones as VMC protocol messages (a "Performer" to a "Marionette").

    person: follow this track id; None: the largest person, kept until it is unseen for
    LOST_AFTER_SECONDS. `filter_method`/`smoothness`: the live filter for the 3D keypoints.
    """

    name = "vmc"

    def __init__(self, host: str, port: int, keypoint_names: Sequence[str], *, person: Optional[int] = None,
                 fingers: bool = False, filter_method: Optional[str] = "one_euro", smoothness: float = 0.5):
        from realtime.rig.solver import LiveSolver

        self.sender = UdpSender(host, port, "--vmc")
        self.person = person
        self.solver = LiveSolver(list(keypoint_names), fingers=fingers)
        self.filter = Filter3D(filter_method, smoothness, len(keypoint_names))
        self.num_keypoints = len(keypoint_names)
        self.bone_names = [unity_bone_name(b.name) for b in self.solver.bones]
        self.frames = 0
        self._following: Optional[int] = None
        self._last_seen = -np.inf

    def _choose(self, frame: Frame) -> Optional[Person]:
        people = [p for p in frame.people if p.keypoints is not None]
        if self.person is not None:
            return next((p for p in people if p.track_id == self.person), None)
        followed = next((p for p in people if p.track_id is not None and p.track_id == self._following), None)
        if followed is not None:
            return followed
        if self._following is not None and frame.timestamp - self._last_seen <= LOST_AFTER_SECONDS:
            return None  # briefly lost: hold the pose rather than jump to someone else
        if not people:
            return None
        largest = max(people, key=_area)
        if largest.track_id != self._following:
            self._following = largest.track_id
            self.solver.reset()
        return largest

    def write(self, frame: Frame) -> None:
        person = self._choose(frame)
        points = np.full((self.num_keypoints, 3), np.nan)
        if person is not None:
            self._last_seen = frame.timestamp
            if person.keypoints3d is not None:
                track = person.track_id if person.track_id is not None else -1
                points = self.filter(frame.timestamp, track, person.keypoints3d, person.keypoint_scores)
        pose = self.solver.update(points)
        tracking = int(person is not None and not pose.held.all())
        positions = pose.skeleton.offsets.copy()
        positions[0] = pose.root_position
        positions, rotations = to_unity(positions, pose.rotations)
        messages = [("/VMC/Ext/Root/Pos", ["root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])]
        messages += [("/VMC/Ext/Bone/Pos", [name, *p, *q]) for name, p, q in zip(self.bone_names, positions, rotations)]
        messages += [("/VMC/Ext/OK", [1, 3, 0, tracking]), ("/VMC/Ext/T", [float(frame.timestamp)])]
        self.sender.send(osc_bundle(messages))
        self.frames += 1

    def close(self) -> None:
        self.sender.close()


class OscKeypointSink:
    """Streams every tracked person's known keypoints as /sapiens/person/<id>/<keypoint> messages."""

    name = "osc"

    def __init__(self, host: str, port: int, keypoint_names: Sequence[str], *, filter_method: Optional[str] = "one_euro",
                 smoothness: float = 0.5):
        self.sender = UdpSender(host, port, "--osc")
        self.keypoint_names = list(keypoint_names)
        self.filter = Filter3D(filter_method, smoothness, len(keypoint_names))
        self.frames = 0

    def write(self, frame: Frame) -> None:
        self.sender.send(osc_bundle([("/sapiens/frame", [int(frame.index), float(frame.timestamp)])]))
        for person in frame.people:
            if person.track_id is None or person.keypoints is None:
                continue  # no stable id yet: receivers key on it
            scores = person.keypoint_scores if person.keypoint_scores is not None else np.full(len(self.keypoint_names), np.nan)
            if person.keypoints3d is not None:
                values = self.filter(frame.timestamp, person.track_id, person.keypoints3d, scores)
            else:
                values = np.asarray(person.best_keypoints, dtype=np.float64)
            known = np.isfinite(values).all(axis=-1)
            prefix = f"/sapiens/person/{int(person.track_id)}/"
            messages = [(prefix + self.keypoint_names[k], [*values[k], float(scores[k])]) for k in np.flatnonzero(known)]
            if messages:
                self.sender.send(osc_bundle(messages))
        self.frames += 1

    def close(self) -> None:
        self.sender.close()
