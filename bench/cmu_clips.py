"""The held-out CMU clips of `bench/motion.py --extra DIR`: cut from CMU's trials as the manifest says, checked by sha256.

The data may not go into the project's history, so the project keeps a manifest instead (`bench/cmu_clips.json`): the
public repository and commit the clips come from (CMU's trials as BVH, CMU's own skeleton, 120 fps), CMU's terms,
and per clip its file name, the source trial, the source frames kept, CMU's description, what the motion is and the
clip's sha256. A clip is its source's text cut down, every kept character as served:
1. the lines from `HIERARCHY` through `MOTION`, verbatim (the root's CHANNELS line ends in a space);
2. `Frames: N` (the kept lines) and `Frame Time: 0.0166667` (every second frame of the 120 fps source: 60 fps);
3. the source's MOTION lines FIRST, FIRST+2, ..., LAST, verbatim; source frame 0, the first line after the source's
   `Frame Time:` line, is CMU's rest pose and never kept (FIRST >= 1), and LAST - FIRST is even;
4. lines end in `\\n`, the file in one `\\n` (a source's `\\r\\n` line ends count as `\\n`).

    python bench/cmu_clips.py build --source SRC --out DIR [--clips NAME ...] [--manifest PATH]
    python bench/cmu_clips.py check DIR [--manifest PATH]
    python bench/cmu_clips.py cut SOURCE_FILE --first F --last L --out FILE

`build`: SRC is a checkout of the repository (a folder holding data/0SS/SS_TT.bvh) or its raw URL at the commit
(`RAW_URL`); each clip is cut, compared with the manifest's sha256 and written atomically (a clip already there with
its sha256 is left alone). `check`: every clip of the manifest in DIR with its sha256. `cut`: one clip from one source
file, for a new entry of the manifest (it prints the clip's sha256 and the entry). A user error ends in one sentence
saying what to do and exit status 2.

`bench/cmu_tune.json` (`--manifest bench/cmu_tune.json`) lists, in the same form, clips of other CMU subjects that
the rules were tuned on (side steps, a sit, a kick): build them into a folder of their own, not the held-out one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MANIFEST = Path(__file__).resolve().with_name("cmu_clips.json")
RAW_URL = "https://raw.githubusercontent.com/una-dinosauria/cmu-mocap/5d98bb6b62b4735d89ff5f53e96899de2b92d8b4"
SOURCE_FPS = 120.0  # CMU's capture rate; a clip keeps every second frame
FRAME_TIME = "0.0166667"  # the clip's, 1/60 s as the format writes it
FILE_NAME = re.compile(r"[a-z][a-z_]*_cmu_\d+_\d+(_[a-z0-9]+)?\.bvh")  # <category>_cmu_<SS>_<TT>[_suffix].bvh
SOURCE_PATH = re.compile(r"data/\d{3}/\d+_\d+\.bvh")  # data/0SS/SS_TT.bvh in the repository
FETCH_TIMEOUT = 60.0  # seconds for one source file over the network


class ClipError(ValueError):
    """A user error, as one sentence saying what to do (bench/corpus.py's CorpusError is the model)."""


@dataclass(frozen=True)
class Source:
    """A source BVH's text by lines (line ends removed): `header` from HIERARCHY through MOTION, `motion` the lines
    after `Frame Time:` (motion[0]: source frame 0), `channels` the hierarchy's channel count."""

    name: str
    header: list[str]
    motion: list[str]
    channels: int


def parse_source(text: str, name: str) -> Source:
    """The source BVH `text` (`name` for messages); ClipError for a text that is not such a BVH or is cut short."""
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    start = next((i for i, line in enumerate(lines) if line.strip() == "HIERARCHY"), len(lines))
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == "MOTION"), len(lines))
    if len(lines) < end + 3:
        raise ClipError(f"{name} is not a BVH file (no HIERARCHY ... MOTION, Frames:, Frame Time:): give a trial of the "
                        "repository, data/0SS/SS_TT.bvh")
    frames = re.fullmatch(r"Frames:\s*(\d+)\s*", lines[end + 1])
    frame_time = re.fullmatch(r"Frame Time:\s*(\S+)\s*", lines[end + 2])
    if frames is None or frame_time is None:
        raise ClipError(f"{name} is not a BVH file (no `Frames:` and `Frame Time:` after MOTION): give a trial of the "
                        "repository, data/0SS/SS_TT.bvh")
    try:
        channels = sum(int(line.split()[1]) for line in lines[start:end] if line.split()[:1] == ["CHANNELS"])
        seconds = float(frame_time.group(1))
    except (IndexError, ValueError):
        raise ClipError(f"{name} is not a BVH file (a CHANNELS count or its frame time is not a number): give a trial "
                        "of the repository, data/0SS/SS_TT.bvh") from None
    if not abs(seconds * SOURCE_FPS - 1.0) < 1e-3:
        raise ClipError(f"{name}: its frame time is {frame_time.group(1)} s, not CMU's 1/{SOURCE_FPS:g} s: give a trial of "
                        "the repository (a clip keeps every second frame of a 120 fps source)")
    motion = lines[end + 3:]
    while motion and not motion[-1].strip():
        motion.pop()
    total = int(frames.group(1))
    if len(motion) < total:
        raise ClipError(f"{name} holds {len(motion)} of the {total} frames its `Frames:` line gives (cut short): fetch "
                        "or transcribe it again whole")
    if motion and len(motion[-1].split()) != channels:  # a text cut in its last line
        raise ClipError(f"{name}: its last frame has {len(motion[-1].split())} of the hierarchy's {channels} numbers (cut "
                        "short): fetch or transcribe it again whole")
    if len(motion) > total:
        raise ClipError(f"{name} holds {len(motion)} frames but its `Frames:` line gives {total}: give the trial as the "
                        "repository serves it")
    return Source(name, lines[start:end + 1], motion, channels)


