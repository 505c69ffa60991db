"""bench/cmu_clips.py: clips cut from a small CMU-like trial written here (tabs, the root's CHANNELS line ending in a
space, a rest pose at frame 0, 120 fps), built from a folder and from a local HTTP server, checked by sha256, and
hostile inputs refused with one sentence and exit status 2."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import threading
from pathlib import Path

import pytest

from bench import cmu_clips

HEADER = (
    "HIERARCHY\n"
    "ROOT Hips\n"
    "{\n"
    "\tOFFSET 0.00000 0.00000 0.00000\n"
    "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation Xrotation \n"
    "\tJOINT LeftUpLeg\n"
    "\t{\n"
    "\t\tOFFSET 1.41261 -1.82971 0.84908\n"
    "\t\tCHANNELS 3 Zrotation Yrotation Xrotation\n"
    "\t\tEnd Site\n"
    "\t\t{\n"
    "\t\t\tOFFSET 0.00000 -0.00000 0.97832\n"
    "\t\t}\n"
    "\t}\n"
    "\tJOINT RightUpLeg\n"
    "\t{\n"
    "\t\tOFFSET -1.12808 -1.82971 0.84907\n"
    "\t\tCHANNELS 3 Zrotation Yrotation Xrotation\n"
    "\t\tEnd Site\n"
    "\t\t{\n"
    "\t\t\tOFFSET -0.00000 -0.00000 1.02667\n"
    "\t\t}\n"
    "\t}\n"
    "}\n"
    "MOTION\n"
)
FRAMES = 20


def _line(frame: int) -> str:
    """Source frame `frame` (1..19) of the trial: 12 channels, frame + channel / 100."""
    return " ".join(f"{frame + channel / 100:.4f}" for channel in range(12))


def _trial(lines: list[str] | None = None, frames: int = FRAMES, newline: str = "\n") -> str:
    lines = lines if lines is not None else ["0 0 0 0 0 0 0 0 0 0 0 0"] + [_line(f) for f in range(1, FRAMES)]
    text = HEADER + f"Frames: {frames}\nFrame Time: .0083333\n" + "\n".join(lines) + "\n"
    return text.replace("\n", newline)


# Source frames 3, 5, 7 of the trial, as the format writes them (written out, not computed).
EXPECTED = HEADER + (
    "Frames: 3\n"
    "Frame Time: 0.0166667\n"
    "3.0000 3.0100 3.0200 3.0300 3.0400 3.0500 3.0600 3.0700 3.0800 3.0900 3.1000 3.1100\n"
    "5.0000 5.0100 5.0200 5.0300 5.0400 5.0500 5.0600 5.0700 5.0800 5.0900 5.1000 5.1100\n"
    "7.0000 7.0100 7.0200 7.0300 7.0400 7.0500 7.0600 7.0700 7.0800 7.0900 7.1000 7.1100\n"
)
# Source frames 13 to 19 of the trial, every second one.
EXPECTED_UP = HEADER + "Frames: 4\nFrame Time: 0.0166667\n" + "".join(_line(f) + "\n" for f in (13, 15, 17, 19))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _entry(file: str, first: int, last: int, text: str) -> dict:
    return {"file": file, "source": "data/075/75_19.bvh", "first": first, "last": last, "total_frames": FRAMES,
            "frames": (last - first) // 2 + 1, "description": "sit on chair", "motion": "a test", "sha256": _sha(text)}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout-like folder holding data/075/75_19.bvh."""
    folder = tmp_path / "repo"
    (folder / "data" / "075").mkdir(parents=True)
    (folder / "data" / "075" / "75_19.bvh").write_text(_trial(), newline="")
    return folder


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    path = tmp_path / "clips.json"
    path.write_text(json.dumps({"repository": "una-dinosauria/cmu-mocap", "commit": "0" * 40, "clips": [
        _entry("sit_cmu_75_19.bvh", 3, 7, EXPECTED), _entry("sit_cmu_75_19_up.bvh", 13, 19, EXPECTED_UP)]}))
    return path


