"""Live streams hand each frame on as soon as it is decoded: a loopback camera (bench/latency.py's)
sends frames 0..K and then holds the next one back until the reader has frame K. A source that
waits for later data before it gives frame K out (FFmpeg probing seconds of stream at open, frame
threads holding frames back, a reorder wait) only gets it after the camera goes on, and then the
camera has sent more than K + 1 frames when frame K arrives. Order and counts only; no clock."""

from __future__ import annotations

import pytest

from bench.latency import Camera, read_mark
from realtime.sources import VideoSource, open_source

FRAMES = 8
HOLD_AFTER = 3


@pytest.mark.parametrize("codec", ["raw", "h264"])
def test_a_live_stream_hands_each_frame_on_before_the_camera_sends_the_next(codec):
    camera = Camera(codec, frames=FRAMES, hold_after=HOLD_AFTER)
    source = open_source(camera.uri, timeout=30.0, reconnects=0)
    sent_when_read: list[int] = []  # frames the camera had sent when each frame came out
    marks: list[int] = []
    try:
        source.open()
        for _, image in source.frames():
            sent_when_read.append(len(camera.sent))
            marks.append(read_mark(image))
            if marks[-1] == HOLD_AFTER:
                camera.resume.set()
    finally:
        camera.resume.set()
        camera.stop()
        source.close()
    assert marks == list(range(FRAMES))  # every frame, in order
    assert sent_when_read[HOLD_AFTER] == HOLD_AFTER + 1  # frame K came out while the camera held frame K + 1 back
    assert all(sent >= i + 1 for i, sent in enumerate(sent_when_read))


def test_a_live_mpegts_stream_keeps_its_frame_rate_with_the_least_probing(tmp_path):
    from test_sources_edge import _mpegts_bytes, _serve_tcp

    port, thread = _serve_tcp(_mpegts_bytes(tmp_path / "clip.ts", 15, fps=30), sessions=1)
    source = open_source(f"tcp://127.0.0.1:{port}", timeout=10.0, reconnects=0)
    with source:
        assert source.info.fps == 30  # from the codec (H.264 timing): one probed packet gives no average rate
        assert len(list(source.frames())) == 15
    thread.join(timeout=10)


def test_live_streams_open_with_low_delay_and_files_do_not(tmp_path):
    camera = Camera("raw", frames=2)
    stream = open_source(camera.uri, timeout=30.0, reconnects=0)
    camera.stop()
    assert isinstance(stream, VideoSource) and stream.low_delay
    assert not VideoSource(str(tmp_path / "clip.mp4"), live=False).low_delay


def test_a_live_stream_joined_part_way_opens_at_its_next_keyframe(tmp_path):
    """A UDP or camera stream is often joined part-way: its first bytes are a transport packet cut short and
    frames without their keyframe, which do not decode. A live source skips them (up to --timeout) and starts
    at the next keyframe; before, opening it failed ("Invalid data found when processing input"), which also
    made tests/test_stream.py's UDP test fail now and then on a loaded machine."""
    from test_sources_edge import _mpegts_bytes, _serve_tcp

    data = _mpegts_bytes(tmp_path / "clip.ts", 60, fps=30, keyframe_every=10)
    port, thread = _serve_tcp(data[188 * 20 + 3:], sessions=1)  # joined part-way, inside a transport packet
    source = open_source(f"tcp://127.0.0.1:{port}", timeout=10.0, reconnects=0)
    with source:
        count = len(list(source.frames()))
    thread.join(timeout=10)
    assert 30 <= count < 60 and count % 10 == 0  # whole groups of pictures, from a keyframe on
