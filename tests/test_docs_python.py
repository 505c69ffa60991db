"""Every ```python block of README.md and docs/*.md runs, so the examples cannot rot.

Each block runs in a folder of its own, in one subprocess for all of them, with the tiny
fixture weights under the names the docs use (`pose.safetensors`, `seg.safetensors`,
`depth.safetensors`, `normal.safetensors`, the detector `rtmdet_m.pth`) and synthetic media
(`clip.mp4`, `dance.mp4`, `photo.png`, `walk.jsonl`, ...), offline; `$SAPIENS_CHECKPOINT_ROOT` is the
block's folder, so the released detector's name finds the tiny one there. The only change made for the test is
the one `tests/test_docs_commands.py` makes too: the tiny fixture detector is loaded with the
width its file has. A block whose code needs what a test machine lacks is marked like a bash
block, `<!-- needs: camera|gpu|network|cluster|blender -->` on the line before it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from media import gaussian_marker, write_video
from test_docs_commands import _MARK, NEEDS, ROOT, _doc_files, _tracks_text


def python_blocks(text: str, name: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(file:line, code, needs) of every ```python fence of one markdown text."""
    blocks, lines = [], text.splitlines()
    fence = None
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped.startswith("```"):
            if fence is not None:
                fence[1].append(line)
            continue
        if fence is not None:
            if fence[0] == "python":
                blocks.append((f"{name}:{fence[2]}", "\n".join(fence[1]), fence[3]))
            fence = None
            continue
        needs, before = [], number - 2
        while before >= 0 and not lines[before].strip():
            before -= 1
        while before >= 0 and _MARK.search(lines[before]):
            needs += [v.strip() for kind, value in _MARK.findall(lines[before]) if kind == "needs" for v in value.split(",")]
            before -= 1
        assert set(needs) <= set(NEEDS), f"{name}:{number}: unknown needs {needs}"
        fence = (stripped[3:].strip(), [], number, tuple(needs))
    return blocks


_DRIVER = r"""
import contextlib, functools, io, json, os, sys, traceback
import realtime.detect as detect
import realtime.models.rtmdet as rtmdet
detect.make_box_finder = functools.partial(detect.make_box_finder, widen=None)  # the tiny fixture detector's width
rtmdet.load_detector = functools.partial(rtmdet.load_detector, widen=None)
import realtime.models
realtime.models.load_detector = rtmdet.load_detector
results = []
for job in json.loads(open(sys.argv[1]).read()):
    os.chdir(job["cwd"])
    os.environ["SAPIENS_CHECKPOINT_ROOT"] = job["cwd"]  # the released detector's place, with the tiny one in it
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            exec(compile(job["code"], job["where"], "exec"), {"__name__": "__main__"})
            error = None
        except BaseException:
            error = traceback.format_exc()
    results.append({"error": error, "output": out.getvalue()[-2000:]})
open(sys.argv[2], "w").write(json.dumps(results))
"""


def _folder(folder: Path, fixtures: Path, detector: Path, tracks: str) -> None:
    for task, file in (("pose", "pose"), ("seg", "seg"), ("depth", "pointmap"), ("pointmap", "pointmap"), ("normal", "normal")):
        shutil.copy(fixtures / f"{file}_weights.safetensors", folder / f"{task}.safetensors")
    shutil.copy(detector, folder / "rtmdet_m.pth")
    (folder / "detector").mkdir()
    shutil.copy(detector, folder / "detector" / "rtmdet_m.pth")  # where $SAPIENS_CHECKPOINT_ROOT keeps the released one
    frames = [gaussian_marker(96, 128, 30 + 8 * i, 48, 8) for i in range(4)]
    for name in ("clip.mp4", "dance.mp4"):
        write_video(folder / name, frames, fps=10)
    for name in ("walk.jsonl", "dance.jsonl", "tracks.jsonl"):
        (folder / name).write_text(tracks)
    import cv2

    cv2.imwrite(str(folder / "photo.png"), frames[0][..., ::-1])


def test_python_blocks_are_found_with_their_marks():
    text = "x\n```python\nprint(1)\n```\n<!-- needs: camera -->\n```python\nimport cv2\n```\n```bash\nls\n```\n"
    assert python_blocks(text, "x.md") == [("x.md:2", "print(1)", ()), ("x.md:6", "import cv2", ("camera",))]


def test_every_python_block_in_the_docs_runs(tmp_path, fixtures_dir, rtmdet_fixtures_dir):
    blocks = [b for path in _doc_files() for b in python_blocks(path.read_text(encoding="utf-8"), path.name)]
    runnable = [b for b in blocks if not b[2]]
    assert any(where.startswith("python-api.md") for where, _, _ in runnable)
    tracks = _tracks_text(tmp_path)
    jobs = []
    for i, (where, code, _) in enumerate(runnable):
        folder = tmp_path / f"block{i:02d}"
        folder.mkdir()
        _folder(folder, fixtures_dir, rtmdet_fixtures_dir / "tiny_w025_checkpoint.pth", tracks)
        jobs.append({"cwd": str(folder), "code": code, "where": where})
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", _DRIVER, str(tmp_path / "jobs.json"), str(tmp_path / "results.json")],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    failed = [f"{where}:\n{r['error']}\n{r['output']}" for (where, _, _), r in zip(runnable, results) if r["error"]]
    assert not failed, "\n\n".join(failed)
