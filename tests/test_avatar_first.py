"""The avatar first: senders only encode what the stages solved, once; a run and a stream of
its tracks send the same bytes; the live senders come before drawing and writing.

Runs use the tiny fixture models (pose + pointmap) on a synthetic clip; receivers are stock
python-osc servers on 127.0.0.1."""

from __future__ import annotations

import signal
import threading

import numpy as np
import pytest
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import BlockingOSCUDPServer

from realtime.data import keypoint_names
from realtime.options import LiveOutputOptions, ModelOptions, OutputOptions
from realtime.stages import live_senders

FRAMES = 8
FPS = 10


class RecordingServer:
    """A stock python-osc UDP server whose dispatcher also keeps every datagram's bytes, in order."""

    def __init__(self):
        self.datagrams: list[bytes] = []
        self.messages: list[tuple[str, list]] = []
        server = self

        class Keeping(Dispatcher):
            def call_handlers_for_packet(self, data, client_address):
                server.datagrams.append(bytes(data))
                return super().call_handlers_for_packet(data, client_address)

        dispatcher = Keeping()
        dispatcher.set_default_handler(lambda address, *args: self.messages.append((address, list(args))))
        self.server = BlockingOSCUDPServer(("127.0.0.1", 0), dispatcher)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = 20.0) -> None:
        import time

        end = time.monotonic() + timeout
        while len(self.datagrams) < count and time.monotonic() < end:
            time.sleep(0.01)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def server():
    s = RecordingServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    from media import gaussian_marker, write_video

    folder = tmp_path_factory.mktemp("clip")
    return write_video(folder / "clip.mp4", [gaussian_marker(120, 160, 50 + 6 * i, 60, 12) for i in range(FRAMES)], fps=FPS)


@pytest.fixture(scope="module")
def models(fixtures_dir):
    from realtime.models import load_model

    return {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "pointmap")}


def _run(clip, models, tracks, senders):
    from doubles import whole_frame_boxes
    from realtime.run import RunOptions, run

    summary = run(RunOptions(source=str(clip),
                             models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128)),
                             outputs=OutputOptions(tracks=str(tracks), no_video=True, progress=False),
                             live_outputs=LiveOutputOptions(senders=senders)),
                  models=models, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0, summary.result.message
    return summary


def test_a_run_and_a_stream_of_its_tracks_send_the_same_bytes(tmp_path, clip, models, server):
    from realtime.export.jsonl import TrackRecords
    from realtime.replay import StreamOptions, stream

    tracks = tmp_path / "take.jsonl"
    target = f"127.0.0.1:{server.port}"
    _run(clip, models, tracks, live_senders(vmc=[target], tasks=("pose", "pointmap")))
    server.wait_for(2 * FRAMES)
    live = list(server.datagrams)
    assert len(live) >= 2 * FRAMES  # 21 bones (+ face): at least two datagrams per frame

    records = [record for _, record in TrackRecords(tracks)]
    assert records[0]["version"] == 5 and len(records[0]["bone_names"]) == 21
    people = [p for r in records[1:] for p in r["people"] if p.get("id") is not None]
    assert people and all(len(p["bones"]["rot"]) == 21 for p in people)  # the solved bones are recorded
    assert any(not all(p["bones"]["held"]) for p in people)  # ... and some were measured, not only held

    server.datagrams.clear()

    class Instant:  # a stream as fast as it goes: the pacing is tested elsewhere
        t = 0.0

        def now(self):
            return self.t

        def sleep(self, seconds):
            self.t += seconds

    summary = stream(StreamOptions(tracks=str(tracks), vmc=[target]), clock=Instant())
    assert summary.exit_code == 0 and summary.frames == FRAMES
    server.wait_for(len(live))
    assert server.datagrams == live


def test_the_face_is_read_once_per_person_and_frame_with_vmc_and_osc(tmp_path, clip, models, server, monkeypatch):
    from realtime.rig import face as face_module
    from realtime.rig import solver as solver_module

    calls = {"face": 0, "solve": 0}
    face_update, solve_update = face_module.FaceSolver.update, solver_module.LiveSolver.update

    def counted_face(self, *args, **kwargs):
        calls["face"] += 1
        return face_update(self, *args, **kwargs)

    def counted_solve(self, *args, **kwargs):
        calls["solve"] += 1
        return solve_update(self, *args, **kwargs)

    monkeypatch.setattr(face_module.FaceSolver, "update", counted_face)
    monkeypatch.setattr(solver_module.LiveSolver, "update", counted_solve)
    target = f"127.0.0.1:{server.port}"
    senders = live_senders(vmc=[target, target], osc=target, tasks=("pose", "pointmap"))  # two VMC targets and OSC
    tracks = tmp_path / "t.jsonl"
    _run(clip, models, tracks, senders)
    from realtime.export.jsonl import TrackRecords

    tracked = sum(1 for _, r in TrackRecords(tracks) if r.get("type") == "frame" for p in r["people"] if p.get("id") is not None)
    assert tracked >= FRAMES - 2  # the tracker confirms a person on its second frame or so
    assert calls == {"face": tracked, "solve": tracked}  # exactly one face read and one skeleton solve per person-frame


