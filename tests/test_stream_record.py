"""`sapiens-rt stream` and `smooth` of recordings with bones, as a user meets them (issue 50): a
recording that breaks the record's rules (null or NaN rotations, a null or 1e300 root, a null camera
position, bone_names that are no list of the solver's names) is one sentence and exit 2 before anything
is sent; an absent --vmc-person is one sentence naming the ids; a pipe is read once (stream and smooth of
/dev/stdin as export reads it); smooth solves the bones again from its smoothed 3D, so stream sends them;
--vmc-fingers of a recording without finger bones solves those. A stock python-osc server receives."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import BlockingOSCUDPServer

from realtime.frames import Frame, Person, rounded_camera
from realtime.sinks.tracks import TrackWriter
from realtime.stages.motion import MotionStage
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

ROOT = Path(__file__).resolve().parents[1]
FRAMES = 12


class Server:
    """A stock python-osc UDP server keeping every message it is sent, in order."""

    def __init__(self):
        self.messages: list[tuple[str, list]] = []
        dispatcher = Dispatcher()
        dispatcher.set_default_handler(lambda address, *args: self.messages.append((address, list(args))))
        self.server = BlockingOSCUDPServer(("127.0.0.1", 0), dispatcher)
        self.target = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def frames(self, count: int, timeout: float = 30.0) -> list[list[tuple[str, list]]]:
        """The messages of `count` VMC frames (each ends with /VMC/Ext/T)."""
        end = time.monotonic() + timeout
        while sum(a == "/VMC/Ext/T" for a, _ in self.messages) < count and time.monotonic() < end:
            time.sleep(0.01)
        frames, current = [], []
        for address, args in list(self.messages):
            current.append((address, args))
            if address == "/VMC/Ext/T":
                frames.append(current)
                current = []
        return frames

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def server():
    s = Server()
    yield s
    s.close()


def record_take(path: Path, frames: int = FRAMES) -> Path:
    """A walk with 3D keypoints, contacts, the motion stage's 21 bones and a world camera (as a run writes it)."""
    clip = synthetic_clip(frames)[4]
    stage = MotionStage(NAMES, smooth="one_euro")
    rng = np.random.default_rng(3)
    pose = np.eye(4)
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic", model={}, tracked=True,
                     bone_names=stage.bone_names) as writer:
        for t in range(frames):
            xy = 500.0 * clip[t, :, :2] / clip[t, :, 2:] + [320.0, 240.0]
            noisy = clip[t] + rng.normal(0, 0.01, clip[t].shape)  # measured: what smoothing smooths
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.where(np.isfinite(clip[t, :, 0]), 0.9, 0.0).astype(np.float32),
                            keypoints3d=noisy.astype(np.float32), contacts=np.array([True, t % 3 == 0]))
            pose[:3, 3] = [0.01 * t, 1.5, -3.0]
            camera = rounded_camera(pose, np.array([500.0, 500.0, 319.5, 239.5]), "tracking", False, True)
            frame = Frame(index=t, timestamp=t / FPS, image=np.zeros((2, 2, 3), np.uint8), people=(person,), camera=camera)
            writer.write(stage.process(frame))
    return path


@pytest.fixture(scope="module")
def take(tmp_path_factory) -> Path:
    return record_take(tmp_path_factory.mktemp("take") / "take.jsonl")


def _cli(*argv, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "realtime.cli", *map(str, argv)], capture_output=True, text=True,
                          timeout=300, stdin=stdin, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})


def _piped(take: Path, *argv) -> subprocess.CompletedProcess:
    """`sapiens-rt ARGV` with `take` on its standard input through a pipe (`cat take |`)."""
    cat = subprocess.Popen(["cat", str(take)], stdout=subprocess.PIPE)
    try:
        return _cli(*argv, stdin=cat.stdout)
    finally:
        cat.stdout.close()  # a command that read nothing: cat ends on the broken pipe
        cat.wait()


