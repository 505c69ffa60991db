"""`--vrchat`: VRChat's OSC trackers, the head pair and the face (Unified Expressions), as a stock
python-osc server receives them.

- Euler angles are Unity's `Quaternion.Euler` order (z, then x, then y about the fixed axes), proven
  against an independent Hamilton product and a value Unity prints, and the mirror into Unity's
  left-handed axes keeps a turn to the left a turn to the left;
- the forward kinematics equal the rig's (`realtime.rig.solver.forward_kinematics`);
- on a synthetic walker and a real CMU walk with known joints (through the motion stage in the
  world, no live filter, no foot lock: what is measured is the solve and the sender), the hip and
  foot trackers land within 2 cm of the truth's joints after the documented scale (1.8 m / 1.6 m),
  every rotation within 0.5 degrees of its bone's world rotation, the feet in contact at the truth's
  height above y = 0 within 1 cm;
- `run --vrchat` and `stream --vrchat` of its tracks send the same values (tiny fixture models);
- the face keys are the mapping of the recorded ARKit weights, in [0, 1] ([-1, 1] for the signed);
- every new option's hostile values end in one sentence.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pythonosc.osc_bundle import OscBundle
from scipy.spatial.transform import Rotation

from realtime.errors import UserError
from realtime.expressions import ARKIT_NAMES, EYE_LOOK_DEGREES, UNIFIED_KEYS, eye_look, unified_expressions
from realtime.frames import Bones, Frame, Person, rounded_camera
from realtime.rig.bones import bone_table
from realtime.rig.solver import Skeleton, forward_kinematics
from realtime.sinks.osc import DATAGRAM_LIMIT, to_unity
from realtime.sinks.vrchat import (
    FACE_PREFIX,
    TRACKERS,
    VRM_PARENTS,
    VrchatSink,
    bone_world_poses,
    parse_height,
    parse_person,
    parse_trackers,
    unity_euler,
)
from realtime.stages import MotionStage, live_senders
from tests.mocap_clips import NAMES, clip_walk, load_clip
from tests.test_live_transport import Server

_IMAGE = np.zeros((2, 2, 3), np.uint8)
SCALE = 1.8 / 1.6  # --vrchat-height 1.8 over a measured stature of 1.6 m
MIRROR = np.array([-1.0, 1.0, 1.0])  # rig -> Unity positions


def unity_quaternion_euler(x: float, y: float, z: float) -> np.ndarray:
    """Unity's Quaternion.Euler(x, y, z) ("rotates z degrees around the z axis, x degrees around the x axis,
    and y degrees around the y axis; applied in that order", docs.unity3d.com ScriptReference) as Hamilton
    products q_y q_x q_z, written out: x, y, z, w."""
    def axis(angle, i):
        q = np.zeros(4)
        q[i], q[3] = math.sin(math.radians(angle) / 2), math.cos(math.radians(angle) / 2)
        return q

    def mul(a, b):
        (ax, ay, az, aw), (bx, by, bz, bw) = a, b
        return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                         aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])

    return mul(mul(axis(y, 1), axis(x, 0)), axis(z, 2))


def repr_id(value) -> str:
    """A short test id for a (possibly huge) parameter."""
    text = repr(value)
    return text if len(text) <= 30 else f"{text[:20]}...({len(text)} chars)"


def same_rotation(a: np.ndarray, b: np.ndarray) -> float:
    """The angle in degrees between two quaternions (x, y, z, w)."""
    return float(np.degrees((Rotation.from_quat(a).inv() * Rotation.from_quat(b)).magnitude()))


# ----------------------------------------------------------------------------- axes and angles


def test_euler_angles_are_unitys_quaternion_euler():
    # Unity prints Quaternion.Euler(30, 45, 60) as (0.39190, 0.20056, 0.36042, 0.82236)
    np.testing.assert_allclose(unity_quaternion_euler(30, 45, 60), [0.3919038, 0.2005621, 0.3604234, 0.8223632], atol=1e-6)
    rotations = Rotation.random(200, random_state=1)
    rig = rotations.as_matrix()
    sent = unity_euler(rig)
    _, unity = to_unity(np.zeros((200, 3)), rotations.as_quat())  # the rotation in Unity's axes
    for (x, y, z), want in zip(sent, unity):
        assert same_rotation(unity_quaternion_euler(x, y, z), want) < 1e-6
    # gimbal lock (x = +-90): the angles still give the rotation, and no warning escapes (pytest's -W error would fail)
    for x in (90.0, -90.0):
        q = unity_quaternion_euler(x, 25.0, 40.0)
        _, rig_q = to_unity(np.zeros(3), q)  # the mirror is its own inverse
        assert same_rotation(unity_quaternion_euler(*unity_euler(Rotation.from_quat(rig_q).as_matrix()[None])[0]), q) < 1e-6


def test_the_mirror_keeps_a_turn_to_the_left_and_a_lean_forward():
    """Rig: +X the character's left, +Z its forward. A turn to its left (+30 about +Y) is a turn towards Unity's
    -X (the avatar's left): yaw -30 in Unity. Leaning forward (+20 about +X) leans towards +Z in both: pitch +20."""
    left = unity_euler(Rotation.from_euler("y", 30, degrees=True).as_matrix()[None])[0]
    np.testing.assert_allclose(left, [0.0, -30.0, 0.0], atol=1e-9)
    lean = unity_euler(Rotation.from_euler("x", 20, degrees=True).as_matrix()[None])[0]
    np.testing.assert_allclose(lean, [20.0, 0.0, 0.0], atol=1e-9)
    forward_in_unity = Rotation.from_quat(unity_quaternion_euler(*lean)).apply([0.0, 1.0, 0.0])
    assert forward_in_unity[2] > 0  # the head goes towards +Z, the avatar's front


@pytest.mark.parametrize("fingers", [False, True])
def test_the_parents_are_the_rigs(fingers):
    table = bone_table(fingers)
    body = {b.name: b.parent for b in table if b.name in VRM_PARENTS}
    assert body == VRM_PARENTS  # every bone the sender may walk through, with the rig's parent


def _bones(rng, fingers=False, root=(0.2, 0.95, 3.0)) -> Bones:
    table = bone_table(fingers)
    offsets = rng.normal(0, 0.15, (len(table), 3))
    return Bones(tuple(b.name for b in table), offsets, np.array(root), Rotation.random(len(table), random_state=rng).as_quat(),
                 np.zeros(len(table), bool))


@pytest.mark.parametrize("fingers", [False, True])
def test_forward_kinematics_equal_the_rigs(fingers):
    rng = np.random.default_rng(4)
    for _ in range(5):
        bones = _bones(rng, fingers)
        skeleton = Skeleton(bone_table(fingers), bones.offsets, np.zeros_like(bones.offsets))
        heads, globals_ = forward_kinematics(skeleton, bones.root_position[None], bones.rotations[None])
        names = [t.at for t in TRACKERS] + ["head", "spine", "leftToes"]
        got_heads, got_rotations = bone_world_poses(bones, names)
        index = [bones.names.index(n) for n in names]
        np.testing.assert_allclose(got_heads, heads[0, index], atol=1e-12)
        np.testing.assert_allclose(got_rotations, globals_[0, index], atol=1e-12)


# ----------------------------------------------------------------------------- walkers with known joints


def _walker(name: str):
    if name == "synthetic":
        from tests.ground_synthetic import walk

        return walk(150)
    return clip_walk(load_clip(name))


def _world_frames(truth, stature=1.6):
    """The walk as the world stage hands it on: 3D keypoints, the camera in the world (people in the world),
    the performer's measured stature; no contacts (the foot lock is the motion stage's, measured elsewhere)."""
    from tests.ground_synthetic import CENTRE, FOCAL, world_from_camera

    camera = rounded_camera(world_from_camera(), np.array([FOCAL, FOCAL, *CENTRE]), "tracking", world=True, grounded=True)
    for t in range(len(truth.world)):
        known = np.isfinite(truth.camera[t]).all(axis=1)
        pixels = np.where(known[:, None], truth.pixels[t], np.nan).astype(np.float32)
        box = np.array([*np.nanmin(pixels, axis=0), *np.nanmax(pixels, axis=0)], np.float32)
        person = Person(box=box, track_id=1, keypoints=pixels, keypoint_scores=np.where(known, 0.9, 0.0).astype(np.float32),
                        keypoints3d=truth.camera[t].astype(np.float32), height=(stature, 0.9))
        yield Frame(index=t, timestamp=float(truth.times[t]), image=_IMAGE, people=(person,), camera=camera)


def _receive(frames, stages=(), **options) -> list[tuple[Frame, dict[str, tuple]]]:
    """Each frame (after `stages`) and the messages a stock python-osc server got for it from a `VrchatSink(**options)`,
    by address."""
    server = Server()
    sink = VrchatSink("127.0.0.1", server.port, **options)
    out = []
    try:
        for frame in frames:
            for stage in stages:
                frame = stage.process(frame)
            sink.write(frame)
            server.wait_for("/tracking/trackers/head/position", 1)
            messages = server.take()
            assert len({a for a, _ in messages}) == len(messages)  # each address once per frame
            out.append((frame, dict(messages)))
    finally:
        server.close()
        sink.close()
    assert sink.sender.dropped == 0 and sink.sender.largest <= DATAGRAM_LIMIT
    return out


@pytest.mark.parametrize("name", ["synthetic", "cmu_07_04"])
def test_trackers_land_on_the_walkers_joints(name):
    truth = _walker(name)
    received = _receive(_world_frames(truth), [MotionStage(NAMES, smooth="none")], trackers=range(1, 9), height=1.8)
    index = {n: NAMES.index(n) for n in NAMES}
    table = bone_table()
    position_cm, rotation_deg, contact_cm = {"hip": [], "feet": []}, [], []
    for t, (frame, messages) in enumerate(received):
        bones = frame.people[0].bones
        for address, args in messages.items():
            assert len(args) == 3 and all(isinstance(v, float) and math.isfinite(v) for v in args), address
        w = truth.world[t]
        joints = {"1": (w[index["left_hip"]] + w[index["right_hip"]]) / 2, "2": w[index["left_ankle"]],
                  "3": w[index["right_ankle"]]}
        for slot, joint in joints.items():
            got = np.array(messages[f"/tracking/trackers/{slot}/position"])
            position_cm["hip" if slot == "1" else "feet"].append(100 * np.linalg.norm(got - SCALE * MIRROR * joint))
        for side, slot in ((0, "2"), (1, "3")):
            if truth.contacts[t, side]:
                contact_cm.append(100 * abs(messages[f"/tracking/trackers/{slot}/position"][1] - SCALE * joints[slot][1]))
        # each tracker's Euler angles (degrees) back to a rotation: its bone's world rotation (the rig's FK)
        skeleton = Skeleton(table, bones.offsets, np.zeros_like(bones.offsets))
        _, globals_ = forward_kinematics(skeleton, bones.root_position[None], bones.rotations[None])
        for tracker in TRACKERS:
            x, y, z = messages[f"/tracking/trackers/{tracker.slot}/rotation"]
            _, rig = to_unity(np.zeros(3), unity_quaternion_euler(x, y, z))
            want = Rotation.from_matrix(globals_[0, bones.names.index(tracker.turns_with)]).as_quat()
            rotation_deg.append(same_rotation(rig, want))
    worst = {k: max(v) for k, v in position_cm.items()}
    print(f"{name}: hip {worst['hip']:.3f} cm, feet {worst['feet']:.3f} cm, rotation {max(rotation_deg):.5f} deg, "
          f"feet in contact {max(contact_cm):.3f} cm (worst of {len(received)} frames)")
    assert len(received) == len(truth.world) and contact_cm
    assert worst["hip"] < 2.0 and worst["feet"] < 2.0
    assert max(rotation_deg) < 0.5
    assert max(contact_cm) < 1.0


def test_the_scale_is_height_over_the_measured_stature():
    truth = _walker("cmu_07_04")
    frames = list(_world_frames(truth))[:20]
    stage = MotionStage(NAMES, smooth="none")
    solved = [stage.process(f) for f in frames]
    plain = VrchatSink("127.0.0.1", 9)
    scaled = VrchatSink("127.0.0.1", 9, height=1.8)
    unmeasured = VrchatSink("127.0.0.1", 9, height=1.8)
    for frame in solved:
        (a, head_a, _), (b, head_b, _) = plain.values(frame), scaled.values(frame)
        np.testing.assert_allclose(b[:, :3], SCALE * a[:, :3], rtol=1e-12)  # about the origin: the floor stays at 0
        np.testing.assert_allclose(b[:, 3:], a[:, 3:])
        np.testing.assert_allclose(head_b[:3], SCALE * head_a[:3], rtol=1e-12)
        person = frame.people[0].replace(height=None)
        c, _, _ = unmeasured.values(frame.replace(people=(person,)))
        np.testing.assert_allclose(c, a)  # no stature yet: real metres
    lines = scaled.summary_lines() + unmeasured.summary_lines()
    assert any("scaled by 1.125 to 1.125" in line for line in lines)
    assert any("20 frames with trackers at scale 1 before it was" in line for line in lines)
    for sink in (plain, scaled, unmeasured):
        sink.close()


# ----------------------------------------------------------------------------- what a frame sends


def _person(track_id=1, box=(0, 0, 100, 200), bones=None, face=None) -> Person:
    return Person(box=np.array(box, np.float32), track_id=track_id, keypoints=np.zeros((len(NAMES), 2), np.float32),
                  bones=bones, face=face)


def test_a_frame_with_every_tracker_and_the_face_splits_into_bundles_that_fit():
    rng = np.random.default_rng(7)
    face = rng.uniform(0, 1, len(ARKIT_NAMES)).astype(np.float32)
    sink = VrchatSink("127.0.0.1", 9, trackers=range(1, 9))
    datagrams = sink.datagrams(Frame(index=0, timestamp=0.0, image=_IMAGE, people=(_person(bones=_bones(rng), face=face),)))
    assert len(datagrams) == 2 and all(len(d) <= DATAGRAM_LIMIT for d in datagrams)
    first = [m.address for m in OscBundle(datagrams[0])]
    trackers = [f"/tracking/trackers/{t.slot}/{k}" for t in TRACKERS for k in ("position", "rotation")]
    assert first[:18] == trackers + ["/tracking/trackers/head/position", "/tracking/trackers/head/rotation"]
    sent = {m.address: m.params for d in datagrams for m in OscBundle(d)}
    assert [a for a in sent if a.startswith(FACE_PREFIX)] == [FACE_PREFIX + k for k in UNIFIED_KEYS]
    np.testing.assert_allclose([sent[FACE_PREFIX + k][0] for k in UNIFIED_KEYS], unified_expressions(face), atol=1e-7)
    sink.close()


def test_only_what_was_seen_is_sent_and_nothing_non_finite():
    rng = np.random.default_rng(2)
    sink = VrchatSink("127.0.0.1", 9)
    seen = _bones(rng)
    unseen = Bones(seen.names, seen.offsets, seen.root_position, seen.rotations, np.ones(len(seen.names), bool), True)
    broken = Bones(seen.names, seen.offsets, np.array([np.nan, 1.0, 0.0]), seen.rotations, seen.held, False)
    face = np.full(len(ARKIT_NAMES), np.nan, np.float32)

    def sent(person):
        frame = Frame(index=0, timestamp=0.0, image=_IMAGE, people=() if person is None else (person,))
        return {m.address: m.params for d in sink.datagrams(frame) for m in OscBundle(d)}

    assert sent(_person(bones=unseen)) == {}  # nothing seen yet: no head to align to, no trackers
    first = sent(_person(bones=seen))
    assert set(first) == {f"/tracking/trackers/{s}/{k}" for s in ("1", "2", "3", "head") for k in ("position", "rotation")}
    for person in (_person(bones=unseen), _person(bones=broken), _person(bones=None), None):
        held = sent(person)
        assert set(held) == {"/tracking/trackers/head/position", "/tracking/trackers/head/rotation"}  # the head held
        assert held["/tracking/trackers/head/position"] == first["/tracking/trackers/head/position"]
    with_face = sent(_person(face=face))  # NaN weights: 0 (signed keys 0 too), never NaN on the wire
    assert all(math.isfinite(v[0]) for a, v in with_face.items() if a.startswith(FACE_PREFIX))
    assert sink.tracker_frames == 1 and sink.dropped_values == 1 and sink.frames == 7
    sink.close()


def test_bones_whose_trackers_pass_the_float32_range_are_not_sent():
    """Each number of a finite bone may hold up to float32's largest (the record allows it), yet a sum of
    two along the chain, or the --vrchat-height scale, passes it: that frame sends no trackers, never inf."""
    rng = np.random.default_rng(6)
    seen = _bones(rng)
    offsets = seen.offsets.copy()
    offsets[seen.names.index("spine")] = (3.0e38, 0.0, 0.0)
    chained = Bones(seen.names, offsets, np.array([3.0e38, 0.0, 0.0]), seen.rotations, seen.held, False)
    huge = Bones(seen.names, seen.offsets, np.array([3.3e38, 0.0, 0.0]), seen.rotations, seen.held, False)
    for bones, height in ((chained, None), (huge, 1.8)):
        sink = VrchatSink("127.0.0.1", 9, trackers=range(1, 9), height=height)
        person = _person(bones=bones).replace(height=(1.6, 0.9))
        frame = Frame(index=0, timestamp=0.0, image=_IMAGE, people=(person,))
        assert sink.datagrams(frame) == [] and sink.dropped_values == 1 and sink.tracker_frames == 0
        sink.close()


def test_one_performer_followed_as_asked():
    rng = np.random.default_rng(3)
    small, large = _person(4, (0, 0, 50, 50), _bones(rng, root=(1.0, 0.9, 3.0))), _person(9, (0, 0, 300, 400), _bones(rng))
    hips = {p.track_id: bone_world_poses(p.bones, ["hips"])[0][0] * MIRROR for p in (small, large)}

    def hip(sink, people, t=0.0):
        trackers, _, _ = sink.values(Frame(index=0, timestamp=t, image=_IMAGE, people=people))
        return None if trackers is None else trackers[0, :3]

    largest, chosen = VrchatSink("127.0.0.1", 9), VrchatSink("127.0.0.1", 9, person=4)
    np.testing.assert_allclose(hip(largest, (small, large)), hips[9])
    np.testing.assert_allclose(hip(chosen, (small, large)), hips[4])
    assert hip(largest, (small,), t=0.5) is None  # the followed person briefly lost: no jump to another
    np.testing.assert_allclose(hip(largest, (small,), t=1.6), hips[4])  # lost for over a second: the largest again
    largest.close()
    chosen.close()


def test_face_keys_are_the_mapping_of_the_arkit_weights():
    w = dict.fromkeys(ARKIT_NAMES, 0.0)

    def keys(**weights):
        values = unified_expressions(np.array([{**w, **weights}[n] for n in ARKIT_NAMES]))
        return dict(zip(UNIFIED_KEYS, values))

    assert keys()["EyeLidLeft"] == 0.75 and keys(eyeBlinkLeft=1.0)["EyeLidLeft"] == 0.0
    assert keys(eyeWideLeft=1.0)["EyeLidLeft"] == 1.0
    assert keys(mouthSmileLeft=0.7, mouthFrownLeft=0.2)["MouthSmileLeft"] == pytest.approx(0.7)
    assert keys(browDownRight=1.0)["BrowDownRight"] == 1.0 and keys(jawOpen=0.4)["JawOpen"] == pytest.approx(0.4)

    def eyes(**weights):
        return eye_look(np.array([{**w, **weights}[n] for n in ARKIT_NAMES]))

    # VRChat's eye tracking: closed in [0, 1]; pitch + down, yaw + the person's right, in degrees
    assert eyes(eyeBlinkLeft=1.0, eyeBlinkRight=0.5)[0] == pytest.approx(0.75)
    assert eyes(eyeLookDownLeft=1.0, eyeLookDownRight=1.0)[1] == pytest.approx(EYE_LOOK_DEGREES)
    assert eyes(eyeLookInLeft=1.0, eyeLookOutRight=1.0)[2] == pytest.approx(EYE_LOOK_DEGREES)  # both to the right
    assert eyes(eyeLookOutLeft=1.0, eyeLookInRight=1.0)[2] == pytest.approx(-EYE_LOOK_DEGREES)
    rng = np.random.default_rng(0)
    hostile = rng.uniform(-3, 3, (200, len(ARKIT_NAMES)))
    hostile[::7, 3] = np.nan
    hostile[::5, 9] = np.inf
    for weights in hostile:
        values = unified_expressions(weights)
        assert np.isfinite(values).all() and (values >= 0.0).all() and (values <= 1.0).all()
        closed, pitch, yaw = eye_look(weights)
        assert 0.0 <= closed <= 1.0 and abs(pitch) <= EYE_LOOK_DEGREES and abs(yaw) <= EYE_LOOK_DEGREES


# ----------------------------------------------------------------------------- run and stream


def _tracker_frames(datagrams: list[bytes]) -> list[dict[str, tuple]]:
    """The datagrams split into frames (a frame's first bundle holds its head), messages by address."""
    frames: list[dict[str, tuple]] = []
    for datagram in datagrams:
        assert len(datagram) <= DATAGRAM_LIMIT
        messages = {m.address: tuple(m.params) for m in OscBundle(datagram)}
        if "/tracking/trackers/head/position" in messages or not frames:
            frames.append({})
        frames[-1].update(messages)
    return frames


def test_run_and_stream_of_its_tracks_send_the_same_trackers(tmp_path, fixtures_dir, capsys):
    from media import gaussian_marker, write_video
    from realtime.cli import main
    from realtime.export.jsonl import TrackRecords
    from tests.test_avatar_first import RecordingServer

    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(120, 160, 50 + 6 * i, 60, 12) for i in range(8)], fps=10)
    tracks = tmp_path / "take.jsonl"
    server = RecordingServer()
    target = f"127.0.0.1:{server.port}"
    try:
        pose, depth = fixtures_dir / "pose_weights.safetensors", fixtures_dir / "pointmap_weights.safetensors"
        code = main(["run", str(clip), "--tasks", "pose,depth", "--checkpoint", f"pose={pose}", "--checkpoint", f"depth={depth}",
                     "--input-size", "128x96",
                     "--dense-size", "256x128", "--boxes-from", "frame", "--device", "cpu", "--no-progress", "--no-video",
                     "--tracks", str(tracks), "--vrchat", target, "--vrchat-height", "1.8"])
        assert code == 0
        summary = capsys.readouterr().out
        sent = int(summary.split(f"--vrchat {target}: ")[1].split(" datagrams sent, 0 dropped")[0])
        server.wait_for(sent)
        live = list(server.datagrams)
        server.datagrams.clear()
        assert main(["stream", str(tracks), "--vrchat", target, "--vrchat-height", "1.8", "--speed", "1000"]) == 0
        server.wait_for(len(live))
        replayed = list(server.datagrams)
    finally:
        server.close()
    assert len(live) == sent and replayed == live  # the same values, byte for byte
    records = [r for _, r in TrackRecords(tracks) if r.get("type") == "frame"]
    seen = [i for i, r in enumerate(records) if any("bones" in p and not all(p["bones"]["held"]) for p in r["people"])]
    frames = _tracker_frames(live)
    assert len(seen) >= 4 and len(frames) == len(records) - seen[0]  # the head on every frame from the first bones seen
    header = json.loads(tracks.read_text().splitlines()[0])
    for record, messages in zip(records[seen[0]:], frames):
        for address, args in messages.items():
            assert len(args) == (3 if address.startswith("/tracking/trackers/") else 2 if address.endswith("PitchYaw") else 1)
            assert all(isinstance(v, float) and math.isfinite(v) for v in args), address
        (person,) = [p for p in record["people"] if p.get("id") is not None]
        if not all(person["bones"]["held"]):  # bones seen: hip and both feet, rotations in degrees
            bones = Bones(tuple(header["bone_names"]), np.array(person["bones"]["offsets"]), np.array(person["bones"]["root"]),
                          np.array(person["bones"]["rot"]), np.array(person["bones"]["held"]), person["bones"]["root_held"])
            _, rotations = bone_world_poses(bones, ["hips", "leftFoot", "rightFoot"])
            for slot, rotation in zip("123", rotations):
                x, y, z = messages[f"/tracking/trackers/{slot}/rotation"]
                _, rig = to_unity(np.zeros(3), unity_quaternion_euler(x, y, z))
                assert same_rotation(rig, Rotation.from_matrix(rotation).as_quat()) < 1e-3
        if "face" in person:  # the face keys: the mapping of the recorded ARKit weights
            weights = np.array([np.nan if person["face"][n] is None else person["face"][n] for n in ARKIT_NAMES])
            got = [messages[FACE_PREFIX + key][0] for key in UNIFIED_KEYS]
            np.testing.assert_allclose(got, unified_expressions(weights), atol=1e-7)
            assert all(0.0 <= v <= 1.0 for v in got)
            closed, pitch, yaw = eye_look(weights)
            assert messages["/tracking/eye/EyesClosedAmount"][0] == pytest.approx(closed, abs=1e-6)
            np.testing.assert_allclose(messages["/tracking/eye/CenterPitchYaw"], [pitch, yaw], atol=1e-4)
    assert any("face" in p for r in records[seen[0]:] for p in r["people"])


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize("value, message", [
    ("", "has an empty name"), (",", "has an empty name"), ("hip,,feet", "has an empty name"),
    ("wings", "'wings' is not a tracker"), ("hip,hip", "names hip twice"), ("feet,knees,feet", "names feet twice"),
    (5, "is not a comma list"), (["hip", 3], "is not a comma list"), ("x" * 100_000, "is not a tracker"),
    ("nan", "is not a tracker"),
], ids=repr_id)
def test_hostile_tracker_lists_are_refused_in_one_sentence(value, message):
    with pytest.raises(UserError, match=message) as caught:
        parse_trackers(value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 200


def test_tracker_lists_that_are_fine():
    assert parse_trackers("hip,feet") == (1, 2, 3) and parse_trackers(" Feet , hip ") == (1, 2, 3)
    assert parse_trackers(("elbows", "chest", "knees")) == (4, 5, 6, 7, 8)


@pytest.mark.parametrize("value", ["nan", float("nan"), float("inf"), "-inf", "1e309", 0, -1.8, 0.49, 3.01, 1e308, "tall", "",
                                   True, [1.8], "x" * 100_000], ids=repr_id)
def test_hostile_heights_are_refused_in_one_sentence(value):
    with pytest.raises(UserError, match="is not a height from 0.5 to 3 metres") as caught:
        parse_height(value)
    assert len(str(caught.value)) < 200


def test_heights_that_are_fine():
    assert parse_height(None) is None and parse_height("1.8") == 1.8 and parse_height(1) == 1.0


@pytest.mark.parametrize("value, message", [
    ("all", "VRChat takes one performer"), ("-1", "is not a track id"), ("", "is not a track id"), ("two", "is not a track id"),
    (True, "is not a track id"), (3.5, "is not a track id"), (-2, "is not a track id"), ("٣", "is not a track id"),
    ("9" * 100_000, "is not a track id"), ("9" * 19, "is not a track id"),
], ids=repr_id)
def test_hostile_person_ids_are_refused_in_one_sentence(value, message):
    with pytest.raises(UserError, match=message) as caught:
        parse_person(value)
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("options, message", [
    (dict(vrchat_trackers="hip"), "go with vrchat; add vrchat='127.0.0.1:9000'"),
    (dict(vrchat_height=1.8), "go with vrchat;"),
    (dict(vrchat_person="2"), "go with vrchat;"),
    (dict(vrchat="127.0.0.1:9000", tasks=("pose",)), "run with tasks='pose,depth'"),
    (dict(vrchat=9000), "is not HOST:PORT"),
    (dict(vrchat=""), "is not HOST:PORT"),
    (dict(vrchat="127.0.0.1:70000"), "is not HOST:PORT"),
    (dict(vrchat="127.0.0.1:0"), "is not HOST:PORT"),
    (dict(vrchat="127.0.0.1:" + "9" * 5000), "is not HOST:PORT"),
    (dict(vrchat="127.0.0.1:²"), "is not HOST:PORT"),
    (dict(vrchat="127.0.0.1:٩٠٠٠"), "is not HOST:PORT"),
    (dict(vrchat="a" * 10_000), "cannot resolve the host"),
    (dict(vrchat="no\0host"), "cannot resolve the host"),
    (dict(vrchat="::1"), "in brackets"),
], ids=repr_id)
def test_live_senders_check_the_vrchat_options(options, message):  # from Python: Python's names
    with pytest.raises(UserError, match=message) as caught:
        live_senders(**{"tasks": ("pose", "pointmap"), **options})
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300


def test_live_senders_make_the_vrchat_sender():
    (sink,) = live_senders(vrchat="127.0.0.1", vrchat_trackers="hip,feet,knees", vrchat_height="1.75", vrchat_person=2,
                           tasks=("pose", "pointmap"))
    assert isinstance(sink, VrchatSink) and sink.sender.address == ("127.0.0.1", 9000)
    assert [t.slot for t in sink.trackers] == ["1", "2", "3", "5", "6"] and sink.height == 1.75 and sink.person == 2
    sink.close()


@pytest.mark.parametrize("tasks", [("pose", "depth"), ("Pose", "DEPTH"), "pose,depth", ["pose", "pointmap"]], ids=repr)
def test_live_senders_take_the_task_names_a_session_takes(tasks):
    """depth is pointmap's name for users (Session(tasks=("pose", "depth"))): live_senders took only "pointmap"."""
    (sink,) = live_senders(vrchat="127.0.0.1:9", tasks=tasks)
    assert isinstance(sink, VrchatSink)
    sink.close()


@pytest.mark.parametrize("kind", ["vrchat", "vmc"])
def test_a_session_without_depth_refuses_a_sender_of_the_solved_body(fixtures_dir, kind):
    """VRChat's trackers and VMC's bones hang from the bones of 3D keypoints: without depth the Session would send the
    face alone (VRChat) or a rest pose (VMC), silently, where run refuses --vrchat and --vmc."""
    from realtime import Session

    (sink,) = live_senders(**{kind: "127.0.0.1:9"}, tasks=("pose", "depth"))
    with pytest.raises(UserError) as refused:
        Session(tasks="pose", checkpoints={"pose": str(fixtures_dir / "pose_weights.safetensors")}, boxes_from="frame",
                device="cpu", senders=[sink])
    assert str(refused.value) == (f"senders= holds a {kind} sender, which sends the body solved from 3D keypoints of the "
                                  "depth task that tasks leaves out; add depth (e.g. tasks='pose,depth').")
    sink.close()


@pytest.mark.parametrize("args, message", [
    (["--vrchat-height", "nan"], "argument --vrchat-height: 'nan' is not a positive number"),
    (["--vrchat-height", "inf"], "argument --vrchat-height: 'inf' is not a positive number"),
    (["--vrchat", "--vrchat-height", "9"], "is not a height from 0.5 to 3 metres"),
    (["--vrchat", "--vrchat-trackers", "hip,hip"], "names hip twice"),
    (["--vrchat", "--vrchat-trackers", ""], "has an empty name"),
    (["--vrchat", "--vrchat-person", "all"], "VRChat takes one performer"),
    (["--vrchat-person", "2"], "go with --vrchat"),
    (["--vrchat", "127.0.0.1:99999"], "is not HOST:PORT"),
])
def test_run_and_stream_refuse_hostile_vrchat_options_in_one_sentence(tmp_path, capsys, args, message):
    from realtime.cli import main

    tracks = _tracks_3d(tmp_path)
    for argv in (["run", str(tmp_path / "missing.mp4"), "--tasks", "pose,depth", *args], ["stream", str(tracks), *args]):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's own checks
            code = stop.code
        assert code == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error:") and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("options, python, cli", [
    (dict(vrchat="127.0.0.1:9", vrchat_height="tall"), "vrchat_height='tall' is not a height", "--vrchat-height 'tall' is not"),
    (dict(vrchat="127.0.0.1:9", vrchat_trackers="hip,hip"), "vrchat_trackers names hip", "--vrchat-trackers names hip"),
    (dict(vrchat="127.0.0.1:9", vrchat_person="x"), "vrchat_person='x' is not a track id; write e.g. vrchat_person=3",
     "--vrchat-person 'x' is not a track id; write e.g. --vrchat-person 3"),
    (dict(vrchat="127.0.0.1:99999"), "vrchat='127.0.0.1:99999' is not HOST:PORT; write it like vrchat='127.0.0.1:9000'",
     "--vrchat '127.0.0.1:99999' is not HOST:PORT; write it like --vrchat 127.0.0.1:9000"),
    (dict(vmc_person="3"), "vmc_person, vmc_fingers, vmc_bundle and vmc_face_only go with vmc; add vmc=['127.0.0.1:39539']",
     "--vmc-person, --vmc-fingers, --vmc-bundle and --vmc-face-only go with --vmc; add --vmc 127.0.0.1:39539"),
    (dict(vmc=["127.0.0.1:9"], vmc_person="-1"), "vmc_person='-1' is neither a track id nor all; write e.g. vmc_person=3",
     "--vmc-person '-1' is neither a track id nor all; write e.g. --vmc-person 3"),
    (dict(vmc=["127.0.0.1:9"], tasks=("pose",)), "run with tasks='pose,depth' (or vmc_face_only=True",
     "run with --tasks pose,depth (or --vmc-face-only"),
    (dict(osc="localhost"), "osc='localhost' is not HOST:PORT", "--osc 'localhost' is not HOST:PORT"),
])
def test_sender_errors_name_what_the_caller_used(options, python, cli):
    from realtime.options import CLI

    options = {"tasks": ("pose", "pointmap"), **options}
    for caller, message in ((None, python), (CLI, cli)):
        with pytest.raises(UserError) as caught:
            live_senders(**options) if caller is None else live_senders(**options, caller=caller)
        assert message in str(caught.value), str(caught.value)


