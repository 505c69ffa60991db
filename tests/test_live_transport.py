"""What a stock python-osc receiver gets: a `ThreadingOSCUDPServer` (its default 8,192-byte
reads) with a catch-all dispatcher, 3 people with all 308 keypoints known, every message
the README promises for every frame, no datagram over 1,400 bytes."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import ThreadingOSCUDPServer

from realtime.frames import Frame, Person
from realtime.rig.bones import bone_table
from realtime.rig.face import ARKIT_NAMES, VRM_PRESETS
from realtime.sinks.osc import DATAGRAM_LIMIT, pack_bundles, unity_bone_name
from tests.face_synthetic import FaceParams, face_keypoints
from tests.live_chain import osc, vmc
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

FRAMES = 8
PEOPLE = (4, 7, 9)  # track ids
_IMAGE = np.zeros((2, 2, 3), np.uint8)
BLEND_NAMES = set(ARKIT_NAMES) | set(VRM_PRESETS)


class _CountingServer(ThreadingOSCUDPServer):
    """The stock threading server, counting the datagrams whose handler threads have not finished:
    each datagram is handled on its own thread, so a frame's last message can be dispatched before
    an earlier datagram of the same frame."""

    def __init__(self, address, dispatcher, changed: threading.Condition):
        super().__init__(address, dispatcher)
        self.changed = changed
        self.in_flight = 0

    def process_request(self, request, client_address):  # the serving thread, in arrival order
        with self.changed:
            self.in_flight += 1
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.changed:
                self.in_flight -= 1
                self.changed.notify_all()


class Server:
    """python-osc's threading UDP server on 127.0.0.1 recording every message it dispatches."""

    def __init__(self, port: int = 0):
        self.messages: list[tuple[str, tuple]] = []
        self.changed = threading.Condition()
        dispatcher = Dispatcher()
        dispatcher.set_default_handler(self._handle)
        self.server = _CountingServer(("127.0.0.1", port), dispatcher, self.changed)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handle(self, address: str, *args) -> None:
        with self.changed:
            self.messages.append((address, args))
            self.changed.notify_all()

    def wait_for(self, address: str, count: int) -> None:
        """Until `count` messages to `address` arrived and every datagram read so far is handled (a frame's
        earlier datagrams too, so `take` gets the whole frame); a datagram lost never comes: then fail."""
        with self.changed:
            assert self.changed.wait_for(
                lambda: sum(a == address for a, _ in self.messages) >= count and self.server.in_flight == 0, timeout=10), \
                f"{address}: {sum(a == address for a, _ in self.messages)} of {count} arrived"

    def take(self) -> list[tuple[str, tuple]]:
        with self.changed:
            out, self.messages = self.messages, []
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _free_ports(count: int) -> int:
    """A base port P with P .. P+count-1 free (for --vmc-person all)."""
    import socket

    for base in range(47000, 60000, 97):
        socks = []
        try:
            for k in range(count):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind(("127.0.0.1", base + k))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free ports")


@pytest.fixture(scope="module")
def frames():
    """3 people, every one of the 308 keypoints known (body from the synthetic clip, face from the synthetic face)."""
    camera = synthetic_clip(FRAMES)[4]
    out = []
    rng = np.random.default_rng(3)
    for t in range(FRAMES):
        people = []
        for k, track in enumerate(PEOPLE):
            face2d, face3d = face_keypoints(FaceParams(jaw=rng.uniform(0, 0.02), eye_open_l=rng.uniform(0.002, 0.012)),
                                            head_position=(0.5 * k, -1.2, 3.0))
            points3d = camera[t] + [0.5 * k, 0, 0]
            points3d = np.where(np.isfinite(face3d), face3d, points3d)
            points3d = np.where(np.isfinite(points3d), points3d, [0.5 * k, 0.0, 3.0])  # any point the clip leaves unknown
            xy = 500.0 * points3d[:, :2] / points3d[:, 2:] + [640.0, 360.0]
            xy[np.isfinite(face2d).all(axis=1)] = face2d[np.isfinite(face2d).all(axis=1)]
            people.append(Person(box=np.array([100 + 200 * k, 20, 300 + 200 * k, 600], np.float32), track_id=track,
                                 keypoints=xy.astype(np.float32), keypoint_scores=np.full(len(NAMES), 0.9, np.float32),
                                 keypoints3d=points3d.astype(np.float32)))
        out.append(Frame(index=t, timestamp=t / FPS, image=_IMAGE, people=tuple(people)))
    assert all(np.isfinite(p.keypoints3d).all() for f in out for p in f.people)
    return out


