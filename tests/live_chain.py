"""Live senders as a run feeds them: behind the face and motion stages (the senders only encode).

`vmc(...)` and `osc(...)` build a sender wrapped so that `write(frame)` / `datagrams(frame)`
first run the frame through `FaceStage` and `MotionStage`, as `sapiens-rt run` does before its
live stage. Tests of the senders use them with frames that already hold 3D keypoints.
"""

from __future__ import annotations

from realtime.frames import Frame
from realtime.sinks.osc import OscKeypointSink, VmcSink
from realtime.stages import FaceStage, GroundStage, MotionStage, rest_bones


class AfterMotion:
    """A sender behind the face and motion stages."""

    def __init__(self, sender, names, *, fingers: bool = False, smooth: str = "one_euro", face_calibrate: float = 2.0,
                 motion: bool = True, ground: bool = False):
        self.inner = sender
        self.stages = [FaceStage(names, calibrate_seconds=face_calibrate)]
        if ground:  # 3D between depth frames, contacts
            self.stages.append(GroundStage(names))
        if motion:
            self.stages.append(MotionStage(names, fingers=fingers, smooth=smooth))

    def process(self, frame: Frame) -> Frame:
        for stage in self.stages:
            frame = stage.process(frame)
        return frame

    def write(self, frame: Frame) -> None:
        self.inner.write(self.process(frame))

    def datagrams(self, frame: Frame):
        return self.inner.datagrams(self.process(frame))

    def messages(self, frame: Frame, slot, person):
        frame = self.process(frame)
        person = next((p for p in frame.people if p.track_id == person.track_id), None) if person is not None else None
        return self.inner.messages(frame, slot, person)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def vmc(host: str, port: int, names, *, fingers: bool = False, filter_method: str = "one_euro", face_calibrate: float = 2.0,
        face_only: bool = False, ground: bool = False, **options) -> AfterMotion:
    sender = VmcSink(host, port, rest=rest_bones(names, fingers), fingers=fingers, face_only=face_only, **options)
    return AfterMotion(sender, names, fingers=fingers, smooth=filter_method, face_calibrate=face_calibrate, motion=not face_only,
                       ground=ground)


def osc(host: str, port: int, names, *, filter_method: str = "one_euro", three_d: bool = True) -> AfterMotion:
    return AfterMotion(OscKeypointSink(host, port, names, three_d=three_d), names, smooth=filter_method, motion=three_d)


def vmc_sender(host: str, port: int, names, *, fingers: bool = False, **options) -> VmcSink:
    """A plain VMC sender, as `--vmc` makes one for a run (the run's own stages feed it)."""
    return VmcSink(host, port, rest=rest_bones(names, fingers), fingers=fingers, **options)
