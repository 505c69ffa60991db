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
from pathlib import Path
from typing import Iterable, Optional

from realtime.errors import UserError
from realtime.sources import IMAGE_SUFFIXES

VIDEO_SUFFIXES = {".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".mpg", ".mpeg", ".ts", ".mts", ".wmv", ".flv"}
MANIFEST = "batch.jsonl"


def find_videos(inputs: Iterable[str]) -> list[Path]:
    """Files, folders and globs -> the videos (and image folders) to process, each once.

    A folder contributes the videos directly inside it; a folder holding images and
    no videos is one image-sequence unit. Order is as given, sorted within a folder or glob.
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
                found.setdefault(video.resolve(), None)
    if not found:
        raise UserError(f"No videos found in {' '.join(inputs)}; pass video files ({', '.join(sorted(VIDEO_SUFFIXES))}), folders holding them, or image folders.")
    return list(found)


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
    (so the name of a video does not depend on which other videos are in the batch)."""
    stems: dict[str, list[Path]] = {}
    for video in videos:
        stems.setdefault(video.stem, []).append(video)
    names = {}
    for stem, group in stems.items():
        for video in group:
            names[video] = stem if len(group) == 1 else f"{stem}-{hashlib.sha1(str(video).encode()).hexdigest()[:8]}"
    return names


def read_manifest(output_dir: Path) -> dict[str, dict]:
    """video path -> its last record. Lines cut off by a crash are ignored."""
    records: dict[str, dict] = {}
    path = output_dir / MANIFEST
    if not path.exists():
        return records
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and "video" in record:
            records[record["video"]] = record
    return records


def append_manifest(output_dir: Path, record: dict) -> None:
    """One line per finished unit, flushed at once (a crash loses at most the line being written)."""
    with open(output_dir / MANIFEST, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()


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
