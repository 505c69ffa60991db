"""The live senders' fast encoding (heads encoded once, numbers packed by numpy) gives byte for
byte the datagrams of the reference encoder (`osc_message` via `pack_bundles`), and
`sapiens-rt stream` does a sender's work before a frame is due and only the sending at it."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.frames import Frame, Person
from realtime.options import LiveOutputOptions, ModelOptions, OutputOptions
from realtime.sinks.osc import DATAGRAM_LIMIT, OscKeypointSink, pack_bundles
from tests.face_synthetic import FaceParams, face_keypoints
from tests.live_chain import osc, vmc, vmc_sender
from tests.mocap_synthetic import FPS, NAMES, synthetic_clip

FRAMES = 12
_IMAGE = np.zeros((2, 2, 3), np.uint8)


@pytest.fixture(scope="module")
def frames():
    """Two people with a body in 3D and a face; person 2 has no 3D in every third frame (lifted then)."""
    camera = synthetic_clip(FRAMES)[4]
    rng = np.random.default_rng(5)
    out = []
    for t in range(FRAMES):
        people = []
        for k, track in enumerate((1, 2)):
            face2d, face3d = face_keypoints(FaceParams(jaw=rng.uniform(0, 0.02), corner_l=rng.uniform(0, 0.01)),
                                            head_position=(0.5 * k, -1.2, 3.0))
            points3d = np.where(np.isfinite(face3d), face3d, camera[t] + [0.5 * k, 0, 0])
            xy = 500.0 * points3d[:, :2] / points3d[:, 2:] + [640.0, 360.0]
            known2d = np.isfinite(face2d).all(axis=1)
            xy[known2d] = face2d[known2d]
            depth = None if (track == 2 and t % 3 == 1) else points3d.astype(np.float32)
            people.append(Person(box=np.array([100 + 300 * k, 20, 300 + 300 * k, 600], np.float32), track_id=track,
                                 keypoints=xy.astype(np.float32),
                                 keypoint_scores=rng.uniform(0.5, 1.0, len(NAMES)).astype(np.float32),
                                 keypoints3d=depth))
        out.append(Frame(index=t, timestamp=t / FPS, image=_IMAGE, people=tuple(people)))
    return out


@pytest.mark.parametrize("options", [{}, {"fingers": True}, {"face_only": True}, {"bundle": "single"}, {"person": "all"}])
def test_vmc_datagrams_equal_the_reference_encoding(frames, options):
    fast = vmc("127.0.0.1", 9, NAMES, **options)
    reference = vmc("127.0.0.1", 9, NAMES, **options)
    limit = None if options.get("bundle") == "single" else DATAGRAM_LIMIT
    for frame in frames:
        got = fast.datagrams(frame)
        expected = []
        frame = reference.process(frame)  # the face and motion stages, once for every slot
        for slot, person in reference.inner._cast(frame).items():
            body, closing = reference.inner.messages(frame, reference.inner._slot(slot), person)
            expected.append((slot, pack_bundles(body, tail=closing, limit=limit)))
        assert got == expected, frame.index
        assert any(len(d) > 200 for _, datagrams in got for d in datagrams)  # real frames, not empty bundles
    fast.close()
    reference.close()


@pytest.mark.parametrize("depth", [True, False])
def test_osc_datagrams_equal_the_reference_encoding(frames, depth):
    sink = osc("127.0.0.1", 9, NAMES, filter_method="none", three_d=depth)
    for frame in frames:
        if depth and any(p.keypoints3d is None for p in frame.people):
            continue  # a lifted frame: its 3D is the lifter's
        if not depth:  # a run without the depth task: pixels and scores
            frame = frame.replace(people=tuple(p.replace(keypoints3d=None) for p in frame.people))
        got = sink.datagrams(frame)
        expected = pack_bundles([("/sapiens/frame", [frame.index, float(frame.timestamp), len(frame.people)])], limit=None)
        for person in frame.people:
            values = np.asarray(person.keypoints3d if depth else person.keypoints, dtype=np.float64)
            known = np.isfinite(values).all(axis=1)
            prefix = f"/sapiens/person/{person.track_id}/"
            for _, indices in sink.regions:
                messages = [(prefix + NAMES[k], [*values[k], float(person.keypoint_scores[k])]) for k in indices[known[indices]]]
                if messages:
                    expected += pack_bundles(messages, head=[(prefix + "frame", [frame.index])])
        assert got == expected, frame.index
        assert len(got) > 10
    sink.close()


class VirtualClock:
    def __init__(self):
        self.t = 50.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.t += seconds


class SlowSender:
    """A live sender whose preparing takes `cost` seconds of the clock; notes what happens when."""

    def __init__(self, clock: VirtualClock, cost: float):
        self.clock, self.cost = clock, cost
        self.events: list[tuple[str, int, float]] = []

    def datagrams(self, frame: Frame) -> list[bytes]:
        self.events.append(("prepare", frame.index, self.clock.now()))
        self.clock.t += self.cost
        return [str(frame.index).encode()]

    def send(self, datagrams: list[bytes]) -> None:
        self.events.append(("send", int(datagrams[0]), self.clock.now()))

    def close(self) -> None:
        pass


def test_stream_prepares_each_frame_before_it_is_due_and_sends_on_time(tmp_path, frames):
    from realtime.replay import StreamOptions, stream
    from realtime.sinks.tracks import TrackWriter

    path = tmp_path / "take.jsonl"
    with TrackWriter(path, keypoint_names=NAMES, image_wh=(1280, 720), fps=FPS, source="synthetic", model={}, tracked=True) as w:
        for frame in frames:
            w.write(frame)
    clock = VirtualClock()
    sender = SlowSender(clock, cost=0.8 / FPS)  # 80 % of a frame period to solve and encode
    stream(StreamOptions(tracks=str(path), sinks=[sender]), clock=clock)
    kinds = [(kind, index) for kind, index, _ in sender.events]
    assert kinds == [(kind, f.index) for f in frames for kind in ("prepare", "send")]  # each frame prepared, then sent
    sent = np.array([at for kind, _, at in sender.events if kind == "send"])
    # on the recorded times (as written: to 1 us), not late by the cost
    np.testing.assert_allclose(sent - sent[0], np.arange(FRAMES) / FPS, atol=1e-6)
    prepared = np.array([at for kind, _, at in sender.events if kind == "prepare"])
    assert (prepared[1:] >= sent[:-1]).all() and (prepared + sender.cost <= sent + 1e-9).all()


def test_the_run_summary_names_every_live_sender_with_its_counts(tmp_path, fixtures_dir):
    """A run (tiny fixture models) with two --vmc targets and --osc: one summary line per sender."""
    import socket

    from doubles import whole_frame_boxes
    from media import gaussian_marker, write_video
    from realtime.models import load_model
    from realtime.run import RunOptions, run

    listeners = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
    for s in listeners:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in listeners]
    sinks = [vmc_sender("127.0.0.1", ports[0], NAMES), vmc_sender("127.0.0.1", ports[1], NAMES),
             OscKeypointSink("127.0.0.1", ports[2], NAMES, three_d=True)]
    frames = 4
    src = write_video(tmp_path / "clip.mp4", [gaussian_marker(120, 160, 60 + 4 * i, 60, 12) for i in range(frames)], fps=10)
    models = {task: load_model(task, fixtures_dir / f"{task}_weights.safetensors") for task in ("pose", "pointmap")}
    options = RunOptions(source=str(src), models=ModelOptions(device="cpu", input_hw=(128, 96), pointmap_hw=(256, 128)),
                         outputs=OutputOptions(no_video=True, output_dir=str(tmp_path), progress=False),
                         live_outputs=LiveOutputOptions(senders=sinks))
    summary = run(options, models=models, box_finder=whole_frame_boxes)
    for s in listeners:
        s.close()
    assert summary.result.exit_code == 0, summary.result.message
    for option, port, sink in (("--vmc", ports[0], sinks[0]), ("--vmc", ports[1], sinks[1]), ("--osc", ports[2], sinks[2])):
        sender = sink.senders[0] if option == "--vmc" else sink.sender
        assert sender.sent >= frames
        line = (f"{option} 127.0.0.1:{port}: {sender.sent} datagrams sent, {sender.dropped} dropped "
                f"(largest {sender.largest} bytes)")
        assert summary.lines.count(line) == 1, summary.lines


def test_robust_nanmedian_equals_numpy():
    import warnings

    from realtime.rig.robust import nanmedian

    rng = np.random.default_rng(2)
    for _ in range(40):
        samples = rng.normal(size=(int(rng.integers(1, 80)), 7, 3))
        samples[rng.random(samples.shape) < 0.05] = np.nan  # scattered unknowns
        samples[:, rng.random(7) < 0.3] = np.nan  # bones never measured
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            expected = np.nanmedian(samples, axis=0)
        np.testing.assert_array_equal(nanmedian(samples), expected)  # bit for bit, NaN where all unknown