def _refused(capsys, argv: list[str], *words: str) -> str:
    """Runs the command, expects exit status 2 and, after build's progress lines, one sentence naming `words`."""
    assert cmu_clips.main(argv) == 2
    *progress, error = capsys.readouterr().err.splitlines()
    assert error.startswith("error: ") and all(line.startswith("[") for line in progress), progress + [error]
    for word in words:
        assert word in error, error
    return error


def test_cut_keeps_the_header_verbatim_and_every_second_frame_after_the_rest_pose(repo, tmp_path, capsys):
    out = tmp_path / "sit_cmu_75_19.bvh"
    source = repo / "data" / "075" / "75_19.bvh"
    assert cmu_clips.main(["cut", str(source), "--first", "3", "--last", "7", "--out", str(out)]) == 0
    assert out.read_bytes() == EXPECTED.encode()
    sha, line = capsys.readouterr().out.splitlines()
    assert sha == _sha(EXPECTED)
    entry = json.loads(line)
    assert entry | {"description": "sit on chair", "motion": "a test"} == _entry("sit_cmu_75_19.bvh", 3, 7, EXPECTED)


def test_a_source_with_crlf_line_ends_cuts_to_the_same_clip(tmp_path):
    source = cmu_clips.parse_source(_trial(newline="\r\n"), "75_19.bvh")
    assert cmu_clips.cut(source, 3, 7) == EXPECTED


