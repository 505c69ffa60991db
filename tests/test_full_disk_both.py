"""A disk that fills while both outputs are on it: the tracks file fails first, then the video
cannot write its last fragment when it is closed (FFmpeg drops that write error). The video
must still be cut back to its last whole fragment and decode to its end."""

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import av
import numpy as np

from media import write_video

ROOT = Path(__file__).resolve().parents[1]
FPS = 10  # a fragment is one second: 10 frames


def _decodable(path: Path) -> tuple[int, bool]:
    count = 0
    with av.open(str(path)) as container:
        try:
            for _ in container.decode(container.streams.video[0]):
                count += 1
        except av.error.FFmpegError:
            return count, False
    return count, True


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_tracks_full_first_then_the_video_close_fails_too(tmp_path, fixtures_dir):
    # 160x120 noise: ~9 KB of video per frame against ~7 KB of tracks, so with a 192 KB limit the
    # tracks fail at about frame 26 while the video has 20 frames on disk, and its closing
    # fragment (frames 20..25) no longer fits.
    rng = np.random.default_rng(0)
    src = write_video(tmp_path / "noise.mp4", [rng.integers(0, 255, (120, 160, 3), np.uint8) for _ in range(60)], fps=FPS)
    out, tracks = tmp_path / "out.mp4", tmp_path / "tracks.jsonl"
    cmd = [sys.executable, "-m", "realtime.cli", "run", str(src), "--out", str(out), "--tracks", str(tracks),
           "--tasks", "pose", "--input-size", "64x48", "--device", "cpu", "--no-progress", "--boxes-from", "frame",
           "--checkpoint", f"pose={fixtures_dir / 'pose_weights.safetensors'}"]
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=300, preexec_fn=_limit_file_size(192_000))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-2000:])
    assert f"cannot write the tracks file {tracks}" in proc.stdout
    rows = [json.loads(line) for line in tracks.read_text().splitlines()[1:]]
    frames, clean = _decodable(out)
    assert clean, "the video must decode to its end"
    assert frames % FPS == 0 and 0 < frames < len(rows)  # cut back to its last whole fragment
    assert (f"cannot write the video {out} (its last fragment could not be written whole); "
            f"it keeps its first {frames} frames") in proc.stderr


_CLOSE_ON_A_FULL_DISK = """
import os, resource, signal, sys
import numpy as np
from realtime.errors import OutputWriteError
from realtime.sinks.video import VideoWriter

writer = VideoWriter(sys.argv[1], fps=10)
rng = np.random.default_rng(0)
for i in range(25):
    writer.write(rng.integers(0, 255, (96, 128, 3), np.uint8), i / 10)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = os.path.getsize(sys.argv[1]) + int(sys.argv[2])  # the disk fills up before the last fragment
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
try:
    writer.close()
    print("closed")
except OutputWriteError as err:
    print(err)
"""


def test_a_video_that_cannot_be_closed_is_cut_back_to_its_last_whole_fragment(tmp_path):
    for room in (100, 4000):  # the last fragment cut in its header, or in its samples
        out = tmp_path / f"v{room}.mp4"
        proc = subprocess.run([sys.executable, "-c", _CLOSE_ON_A_FULL_DISK, str(out), str(room)], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"cannot write the video {out}") and "keeps its first 20 frames" in proc.stdout
        assert _decodable(out) == (20, True)
