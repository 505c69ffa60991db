"""Live VMC / OSC output: what a python-osc receiver on 127.0.0.1 gets, and that nobody waits for it."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from pythonosc.osc_bundle import OscBundle
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.frames import Frame, Person
from realtime.options import LiveOutputOptions, ModelOptions, OutputOptions
from realtime.rig.solver import LiveSolver
from realtime.sinks.osc import DATAGRAM_LIMIT, OscKeypointSink, parse_endpoint, unity_bone_name
from tests.live_chain import osc, vmc, vmc_sender
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

FRAMES = 20
_IMAGE = np.zeros((2, 2, 3), np.uint8)
# VMC marionette spec: Root/Pos and Bone/Pos are a string then 7 floats; OK ints; T a float
VMC_TYPES = {"/VMC/Ext/Root/Pos": "sfffffff", "/VMC/Ext/Bone/Pos": "sfffffff", "/VMC/Ext/OK": "iiii", "/VMC/Ext/T": "f"}
BLEND_TYPES = {"/VMC/Ext/Blend/Val": "sf", "/VMC/Ext/Blend/Apply": ""}  # when the face is seen
UNITY_BONES = {  # Unity HumanBodyBones that the solver drives (without fingers)
    "Hips", "Spine", "Chest", "Neck", "Head", "LeftShoulder", "LeftUpperArm", "LeftLowerArm", "LeftHand", "RightShoulder",
    "RightUpperArm", "RightLowerArm", "RightHand", "LeftUpperLeg", "LeftLowerLeg", "LeftFoot", "LeftToes", "RightUpperLeg",
    "RightLowerLeg", "RightFoot", "RightToes",
}


class Receiver:
    """A UDP socket on 127.0.0.1 that collects OSC bundles: [(address, type tags, args)] per datagram."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(2.0)
        self.port = self.sock.getsockname()[1]

    def bundles(self, count: int) -> list[list[tuple[str, str, list]]]:
        out = []
        for _ in range(count):
            dgram, _ = self.sock.recvfrom(65536)
            assert len(dgram) <= DATAGRAM_LIMIT
            bundle = OscBundle(dgram)
            out.append([(m.address, _type_tags(m.dgram), list(m.params)) for m in bundle])
        return out

    def vmc_frames(self, count: int) -> list[list[tuple[str, str, list]]]:
        """The messages of `count` VMC frames: bundles joined up to the one that ends with /VMC/Ext/T."""
        frames, current = [], []
        while len(frames) < count:
            (bundle,) = self.bundles(1)
            current += bundle
            if bundle[-1][0] == "/VMC/Ext/T":
                frames.append(current)
                current = []
        return frames

    def close(self):
        self.sock.close()


