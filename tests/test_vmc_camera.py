"""The VMC sender's camera (`/VMC/Ext/Cam`) as a stock python-osc server gets it: on the frames whose
people are in the world, the camera's pose in that world in Unity's axes (X mirrored, as the bones;
a Unity camera looks down its +Z with +Y up) and its vertical field of view; the performer's `Hips`
in the same world, so a receiver that puts its camera there sees the avatar where the video did."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from realtime.frames import Frame, Person, rounded_camera
from realtime.sinks.osc import pack_bundles
from synthetic.world_scene import look_at
from tests.live_chain import vmc
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip
from tests.test_live_transport import Server

FRAMES = 12
CAMERA_FROM = 3  # frames before this one: people camera-relative (the camera not seen to move yet)
K = np.array([600.0, 600.0, 639.5, 359.5])  # fx, fy, cx, cy of a 1280 x 720 video
IMAGE = np.zeros((720, 1280, 3), np.uint8)
HIPS = [NAMES.index("left_hip"), NAMES.index("right_hip")]


def _world_from_camera(t: int) -> np.ndarray:
    """A camera 1.5 m up, dollying and panning, with a little roll: no axis mix-up maps it onto itself."""
    position = np.array([0.6 + 0.05 * t, 1.5, -4.0 + 0.03 * t])
    pose = look_at(position, np.array([2.0 * np.sin(t / 4), 0.8, 0.0]))
    pose[:3, :3] = pose[:3, :3] @ Rotation.from_euler("z", 4 + t, degrees=True).as_matrix()
    return pose


@pytest.fixture(scope="module")
def frames() -> list[Frame]:
    """One performer (the synthetic clip, camera frame), the camera moving; people in the world from CAMERA_FROM."""
    keypoints = synthetic_clip(FRAMES)[4]
    out = []
    for t in range(FRAMES):
        points = np.where(np.isfinite(keypoints[t]), keypoints[t], [0.0, 0.0, 3.0])
        pixels = K[:2] * points[:, :2] / points[:, 2:] + K[2:]
        person = Person(box=np.array([400, 40, 900, 700], np.float32), track_id=1, keypoints=pixels.astype(np.float32),
                        keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=points.astype(np.float32))
        camera = rounded_camera(_world_from_camera(t), K, "tracking", world=t >= CAMERA_FROM, grounded=True)
        out.append(Frame(index=t, timestamp=t / FPS, image=IMAGE, people=(person,), camera=camera))
    return out


def _received(frames: list[Frame], **options) -> list[list[tuple[str, tuple]]]:
    """Each frame's messages at a python-osc server."""
    server = Server()
    sink = vmc("127.0.0.1", server.port, NAMES, filter_method="none", **options)
    out = []
    try:
        for frame in frames:
            sink.write(frame)
            server.wait_for("/VMC/Ext/T", 1)
            out.append(server.take())
    finally:
        sink.close()
        server.close()
    assert sink.senders[0].dropped == 0
    return out


def test_the_camera_reaches_a_python_osc_server_in_the_bones_world(frames):
    received = _received(frames)
    for frame, messages in zip(frames, received):
        cameras = [args for address, args in messages if address == "/VMC/Ext/Cam"]
        if frame.index < CAMERA_FROM:  # people camera-relative: no world to put a camera in
            assert cameras == []
            continue
        assert len(cameras) == 1
        name, *numbers = cameras[0]
        assert name == "Camera" and len(numbers) == 8
        position, quaternion, fov = np.array(numbers[:3]), np.array(numbers[3:7]), numbers[7]
        pose = frame.camera.world_from_camera
        mirror = np.array([-1.0, 1.0, 1.0])
        np.testing.assert_allclose(position, pose[:3, 3] * mirror, atol=1e-5)  # float32 on the wire
        # a Unity camera looks down its +Z, +Y up; its axes in Unity's world = ours with X mirrored
        unity = Rotation.from_quat(quaternion).as_matrix()
        np.testing.assert_allclose(unity[:, 2], pose[:3, 2] * mirror, atol=1e-5)  # forward: our camera's +z
        np.testing.assert_allclose(unity[:, 1], -pose[:3, 1] * mirror, atol=1e-5)  # up: our camera's -y
        assert fov == pytest.approx(np.degrees(2 * np.arctan(360 / 600)), abs=1e-4)  # Unity's vertical fieldOfView
        # the performer in the same world: Hips, seen from the received camera, is where the video saw the hips
        hips = next(np.array(args[1:4]) for address, args in messages if address == "/VMC/Ext/Bone/Pos" and args[0] == "Hips")
        seen = unity.T @ (hips - position)  # in the Unity camera's axes (x right, y up, z forward)
        expected = frame.people[0].keypoints3d[HIPS].mean(axis=0) * [1.0, -1.0, 1.0]
        assert np.abs(seen - expected).max() < 0.02


def test_no_camera_message_for_face_only_or_a_camera_relative_run(frames):
    face_only = _received(frames, face_only=True)
    static = _received([f.replace(camera=None) for f in frames])
    for messages in face_only + static:
        assert not any(address == "/VMC/Ext/Cam" for address, _ in messages)
        assert sum(address == "/VMC/Ext/T" for address, _ in messages) == 1


def test_camera_datagrams_equal_the_reference_encoding(frames):
    """The fast path's bytes (encoded heads, float32 rows) equal python-osc's encoder on camera frames."""
    fast, reference = vmc("127.0.0.1", 9, NAMES), vmc("127.0.0.1", 9, NAMES)
    cameras = 0
    for frame in frames:
        got = fast.datagrams(frame)
        frame = reference.process(frame)
        (slot, person), = reference.inner._cast(frame).items()
        body, closing = reference.inner.messages(frame, reference.inner._slot(slot), person)
        cameras += sum(address == "/VMC/Ext/Cam" for address, _ in body)
        assert got == [(slot, pack_bundles(body, tail=closing))], frame.index
    assert cameras == FRAMES - CAMERA_FROM
    fast.close()
    reference.close()
