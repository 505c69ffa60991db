"""Sources at their edges: named pipes (no writer, a stalled writer), raw elementary
streams without timestamps, a stream the sender closes normally, animated and
multi-page images, file names that look like glob patterns."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from media import gaussian_marker, numbered_frames, write_video
from realtime.sources import ImageFolderSource, VideoSource, open_source

ROOT = Path(__file__).resolve().parents[1]


def _mpegts_bytes(path: Path, n: int, fps: int = 25, keyframe_every: int | None = None) -> bytes:
    with av.open(str(path), "w", format="mpegts") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.options = {"tune": "zerolatency", "preset": "ultrafast", **({"g": str(keyframe_every)} if keyframe_every else {})}
        for i, image in enumerate(numbered_frames(n)):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path.read_bytes()


def _count(source) -> tuple[list[float], object]:
    with source:
        times = [t for t, _ in source.frames()]
    return times, source


def test_a_pipe_with_a_writer_is_read_to_the_end(tmp_path):
    data = _mpegts_bytes(tmp_path / "clip.ts", 20)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=writer)
    thread.start()
    times, source = _count(open_source(str(fifo), timeout=5))
    thread.join()
    assert len(times) == 20 and source.ended_early is None
    assert isinstance(source, VideoSource) and not source.info.live


def test_a_pipe_whose_writer_stalls_ends_after_the_timeout_with_what_came(tmp_path):
    data = _mpegts_bytes(tmp_path / "clip.ts", 200)  # more than the demuxer probes at open
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    release = threading.Event()

    def writer():
        with open(fifo, "wb") as f:
            f.write(data)
            f.flush()
            release.wait(30)  # connected, silent, never closing

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        start = time.monotonic()
        times, source = _count(open_source(str(fifo), timeout=1))
        waited = time.monotonic() - start
    finally:
        release.set()
        thread.join()
    assert len(times) >= 150 and "no data for 1 s" in source.ended_early
    assert waited < 20  # bounded by the timeout, not by the writer


@pytest.mark.slow
def test_a_pipe_without_a_writer_fails_after_the_timeout_and_ctrl_c_ends_the_wait(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "realtime.cli", "run", str(fifo), "--device", "cpu", "--no-progress",
           "--output-dir", str(tmp_path / "rec")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*cmd, "--timeout", "1"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Nothing was written into the pipe" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.strip().startswith("error: ")

    proc = subprocess.Popen([*cmd, "--timeout", "600"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    while proc.poll() is None and not _waiting_on(proc.pid, fifo):
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert not (tmp_path / "rec").exists()


def _waiting_on(pid: int, path: Path) -> bool:
    """True once the process has the pipe open (it is in the wait for a writer)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.parametrize("fmt,codec,suffix", [("h264", "libx264", ".h264"), ("hevc", "libx265", ".h265")])
def test_raw_elementary_streams_get_times_from_the_frame_rate(tmp_path, fmt, codec, suffix):
    path = tmp_path / f"raw{suffix}"
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        if codec == "libx265":
            stream.options = {"x265-params": "log-level=error"}
        for i, image in enumerate(numbered_frames(12)):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    times, source = _count(open_source(str(path)))
    fps = source.info.fps
    assert len(times) == 12 and np.isfinite(times).all()
    np.testing.assert_allclose(times, np.arange(12) / fps, atol=1e-6)


def _serve_tcp(data: bytes, sessions: int) -> tuple[int, threading.Thread]:
    """A sender that serves the same MPEG-TS `sessions` times, closing each normally (FIN)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve():
        with server:
            for _ in range(sessions):
                conn, _ = server.accept()
                with conn:
                    conn.sendall(data)
                    conn.shutdown(socket.SHUT_WR)
                    conn.settimeout(10)
                    try:
                        while conn.recv(4096):  # until the reader closes its end
                            pass
                    except OSError:
                        pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], thread


@pytest.mark.parametrize("reconnects", [0, 1])
def test_a_stream_the_sender_closes_is_a_lost_stream(tmp_path, reconnects):
    data = _mpegts_bytes(tmp_path / "clip.ts", 15)
    port, thread = _serve_tcp(data, sessions=reconnects + 1)
    times, source = _count(open_source(f"tcp://127.0.0.1:{port}", timeout=5, reconnects=reconnects))
    thread.join(timeout=10)
    assert len(times) == 15 * (reconnects + 1)  # the reconnect got the second session
    assert np.all(np.diff(times) > 0)
    assert "the sender closed it" in source.ended_early and f"after {reconnects} reconnects" in source.ended_early


@pytest.mark.parametrize("suffix", [".gif", ".webp", ".png", ".tiff"])
def test_animated_and_multi_page_images_give_every_frame(tmp_path, suffix):
    frames = [cv2.cvtColor(f, cv2.COLOR_RGB2BGR) for f in numbered_frames(5)]
    path = tmp_path / f"anim{suffix}"
    if suffix == ".tiff":
        assert cv2.imwritemulti(str(path), frames)
    else:
        animation = cv2.Animation()
        animation.frames, animation.durations = frames, [40, 80, 40, 80, 40]
        assert cv2.imwriteanimation(str(path), animation)
    source = open_source(str(path))
    assert isinstance(source, ImageFolderSource)
    with source:
        got = list(source.frames())
    assert source.info.frame_count == 5 and len(got) == 5
    levels = [image.mean() for _, image in got]
    np.testing.assert_allclose(levels, [f.mean() for f in numbered_frames(5)], atol=4)
    times = [t for t, _ in got]
    if suffix == ".tiff":
        np.testing.assert_allclose(times, np.arange(5) / 30.0)
    else:  # the animation's own frame durations
        np.testing.assert_allclose(times, [0, 0.04, 0.12, 0.16, 0.24], atol=1e-6)
    # in a folder, beside a still: every frame, at the folder's rate
    cv2.imwrite(str(tmp_path / "still.png"), frames[0])
    with open_source(str(tmp_path), fps=10) as folder:
        assert len(list(folder.frames())) == 6


def test_a_video_whose_name_looks_like_a_glob_is_a_file(tmp_path):
    path = write_video(tmp_path / "take[1].mp4", [gaussian_marker(48, 64, 30, 20, 4)] * 3)
    times, source = _count(open_source(str(path)))
    assert isinstance(source, VideoSource) and len(times) == 3