def _type_tags(dgram: bytes) -> str:
    end = dgram.index(b"\0")
    start = (end // 4 + 1) * 4  # the address is padded to 4 bytes
    return dgram[start + 1:dgram.index(b"\0", start)].decode()


@pytest.fixture()
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def camera():
    return synthetic_clip(FRAMES)[4]


def _frames(camera, *, people=((1, 1.0),)):
    """Frames of the synthetic person; people: (track id, box scale), the same motion each."""
    frames = []
    for t in range(len(camera)):
        xy = 500.0 * camera[t, :, :2] / camera[t, :, 2:] + [320.0, 240.0]
        persons = tuple(
            Person(box=np.array([100, 20, 100 + 300 * scale, 20 + 400 * scale], np.float32), track_id=track,
                   keypoints=xy.astype(np.float32), keypoint_scores=np.full(len(NAMES), 0.9, np.float32),
                   keypoints3d=(camera[t] + [0.5 * track, 0, 0]).astype(np.float32))
            for track, scale in people)
        frames.append(Frame(index=t, timestamp=t / FPS, image=_IMAGE, people=persons))
    return frames


def test_vmc_sends_every_bone_per_frame_with_the_spec_types(receiver, camera):
    sink = vmc("127.0.0.1", receiver.port, NAMES, filter_method="none")
    solver = LiveSolver(NAMES)
    frames = _frames(camera)
    for frame in frames:
        sink.write(frame)
    sink.close()
    bundles = receiver.vmc_frames(len(frames))
    for frame, bundle in zip(frames, bundles):
        for address, tags, _ in bundle:
            assert VMC_TYPES[address] == tags, address
        addresses = [a for a, _, _ in bundle]
        assert addresses[0] == "/VMC/Ext/Root/Pos" and addresses[-2:] == ["/VMC/Ext/OK", "/VMC/Ext/T"]
        bones = {args[0]: np.array(args[1:], np.float64) for a, _, args in bundle if a == "/VMC/Ext/Bone/Pos"}
        assert set(bones) == UNITY_BONES
        assert bundle[-1][2] == [pytest.approx(frame.timestamp, abs=1e-6)]
        assert bundle[-2][2] == [1, 3, 0, 1]
        # the rotations are the live solver's, mirrored into Unity's left-handed axes
        pose = solver.update(frame.people[0].keypoints3d)
        for b, bone in enumerate(solver.bones):
            x, y, z, w = pose.rotations[b]
            got = bones[unity_bone_name(bone.name)][3:]
            assert abs(np.dot(got, [x, -y, -z, w])) == pytest.approx(1.0, abs=1e-5), bone.name
        hips = bones["Hips"][:3]
        np.testing.assert_allclose(hips, pose.root_position * [-1, 1, 1], atol=1e-5)
    assert sink.senders[0].sent == 2 * len(frames) and sink.senders[0].dropped == 0  # 21 bones: two datagrams


def test_vmc_follows_the_largest_person_or_the_chosen_one(receiver, camera):
    frames = _frames(camera, people=((1, 1.0), (2, 1.5)))
    for person, expected_shift in ((None, 1.0), (1, 0.5)):
        sink = vmc("127.0.0.1", receiver.port, NAMES, person=person, filter_method="none")
        for frame in frames[:3]:
            sink.write(frame)
        sink.close()
        bundles = receiver.vmc_frames(3)
        # the root starts above the origin, so compare where the solver puts the first hips
        solver = LiveSolver(NAMES)
        for frame, bundle in zip(frames[:3], bundles):
            pose = solver.update(camera[frames.index(frame)] + [expected_shift, 0, 0])
            hips = next(np.array(args[1:4]) for a, _, args in bundle if a == "/VMC/Ext/Bone/Pos" and args[0] == "Hips")
            np.testing.assert_allclose(hips, pose.root_position * [-1, 1, 1], atol=1e-5)
    sink = vmc("127.0.0.1", receiver.port, NAMES, person=5, filter_method="none")  # nobody with id 5
    sink.write(frames[0])
    (bundle,) = receiver.vmc_frames(1)
    assert bundle[-2][2] == [1, 3, 0, 0]  # tracking lost, the full (rest) bone set still sent
    assert sum(a == "/VMC/Ext/Bone/Pos" for a, _, _ in bundle) == len(UNITY_BONES)
    sink.close()


def test_vmc_fingers_use_unity_thumb_names(receiver, camera):
    sink = vmc("127.0.0.1", receiver.port, NAMES, fingers=True)
    sink.write(_frames(camera)[0])
    (bundle,) = receiver.vmc_frames(1)
    names = {args[0] for a, _, args in bundle if a == "/VMC/Ext/Bone/Pos"}
    assert {"LeftThumbProximal", "LeftThumbIntermediate", "LeftThumbDistal", "RightLittleDistal"} <= names
    assert len(names) == len(UNITY_BONES) + 30
    sink.close()


def test_osc_sends_each_known_keypoint(receiver, camera):
    sink = osc("127.0.0.1", receiver.port, NAMES, filter_method="none")
    frame = _frames(camera, people=((3, 1.0),))[0]
    sink.write(frame)
    known = np.isfinite(camera[0]).all(axis=-1)
    datagrams = sink.sender.sent
    frame_bundle, *person_bundles = receiver.bundles(datagrams)
    assert frame_bundle == [("/sapiens/frame", "ifi", [0, 0.0, 1])]
    assert all(b[0] == ("/sapiens/person/3/frame", "i", [0]) for b in person_bundles)  # every datagram names its frame
    person_bundle = [m for b in person_bundles for m in b[1:]]
    assert len(person_bundle) == known.sum()
    by_address = {a: (tags, args) for a, tags, args in person_bundle}
    tags, args = by_address["/sapiens/person/3/left_wrist"]
    assert tags == "ffff"
    np.testing.assert_allclose(args, [*(camera[0, NAMES.index("left_wrist")] + [1.5, 0, 0]), 0.9], atol=1e-5)
    # a person without 3D in a run with 3D: skipped and counted, never sent in pixels
    flat = frame.replace(index=1, people=(frame.people[0].replace(keypoints3d=None),))
    sink.write(flat)
    assert sink.sender.sent - datagrams == 1 and sink.skipped == 1
    assert receiver.bundles(1) == [[("/sapiens/frame", "ifi", [1, 0.0, 0])]]
    sink.close()
    # a run without depth: pixels and a score
    sink = osc("127.0.0.1", receiver.port, NAMES, filter_method="none", three_d=False)
    sink.write(flat)
    person_bundle = [m for b in receiver.bundles(sink.sender.sent)[1:] for m in b]
    tags, args = {a: (t, v) for a, t, v in person_bundle}["/sapiens/person/3/left_wrist"]
    assert tags == "fff" and args[2] == pytest.approx(0.9, abs=1e-6)
    sink.close()


def test_an_absent_receiver_costs_nothing(camera):
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nobody listens there now
    sink = vmc("127.0.0.1", port, NAMES)
    frames = _frames(camera)
    for frame in frames:
        sink.write(frame)
    assert sink.frames == len(frames) and sink.senders[0].sent + sink.senders[0].dropped == 2 * len(frames)
    sink.close()


def test_endpoints_are_checked():
    assert parse_endpoint("127.0.0.1:39539", "--vmc") == ("127.0.0.1", 39539)
    assert parse_endpoint("localhost", "--vmc", 39539) == ("localhost", 39539)
    assert parse_endpoint("[::1]:39540", "--vmc", 39539) == ("::1", 39540)
    assert parse_endpoint("[::1]", "--vmc", 39539) == ("::1", 39539)
    for bad in ("127.0.0.1:", ":9000", "host:port", "h:70000", "[::1", "[::1]x9000"):
        with pytest.raises(UserError, match="HOST:PORT"):
            parse_endpoint(bad, "--osc")
    with pytest.raises(UserError, match="cannot resolve"):
        vmc("no-such-host.invalid", 9000, NAMES)


def test_rotation_mirroring_is_a_reflection():
    # Unity applies our quaternion to mirrored vectors: mirror(R v) == R' mirror(v)
    rotation = Rotation.from_euler("xyz", [30, -50, 70], degrees=True)
    x, y, z, w = rotation.as_quat()
    mirrored = Rotation.from_quat([x, -y, -z, w])
    v = np.array([0.3, -0.2, 0.9])
    np.testing.assert_allclose(mirrored.apply(v * [-1, 1, 1]), rotation.apply(v) * [-1, 1, 1], atol=1e-12)


def _fixture_run(tmp_path, fixtures_dir, sinks, frames=6):
    """pose + pointmap (the tiny fixture models) on a synthetic clip, every frame to `sinks`."""
    from doubles import whole_frame_boxes
    from media import gaussian_marker, write_video
    from realtime.models import load_model
    from realtime.run import RunOptions, run

    src = write_video(tmp_path / "clip.mp4", [gaussian_marker(120, 160, 60 + 4 * i, 60, 12) for i in range(frames)], fps=10)
    models = {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "pointmap")}
    tracks = tmp_path / "t.jsonl"
    options = RunOptions(source=str(src), models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128)),
                         outputs=OutputOptions(tracks=str(tracks), no_video=True, progress=False),
                         live_outputs=LiveOutputOptions(senders=sinks))
    summary = run(options, models=models, box_finder=whole_frame_boxes)
    assert summary.result.exit_code == 0, summary.result.message
    rows = [line for line in tracks.read_text().splitlines()[1:] if '"type":"frame"' in line]
    return len(rows)