def test_the_summary_gives_each_sender_its_read_to_sent_latency(tmp_path, clip, models, server):
    target = f"127.0.0.1:{server.port}"
    summary = _run(clip, models, tmp_path / "t.jsonl", live_senders(vmc=[target], osc=target, tasks=("pose", "pointmap")))
    for label in ("--vmc", "--osc"):
        line = next(line for line in summary.lines if line.startswith(f"{label}: read->sent"))
        assert f"over {FRAMES} frames" in line


def test_live_pace_sends_a_file_at_its_media_time(tmp_path, clip, models):
    """On a file, each frame leaves at start + its timestamp (pace on), or as soon as ready (off):
    the send times are read from a stock server's arrival order and the clock the stage is given."""
    from realtime.stages import LiveStage

    sent: list[tuple[int, float]] = []

    class Clocked:
        def __init__(self):
            self.t = 0.0

        def now(self):
            return self.t

        def wait(self, seconds):
            self.t += seconds

    clock = Clocked()

    class Note:
        name = "note"

        def write(self, frame):
            sent.append((frame.index, clock.t))

        def close(self):
            pass

    live = LiveStage([Note()], pace=True, now=clock.now, wait=clock.wait)
    from realtime.frames import Frame

    image = np.zeros((2, 2, 3), np.uint8)
    for i, t in enumerate([0.0, 0.1, 0.15, 0.4]):
        clock.t += 0.01  # the stages before took 10 ms
        live.process(Frame(index=i, timestamp=t, image=image))
    start = sent[0][1]
    assert [index for index, _ in sent] == [0, 1, 2, 3]
    np.testing.assert_allclose([at - start for _, at in sent], [0.0, 0.1, 0.15, 0.4], atol=1e-9)


def test_osc_in_a_3d_run_never_mixes_pixels_into_the_metres(tmp_path, clip, models, server):
    target = f"127.0.0.1:{server.port}"
    _run(clip, models, tmp_path / "t.jsonl", live_senders(osc=target, tasks=("pose", "pointmap")))
    server.wait_for(FRAMES)
    names = set(keypoint_names())
    widths = {len(args) for address, args in server.messages
              if address.startswith("/sapiens/person/") and address.rsplit("/", 1)[1] in names}
    assert widths == {4}  # x y z score, never x y score


def test_a_stock_server_gets_every_frame_of_a_file_while_both_cores_are_busy(tmp_path, fixtures_dir):
    """`run clip --osc` paces the senders at the file's frame times (--live-pace on), so a
    python-osc server on a loaded machine gets all 20 frames rather than a burst it drops.

    The server runs in its own process, as a receiving app does: in the test's process it would
    share the interpreter lock with whatever earlier tests left running there."""
    import multiprocessing
    import subprocess
    import sys

    from media import gaussian_marker, write_video

    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 3 * i, 48, 8) for i in range(20)], fps=10)
    spawn = multiprocessing.get_context("spawn")
    receiving, sending = spawn.Pipe(duplex=False)
    receiver = spawn.Process(target=_serve_frame_indices, args=(sending,), daemon=True)
    receiver.start()
    burners = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(2)]
    try:
        assert receiving.poll(60), "the python-osc server process did not start"
        port = receiving.recv()
        for burner in burners:
            burner.start()
        done = subprocess.run([sys.executable, "-m", "realtime.cli", "run", str(clip), "--tasks", "pose", "--checkpoint",
                               f"pose={fixtures_dir / 'pose_weights.safetensors'}", "--boxes-from", "frame", "--device", "cpu",
                               "--no-video", "--no-progress", "--tracks", str(tmp_path / "t.jsonl"), "--osc",
                               f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=600)
        for burner in burners:
            burner.terminate()
            burner.join(30)
        assert [burner.exitcode for burner in burners] == [-signal.SIGTERM] * 2
        frames = []
        while len(frames) < 20 and receiving.poll(30):
            frames.append(receiving.recv())
    finally:
        for process in [*burners, receiver]:
            if process.is_alive():
                process.terminate()
    assert done.returncode == 0, done.stderr
    assert frames == list(range(20)), done.stdout


def _serve_frame_indices(sending) -> None:
    """A stock python-osc server that sends its port, then the index of each /sapiens/frame it gets."""
    dispatcher = Dispatcher()
    dispatcher.map("/sapiens/frame", lambda address, index, *rest: sending.send(index))
    server = BlockingOSCUDPServer(("127.0.0.1", 0), dispatcher)
    sending.send(server.server_address[1])
    server.serve_forever()


def _burn() -> None:
    """Keep a core busy until the test ends it, for at most 5 minutes, and never past the test's process.
    SIGTERM ends it whatever handler the forked burner inherits from the test process (the CLI's
    early-signal catcher, when importing realtime.cli still set it, let the burners run their whole
    5 minutes on under the rest of the suite)."""
    import os
    import time

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent, end = os.getppid(), time.monotonic() + 300
    while time.monotonic() < end and os.getppid() == parent:
        for _ in range(100_000):
            pass
