"""What a batch has to do: the videos named on the command line, their output folder
names, and which of them an earlier run already finished (the manifest).

The manifest `DIR/batch.jsonl` gets one JSON line per unit as it finishes
(`video`, `name`, `status` "done" or "failed", `frames`, `seconds`, `error`,
`worker`, `attempt`); the last line for a video is the one that counts.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Optional

from realtime.errors import UserError
from realtime.sources import IMAGE_SUFFIXES

VIDEO_SUFFIXES = {".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".mpg", ".mpeg", ".ts", ".mts", ".wmv", ".flv"}
MANIFEST = "batch.jsonl"
PARTIAL = ".partial"  # suffix of a unit's working folder (realtime.batch.worker)


def find_videos(inputs: Iterable[str], output_dir: Optional[Path] = None) -> list[Path]:
    """Files, folders and globs -> the videos (and image folders) to process, each once.

    A folder contributes the videos directly inside it; a folder holding images and
    no videos is one image-sequence unit. Order is as given, sorted within a folder or glob.
    The batch's own outputs are never inputs, however the glob is written: anything inside
    a folder of `output_dir`, inside any `*.partial` folder, and the manifest (see `is_output`).
    """
    found: dict[Path, None] = {}
    for spec in inputs:
        if any(ch in spec for ch in "*?["):
            matches = sorted(glob.glob(spec, recursive=True))
            if not matches:
                raise UserError(f"{spec} matches no file; check the pattern (quote it so the shell does not expand it).")
            paths = [Path(m) for m in matches if Path(m).is_dir() or _is_media(Path(m))]
        else:
            path = Path(spec).expanduser()
            if not path.exists():
                raise UserError(f"Input {spec} does not exist; pass video files, folders of videos or image folders, or a glob.")
            paths = [path]
        for path in paths:
            for video in _expand(path):
                if not is_output(video, output_dir):
                    found.setdefault(video.resolve(), None)
    if not found:
        raise UserError(f"No videos found in {' '.join(inputs)}; pass video files ({', '.join(sorted(VIDEO_SUFFIXES))}), folders "
                        "holding them, or image folders.")
    return list(found)


def is_output(path: Path, output_dir: Optional[Path]) -> bool:
    """Whether `path` is something a batch writes: the manifest, a `*.partial` working folder
    or anything in one, or anything inside a unit folder of `output_dir` (videos lying
    directly in `output_dir` are the user's, and stay inputs)."""
    path = path.resolve()
    if path.name == MANIFEST or any(part.endswith(PARTIAL) for part in path.parts):
        return True
    if output_dir is None:
        return False
    try:
        inside = path.relative_to(Path(output_dir).resolve()).parts
    except ValueError:
        return False
    return len(inside) > 1 or (len(inside) == 1 and path.is_dir())


def _is_media(path: Path) -> bool:
    return path.suffix.lower() in VIDEO_SUFFIXES or path.suffix.lower() in IMAGE_SUFFIXES


def _expand(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]  # a file named explicitly is processed whatever its suffix; the decoder judges it
    files = sorted(p for p in path.iterdir() if p.is_file())
    videos = [p for p in files if p.suffix.lower() in VIDEO_SUFFIXES]
    if videos:
        return videos
    if any(p.suffix.lower() in IMAGE_SUFFIXES for p in files):
        return [path]
    return []


def output_names(videos: list[Path]) -> dict[Path, str]:
    """Output folder name per video: its stem, or stem-<hash of its path> where stems collide
    or the stem is a name the batch itself uses (the manifest, a `*.partial` working folder),
    so the name of a video does not depend on which other videos are in the batch."""
    stems: dict[str, list[Path]] = {}
    for video in videos:
        stems.setdefault(video.stem, []).append(video)
    names = {}
    for stem, group in stems.items():
        for video in group:
            unique = len(group) == 1 and not is_reserved(stem)
            names[video] = stem if unique else f"{stem}-{hashlib.sha1(str(video).encode()).hexdigest()[:8]}"
    return names


def is_reserved(name: str) -> bool:
    """Names a video's folder must not take: the manifest's, a working folder's, or none at all."""
    folded = name.lower()
    return folded in ("", ".", "..", MANIFEST) or folded.endswith(PARTIAL) or folded.startswith(".")


def read_manifest(output_dir: Path) -> dict[str, dict]:
    """video path -> its last record. Lines cut off by a crash (or otherwise unreadable) are skipped."""
    records: dict[str, dict] = {}
    path = output_dir / MANIFEST
    if not path.exists():
        return records
    for line in path.read_bytes().splitlines():
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(record, dict) and "video" in record:
            records[record["video"]] = record
    return records


def append_manifest(output_dir: Path, record: dict) -> None:
    """One line per finished unit, written with one `write` of the complete line (a crash
    loses at most that line). After a line cut by an earlier crash, the new line starts on
    a line of its own (the cut one stays unreadable and is skipped, never joined)."""
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(output_dir / MANIFEST, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        size = os.fstat(fd).st_size
        if size and _last_byte(output_dir / MANIFEST, size) != b"\n":
            line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):  # a full disk: cut our partial line off again
            os.ftruncate(fd, size)
            raise OSError(28, "No space left on device")
    finally:
        os.close(fd)


def _last_byte(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1)


def check_writable(output_dir: Path) -> None:
    """One sentence, before any worker starts, when `output_dir` (or its manifest) cannot be written."""
    probe = output_dir / f".sapiens-rt-write-test-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        os.unlink(probe)
        manifest = output_dir / MANIFEST
        if manifest.exists():
            os.close(os.open(manifest, os.O_WRONLY | os.O_APPEND))
    except OSError as err:
        raise UserError(f"Cannot write into the output folder {output_dir} ({err.strerror}); "
                        f"choose a writable --output-dir.") from None


def is_complete(record: Optional[dict], folder: Path, expected: list[str]) -> bool:
    """A unit is finished when its record says done and its folder holds every expected output,
    with one tracks row per recorded frame."""
    if record is None or record.get("status") != "done":
        return False
    if not all((folder / name).exists() for name in expected):
        return False
    return count_frame_rows(folder / "tracks.jsonl") == record.get("frames")


def count_frame_rows(tracks: Path) -> int:
    """Lines after the header of a tracks .jsonl (one per frame; a cut-off last line does not count)."""
    newlines = 0
    with open(tracks, "rb") as f:
        while chunk := f.read(1 << 20):
            newlines += chunk.count(b"\n")
    return max(newlines - 1, 0)


def expected_outputs(no_video: bool, exports: tuple[str, ...]) -> list[str]:
    """The files (or folders) a finished unit folder holds, for the options of this batch."""
    from realtime.export.formats import default_output

    names = ["tracks.jsonl"] + ([] if no_video else ["overlay.mp4"])
    return names + [default_output(Path("tracks.jsonl"), fmt).name for fmt in exports]


def probe_frames(video: Path, fps: Optional[float]) -> int:
    """Frame count from the container (or the number of images); raises UserError for
    a file that cannot be opened, so a corrupt video fails before it reaches a worker."""
    from realtime.sources import open_source

    source = open_source(str(video), fps=fps)
    try:
        return source.open().frame_count or 0
    finally:
        source.close()
