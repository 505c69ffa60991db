"""`sapiens-rt stream`: a tracks file replayed to receivers at its recorded times (on a virtual clock),
--speed, --loop, its errors in one sentence, and Ctrl+C exiting 130."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest
from pythonosc.osc_bundle import OscBundle

from realtime.frames import Frame, Person
from realtime.replay import StreamOptions, stream
from realtime.sinks.tracks import TrackWriter
from tests.mocap_synthetic import NAMES, synthetic_clip

TIMES = [0.0, 0.04, 0.07, 0.2, 0.21, 0.3]  # uneven, as a camera's are


class VirtualClock:
    def __init__(self, start: float = 100.0):
        self.t = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.t += seconds


class Recorder:
    """A sink that notes the clock's time and the frame at each write (and can make sending slow)."""

    def __init__(self, clock: VirtualClock, cost: float = 0.0):
        self.clock, self.cost = clock, cost
        self.writes: list[tuple[float, int, float]] = []
        self.closed = False

    def write(self, frame: Frame) -> None:
        self.writes.append((self.clock.now(), frame.index, frame.timestamp))
        self.clock.t += self.cost

    def close(self) -> None:
        self.closed = True


@pytest.fixture(scope="module")
def tracks(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "take.jsonl"
    camera = synthetic_clip(len(TIMES))[4]
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=25.0, source="synthetic", model={}, tracked=True) as w:
        for i, t in enumerate(TIMES):
            xy = 500.0 * camera[i, :, :2] / camera[i, :, 2:] + [320.0, 240.0]
            person = Person(box=np.array([10, 10, 300, 400], np.float32), track_id=2, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=camera[i].astype(np.float32))
            w.write(Frame(index=10 + i, timestamp=t, image=np.zeros((2, 2, 3), np.uint8), people=(person,)))
    return path


@pytest.mark.parametrize("speed", [1.0, 2.0, 0.5])
def test_frames_go_out_at_their_recorded_times(tracks, speed):
    clock = VirtualClock()
    recorder = Recorder(clock)
    summary = stream(StreamOptions(tracks=str(tracks), speed=speed, sinks=[recorder]), clock=clock)
    assert summary.frames == len(TIMES) and summary.laps == 1 and recorder.closed
    assert [index for _, index, _ in recorder.writes] == [10 + i for i in range(len(TIMES))]
    sent_at = np.array([at for at, _, _ in recorder.writes]) - 100.0
    np.testing.assert_allclose(sent_at, np.array(TIMES) / speed, atol=1e-9)
    assert [t for _, _, t in recorder.writes] == pytest.approx(TIMES)


def test_a_slow_receiver_delays_but_never_reorders_or_sleeps_backwards(tracks):
    clock = VirtualClock()
    recorder = Recorder(clock, cost=0.05)  # each send takes 50 ms of a 40 ms frame gap
    stream(StreamOptions(tracks=str(tracks), sinks=[recorder]), clock=clock)
    sent_at = np.array([at for at, _, _ in recorder.writes]) - 100.0
    assert (np.diff(sent_at) > 0).all()
    assert (sent_at >= np.array(TIMES) - 1e-9).all()  # never early
    assert all(s > 0 for s in clock.sleeps)


def test_loop_starts_over_one_frame_after_the_end(tracks):
    clock = VirtualClock()
    recorder = Recorder(clock)
    summary = stream(StreamOptions(tracks=str(tracks), loop=True, sinks=[recorder]), clock=clock, max_laps=3)
    assert summary.laps == 3 and summary.frames == 3 * len(TIMES)
    sent_at = np.array([at for at, _, _ in recorder.writes]) - 100.0
    lap = TIMES[-1] + 1 / 25.0  # the header's fps gives the frame period
    expected = np.concatenate([np.array(TIMES) + k * lap for k in range(3)])
    np.testing.assert_allclose(sent_at, expected, atol=1e-9)


def test_stream_sends_vmc_for_every_frame(tracks):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(5)
    clock = VirtualClock()
    summary = stream(StreamOptions(tracks=str(tracks), vmc=[f"127.0.0.1:{receiver.getsockname()[1]}"]), clock=clock)
    times = []
    while len(times) < len(TIMES):
        for message in OscBundle(receiver.recvfrom(65536)[0]):
            if message.address == "/VMC/Ext/T":
                times.append(message.params[0])
    receiver.close()
    assert times == pytest.approx(TIMES, abs=1e-6)
    assert any("datagrams sent, 0 dropped" in line for line in summary.lines)


@pytest.mark.parametrize("args, message", [
    ([], "needs somewhere to send"),
    (["--vmc", "127.0.0.1:39539", "--speed", "0"], "--speed"),
    (["--vmc", "127.0.0.1:nope"], "HOST:PORT"),
])
def test_stream_options_are_checked_in_one_sentence(tracks, capsys, args, message):
    from realtime.cli import main

    try:
        code = main(["stream", str(tracks), *args])
    except SystemExit as exit_:  # argparse's own checks
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") <= 2


def test_stream_of_a_missing_file_says_what_to_pass(tmp_path, capsys):
    from realtime.cli import main

    assert main(["stream", str(tmp_path / "nope.jsonl"), "--vmc", "127.0.0.1:39539"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "does not exist" in err and err.count("\n") == 1


def test_ctrl_c_ends_a_looping_stream_with_130(tracks):
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(60)
    proc = subprocess.Popen([sys.executable, "-m", "realtime.cli", "stream", str(tracks), "--loop", "--osc",
                             f"127.0.0.1:{receiver.getsockname()[1]}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        receiver.recvfrom(65536)  # it is streaming
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        receiver.close()
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err and b"interrupted" in err
