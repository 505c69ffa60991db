"""A live network source: an MPEG-TS stream served on loopback by PyAV, consumed by the
pipeline with an artificially slow infer stage. The source keeps up, stale frames are
dropped and counted, latency stays bounded."""

import json
import socket
import threading
import time

import av
import pytest

from doubles import MarkerPoseModel, SlowModel, whole_frame_boxes
from media import gaussian_marker
from realtime.options import ModelOptions, OutputOptions, SmoothingOptions, SourceOptions
from realtime.run import RunOptions, run


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(url: str, seconds: float, fps: int, sent: list) -> None:
    """Send a marker video as MPEG-TS over UDP in real time for `seconds`."""
    with av.open(url, "w", format="mpegts") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        stream.options = {"tune": "zerolatency", "preset": "ultrafast", "g": "15"}
        start, i = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            frame = av.VideoFrame.from_ndarray(gaussian_marker(120, 160, 40 + (i % 80), 60, 6), format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
            i += 1
            time.sleep(max(0.0, start + i / fps - time.perf_counter()))
        for packet in stream.encode():
            out.mux(packet)
    sent.append(i)


@pytest.mark.slow
def test_udp_stream_with_a_slow_consumer_drops_stale_frames(tmp_path):
    port = _free_udp_port()
    url = f"udp://127.0.0.1:{port}"
    sent: list = []
    sender = threading.Thread(target=_serve, args=(f"{url}?pkt_size=1316", 4.0, 30, sent))
    options = RunOptions(source=url, input=SourceOptions(timeout=2.0, reconnects=0, max_in_flight=1),
                         models=ModelOptions(device="cpu"), smoothing=SmoothingOptions(smooth="none"),
                         outputs=OutputOptions(out=str(tmp_path / "o.mp4"), tracks=str(tmp_path / "t.jsonl"), progress=False))
    sender.start()
    slow = 0.12  # about 8 frames per second against a 30 fps stream
    summary = run(options, models={"pose": SlowModel(MarkerPoseModel(), slow)}, box_finder=whole_frame_boxes)
    sender.join()
    r = summary.result
    assert r.reason == "source ended early" and "was lost" in r.message  # the sender stopped
    assert r.frames_in >= 0.8 * sent[0]  # the reader kept up with the stream
    assert r.dropped >= r.frames_in // 3  # stale frames were dropped...
    assert r.frames_in == r.frames_out + r.dropped  # ...and counted; everything else was processed
    # No queue of stale frames builds up (counted, not timed: a loaded machine is slow, not wrong):
    # the frames written are in source order, each once, and the newest frames were the ones kept.
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()[1:]]
    index = [row["frame"] for row in rows]
    assert len(index) == r.frames_out and index == sorted(set(index))
    assert index[-1] >= r.frames_in - 1 - 2  # the last frame read (or one of the two in flight) was the last processed
    gaps = [b - a - 1 for a, b in zip(index, index[1:])]
    assert sum(gaps) + index[0] + (r.frames_in - 1 - index[-1]) == r.dropped  # every skipped frame is a counted drop