def test_a_fixture_run_streams_every_frame(tmp_path, fixtures_dir, receiver):
    frames = 6
    sender = vmc_sender("127.0.0.1", receiver.port, NAMES)
    assert _fixture_run(tmp_path, fixtures_dir, [sender], frames) == frames
    bundles = receiver.vmc_frames(frames)
    for bundle in bundles:
        assert {a: t for a, t, _ in bundle} in (VMC_TYPES, {**VMC_TYPES, **BLEND_TYPES})
        assert {args[0] for a, _, args in bundle if a == "/VMC/Ext/Bone/Pos"} == UNITY_BONES
    times = [bundle[-1][2][0] for bundle in bundles]
    assert times == pytest.approx([i / 10 for i in range(frames)], abs=1e-3)


def test_absent_or_stalled_receivers_never_cost_a_frame(tmp_path, fixtures_dir):
    stalled = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # never read: full after a datagram
    stalled.bind(("127.0.0.1", 0))
    absent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    absent.bind(("127.0.0.1", 0))
    absent_port = absent.getsockname()[1]
    absent.close()
    sinks = [vmc_sender("127.0.0.1", stalled.getsockname()[1], NAMES), vmc_sender("127.0.0.1", absent_port, NAMES),
             OscKeypointSink("127.0.0.1", absent_port, NAMES, three_d=True)]
    frames = 8
    assert _fixture_run(tmp_path, fixtures_dir, sinks, frames) == frames  # frames out = frames in
    assert all(sink.frames == frames for sink in sinks)
    stalled.close()


