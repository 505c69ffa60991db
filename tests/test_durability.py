"""What survives a hard kill or a full disk, through the CLI in a subprocess: the video
plays up to its last complete fragment (one second of frames), the tracks hold every
finished frame, and the two agree within one fragment; a write error is one clean
stage error, never a crash."""

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import av
import numpy as np
import pytest

from media import gaussian_marker, write_video

ROOT = Path(__file__).resolve().parents[1]
FPS = 10  # so a fragment (one second) is 10 frames


def _cli(src: Path, out: Path, tracks: Path, fixtures_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "realtime.cli", "run", str(src), "--out", str(out), "--tracks", str(tracks),
            "--tasks", "pose", "--input-size", "64x48", "--device", "cpu", "--no-progress", "--boxes-from", "frame",
            "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}", *extra]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _rows(tracks: Path) -> list[dict]:
    """The complete frame rows (a line cut by the kill is skipped, as readers do)."""
    rows = []
    for line in tracks.read_text().splitlines()[1:]:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def _decodable(path: Path) -> tuple[list[float], bool]:
    """Times of the frames that decode, and whether decoding ended cleanly."""
    times = []
    with av.open(str(path)) as container:
        assert container.streams.video, "the header (moov) must be on disk"
        try:
            for frame in container.decode(container.streams.video[0]):
                times.append(float(frame.time))
        except av.error.FFmpegError:
            return times, False
    return times, True


def _kill_after_rows(cmd: list[str], tracks: Path, rows: int) -> None:
    """Start the run, SIGKILL it once the tracks file holds more than `rows` lines."""
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if tracks.exists() and len(tracks.read_text().splitlines()) > rows:
            break
        time.sleep(0.01)
    assert proc.poll() is None, proc.communicate()[1]
    proc.kill()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def marker_video(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("durability")
    frames = [gaussian_marker(96, 128, 20 + (i % 90), 50, 6) for i in range(240)]
    return write_video(folder / "walk.mp4", frames, fps=FPS)


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [4, 25, 63])
def test_sigkill_leaves_video_and_tracks_agreeing_within_one_fragment(tmp_path, fixtures_dir, marker_video, kill_after):
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    _kill_after_rows(_cli(marker_video, out, tracks, fixtures_dir), tracks, kill_after)

    rows = _rows(tracks)
    times, _ = _decodable(out)
    assert len(rows) >= kill_after
    # every decodable frame is a frame the tracks hold, at the same time, in order
    assert len(times) <= len(rows)
    np.testing.assert_allclose(times, [r["t"] for r in rows[:len(times)]], atol=1e-3)
    # and the video is behind the tracks by less than one fragment (+1: the frame in flight)
    assert len(rows) - len(times) <= FPS + 1, (len(rows), len(times))
    assert len(times) % FPS == 0  # whole fragments


@pytest.mark.slow
def test_sigkill_with_audio_keeps_the_audio_up_to_the_last_fragment(tmp_path, fixtures_dir):
    """The source's audio is copied alongside, up to each frame's time, so a kill keeps sound
    for the frames that survive too (not a silent video, not sound from frames never shown)."""
    frames = [gaussian_marker(96, 128, 20 + (i % 90), 50, 6) for i in range(240)]
    src = write_video(tmp_path / "talk.mp4", frames, fps=FPS, audio_seconds=24.0)
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    _kill_after_rows(_cli(src, out, tracks, fixtures_dir), tracks, 35)

    times, _ = _decodable(out)
    assert len(times) >= FPS and len(times) % FPS == 0
    audio_end = 0.0
    with av.open(str(out)) as container:
        assert container.streams.audio, "the audio stream is in the header"
        try:
            for frame in container.decode(container.streams.audio[0]):
                audio_end = float(frame.time) + frame.samples / frame.sample_rate
        except av.error.FFmpegError:
            pass
    video_end = times[-1] + 1 / FPS
    # sound up to the last kept frame (an AAC frame is 23 ms), and no more than a fragment past it
    assert video_end - 0.1 <= audio_end <= video_end + 1.0 + 0.1, (video_end, audio_end)


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.slow
def test_full_disk_on_the_video_ends_in_a_clean_stage_error_keeping_whole_fragments(tmp_path, fixtures_dir):
    # big noise frames: the video grows much faster than the tracks and hits the limit first
    rng = np.random.default_rng(0)
    src = write_video(tmp_path / "noise.mp4", [rng.integers(0, 255, (192, 256, 3), np.uint8) for _ in range(80)], fps=FPS)
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    proc = subprocess.run(_cli(src, out, tracks, fixtures_dir), env=_env(), capture_output=True, text=True, timeout=300,
                          preexec_fn=_limit_file_size(400_000))
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])  # a stage error, not a signal
    assert "Traceback" not in proc.stderr
    assert "stage 'write' failed" in proc.stdout and "File too large" in proc.stdout and "free disk space" in proc.stdout
    times, clean = _decodable(out)
    assert clean  # cut back to its last complete fragment: every byte decodes
    assert len(times) > 0 and len(times) % FPS == 0
    assert f"cannot write the video {out}" in proc.stdout and f"keeps its first {len(times)} frames" in proc.stdout
    rows = _rows(tracks)
    assert len(times) <= len(rows) <= len(times) + FPS + 1


@pytest.mark.slow
def test_full_disk_on_the_tracks_keeps_whole_lines_and_the_same_frames_in_the_video(tmp_path, fixtures_dir, marker_video):
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    proc = subprocess.run(_cli(marker_video, out, tracks, fixtures_dir), env=_env(), capture_output=True, text=True,
                          timeout=300, preexec_fn=_limit_file_size(150_000))
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and f"cannot write the tracks file {tracks}" in proc.stdout, proc.stdout
    assert tracks.read_text().endswith("\n")  # cut back to the last complete line
    rows = _rows(tracks)
    times, clean = _decodable(out)
    assert clean and len(rows) > 0 and len(times) == len(rows)
    assert f"keeps its first {len(rows)} frames" in proc.stdout


@pytest.mark.slow
def test_writing_to_dev_full_is_a_clean_error(tmp_path, fixtures_dir, marker_video):
    tracks = tmp_path / "tracks.jsonl"
    proc = subprocess.run(_cli(marker_video, Path("/dev/full"), tracks, fixtures_dir), env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert "No space left on device" in proc.stdout and "stage 'write' failed" in proc.stdout, proc.stdout
    assert len(_rows(tracks)) >= 1