def _vmc_check(messages: list, frame: Frame, bones: set[str]) -> None:
    got_bones = [args[0] for a, args in messages if a == "/VMC/Ext/Bone/Pos"]
    assert sorted(got_bones) == sorted(bones)
    blends = {args[0]: args[1] for a, args in messages if a == "/VMC/Ext/Blend/Val"}
    assert set(blends) == BLEND_NAMES and all(0.0 <= v <= 1.0 for v in blends.values())
    counts = {a: sum(m == a for m, _ in messages) for a in ("/VMC/Ext/Root/Pos", "/VMC/Ext/Blend/Apply", "/VMC/Ext/OK",
                                                            "/VMC/Ext/T")}
    assert counts == dict.fromkeys(counts, 1)
    (t,) = next(args for a, args in messages if a == "/VMC/Ext/T")
    assert t == pytest.approx(frame.timestamp, abs=1e-6)


@pytest.mark.parametrize("fingers", [False, True])
def test_vmc_reaches_a_python_osc_server_whole(frames, fingers):
    server = Server()
    sink = vmc("127.0.0.1", server.port, NAMES, fingers=fingers, filter_method="none")
    bones = {unity_bone_name(b.name) for b in bone_table(fingers)}
    try:
        for frame in frames:
            sink.write(frame)
            server.wait_for("/VMC/Ext/T", 1)
            _vmc_check(server.take(), frame, bones)
    finally:
        sink.close()
        server.close()
    sender = sink.senders[0]
    assert sender.dropped == 0 and 0 < sender.largest <= DATAGRAM_LIMIT
    assert sender.sent >= (4 if fingers else 2) * len(frames)  # it did have to split


def test_vmc_person_all_sends_person_k_to_port_plus_k(frames):
    base = _free_ports(len(PEOPLE))
    servers = [Server(base + k) for k in range(len(PEOPLE))]
    sink = vmc("127.0.0.1", base, NAMES, person="all", filter_method="none")
    bones = {unity_bone_name(b.name) for b in bone_table(False)}
    try:
        for frame in frames:
            sink.write(frame)
            for server in servers:
                server.wait_for("/VMC/Ext/T", 1)
                messages = server.take()
                _vmc_check(messages, frame, bones)
                hips = next(np.array(args[1:4]) for a, args in messages if a == "/VMC/Ext/Bone/Pos" and args[0] == "Hips")
                assert np.isfinite(hips).all()
        assert sorted(sink.senders) == [0, 1, 2]
        assert [sink.slots[k].track for k in range(3)] == list(PEOPLE)  # in order of appearance
        assert all(s.largest <= DATAGRAM_LIMIT and s.dropped == 0 for s in sink.senders.values())
    finally:
        sink.close()
        for server in servers:
            server.close()


def test_osc_reaches_a_python_osc_server_whole(frames):
    server = Server()
    sink = osc("127.0.0.1", server.port, NAMES, filter_method="none")
    try:
        for frame in frames:
            before = sink.sender.sent
            sink.write(frame)
            for track in PEOPLE:
                server.wait_for(f"/sapiens/person/{track}/{NAMES[-1]}", 1)
            messages = server.take()
            datagrams = sink.sender.sent - before
            assert messages.count(("/sapiens/frame", (frame.index, pytest.approx(frame.timestamp), len(PEOPLE)))) == 1
            for person in frame.people:
                prefix = f"/sapiens/person/{person.track_id}/"
                got = {a[len(prefix):]: args for a, args in messages if a.startswith(prefix) and not a.endswith("/frame")}
                assert set(got) == set(NAMES)  # every keypoint of every person
                np.testing.assert_allclose(got["left_wrist"][:3], person.keypoints3d[NAMES.index("left_wrist")], atol=1e-5)
                frame_marks = [args for a, args in messages if a == prefix + "frame"]
                assert frame_marks and all(args == (frame.index,) for args in frame_marks)
            assert sum(a.endswith("/frame") and a != "/sapiens/frame" for a, _ in messages) == datagrams - 1
    finally:
        sink.close()
        server.close()
    assert sink.sender.dropped == 0 and sink.sender.largest <= DATAGRAM_LIMIT


def test_bundles_keep_order_limit_and_tail():
    messages = [(f"/m/{i}", [float(i)] * 20) for i in range(60)]
    tail = [("/VMC/Ext/OK", [1, 3, 0, 1]), ("/VMC/Ext/T", [0.5])]
    packed = pack_bundles(messages, tail=tail, head=[("/h", [7])], limit=DATAGRAM_LIMIT)
    assert len(packed) > 1 and max(map(len, packed)) <= DATAGRAM_LIMIT
    from pythonosc.osc_bundle import OscBundle

    decoded = [[m.address for m in OscBundle(p)] for p in packed]
    assert all(d[0] == "/h" for d in decoded)
    flat = [a for d in decoded for a in d[1:]]
    assert flat == [a for a, _ in messages] + ["/VMC/Ext/OK", "/VMC/Ext/T"]
    assert decoded[-1][-2:] == ["/VMC/Ext/OK", "/VMC/Ext/T"]
    (single,) = pack_bundles(messages, tail=tail, limit=None)
    assert len(single) > DATAGRAM_LIMIT  # --vmc-bundle single: one bundle, whatever its size