def _one_error(proc: subprocess.CompletedProcess, *expected: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for text in expected:
        assert text in proc.stderr, proc.stderr
    return proc.stderr


def _changed(take: Path, out: Path, change, line: int = 4) -> Path:
    """A copy of `take` whose line `line` (1-based; 1: the header) is changed by `change(record)`; a string
    "@NaN@" it puts in becomes a NaN token."""
    lines = take.read_text().splitlines()
    record = json.loads(lines[line - 1])
    change(record)
    lines[line - 1] = json.dumps(record).replace('"@NaN@"', "NaN")
    out.write_text("\n".join(lines) + "\n")
    return out


def _finite(messages) -> bool:
    return all(math.isfinite(v) for _, args in messages for v in args if isinstance(v, float))


def _bones(frame) -> dict[str, list]:
    return {args[0]: args[1:] for address, args in frame if address == "/VMC/Ext/Bone/Pos"}


def _bone(record: dict) -> dict:
    return record["people"][0]["bones"]


BROKEN = {
    "null rotations": (lambda r: _bone(r)["rot"].__setitem__(3, [None] * 4), "person 1's bones' rot holds null"),
    "NaN rotations": (lambda r: _bone(r)["rot"][0].__setitem__(0, "@NaN@"), "person 1's bones' rot holds NaN, not a finite"),
    "a null root": (lambda r: _bone(r).__setitem__("root", None), "person 1's bones' root is null"),
    "a root of nulls": (lambda r: _bone(r).__setitem__("root", [None] * 3), "person 1's bones' root holds null"),
    "a 1e300 root": (lambda r: _bone(r)["root"].__setitem__(0, 1e300), "person 1's bones' root holds 1e+300, beyond the float32"),
    "an Infinity offset": (lambda r: _bone(r)["offsets"].__setitem__(2, [0.0, math.inf, 0.0]),
                           "person 1's bones' offsets holds Infinity"),
    "a null camera position": (lambda r: r["camera"].__setitem__("position", None), "camera's position is null"),
    "a camera position of nulls": (lambda r: r["camera"].__setitem__("position", [None, None, None]),
                                   "camera's position holds null"),
    "a NaN camera rotation": (lambda r: r["camera"]["rotation"].__setitem__(0, "@NaN@"), "camera's rotation holds NaN"),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_recording_breaking_the_record_is_refused_before_anything_is_sent(take, tmp_path, server, case):
    change, words = BROKEN[case]
    broken = _changed(take, tmp_path / "broken.jsonl", change, line=9)
    _one_error(_cli("stream", broken, "--vmc", server.target, "--osc", server.target, "--speed", "10"),
               f"{broken} line 9 does not follow the tracks schema", words)
    time.sleep(0.2)
    assert server.messages == []  # the whole file is checked first: nothing sent, NaN or not


@pytest.mark.parametrize("names, words", [
    (5, "header's bone_names is 5, not a list of names"),
    ([1] * 21, "header's bone_names is [1, 1"),
    (["hips"] * 21, "header's bone_names names 'hips' twice"),
    ("rename", "header's bone_names are not the 21 bones (51 with fingers) sapiens-rt solves (leftPaw, rightPaw are none"),
])
def test_bone_names_are_checked_whole_before_anything_is_sent(take, tmp_path, server, names, words):
    def change(header):
        header["bone_names"] = [n.replace("Foot", "Paw") for n in header["bone_names"]] if names == "rename" else names

    broken = _changed(take, tmp_path / "names.jsonl", change, line=1)
    _one_error(_cli("stream", broken, "--vmc", server.target, "--speed", "10"), words)
    assert _one_error(_cli("smooth", broken, "-o", tmp_path / "s.jsonl"), "bone_names")
    time.sleep(0.2)
    assert server.messages == [] and not (tmp_path / "s.jsonl").exists()


def test_an_absent_vmc_person_is_one_sentence_naming_the_ids(take, server):
    _one_error(_cli("stream", take, "--vmc", server.target, "--vmc-person", "7"),
               f"--vmc-person 7 is not in {take} (its ids: 1)", "leave --vmc-person out")
    time.sleep(0.2)
    assert server.messages == []


def test_a_present_vmc_person_streams(take, server):
    done = _cli("stream", take, "--vmc", server.target, "--vmc-person", "1", "--speed", "10")
    assert done.returncode == 0, done.stderr
    frames = server.frames(FRAMES)
    assert len(frames) == FRAMES and _finite(server.messages)
    assert all(args[-1] == 1 for address, args in server.messages if address == "/VMC/Ext/OK")  # tracked, not a rest pose


@pytest.mark.parametrize("name", ["/dev/stdin", "-"])
def test_stream_reads_a_pipe_once_and_sends_what_the_file_sends(take, server, name):
    done = _cli("stream", take, "--vmc", server.target, "--speed", "10")
    assert done.returncode == 0, done.stderr
    from_file = server.frames(FRAMES)
    server.messages.clear()
    done = _piped(take, "stream", name, "--vmc", server.target, "--speed", "10")
    assert done.returncode == 0, done.stderr
    assert f"streamed {FRAMES} frames" in done.stdout
    from_pipe = server.frames(FRAMES)
    strip = lambda frames: [[m for m in f if m[0] != "/VMC/Ext/T"] for f in frames]  # noqa: E731 (times: the clock's)
    assert strip(from_pipe) == strip(from_file) and len(from_pipe) == FRAMES


def test_smooth_and_export_read_a_pipe_once(take, tmp_path):
    out = tmp_path / "smoothed.jsonl"
    done = _piped(take, "smooth", "/dev/stdin", "-o", out)
    assert done.returncode == 0, done.stderr
    from_file = tmp_path / "from_file.jsonl"
    assert _cli("smooth", take, "-o", from_file).returncode == 0
    assert out.read_text() == from_file.read_text()
    _one_error(_piped(take, "smooth", "/dev/stdin"), "/dev/stdin is not a file", "-o SMOOTHED.jsonl")
    _one_error(_piped(take, "export", "-", "--to", "csv"), "- is not a file", "-o OUT")  # no "-.csv" in the folder
    done = _piped(take, "export", "/dev/stdin", "--to", "csv", "-o", tmp_path / "t.csv")
    assert done.returncode == 0 and len((tmp_path / "t.csv").read_text().splitlines()) == FRAMES + 1, done.stderr


def test_dev_stdin_redirected_from_a_file_has_no_folder_beside_it_either(take, tmp_path):
    """`< take.jsonl` makes /dev/stdin a file: the default output was /dev/stdin.csv, refused as an -o never given."""
    for argv, words in ((("export", "/dev/stdin", "--to", "csv"), "-o OUT"), (("smooth", "/dev/stdin"), "-o SMOOTHED.jsonl")):
        with take.open("rb") as redirected:
            _one_error(_cli(*argv, stdin=redirected), "/dev/stdin is not a file", words)
    with take.open("rb") as redirected:
        done = _cli("export", "/dev/stdin", "--to", "csv", "-o", tmp_path / "t.csv", stdin=redirected)
    assert done.returncode == 0 and len((tmp_path / "t.csv").read_text().splitlines()) == FRAMES + 1, done.stderr


def test_smooth_solves_the_bones_again_and_stream_sends_them(take, tmp_path, server):
    from realtime.replay import read_frames

    smoothed = tmp_path / "smoothed.jsonl"
    done = _cli("smooth", take, "-o", smoothed)
    assert done.returncode == 0, done.stderr
    before = [json.loads(line) for line in take.read_text().splitlines()[1:]]
    after = [json.loads(line) for line in smoothed.read_text().splitlines()[1:]]
    assert all(p["smoothed"] for r in after for p in r["people"])
    assert sum(_bone(a)["rot"] != _bone(b)["rot"] for a, b in zip(after, before)) >= FRAMES - 1
    # the bones are the motion stage's solve (no live filter) of the 3D keypoints the smoothed file holds
    stage = MotionStage(NAMES, smooth="none")
    solved = [stage.process(frame.replace(people=tuple(p.replace(bones=None) for p in frame.people)))
              for frame in read_frames(smoothed)]
    for frame, line in zip(solved, after):
        np.testing.assert_array_equal(frame.people[0].bones.rotations, np.array(_bone(line)["rot"]))
        np.testing.assert_array_equal(frame.people[0].bones.root_position, np.array(_bone(line)["root"]))
    # ... and they are what stream sends
    assert _cli("stream", smoothed, "--vmc", server.target, "--speed", "10").returncode == 0
    sent = server.frames(FRAMES)
    server.messages.clear()
    assert _cli("stream", take, "--vmc", server.target, "--speed", "10").returncode == 0
    unsmoothed = server.frames(FRAMES)
    assert len(sent) == len(unsmoothed) == FRAMES
    from realtime.sinks.osc import to_unity, unity_bone_name

    names = [unity_bone_name(n) for n in json.loads(smoothed.read_text().splitlines()[0])["bone_names"]]
    for frame, line in zip(sent, after):
        _, rotations = to_unity(np.zeros((len(names), 3)), np.array(_bone(line)["rot"]))
        received = _bones(frame)
        np.testing.assert_allclose([received[n][3:] for n in names], rotations, atol=1e-6)
    assert sum(_bones(a) != _bones(b) for a, b in zip(sent, unsmoothed)) >= FRAMES - 1


def test_vmc_fingers_of_a_recording_without_finger_bones_sends_51_bones(take, server):
    from realtime.rig.bones import bone_table
    from realtime.sinks.osc import unity_bone_name

    done = _cli("stream", take, "--vmc", server.target, "--vmc-fingers", "--speed", "10")
    assert done.returncode == 0, done.stderr
    frames = server.frames(FRAMES)
    assert len(frames) == FRAMES and _finite(server.messages)
    finger_names = {unity_bone_name(b.name) for b in bone_table(True)} - {unity_bone_name(b.name) for b in bone_table(False)}
    assert len(finger_names) == 30
    for frame in frames:
        assert len(_bones(frame)) == 51 and finger_names <= set(_bones(frame))
    # the body is sent as recorded (the same numbers as without --vmc-fingers), the fingers solved and bent
    server.messages.clear()
    assert _cli("stream", take, "--vmc", server.target, "--speed", "10").returncode == 0
    body = server.frames(FRAMES)
    for with_fingers, without in zip(frames, body):
        assert {n: v for n, v in _bones(with_fingers).items() if n not in finger_names} == _bones(without)
    bent = [abs(_bones(f)[n][6]) < 0.9999 for f in frames for n in finger_names]  # w of the quaternion: not the rest pose
    assert sum(bent) > len(bent) // 2


def test_the_live_vmc_sender_sends_nothing_non_finite_from_a_run_either(server):
    """The run's own path: a person whose solved bones hold a NaN (or a number beyond float32), and a camera
    at an impossible place, reach a stock receiver as the last good pose held (tracking 0) and no camera."""
    import dataclasses

    from realtime.stages.live import live_senders

    (sender,) = live_senders(vmc=[server.target], tasks=("pose", "pointmap"))
    frames = []
    stage = MotionStage(NAMES, smooth="none")
    clip = synthetic_clip(3)[4]
    for t in range(3):
        xy = (500.0 * clip[t, :, :2] / clip[t, :, 2:] + [320.0, 240.0]).astype(np.float32)
        person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy,
                        keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=clip[t].astype(np.float32))
        pose = np.eye(4)
        pose[:3, 3] = [0.0, 1.5, 1e39 if t == 2 else -3.0]
        camera = rounded_camera(pose, np.array([500.0, 500.0, 319.5, 239.5]), "tracking", True, True)
        frames.append(stage.process(Frame(index=t, timestamp=t / FPS, image=np.zeros((2, 2, 3), np.uint8), people=(person,),
                                          camera=camera)))
    bad = frames[1].people[0].bones
    rotations, root = bad.rotations.copy(), bad.root_position.copy()
    rotations[4] = np.nan
    frames[1] = frames[1].replace(people=(frames[1].people[0].replace(bones=dataclasses.replace(bad, rotations=rotations)),))
    root[1] = 1e300
    frames[2] = frames[2].replace(people=(frames[2].people[0].replace(bones=dataclasses.replace(bad, root_position=root)),))
    for frame in frames:
        sender.write(frame)
    sent = server.frames(3)
    sender.close()
    assert len(sent) == 3 and _finite(server.messages)
    assert _bones(sent[1]) == _bones(sent[0]) == _bones(sent[2])  # the last good pose, held
    ok = [args[-1] for f in sent for address, args in f if address == "/VMC/Ext/OK"]
    assert ok == [1, 0, 0]
    assert ["/VMC/Ext/Cam" in {a for a, _ in f} for f in sent] == [True, True, False]