def test_build_from_a_folder_writes_the_clips_and_leaves_them_alone_the_second_time(repo, manifest, tmp_path, capsys):
    out = tmp_path / "extra"
    assert cmu_clips.main(["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)]) == 0
    assert (out / "sit_cmu_75_19.bvh").read_bytes() == EXPECTED.encode()
    assert (out / "sit_cmu_75_19_up.bvh").read_bytes() == EXPECTED_UP.encode()
    assert sorted(p.name for p in out.iterdir()) == ["sit_cmu_75_19.bvh", "sit_cmu_75_19_up.bvh"]
    err = capsys.readouterr().err
    assert "[1/2] sit_cmu_75_19.bvh: written" in err and "[2/2] sit_cmu_75_19_up.bvh: written" in err
    stamp = (out / "sit_cmu_75_19.bvh").stat().st_mtime_ns
    assert cmu_clips.main(["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest),
                           "--clips", "sit_cmu_75_19"]) == 0
    assert "[1/1] sit_cmu_75_19.bvh: there, sha256 ok" in capsys.readouterr().err
    assert (out / "sit_cmu_75_19.bvh").stat().st_mtime_ns == stamp


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the server's per-request lines are not the test's output
        pass


@pytest.fixture
def served(repo):
    """The checkout served over HTTP on localhost: its URL prefix."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(repo)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def test_build_from_a_url_writes_the_same_clips(served, manifest, tmp_path, capsys):
    out = tmp_path / "extra"
    assert cmu_clips.main(["build", "--source", served, "--out", str(out), "--manifest", str(manifest)]) == 0
    assert (out / "sit_cmu_75_19.bvh").read_bytes() == EXPECTED.encode()
    assert (out / "sit_cmu_75_19_up.bvh").read_bytes() == EXPECTED_UP.encode()
    _refused(capsys, ["build", "--source", served + "elsewhere", "--out", str(tmp_path / "x"), "--manifest",
                      str(manifest)], "HTTP 404")


def test_a_sha256_that_differs_is_refused_and_nothing_is_written(repo, manifest, tmp_path, capsys):
    data = json.loads(manifest.read_text())
    data["clips"][0]["sha256"] = _sha(EXPECTED + "x")
    manifest.write_text(json.dumps(data))
    out = tmp_path / "extra"
    _refused(capsys, ["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)],
             "sit_cmu_75_19.bvh", "--source", "commit")
    assert list(out.iterdir()) == []


def test_check_reports_each_clip_ok_missing_or_differing(repo, manifest, tmp_path, capsys):
    out = tmp_path / "extra"
    assert cmu_clips.main(["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)]) == 0
    capsys.readouterr()
    assert cmu_clips.main(["check", str(out), "--manifest", str(manifest)]) == 0
    assert capsys.readouterr().out.split() == ["ok", "sit_cmu_75_19.bvh", "ok", "sit_cmu_75_19_up.bvh"]
    (out / "sit_cmu_75_19.bvh").write_text(EXPECTED.replace("3.0100", "3.0200"))
    (out / "sit_cmu_75_19_up.bvh").unlink()
    assert cmu_clips.main(["check", str(out), "--manifest", str(manifest)]) == 1
    captured = capsys.readouterr()
    assert captured.out.split() == ["differs", "sit_cmu_75_19.bvh", "missing", "sit_cmu_75_19_up.bvh"]
    assert "build them" in captured.err and "transcribe them again" in captured.err
    _refused(capsys, ["check", str(tmp_path / "nowhere"), "--manifest", str(manifest)], "no folder")


def test_an_interrupted_write_leaves_no_clip_and_no_part_file(tmp_path, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cmu_clips.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cmu_clips.write_atomic(tmp_path / "sit_cmu_75_19.bvh", EXPECTED)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("first, last, words", [
    ("0", "6", ("rest pose", "1 or more")),
    ("3", "8", ("odd span", "even number")),
    ("9", "7", ("before first",)),
    ("3", "21", ("past the source's 20 frames", "at most 19")),
])
def test_cut_refuses_frames_the_format_does_not_allow(repo, tmp_path, capsys, first, last, words):
    out = tmp_path / "sit_cmu_75_19.bvh"
    _refused(capsys, ["cut", str(repo / "data/075/75_19.bvh"), "--first", first, "--last", last, "--out", str(out)], *words)
    assert not out.exists()


def test_cut_refuses_wrong_types_on_the_command_line(repo, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        cmu_clips.main(["cut", str(repo / "data/075/75_19.bvh"), "--first", "three", "--last", "7", "--out",
                        str(tmp_path / "sit_cmu_75_19.bvh")])
    assert stop.value.code == 2 and "invalid int value" in capsys.readouterr().err
    _refused(capsys, ["cut", str(repo / "data/075/75_19.bvh"), "--first", "3", "--last", "7", "--out",
                      str(tmp_path / "clip.bvh")], "<category>_cmu_<SS>_<TT>.bvh")


def test_a_kept_line_that_is_not_finite_is_refused_a_dropped_one_is_not(tmp_path, capsys):
    lines = ["0 0 0 0 0 0 0 0 0 0 0 0"] + [_line(f) for f in range(1, FRAMES)]
    lines[5] = lines[5].replace("5.0300", "nan")
    lines[4] = lines[4].replace("4.0300", "inf")
    source = tmp_path / "75_19.bvh"
    source.write_text(_trial(lines))
    out = tmp_path / "sit_cmu_75_19.bvh"
    _refused(capsys, ["cut", str(source), "--first", "3", "--last", "7", "--out", str(out)], "source frame 5", "finite")
    assert not out.exists()
    source.write_text(_trial(lines[:4] + [lines[4]] + [_line(5)] + lines[6:]))  # the inf at frame 4, never kept
    assert cmu_clips.main(["cut", str(source), "--first", "3", "--last", "7", "--out", str(out)]) == 0
    assert out.read_bytes() == EXPECTED.encode()


def test_a_source_cut_short_or_not_a_bvh_is_refused(repo, manifest, tmp_path, capsys):
    trial = repo / "data" / "075" / "75_19.bvh"
    trial.write_text(_trial()[: -len(_line(19)) - len(_line(18)) - 2])  # its last two frames lost
    out = tmp_path / "extra"
    _refused(capsys, ["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)],
             "18 of the 20 frames", "cut short")
    assert list(out.iterdir()) == []
    trial.write_text(_trial()[:-30])  # cut in its last line
    _refused(capsys, ["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)],
             "last frame has 9 of the hierarchy's 12 numbers", "cut short")
    trial.write_text("<html>404: Not Found</html>\n")
    _refused(capsys, ["cut", str(trial), "--first", "3", "--last", "7", "--out", str(tmp_path / "sit_cmu_75_19.bvh")],
             "not a BVH")
    _refused(capsys, ["build", "--source", str(tmp_path / "nowhere"), "--out", str(out), "--manifest", str(manifest)],
             "no folder")


def test_the_out_folder_must_not_be_the_source_and_must_be_writable(repo, manifest, tmp_path, capsys):
    _refused(capsys, ["build", "--source", str(repo), "--out", str(repo), "--manifest", str(manifest)], "source folder")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    _refused(capsys, ["build", "--source", str(repo), "--out", str(blocker / "extra"), "--manifest", str(manifest)],
             "cannot make the folder")
    out = tmp_path / "extra"
    (out / "sit_cmu_75_19.bvh").mkdir(parents=True)  # a folder where the clip goes
    _refused(capsys, ["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)], "cannot write")
    assert [p.name for p in out.iterdir()] == ["sit_cmu_75_19.bvh"]
    trial = repo / "data" / "075" / "75_19.bvh"
    _refused(capsys, ["cut", str(trial), "--first", "3", "--last", "7", "--out", str(tmp_path / "no" / "sit_cmu_75_19.bvh")],
             "make it first")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_out_folder_is_refused(repo, manifest, tmp_path, capsys):
    out = tmp_path / "extra"
    out.mkdir()
    out.chmod(0o555)
    try:
        _refused(capsys, ["build", "--source", str(repo), "--out", str(out), "--manifest", str(manifest)],
                 "cannot write into")
        assert list(out.iterdir()) == []
    finally:
        out.chmod(0o755)


def test_cut_never_overwrites_its_source(tmp_path, capsys):
    source = tmp_path / "sit_cmu_75_19.bvh"  # a source named as a clip
    source.write_text(_trial())
    _refused(capsys, ["cut", str(source), "--first", "3", "--last", "7", "--out", str(source)], "is the source file")
    assert source.read_text() == _trial()


@pytest.mark.parametrize("change, words", [
    ({"first": "3"}, ("first",)),
    ({"sha256": "abc"}, ("64 hex digits",)),
    ({"frames": 4}, ("do not fit",)),
    ({"source": "../75_19.bvh"}, ("data/0SS/SS_TT.bvh",)),
])
def test_a_manifest_entry_of_wrong_types_or_frames_is_refused(repo, manifest, tmp_path, capsys, change, words):
    data = json.loads(manifest.read_text())
    data["clips"][0].update(change)
    manifest.write_text(json.dumps(data))
    _refused(capsys, ["build", "--source", str(repo), "--out", str(tmp_path / "extra"), "--manifest", str(manifest)], *words)


def test_unknown_clips_and_a_manifest_that_is_not_json_are_refused(repo, manifest, tmp_path, capsys):
    _refused(capsys, ["build", "--source", str(repo), "--out", str(tmp_path / "extra"), "--manifest", str(manifest),
                      "--clips", "jump_cmu_13_42"], "jump_cmu_13_42.bvh", "sit_cmu_75_19.bvh")
    manifest.write_text("{")
    _refused(capsys, ["check", str(tmp_path), "--manifest", str(manifest)], "not JSON")


def test_the_projects_manifest_names_the_repository_commit_and_terms():
    data = cmu_clips.load_manifest(cmu_clips.MANIFEST)
    assert data["repository"] == "una-dinosauria/cmu-mocap" and len(data["commit"]) == 40
    assert data["commit"] in cmu_clips.RAW_URL and "mocap.cs.cmu.edu" in data["terms"]
