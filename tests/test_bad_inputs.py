"""Every bad input a user can give ends in one clear sentence and a non-zero exit status,
and leaves nothing half-written that looks valid."""

import socket

import pytest

from media import numbered_frames, write_video
from realtime.cli import main


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _truncated_mp4(p):
    """An MP4 cut in the middle: its index (moov, written last) is gone."""
    full = write_video(p / "full.mp4", numbered_frames(20))
    cut = p / "cut.mp4"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    return str(cut)


def _write(path, content: bytes):
    path.write_bytes(content)
    return str(path)


CASES = {
    "missing path": (lambda p: str(p / "nope.mp4"), [], "does not exist"),
    "folder without images": (lambda p: (p / "empty").mkdir() or str(p / "empty"), [], "No images found"),
    "zero-byte file": (lambda p: _write(p / "zero.mp4", b""), [], "cannot be read as video"),
    "text file named .mp4": (lambda p: _write(p / "notes.mp4", b"just some text\n" * 20), [], "cannot be read as video"),
    "truncated mp4 without its index": (_truncated_mp4, [], "truncated"),
    "webcam that does not exist": (lambda p: "webcam:57", [], "Webcam 57 could not be opened"),
    "stream that never answers": (lambda p: f"udp://127.0.0.1:{_free_udp_port()}", ["--timeout", "1"],
                                  "did not answer within 1 s"),
    "unknown task": (lambda p: str(write_video(p / "v.mp4", numbered_frames(2))), ["--tasks", "pose,dance"],
                     "Unknown task dance"),
    "bad input size": (lambda p: str(write_video(p / "v.mp4", numbered_frames(2))), ["--input-size", "1000x700"],
                       "multiple of 16"),
    "unwritable output": (lambda p: str(write_video(p / "v.mp4", numbered_frames(2))), ["--out", "/proc/forbidden/out.mp4"],
                          "choose a writable output path"),
    "output is a folder": (lambda p: str(write_video(p / "v.mp4", numbered_frames(2))), ["--tracks", "{tmp}"], "is a folder"),
    "bad checkpoint option": (lambda p: str(write_video(p / "v.mp4", numbered_frames(2))), ["--checkpoint", "pose.safetensors"],
                              "is not TASK=PATH"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_gives_one_sentence_and_nonzero_exit(case, tmp_path, capsys, monkeypatch):
    make, extra, expected = CASES[case]
    monkeypatch.chdir(tmp_path)
    source = make(tmp_path)
    extra = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    code = main(["run", source, "--device", "cpu", "--no-progress", "--output-dir", str(tmp_path / "rec"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("error: ") and expected in err, err
    message = err.splitlines()[-1]
    assert message.endswith(".") and "Traceback" not in err
    # nothing half-written left behind, not even an empty output folder
    assert not (tmp_path / "rec").exists()