@pytest.mark.parametrize("args, message", [
    (["--tasks", "pose", "--vmc", "127.0.0.1:39539"], "--tasks pose,depth"),
    (["--tasks", "seg,depth", "--osc", "127.0.0.1:9000"], "needs the pose task"),
    (["--tasks", "pose,depth", "--vmc-person", "2"], "go with --vmc"),
    (["--tasks", "pose,depth", "--vmc", "127.0.0.1:39539", "--vmc-person", "two"], "--vmc-person all"),
    (["--tasks", "pose,depth", "--vmc", "::1:39539"], "in brackets"),
    (["--tasks", "pose,depth", "--vmc", "127.0.0.1:port"], "HOST:PORT"),
    (["--tasks", "pose,depth", "--vmc", "127.0.0.1:65534", "--vmc-person", "all"], "past the last port 65535"),
])
def test_run_options_for_streaming_are_checked_in_one_sentence(tmp_path, capsys, args, message):
    from realtime.cli import main

    assert main(["run", str(tmp_path / "missing.mp4"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["²", "-1", -1, True, "x", "", "9" * 100_000, "3.5", 3.5])
def test_hostile_vmc_person_ids_are_one_sentence(value):
    """'²' passed str.isdigit and reached int() as a traceback; -1 followed nobody, silently."""
    from realtime.errors import UserError
    from realtime.sinks.osc import parse_vmc_person

    with pytest.raises(UserError, match="is neither a track id nor all") as refused:
        parse_vmc_person(value)
    assert len(str(refused.value)) < 200


def test_vmc_person_ids_that_are_fine():
    from realtime.sinks.osc import parse_vmc_person

    assert [parse_vmc_person(v) for v in (None, "all", "3", " 12 ", 0, 7)] == [None, "all", 3, 12, 0, 7]