@pytest.mark.parametrize("before", ["clip", "0"])
def test_a_bare_vrchat_before_the_source_says_to_put_it_after(tmp_path, capsys, before):
    from realtime.cli import main

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"")
    source = str(clip) if before == "clip" else before
    with pytest.raises(SystemExit) as stop:
        main(["run", "--vrchat", source, "--tasks", "pose,depth"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "is a source, not VRChat's address; put --vrchat after SOURCE" in err, err
    assert err.count("\n") == 1


def test_vrchat_without_depth_is_refused_by_run_and_stream(tmp_path, capsys):
    from realtime.cli import main

    assert main(["run", str(tmp_path / "missing.mp4"), "--tasks", "pose", "--vrchat"]) == 2
    assert "needs 3D keypoints from the depth (pointmap) task" in capsys.readouterr().err
    flat = tmp_path / "flat.jsonl"
    _tracks_3d(tmp_path, flat, three_d=False)
    assert main(["stream", str(flat), "--vrchat"]) == 2
    err = capsys.readouterr().err
    assert "has no 3D keypoints" in err and "--vrchat has no trackers to send" in err and err.count("\n") == 1
    assert main(["stream", str(flat)]) == 2
    assert "--vrchat [HOST:PORT]" in capsys.readouterr().err  # where to send names it


def test_stream_refuses_a_vrchat_person_the_file_does_not_hold(tmp_path, capsys):
    """As --vmc-person: an absent id would send nothing at all, silently, for the whole file."""
    from realtime.cli import main

    tracks = _tracks_3d(tmp_path)
    assert main(["stream", str(tracks), "--vrchat", "127.0.0.1:9", "--vrchat-person", "7"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --vrchat-person 7 is not in {tracks} (its ids: 1); pass one of its ids, or leave --vrchat-person " \
                  "out to follow the largest person.\n"


def _tracks_3d(tmp_path, path=None, three_d=True):
    from realtime.sinks.tracks import TrackWriter
    from tests.mocap_synthetic import synthetic_clip

    path = path or tmp_path / "take.jsonl"
    camera = synthetic_clip(4)[4]
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=25.0, source="synthetic", model={}, tracked=True) as w:
        for i in range(4):
            xy = 500.0 * camera[i, :, :2] / camera[i, :, 2:] + [320.0, 240.0]
            person = Person(box=np.array([10, 10, 300, 400], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.full(len(NAMES), 0.9, np.float32),
                            keypoints3d=camera[i].astype(np.float32) if three_d else None)
            w.write(Frame(index=i, timestamp=i / 25.0, image=_IMAGE, people=(person,)))
    return path


def test_stream_refuses_a_recording_whose_bones_the_trackers_cannot_hang_from(tmp_path, capsys):
    from realtime.cli import main
    from realtime.sinks.tracks import TrackWriter
    from tests.mocap_synthetic import synthetic_clip

    rng = np.random.default_rng(5)
    bones = _bones(rng)
    path = tmp_path / "renamed.jsonl"
    camera = synthetic_clip(2)[4]
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(640, 480), fps=25.0, source="synthetic", model={}, tracked=True,
                     bone_names=bones.names) as w:
        for i in range(2):
            xy = 500.0 * camera[i, :, :2] / camera[i, :, 2:] + [320.0, 240.0]
            w.write(Frame(index=i, timestamp=i / 25.0, image=_IMAGE, people=(Person(
                box=np.array([10, 10, 300, 400], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=camera[i].astype(np.float32), bones=bones),)))
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["bone_names"] = [name.replace("Foot", "Paw") for name in header["bone_names"]]  # an edited file
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    assert main(["stream", str(path), "--vrchat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "bone_names lack leftFoot, rightFoot" in err and err.count("\n") == 1