def cut(source: Source, first: int, last: int) -> str:
    """The clip of source frames first, first + 2, ..., last of `source` (the format in the module docstring);
    ClipError for frames outside the source or a kept line that is not `channels` finite numbers."""
    for value, option in ((first, "--first"), (last, "--last")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ClipError(f"{option} must be a whole number of a source frame, got {value!r}")
    total = len(source.motion)
    if first < 1:
        raise ClipError(f"{source.name}: first frame {first}: source frame 0 is CMU's rest pose, never kept: give a "
                        "first frame of 1 or more")
    if last < first:
        raise ClipError(f"{source.name}: last frame {last} comes before first frame {first}: give a last frame at or "
                        "after the first")
    if (last - first) % 2:
        raise ClipError(f"{source.name}: frames {first} to {last} are an odd span ({last - first}) and a clip keeps every "
                        "second frame: give a last frame an even number of frames after the first")
    if last >= total:
        raise ClipError(f"{source.name}: last frame {last} is past the source's {total} frames (0 to {total - 1}): give a "
                        f"last frame of at most {total - 1}")
    kept = source.motion[first:last + 1:2]
    for frame, line in zip(range(first, last + 1, 2), kept):
        numbers = line.split()
        if len(numbers) != source.channels:
            raise ClipError(f"{source.name}: source frame {frame} has {len(numbers)} numbers and the hierarchy "
                            f"{source.channels} channels: fetch or transcribe the source again")
        try:
            finite = all(math.isfinite(float(number)) for number in numbers)
        except ValueError:
            finite = False
        if not finite:
            raise ClipError(f"{source.name}: source frame {frame} holds a value that is not a finite number: fetch or "
                            "transcribe the source again, or keep frames without it")
    return "\n".join([*source.header, f"Frames: {len(kept)}", f"Frame Time: {FRAME_TIME}", *kept]) + "\n"


def sha256(text: str) -> str:
    """The sha256 of a clip's text as written (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_atomic(path: Path, text: str) -> None:
    """Writes `text` to `path` through a temporary file in its folder and os.replace, so an interruption never leaves
    half a clip; ClipError when the folder cannot be written."""
    try:
        handle = tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=f".{path.name}.", suffix=".part", delete=False)
    except OSError as error:
        raise ClipError(f"cannot write into {path.parent} ({error.strerror}): give --out a folder you can write") from None
    try:
        with handle:
            handle.write(text.encode("utf-8"))
        os.replace(handle.name, path)
    except OSError as error:
        raise ClipError(f"cannot write {path} ({error.strerror}): give --out a path you can write") from None
    finally:
        if os.path.exists(handle.name):
            os.unlink(handle.name)


def load_manifest(path: Path) -> dict:
    """The manifest at `path`, its clips checked for the fields and frames the format needs; ClipError otherwise."""
    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ClipError(f"no manifest at {path}: give --manifest the clips' JSON manifest (bench/cmu_clips.json)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ClipError(f"cannot read the manifest {path} ({error}): give --manifest a JSON file you can read") from None
    except json.JSONDecodeError as error:
        raise ClipError(f"the manifest {path} is not JSON ({error.msg}, line {error.lineno}): fix it") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("clips"), list):
        raise ClipError(f"the manifest {path} has no list of clips (an object with \"clips\": [...]): fix it")
    names = set()
    for index, clip in enumerate(manifest["clips"]):
        where = f"the manifest {path}, clip {index}"
        if not isinstance(clip, dict):
            raise ClipError(f"{where} is not an object: fix it")
        wrong = [key for key, kind in (("file", str), ("source", str), ("first", int), ("last", int), ("total_frames", int),
                                       ("frames", int), ("description", str), ("motion", str), ("sha256", str))
                 if not isinstance(clip.get(key), kind) or isinstance(clip.get(key), bool)]
        if wrong:
            raise ClipError(f"{where} lacks or mistypes {', '.join(wrong)}: fix it (`cut` prints an entry)")
        if not FILE_NAME.fullmatch(clip["file"]) or not SOURCE_PATH.fullmatch(clip["source"]):
            raise ClipError(f"{where}: file {clip['file']!r} or source {clip['source']!r} is not named as "
                            "<category>_cmu_<SS>_<TT>.bvh and data/0SS/SS_TT.bvh: fix it")
        first, last, total = clip["first"], clip["last"], clip["total_frames"]
        if not (1 <= first <= last < total and (last - first) % 2 == 0 and clip["frames"] == (last - first) // 2 + 1):
            raise ClipError(f"{where} ({clip['file']}): first {first}, last {last}, total_frames {total}, frames "
                            f"{clip['frames']} do not fit (1 <= first <= last < total_frames, an even span, frames = "
                            "(last - first) / 2 + 1): fix it")
        if not re.fullmatch(r"[0-9a-f]{64}", clip["sha256"]):
            raise ClipError(f"{where} ({clip['file']}): sha256 is not 64 hex digits: fix it")
        if clip["file"] in names:
            raise ClipError(f"{where}: a second clip named {clip['file']}: give each clip its own name")
        names.add(clip["file"])
    return manifest


def _is_url(source: str) -> bool:
    return re.match(r"https?://", source) is not None


def fetch(source: str, path: str) -> str:
    """The text of `path` (data/0SS/SS_TT.bvh) from `source`: a checkout of the repository or its raw URL prefix."""
    if _is_url(source):
        url = f"{source.rstrip('/')}/{path}"
        try:
            with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response:
                data = response.read()
        except urllib.error.HTTPError as error:
            raise ClipError(f"{url} answers HTTP {error.code}: give --source the repository's raw URL at its commit "
                            f"({RAW_URL})") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise ClipError(f"cannot fetch {url} ({reason}): check the network and --source, or give a checkout") from None
    else:
        file = Path(source) / path
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise ClipError(f"no {path} in {source}: give --source a checkout of the repository (data/0SS/SS_TT.bvh) or "
                            "its raw URL") from None
        except OSError as error:
            raise ClipError(f"cannot read {file} ({error.strerror}): give --source a checkout you can read") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ClipError(f"{path} from {source} is not text, so not a BVH file: give --source the repository") from None


def build(manifest: dict, source: str, out: Path, names: list[str] | None = None, log=None) -> list[str]:
    """Cuts the manifest's clips (`names`: only these, file names with or without .bvh) from `source` into `out`;
    returns the files written. A clip already there with its sha256 is left alone. ClipError at the first clip that
    cannot be built (a sha256 that differs, a source missing or cut short...): nothing is written for it."""
    log = log or sys.stderr
    clips = manifest["clips"]
    if not clips:
        raise ClipError("the manifest lists no clips yet: add their entries (`cut` prints one)")
    if names:
        wanted = [name if name.endswith(".bvh") else f"{name}.bvh" for name in names]
        unknown = [name for name in wanted if name not in {clip["file"] for clip in clips}]
        if unknown:
            raise ClipError(f"--clips: no clip {', '.join(unknown)} in the manifest (these are: "
                            f"{', '.join(clip['file'] for clip in clips)})")
        clips = [clip for clip in clips if clip["file"] in wanted]
    if not _is_url(source):
        if not Path(source).is_dir():
            raise ClipError(f"no folder at {source}: give --source a checkout of the repository or its raw URL ({RAW_URL})")
        if Path(source).resolve() == out.resolve():
            raise ClipError(f"--out {out} is the source folder: give the clips a folder of their own")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ClipError(f"cannot make the folder {out} ({error.strerror}): give --out a folder you can write") from None
    texts: dict[str, str] = {}  # a source read once for its clips
    written = []
    for number, clip in enumerate(clips, 1):
        target = out / clip["file"]
        step = f"[{number}/{len(clips)}] {clip['file']}"
        if target.is_file() and file_sha256(target) == clip["sha256"]:
            print(f"{step}: there, sha256 ok", file=log)
            continue
        again = " (the file there differs)" if target.exists() else ""
        print(f"{step}: from {clip['source']} frames {clip['first']}-{clip['last']}{again}", file=log)
        if clip["source"] not in texts:
            texts[clip["source"]] = fetch(source, clip["source"])
        parsed = parse_source(texts[clip["source"]], clip["source"])
        if len(parsed.motion) != clip["total_frames"]:
            raise ClipError(f"{clip['file']}: its source {clip['source']} has {len(parsed.motion)} frames, the manifest "
                            f"says {clip['total_frames']}: give --source the repository at the manifest's commit "
                            f"({manifest.get('commit')})")
        text = cut(parsed, clip["first"], clip["last"])
        if sha256(text) != clip["sha256"]:
            raise ClipError(f"{clip['file']}: the clip cut from {clip['source']} has sha256 {sha256(text)}, not the "
                            f"manifest's {clip['sha256']}: give --source the repository at the manifest's commit "
                            f"({manifest.get('commit')}), or fix the manifest's entry (`cut` prints it)")
        write_atomic(target, text)
        written.append(clip["file"])
        print(f"{step}: written ({clip['frames']} frames)", file=log)
    return written


def check(manifest: dict, folder: Path) -> list[tuple[str, str]]:
    """(file, "ok" | "missing" | "differs") for each clip of the manifest in `folder`."""
    if not folder.is_dir():
        raise ClipError(f"no folder at {folder}: give check the folder of clips (build's --out)")
    if not manifest["clips"]:
        raise ClipError("the manifest lists no clips yet: add their entries (`cut` prints one)")
    states = []
    for clip in manifest["clips"]:
        path = folder / clip["file"]
        try:
            state = "ok" if file_sha256(path) == clip["sha256"] else "differs"
        except FileNotFoundError:
            state = "missing"
        except OSError as error:
            raise ClipError(f"cannot read {path} ({error.strerror}): give check a folder you can read") from None
        states.append((clip["file"], state))
    return states


def entry(out: Path, source_file: Path, first: int, last: int, total: int, text: str) -> dict:
    """The manifest entry of a clip `cut` wrote (description and motion left to fill in)."""
    match = re.fullmatch(r"0*(\d+)_(\d+)\.bvh", source_file.name)
    source = f"data/{int(match.group(1)):03d}/{source_file.name}" if match else source_file.name
    return {"file": out.name, "source": source, "first": first, "last": last, "total_frames": total,
            "frames": (last - first) // 2 + 1, "description": "", "motion": "", "sha256": sha256(text)}


def _cut_command(args) -> int:
    if not FILE_NAME.fullmatch(args.out.name):
        raise ClipError(f"--out {args.out.name} is not named as the clips are: give <category>_cmu_<SS>_<TT>.bvh "
                        "(e.g. sit_cmu_75_19.bvh)")
    if not args.out.parent.is_dir():
        raise ClipError(f"no folder {args.out.parent} for --out: make it first")
    if args.out.exists() and args.source_file.exists() and args.out.resolve() == args.source_file.resolve():
        raise ClipError(f"--out {args.out} is the source file: give the clip a file of its own")
    try:
        data = args.source_file.read_bytes()
    except FileNotFoundError:
        raise ClipError(f"no source file at {args.source_file}: give a trial of the repository, data/0SS/SS_TT.bvh") from None
    except OSError as error:
        raise ClipError(f"cannot read {args.source_file} ({error.strerror}): give a source file you can read") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ClipError(f"{args.source_file} is not text, so not a BVH file: give a trial of the repository") from None
    source = parse_source(text, str(args.source_file))
    clip = cut(source, args.first, args.last)
    write_atomic(args.out, clip)
    print(sha256(clip))
    print(json.dumps(entry(args.out, args.source_file, args.first, args.last, len(source.motion), clip)))
    print("fill in description (CMU's, from cmu-mocap-index-text.txt) and motion, then add the entry to the manifest",
          file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_parser = commands.add_parser("build", help="cut the manifest's clips from the repository into a folder")
    build_parser.add_argument("--source", required=True,
                              help=f"a checkout of the repository (holding data/0SS/SS_TT.bvh) or its raw URL, {RAW_URL}")
    build_parser.add_argument("--out", type=Path, required=True, help="the folder of clips (bench/motion.py --extra DIR)")
    build_parser.add_argument("--clips", nargs="+", metavar="NAME", help="only these clips (default: all of the manifest)")
    check_parser = commands.add_parser("check", help="every clip of the manifest in a folder, with its sha256")
    check_parser.add_argument("folder", type=Path, metavar="DIR")
    for sub in (build_parser, check_parser):
        sub.add_argument("--manifest", type=Path, default=MANIFEST, help="the clips' manifest (default: %(default)s)")
    cut_parser = commands.add_parser("cut", help="one clip from one source file, for a new entry of the manifest")
    cut_parser.add_argument("source_file", type=Path, metavar="SOURCE_FILE", help="a trial, data/0SS/SS_TT.bvh")
    cut_parser.add_argument("--first", type=int, required=True, help="the first source frame kept (1 or more)")
    cut_parser.add_argument("--last", type=int, required=True, help="the last (an even number of frames after --first)")
    cut_parser.add_argument("--out", type=Path, required=True, help="the clip, <category>_cmu_<SS>_<TT>.bvh")
    args = parser.parse_args(argv)
    try:
        if args.command == "cut":
            return _cut_command(args)
        manifest = load_manifest(args.manifest)
        if args.command == "build":
            build(manifest, args.source, args.out, args.clips)
            return 0
        states = check(manifest, args.folder)
    except ClipError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, state in states:
        print(f"{state:8s} {name}")
    bad = [name for name, state in states if state != "ok"]
    if bad:
        print(f"{len(bad)} of {len(states)} clips missing or different: build them (python bench/cmu_clips.py build "
              f"--source {RAW_URL} --out {args.folder}) or transcribe them again", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
