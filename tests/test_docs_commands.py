"""Every `sapiens-rt ...` command shown in README.md and docs/*.md runs, so the docs cannot rot.

A command is a line starting with `sapiens-rt` inside a ```bash fence. It is run
offline, with the fixture weights and synthetic media made here, unless the
fence is marked by an HTML comment on the line before it (blank lines between
are allowed) naming what it needs that a test machine has not:

    <!-- needs: camera -->       a webcam (or a live window)
    <!-- needs: gpu -->          a CUDA GPU
    <!-- needs: network -->      the internet (downloads, streams)
    <!-- needs: cluster -->      a Ray cluster
    <!-- needs: blender -->      Blender on PATH
    <!-- exit: 3 -->             the command's documented exit status (default 0)

What the test adds to `run` and `batch` commands so they run offline and fast,
unless the command sets it itself: `--checkpoint TASK=fixture` for each task,
`--device cpu`, `--max-frames 2` (the fixture checkpoints declare their tiny trained input sizes, which the run uses),
`--no-progress`; `run` gets the tiny RTMDet fixture as `--detector` (loaded with
the width its file has: the CLI insists on the released detector's width) and
`batch` `--boxes-from frame` (its workers are fresh processes). Input names
(SOURCE, dance.mp4, footage/, ...) become media made by `MEDIA` below; a new
name in the docs fails this test until it is added there.

All commands run in one subprocess through `realtime.cli.main` (the function the
`sapiens-rt` script calls), each in its own folder, so Python and torch start once.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from media import gaussian_marker, write_video

ROOT = Path(__file__).resolve().parent.parent
NEEDS = ("camera", "gpu", "network", "cluster", "blender")
_MARK = re.compile(r"<!--\s*(needs|exit):\s*([\w ,]+?)\s*-->")


@dataclass
class Command:
    where: str  # file:line
    text: str  # the line as written
    needs: tuple[str, ...]  # from the fence's mark; empty: runs here
    exit_code: int = 0


def documented_commands(text: str, name: str) -> list[Command]:
    """The `sapiens-rt` lines of the ```bash fences of one markdown text, with their fence's marks."""
    commands: list[Command] = []
    lines = text.splitlines()
    fence = None  # (language, needs, exit code) while inside a fence
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            if fence is not None:
                fence = None
                continue
            needs, code = [], 0
            before = number - 2
            while before >= 0 and not lines[before].strip():
                before -= 1
            while before >= 0 and _MARK.search(lines[before]):  # marks on the lines right before the fence
                for kind, value in _MARK.findall(lines[before]):
                    if kind == "needs":
                        needs += [v.strip() for v in value.split(",") if v.strip()]
                    else:
                        code = int(value)
                before -= 1
            unknown = set(needs) - set(NEEDS)
            assert not unknown, f"{name}:{number}: unknown <!-- needs: {', '.join(sorted(unknown))} -->; use {', '.join(NEEDS)}"
            fence = (stripped[3:].strip(), tuple(needs), code)
            continue
        if fence is not None and fence[0] in ("bash", "sh", "shell") and stripped.startswith("sapiens-rt "):
            commands.append(Command(f"{name}:{number}", stripped, fence[1], fence[2]))
    return commands


def _doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# Input names used in the docs -> what is made for them (in the command's own folder).
MEDIA = {
    "SOURCE": "video", "dance.mp4": "video", "clip.mp4": "video", "more.mov": "video",
    "photos/": "images", "shots/": "images",
    "footage/": "videos", "/shared/videos": "videos", "day*/cam*.mp4": "glob",
    "walk.jsonl": "tracks", "tracks.jsonl": "tracks", "dance.jsonl": "tracks", "run.jsonl": "tracks",
}


def _frames(n: int = 3, h: int = 96, w: int = 128) -> list[np.ndarray]:
    return [gaussian_marker(h, w, 40 + 10 * i, 48, 8) for i in range(n)]


def _make(name: str, folder: Path, tracks_text: str) -> None:
    kind = MEDIA.get(name)
    assert kind is not None, f"the docs use the input {name!r}: add it to MEDIA in {Path(__file__).name}"
    if kind in ("video", "videos", "glob"):
        path = {"video": folder / name, "videos": folder / name.strip("/") / "a.mp4", "glob": folder / "day1" / "cam1.mp4"}[kind]
        path.parent.mkdir(parents=True, exist_ok=True)
        made = path if path.suffix else path.with_name(path.name + ".mp4")  # SOURCE: an MP4 by another name
        write_video(made, _frames(), fps=10)
        made.rename(path)
    elif kind == "images":
        (folder / name).mkdir(parents=True)
        for i, image in enumerate(_frames()):
            cv2.imwrite(str(folder / name / f"{i:03d}.png"), image)
    else:
        (folder / name).write_text(tracks_text)


def _inputs(argv: list[str]) -> list[str]:
    """The command's input files or folders, as the CLI's own parser reads them."""
    from realtime.cli import build_parser

    args = build_parser().parse_args(argv)
    if args.command == "run":
        return [args.source]
    if args.command == "batch":
        return args.inputs
    return [args.tracks] if args.command in ("export", "smooth", "stream") else []


SHELL = ("|", ">", ">>", "2>", "<", "&&", ";")


def _before_the_shell(argv: list[str]) -> list[str]:
    """The command up to a pipe or redirection (`... --tracks - | head -n 20`): what would reach the
    reader or the file is the test process's standard output, which goes nowhere."""
    cut = next((i for i, arg in enumerate(argv) if arg in SHELL), len(argv))
    return argv[:cut]


def _offline(argv: list[str], fixtures: Path, detector: Path) -> list[str]:
    """`run` / `batch` with the fixture weights, on the CPU, small and short (see the module docstring)."""
    from realtime.tasks import parse

    command = argv[0]
    if command not in ("run", "batch"):
        return argv
    given = set(argv)
    tasks = parse(argv[argv.index("--tasks") + 1]) if "--tasks" in given else ("pose", "seg")
    named = {item.partition("=")[0] for flag, item in zip(argv, argv[1:]) if flag == "--checkpoint"}
    added = [arg for task in tasks if task not in named
             for arg in ("--checkpoint", f"{task}={fixtures / f'{task}_weights.safetensors'}")]
    for flag, value in (("--device", "cpu"), ("--max-frames", "2")):  # the fixtures declare their tiny input sizes
        if flag not in given:
            added += [flag, value]
    if "--no-progress" not in given:
        added.append("--no-progress")
    if "--boxes-from" not in given and "--detector" not in given:
        added += ["--detector", str(detector)] if command == "run" else ["--boxes-from", "frame"]
    return argv + added


_DRIVER = r"""
import contextlib, functools, io, json, os, sys, time
import realtime.detect as detect
detect.make_box_finder = functools.partial(detect.make_box_finder, widen=None)  # the tiny fixture detector's width
from realtime.cli import main
results = []
for job in json.loads(open(sys.argv[1]).read()):
    os.chdir(job["cwd"])
    out, started = io.StringIO(), time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            code = main(job["argv"])
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except BaseException as err:
            import traceback
            traceback.print_exc()
            code = f"raised {type(err).__name__}"
    results.append({"code": code, "output": out.getvalue(), "seconds": round(time.monotonic() - started, 1)})
open(sys.argv[2], "w").write(json.dumps(results))
"""


def _tracks_text(tmp: Path) -> str:
    """A tracks file of one person (id 1) with 3D points, as every export format needs."""
    from mocap_synthetic import FPS, NAMES, synthetic_clip
    from realtime.frames import Frame, Person
    from realtime.sinks.tracks import TrackWriter

    camera = synthetic_clip(20)[4]
    image = np.zeros((2, 2, 3), np.uint8)
    with TrackWriter(tmp / "walk.jsonl", keypoint_names=NAMES, image_wh=(640, 480), fps=FPS, source="synthetic.mp4",
                     model={}, tracked=True) as writer:
        for t, xyz in enumerate(camera):
            xy = 500.0 * xyz[:, :2] / xyz[:, 2:] + [320.0, 240.0]
            person = Person(box=np.array([100, 20, 500, 470], np.float32), track_id=1, keypoints=xy.astype(np.float32),
                            keypoint_scores=np.full(len(NAMES), 0.9, np.float32), keypoints3d=xyz.astype(np.float32))
            writer.write(Frame(index=t, timestamp=t / FPS, image=image, people=(person,)))
    return (tmp / "walk.jsonl").read_text()


def _run_jobs(tmp_path: Path, jobs: list[dict]) -> list[dict]:
    """The jobs' commands in one subprocess through `_DRIVER`, offline; their exit codes and output."""
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(tmp_path / "jobs.json"), str(tmp_path / "results.json")],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "results.json").read_text())


def test_marks_and_commands_are_read_from_the_fences():
    text = """intro `sapiens-rt run x` in prose is no command

```bash
sapiens-rt run dance.mp4 --tasks pose   # a comment
pip install something
```

<!-- needs: camera, network -->

```bash
sapiens-rt run 0 --view
```
<!-- exit: 3 -->
```bash
sapiens-rt run cut.mp4
```
```python
sapiens-rt = 1
```
"""
    commands = documented_commands(text, "x.md")
    assert [(c.where, c.text, c.needs, c.exit_code) for c in commands] == [
        ("x.md:4", "sapiens-rt run dance.mp4 --tasks pose   # a comment", (), 0),
        ("x.md:11", "sapiens-rt run 0 --view", ("camera", "network"), 0),
        ("x.md:15", "sapiens-rt run cut.mp4", (), 3),
    ]


def test_every_documented_command_runs_offline(tmp_path, fixtures_dir, rtmdet_fixtures_dir):
    commands = [c for path in _doc_files() for c in documented_commands(path.read_text(encoding="utf-8"), path.name)]
    runnable = [c for c in commands if not c.needs]
    assert len(runnable) >= 10, f"only {len(runnable)} runnable sapiens-rt commands found in the docs"
    assert {shlex.split(c.text)[1] for c in runnable} >= {"run", "batch", "export", "smooth"}
    tracks = _tracks_text(tmp_path)
    jobs = []
    for i, command in enumerate(runnable):
        folder = tmp_path / f"cmd{i:02d}"
        folder.mkdir()
        argv = _before_the_shell(shlex.split(command.text, comments=True)[1:])
        for name in _inputs(argv):
            _make(name, folder, tracks)
        jobs.append({"cwd": str(folder), "argv": _offline(argv, fixtures_dir, rtmdet_fixtures_dir / "tiny_w025_checkpoint.pth")})
    results = _run_jobs(tmp_path, jobs)
    failed = [f"{c.where}: `{c.text}` exited {r['code']} (expected {c.exit_code}), "
              f"run as {' '.join(job['argv'])}:\n{r['output'][-1500:]}"
              for c, r, job in zip(runnable, results, jobs) if r["code"] != c.exit_code]
    assert not failed, "\n\n".join(failed)


def _outputs(argv: list[str]) -> list[str]:
    """The files a command writes that a later command may read (tracks, videos, exports)."""
    from realtime.cli import build_parser

    args = build_parser().parse_args(argv)
    tracks = getattr(args, "tracks", None) if args.command == "run" else None
    return [path for path in (tracks, getattr(args, "out", None)) if path]


def test_the_readme_commands_run_in_order_as_a_chain(tmp_path, fixtures_dir, rtmdet_fixtures_dir):
    """README's runnable lines in one folder, in order: what one line writes (the tracks of the
    tracks-only run) is what the next reads (the BVH export), as a newcomer pastes them."""
    readme = ROOT / "README.md"
    chain = [c for c in documented_commands(readme.read_text(encoding="utf-8"), readme.name) if not c.needs]
    assert any(shlex.split(c.text)[1] == "export" for c in chain)
    folder = tmp_path / "chain"
    folder.mkdir()
    tracks, written, jobs = _tracks_text(tmp_path), set(), []
    for command in chain:
        argv = _before_the_shell(shlex.split(command.text, comments=True)[1:])
        for name in _inputs(argv):
            if name not in written and not (folder / name).exists():
                _make(name, folder, tracks)
                if name.endswith(".mp4"):  # long enough for the tracker to confirm the person (3 frames)
                    write_video(folder / name, _frames(8), fps=10)
        written.update(_outputs(argv))
        if argv[0] == "run":  # 8 frames, and the whole frame as the box: the tiny detector's random weights find no one
            argv += ["--max-frames", "8", "--boxes-from", "frame"]
        jobs.append({"cwd": str(folder), "argv": _offline(argv, fixtures_dir, rtmdet_fixtures_dir / "tiny_w025_checkpoint.pth")})
    assert "dance.jsonl" in written and not (folder / "dance.jsonl").exists()  # made by the chain, not by the test
    results = _run_jobs(tmp_path, jobs)
    failed = [f"{c.where}: `{c.text}` exited {r['code']}:\n{r['output'][-1500:]}"
              for c, r in zip(chain, results) if r["code"] != c.exit_code]
    assert not failed, "\n\n".join(failed)
    assert (folder / "dance.bvh").is_file()
