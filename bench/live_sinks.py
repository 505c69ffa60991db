"""Cost of the live senders per frame, and how late `sapiens-rt stream` sends frames.

Per sink: ms per `write` (solve, face, encode, send to a port nobody reads) on synthetic
frames: the turning humanoid of `tests/mocap_synthetic.py` in 3D with the synthetic face of
`tests/face_synthetic.py` (random jaw and eye opening), every one of the 308 keypoints known.
Rows: VMC body + face (1 person), + fingers, `--vmc-face-only`, raw `--osc` with 3 people.
The first `--face-calibrate` seconds (2 s: 60 frames) also learn the neutral face; the table
gives the mean over all frames and the median.

Replay: a 30 fps tracks file of the same frames streamed by `realtime.replay.stream` on the
real monotonic clock, with a recording sink last; lateness of frame i = its write - (the replay's
start + t_i - t_0), in ms (the sinks before the recorder have sent by then): median, p95 and worst,
without and with `--vmc` (and `--osc`).

Run: python bench/live_sinks.py [--frames 150] [--replay-frames 90]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from realtime.frames import Frame, Person  # noqa: E402
from realtime.replay import StreamOptions, stream  # noqa: E402
from realtime.sinks.tracks import TrackWriter  # noqa: E402
from tests.face_synthetic import FaceParams, face_keypoints  # noqa: E402
from tests.live_chain import osc, vmc  # noqa: E402
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip  # noqa: E402

DISCARD = 9  # nobody listens on 127.0.0.1:9: the datagrams are sent and dropped by the kernel
_IMAGE = np.zeros((2, 2, 3), np.uint8)


def synthetic_frames(count: int, people: int) -> list[Frame]:
    """`people` copies of the synthetic body with a synthetic face, side by side, every keypoint known."""
    camera = synthetic_clip(count)[4]
    rng = np.random.default_rng(0)
    frames = []
    for t in range(count):
        persons = []
        for k in range(people):
            face2d, face3d = face_keypoints(FaceParams(jaw=rng.uniform(0, 0.02), eye_open_l=rng.uniform(0.002, 0.012)),
                                            head_position=(0.5 * k, -1.2, 3.0))
            points3d = np.where(np.isfinite(face3d), face3d, camera[t] + [0.5 * k, 0, 0])
            points3d = np.where(np.isfinite(points3d), points3d, [0.5 * k, 0.0, 3.0])
            xy = 500.0 * points3d[:, :2] / points3d[:, 2:] + [640.0, 360.0]
            known2d = np.isfinite(face2d).all(axis=1)
            xy[known2d] = face2d[known2d]
            persons.append(Person(box=np.array([100 + 200 * k, 20, 300 + 200 * k, 600], np.float32), track_id=k + 1,
                                  keypoints=xy.astype(np.float32), keypoint_scores=np.full(len(NAMES), 0.9, np.float32),
                                  keypoints3d=points3d.astype(np.float32)))
        frames.append(Frame(index=t, timestamp=t / FPS, image=_IMAGE, people=tuple(persons)))
    return frames


def per_frame_ms(sink, frames: list[Frame]) -> tuple[float, float]:
    """(mean, median) ms per write."""
    times = []
    for frame in frames:
        start = time.perf_counter()
        sink.write(frame)
        times.append((time.perf_counter() - start) * 1000)
    sink.close()
    return float(np.mean(times)), float(np.median(times))


def sink_costs(count: int) -> None:
    """Each row: the face and motion stages (what a run does once per frame, whatever the number
    of senders) and then the sender's encoding and sending; the last rows: a sender alone, on
    frames the stages already solved (what each extra --vmc target costs)."""
    one, three = synthetic_frames(count, 1), synthetic_frames(count, 3)
    solved = [vmc("127.0.0.1", DISCARD, NAMES).process(f) for f in one]
    rows = [
        ("face + motion stages + VMC, 1 person, body + face (one_euro filter)", vmc("127.0.0.1", DISCARD, NAMES), one),
        ("face + motion stages + VMC, 1 person, body + face + fingers", vmc("127.0.0.1", DISCARD, NAMES, fingers=True), one),
        ("face stage + VMC --vmc-face-only", vmc("127.0.0.1", DISCARD, NAMES, face_only=True), one),
        ("face + motion stages + OSC, 3 people x 308 keypoints", osc("127.0.0.1", DISCARD, NAMES), three),
        ("VmcSink alone (encode + send), 1 person, solved frames", vmc("127.0.0.1", DISCARD, NAMES).inner, solved),
    ]
    print(f"| sink ({count} frames) | mean ms per frame | median ms per frame |")
    print("|---|---:|---:|")
    for name, sink, frames in rows:
        mean, median = per_frame_ms(sink, frames)
        print(f"| {name} | {mean:.2f} | {median:.2f} |")


class StartClock:
    """The monotonic clock, noting its first reading: the replay's start (frame 0 is due then)."""

    start: Optional[float] = None

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def now(self) -> float:
        t = time.monotonic()
        if self.start is None:
            self.start = t
        return t


class WallRecorder:
    """A sink noting the monotonic time of each write."""

    def __init__(self):
        self.at: list[float] = []

    def write(self, frame: Frame) -> None:
        self.at.append(time.monotonic())

    def close(self) -> None:
        pass


def replay_lateness(count: int) -> None:
    frames = synthetic_frames(count, 1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "take.jsonl"
        with TrackWriter(path, keypoint_names=NAMES, image_wh=(1280, 720), fps=FPS, source="synthetic", model={},
                         tracked=True) as w:
            for frame in frames:
                w.write(frame)
        times = np.array([f.timestamp for f in frames])
        print(f"\n| sapiens-rt stream ({count} frames at {FPS:g} fps) | median late ms | p95 ms | worst ms |")
        print("|---|---:|---:|---:|")
        for name, extra in (("recording sink only", {}), ("--vmc", {"vmc": [f"127.0.0.1:{DISCARD}"]}),
                            ("--vmc --osc", {"vmc": [f"127.0.0.1:{DISCARD}"], "osc": f"127.0.0.1:{DISCARD}"})):
            recorder, clock = WallRecorder(), StartClock()
            stream(StreamOptions(tracks=str(path), sinks=[recorder], **extra), clock=clock)
            late = (np.array(recorder.at) - clock.start - (times - times[0])) * 1000
            print(f"| {name} | {statistics.median(late):.2f} | {np.percentile(late, 95):.2f} | {late.max():.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--replay-frames", type=int, default=90)
    args = parser.parse_args()
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"CPU: {os.cpu_count()} cores, load average {load} (1, 5, 15 min; shared machine)\n")
    sink_costs(args.frames)
    replay_lateness(args.replay_frames)


if __name__ == "__main__":
    main()
