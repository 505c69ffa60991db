"""The live stage: the avatar gets each frame here, right after the motion stage and before
anything draws, encodes or writes it.

Each live sender (`realtime.sinks.osc`: VMC bones and face, raw OSC keypoints; `realtime.sinks.vrchat`:
VRChat's OSC trackers and face) encodes what the frame holds, then sends it from a non-blocking
socket. On a recorded source (a video file, a tracks file in `sapiens-rt stream`) frames are sent
at their media time, so a receiver sees real speed and no bursts (`pace`; off: as fast as they
come). The stage measures, per sender, read->sent (from the moment the frame was read to its last
datagram leaving) and counts frames sent more than a frame period after their time.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional, Sequence

import numpy as np

from realtime.errors import UserError
from realtime.frames import Frame
from realtime.options import PYTHON, Caller
from realtime.sinks.osc import (
    DATAGRAM_LIMIT,
    DEFAULT_VMC_PORT,
    MAX_PERFORMERS,
    VMC_BUNDLES,
    OscKeypointSink,
    VmcSink,
    parse_endpoint,
    parse_vmc_person,
)
from realtime.sinks.vrchat import (
    DEFAULT_TRACKERS,
    DEFAULT_VRCHAT_PORT,
    VrchatSink,
    parse_height,
    parse_person,
    parse_trackers,
)

LATENCY_WINDOW = 10_000  # read->sent samples kept per sender for the summary


def live_senders(*, vmc: Sequence[str] = (), vmc_person: Optional[str] = None, vmc_fingers: bool = False,
                 vmc_bundle: str = "split", vmc_face_only: bool = False, face_calibrate: float = 2.0,
                 osc: Optional[str] = None, tasks: Sequence[str] = ("pose",), vrchat: Optional[str] = None,
                 vrchat_trackers=None, vrchat_height: Optional[float] = None, vrchat_person=None,
                 caller: Caller = PYTHON) -> list:
    """The senders that `--vmc` (repeatable) / `--osc` / `--vrchat` ask for (an empty list when none does); checks the
    options first. vrchat: HOST:PORT (a bare host: port 9000); vrchat_trackers: a comma list of hip, feet, chest,
    knees, elbows (default hip,feet); vrchat_height: metres (`realtime.sinks.vrchat`). caller: how errors name the
    options (the command line passes `realtime.options.CLI`)."""
    from realtime import tasks as task_table
    from realtime.data import keypoint_names
    from realtime.stages.motion import rest_bones

    tasks = tuple(task_table.canonical(t) for t in (tasks.split(",") if isinstance(tasks, str) else tasks))  # "depth" too
    vmc = [vmc] if isinstance(vmc, str) else list(vmc or ())
    name, given = caller.name, caller.given
    vmc_example = given("vmc", "127.0.0.1:39539" if caller.cli else ["127.0.0.1:39539"])
    depth_example = given("tasks", "pose,depth")
    if not vmc and (vmc_person is not None or vmc_fingers or vmc_face_only or vmc_bundle != "split"):
        raise UserError(f"{name('vmc_person')}, {name('vmc_fingers')}, {name('vmc_bundle')} and {name('vmc_face_only')} go "
                        f"with {name('vmc')}; add {vmc_example}.")
    if vmc_bundle not in VMC_BUNDLES:
        raise UserError(f"{caller.said('vmc_bundle', vmc_bundle)} is not one of {', '.join(VMC_BUNDLES)}; use split "
                        f"(datagrams of at most {DATAGRAM_LIMIT} bytes) or single (one bundle per frame).")
    if (vmc or osc) and not task_table.gives_keypoints(tasks):
        raise UserError(f"{name('vmc') if vmc else name('osc')} streams keypoints, so it needs the pose task; "
                        f"add it, e.g. {depth_example}.")
    if vmc and not vmc_face_only and not task_table.gives_3d(tasks):
        raise UserError(f"{name('vmc')} needs 3D keypoints from the depth (pointmap) task; run with {depth_example} "
                        f"(or {given('vmc_face_only', True)} for head and face alone).")
    person = parse_vmc_person(vmc_person, caller)
    if face_calibrate < 0:
        raise UserError(f"{caller.said('face_calibrate', face_calibrate)} is negative; give the seconds of neutral face to "
                        f"learn from, e.g. {given('face_calibrate', 2)}.")
    names = keypoint_names()
    senders: list = []
    rest = rest_bones(names, vmc_fingers) if vmc else None
    for target in vmc:
        host, port = parse_endpoint(target, "vmc", DEFAULT_VMC_PORT, caller)
        if person == "all" and port + MAX_PERFORMERS - 1 > 65535:
            raise UserError(f"{caller.said('vmc', target)} with {given('vmc_person', 'all')} sends person k to port {port}+k, "
                            f"up to {port + MAX_PERFORMERS - 1}, past the last port 65535; "
                            f"give a port of at most {65536 - MAX_PERFORMERS}.")
        senders.append(VmcSink(host, port, rest=rest, person=person, fingers=vmc_fingers, bundle=vmc_bundle,
                               face_only=vmc_face_only))
    if osc:
        host, port = parse_endpoint(osc, "osc", caller=caller)
        senders.append(OscKeypointSink(host, port, names, three_d=task_table.gives_3d(tasks)))
    if vrchat is not None or vrchat_trackers is not None or vrchat_height is not None or vrchat_person is not None:
        senders.append(_vrchat_sender(vrchat, vrchat_trackers, vrchat_height, vrchat_person, tasks, caller))
    return senders


def _vrchat_sender(target, trackers, height, person, tasks, caller: Caller) -> VrchatSink:
    """The `--vrchat` sender, its options checked."""
    from realtime import tasks as task_table

    name, local = caller.name, caller.given("vrchat", "127.0.0.1:9000")
    if target is None:
        bare = "--vrchat [HOST:PORT]; add --vrchat" if caller.cli else f"vrchat; add {local}"
        raise UserError(f"{name('vrchat_trackers')}, {name('vrchat_height')} and {name('vrchat_person')} go with "
                        f"{bare} (VRChat on this machine: 127.0.0.1:9000).")
    if not isinstance(target, str):
        raise UserError(f"{caller.said('vrchat', target)} is not HOST:PORT; write it like {local}.")
    if not task_table.gives_3d(tasks):
        raise UserError(f"{name('vrchat')} sends trackers from the solved skeleton, which needs 3D keypoints from the depth "
                        f"(pointmap) task; run with {caller.given('tasks', 'pose,depth')}.")
    numbers = parse_trackers(DEFAULT_TRACKERS if trackers is None else trackers, caller)
    height, person = parse_height(height, caller), parse_person(person, caller)
    host, port = parse_endpoint(target, "vrchat", DEFAULT_VRCHAT_PORT, caller)
    return VrchatSink(host, port, trackers=numbers, height=height, person=person)


class LiveStage:
    """Encodes and sends each frame to every live sender (objects with `datagrams(frame)`,
    `send(prepared)`, `summary_lines()` and `close()`; a plain sink with `write(frame)` is
    written at the frame's time).

    pace: send each frame at its media time, start + (t - t0) / speed on a monotonic clock (for
    recorded sources); `wait(seconds)` sleeps and returns early when the run stops (the run
    passes its stop event's `wait`)."""

    name = "live"

    def __init__(self, senders: Sequence, *, pace: bool = False, speed: float = 1.0,
                 now: Callable[[], float] = time.monotonic, wait: Optional[Callable[[float], object]] = None):
        self.senders = list(senders)
        self.pace = pace
        self.speed = speed
        self.now = now
        self.wait = wait or threading.Event().wait
        self.period: Optional[float] = None  # seconds per frame, for counting late frames
        self._start: Optional[float] = None
        self._origin: Optional[float] = None
        self._last_t: Optional[float] = None
        self.latency_ms: list[list[float]] = [[] for _ in self.senders]
        self.late = 0  # frames sent more than a frame period after their time
        self.frames = 0

    def process(self, frame: Frame) -> Frame:
        prepared = [sender.datagrams(frame) if hasattr(sender, "datagrams") else None  # the encoding, before the frame is due
                    for sender in self.senders]
        if self.pace:
            self._wait_for(frame)
        for k, (sender, datagrams) in enumerate(zip(self.senders, prepared)):
            if datagrams is None:
                sender.write(frame)
            else:
                sender.send(datagrams)
            if frame.read_at:
                samples = self.latency_ms[k]
                samples.append((time.perf_counter() - frame.read_at) * 1000.0)
                if len(samples) > LATENCY_WINDOW:
                    del samples[: LATENCY_WINDOW // 2]
        self.frames += 1
        return frame

    def _wait_for(self, frame: Frame) -> None:
        t = frame.timestamp
        if not np.isfinite(t):  # no time: one period after the last
            t = (self._last_t + (self.period or 1 / 30)) if self._last_t is not None else 0.0
        if self._start is None:
            self._start, self._origin = self.now(), t
        self._last_t = t
        due = self._start + (t - self._origin) / self.speed
        delay = due - self.now()
        if delay > 0:
            self.wait(delay)
        elif self.period is not None and -delay > self.period / self.speed:
            self.late += 1

    def summary_lines(self) -> list[str]:
        lines = []
        for sender, samples in zip(self.senders, self.latency_ms):
            lines += sender.summary_lines() if hasattr(sender, "summary_lines") else []
            if samples:
                p50, p95 = np.percentile(samples, [50, 95])
                label = getattr(sender, "name", type(sender).__name__)
                lines.append(f"--{label}: read->sent p50 {p50:.1f} ms, p95 {p95:.1f} ms over {len(samples)} frames")
        if self.late:
            lines.append(f"live senders could not keep the source's pace on {self.late} of {self.frames} frames "
                         f"(sent more than a frame late)")
        return lines

    def close(self) -> None:
        for sender in self.senders:
            sender.close()
