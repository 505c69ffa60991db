"""`--tracks -` and named pipes: the tracks as JSON lines to a consumer, flushed per frame,
with the logs and the summary on standard error (tiny fixture pose model, real CLI)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from media import gaussian_marker, write_video

FRAMES = 4


def _argv(clip, fixtures_dir, tracks):
    return [sys.executable, "-m", "realtime.cli", "run", str(clip), "--tasks", "pose", "--checkpoint",
            f"pose={fixtures_dir / 'pose_weights.safetensors'}", "--boxes-from", "frame", "--device", "cpu", "--no-video",
            "--no-progress", "--tracks", str(tracks)]


def test_tracks_to_standard_output_are_json_lines_and_the_summary_goes_to_stderr(tmp_path, fixtures_dir):
    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 8 * i, 48, 8) for i in range(FRAMES)], fps=10)
    done = subprocess.run(_argv(clip, fixtures_dir, "-"), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records[0]["type"] == "header" and [r["frame"] for r in records[1:]] == list(range(FRAMES))
    assert "finished: end of source" in done.stderr and "tracks: -" in done.stderr
    assert not (tmp_path / "-").exists()  # no file named "-"


def test_tracks_into_a_named_pipe_reach_the_reader_line_by_line(tmp_path, fixtures_dir):
    clip = write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 8 * i, 48, 8) for i in range(FRAMES)], fps=10)
    fifo = tmp_path / "tracks.fifo"
    os.mkfifo(fifo)
    lines: list[str] = []

    def read():
        with open(fifo, encoding="utf-8") as pipe:
            lines.extend(pipe)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done = subprocess.run(_argv(clip, fixtures_dir, fifo), capture_output=True, text=True, timeout=300)
    reader.join(30)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in lines]
    assert records[0]["type"] == "header" and len(records) == 1 + FRAMES
    assert fifo.exists() and not fifo.is_file()  # still the pipe: never replaced or removed


def _clip(tmp_path, frames=FRAMES):
    return write_video(tmp_path / "clip.mp4", [gaussian_marker(96, 128, 30 + 2 * i, 48, 8) for i in range(frames)], fps=10)


def test_a_reader_that_stops_early_is_a_quiet_normal_end(tmp_path, fixtures_dir):
    """`--tracks - | head -n 3`: the run ends when the reader goes, with exit 0 and no traceback or
    disk-space message (docs/pipeline-options.md, exit status)."""
    frames = 60  # far more lines than a pipe holds, so the run is still writing when the reader goes
    argv = _argv(_clip(tmp_path, frames), fixtures_dir, "-")
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path) as run:
        head = [run.stdout.readline() for _ in range(3)]
        run.stdout.close()  # what `head` does after its lines
        err = run.stderr.read().decode()
        code = run.wait(300)
    assert json.loads(head[0])["type"] == "header" and [json.loads(line)["frame"] for line in head[1:]] == [0, 1]
    assert code == 0, err
    assert "Traceback" not in err and "disk space" not in err and "Broken pipe" not in err, err
    assert "closed it" in err  # the summary says why the run ended, on standard error
    assert not (tmp_path / "-").exists()


def test_tracks_to_dev_stdout_redirected_to_a_file_hold_nothing_but_json_lines(tmp_path, fixtures_dir):
    take = tmp_path / "take.jsonl"
    with open(take, "wb") as stdout:
        done = subprocess.run(_argv(_clip(tmp_path), fixtures_dir, "/dev/stdout"), stdout=stdout, stderr=subprocess.PIPE,
                              text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in take.read_text().splitlines()]  # the summary did not land on the header
    assert records[0]["type"] == "header" and [r["frame"] for r in records[1:]] == list(range(FRAMES))
    assert "finished: end of source" in done.stderr


def _video_argv(clip, fixtures_dir, out, tracks):
    return [sys.executable, "-m", "realtime.cli", "run", str(clip), "--tasks", "pose", "--checkpoint",
            f"pose={fixtures_dir / 'pose_weights.safetensors'}", "--boxes-from", "frame", "--device", "cpu", "--no-progress",
            "--out", out, "--tracks", str(tracks)]


def test_the_overlay_video_to_standard_output_decodes(tmp_path, fixtures_dir):
    import av

    clip = _clip(tmp_path)
    for name in ("-", "/dev/stdout"):
        video = tmp_path / "overlay.mp4"
        with open(video, "wb") as stdout:  # `--out /dev/stdout > overlay.mp4`
            done = subprocess.run(_video_argv(clip, fixtures_dir, name, tmp_path / "t.jsonl"), stdout=stdout,
                                  stderr=subprocess.PIPE, text=True, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "finished: end of source" in done.stderr
        with av.open(io.BytesIO(video.read_bytes())) as container:  # from the captured bytes alone
            assert sum(1 for _ in container.decode(video=0)) == FRAMES
        assert not (tmp_path / "-").exists()


def test_video_and_tracks_cannot_share_standard_output(tmp_path, capsys, fixtures_dir):
    from realtime.cli import main

    code = main(_video_argv(_clip(tmp_path), fixtures_dir, "-", "/dev/stdout")[3:])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "--out and --tracks both name standard output" in err
    assert not (tmp_path / "-").exists() and not (Path.cwd() / "-").exists()


def test_a_fifo_nobody_reads_times_out_with_a_message(tmp_path, capsys, monkeypatch, fixtures_dir):
    import realtime.build
    from realtime.cli import main

    monkeypatch.setattr(realtime.build, "FIFO_WAIT_SECONDS", 0.5)  # FIFO_WAIT_SECONDS (10 s) in use
    fifo = tmp_path / "tracks.fifo"
    os.mkfifo(fifo)
    code = main(_argv(_clip(tmp_path), fixtures_dir, fifo)[3:])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert f"No program opened the FIFO {fifo} (--tracks) for reading within 0.5 s" in err
    assert fifo.exists() and not fifo.is_file()


def test_the_overlay_video_into_a_fifo_reaches_its_reader(tmp_path, fixtures_dir):
    import av

    fifo = tmp_path / "video.fifo"
    os.mkfifo(fifo)
    received = bytearray()

    def read():
        with open(fifo, "rb") as pipe:
            received.extend(pipe.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    done = subprocess.run(_video_argv(_clip(tmp_path), fixtures_dir, str(fifo), tmp_path / "t.jsonl"), capture_output=True,
                          text=True, timeout=300)
    reader.join(30)
    assert done.returncode == 0, done.stderr
    with av.open(io.BytesIO(bytes(received))) as container:
        assert sum(1 for _ in container.decode(video=0)) == FRAMES
