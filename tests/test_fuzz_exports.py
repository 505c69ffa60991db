"""Fuzz the tracks reader and every exporter with generated tracks files.

A seeded generator writes tracks files from a valid base with 1 to 3 faults each:
missing fields, wrong types, NaN / Infinity, huge and negative numbers, unicode
names, cut lines. Every file goes through the reader and through csv, npz,
openpose, coco, trc, c3d, bvh and gltf in-process; each outcome must be a file its
reader opens or one `UserError` sentence (what the CLI prints as one `error:` line).
A failure names the seed and the case, so `FUZZ_SEED=<seed>` replays it. A few cases
go through the CLI in a subprocess for the exit status.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import random
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from realtime.data import keypoint_names
from realtime.errors import UserError
from realtime.export import formats
from realtime.export.formats import export_tracks
from realtime.export.jsonl import read_tracks

ROOT = Path(__file__).resolve().parents[1]
SEED = int(os.environ.get("FUZZ_SEED", "20261125"))
FILES = 500  # per exporter (each generated file goes through the reader and every exporter)
NAMES = keypoint_names()
FORMATS = ("csv", "npz", "openpose", "coco", "trc", "c3d", "bvh", "gltf")
OUT = {"csv": "out.csv", "npz": "out.npz", "openpose": "pose", "coco": "coco.json", "trc": "out.trc", "c3d": "out.c3d",
       "bvh": "out.bvh", "gltf": "out.glb"}
ODD_VALUES = ["text", "", [], {}, [1, "a"], True, None, -1, 0, 1e308, -1e308, 2 ** 70, -(2 ** 70), float("nan"),
              float("inf"), float("-inf"), 10 ** 400, 1e-320, "ünïcødé ☃", [[None] * 3]]
UNICODE = ["ünïcødé", "名前", "🙂 emoji", "tab\tname", "quote\"name", "a/b\\c", "\u202eevil", ""]


# ----------------------------------------------------------------------------- the generator


def _base(rng: random.Random) -> tuple[dict, list[dict]]:
    """A valid recording: header and 1..5 frames of 0..2 people (3D for all or none)."""
    with_3d, tracked = rng.random() < 0.6, rng.random() < 0.3
    with_camera = with_3d and rng.random() < 0.3
    header = {"type": "header", "version": 2 if with_camera else 1, "keypoint_names": list(NAMES), "image_size": [640, 480],
              "fps": 25.0, "source": "clip.mp4", "model": {"pose": "fuzz"}}
    if tracked:
        header["tracked"] = True
    if rng.random() < 0.15:
        header["stills"] = True
    frames = []
    ids = rng.sample([1, 2, 7, 40], 2)
    noise = np.random.default_rng(rng.randrange(2 ** 32))
    for i in range(rng.randint(1, 3)):
        people = []
        for track_id in ids[: rng.randint(0, 2)]:
            xy = np.array([320.0 + 40 * i, 240.0]) + noise.uniform(-1, 1, (len(NAMES), 2)) * [80, 200]
            kpts = np.concatenate([xy.round(2), noise.random((len(NAMES), 1)).round(3)], axis=1)
            person = {"id": track_id, "box": [100.0, 40.0, 500.0, 470.0, 0.9], "kpts": kpts.tolist(), "smoothed": False}
            if with_3d:
                xyz = np.concatenate([(xy - [320, 240]) / 400, np.full((len(NAMES), 1), 3.0)], axis=1)
                person["kpts3d"] = xyz.round(4).tolist()
            people.append(person)
        frame = {"type": "frame", "frame": i, "t": round(i / 25.0, 6), "people": people}
        if with_camera:  # as the world stage writes it (version 2 on)
            frame["camera"] = {"position": [0.01 * i, 1.5, 3.0], "rotation": [0.0, 1.0, 0.0, 0.0],
                               "intrinsics": [500.0, 500.0, 320.0, 240.0], "status": "tracking", "world": 1, "grounded": 1}
        if header.get("stills"):
            frame.update(file=f"p{i}.jpg", image_size=[rng.choice([320, 640, 1000]), rng.choice([200, 480])])
        frames.append(frame)
    return header, frames


def _targets(rng: random.Random, header: dict, frames: list[dict]) -> list[tuple[object, object]]:
    """(container, key) pairs a fault may hit."""
    spots: list[tuple[object, object]] = [(header, k) for k in header]
    for frame in frames:
        spots += [(frame, k) for k in frame]
        camera = frame.get("camera")
        if isinstance(camera, dict):
            spots += [(camera, k) for k in camera]
            spots += [(camera[k], rng.randrange(len(camera[k]))) for k in ("position", "intrinsics")
                      if isinstance(camera.get(k), list) and camera[k]]
        people = frame.get("people")
        for person in people if isinstance(people, list) else []:
            if isinstance(person, dict):
                spots += [(person, k) for k in person]
                kpts = person.get("kpts")
                if isinstance(kpts, list) and kpts:
                    row = rng.randrange(len(kpts))
                    spots.append((kpts, row))
                    if isinstance(kpts[row], list) and kpts[row]:
                        spots.append((kpts[row], 0))
    return spots


def _fault(rng: random.Random, header: dict, frames: list[dict]) -> str:
    kind = rng.choice(["missing", "type", "number", "number", "unicode", "cut"])
    if kind == "cut":
        return "cut"
    if kind == "unicode":
        where = rng.choice(["names", "name", "source", "model"])
        if where == "names":
            header["keypoint_names"] = [rng.choice(UNICODE) + str(k) for k in range(len(NAMES))]
        elif where == "name" and isinstance(header.get("keypoint_names"), list) and header["keypoint_names"]:
            header["keypoint_names"][rng.randrange(len(header["keypoint_names"]))] = rng.choice(UNICODE)
        elif where in ("source", "model"):
            header[where] = rng.choice(UNICODE)
        return f"unicode {where}"
    container, key = rng.choice(_targets(rng, header, frames))
    if kind == "missing" and isinstance(container, dict):
        del container[key]
        return f"missing {key}"
    if kind == "number":
        value = rng.choice([float("nan"), float("inf"), float("-inf"), 1e308, -1e308, -1, -(2 ** 70), 2 ** 70,
                            10 ** 400, 2 ** 63, -(2 ** 63), 1e-320, -0.0])
    else:
        value = rng.choice(ODD_VALUES)
    container[key] = value
    return f"{kind} {key!r}={str(value)[:20]}"


def generate(seed: int, folder: Path) -> tuple[Path, list[str], dict]:
    """One fuzzed tracks file; returns its path, the faults applied, and the header as generated."""
    rng = random.Random(seed)
    header, frames = _base(rng)
    faults = [_fault(rng, header, frames) for _ in range(rng.randint(1, 3))]
    text = "".join(json.dumps(record) + "\n" for record in [header, *frames])  # NaN / Infinity as Python writes them
    for fault in faults:
        if fault == "cut":
            text = text[: rng.randrange(len(text) + 1)] + (text[rng.randrange(len(text) + 1):] if rng.random() < 0.3 else "")
    name = rng.choice(["run", "tracks", "ünï", "名前", "with space"]) + ".jsonl"
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path, faults, header


# ----------------------------------------------------------------------------- the readers of each output


def _strict_json(path: Path) -> object:
    def refuse(token: str):
        raise ValueError(f"{token} is not JSON")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def _check_csv(path: Path) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    assert rows and len({len(r) for r in rows}) == 1, "ragged CSV"
    for row in rows[1:]:
        [float(v) for v in row if v != ""]


def _check_npz(path: Path) -> None:
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    assert arrays["keypoints"].shape[:2] == (len(arrays["ids"]), len(arrays["frames"]))


def _check_openpose(path: Path) -> None:
    for item in path.iterdir():
        assert isinstance(_strict_json(item)["people"], list)


def _check_coco(path: Path) -> None:
    document = _strict_json(path)
    assert {"images", "annotations", "categories"} <= set(document)


def _check_trc(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    header = dict(zip(lines[1].split("\t"), lines[2].split("\t")))
    markers = int(header["NumMarkers"])
    rows = [line.split("\t") for line in lines[6:] if line.strip()]
    assert len(rows) == int(header["NumFrames"])
    for row in rows:
        assert len(row) == 2 + 3 * markers
        [float(v) for v in row if v != ""]


def _check_c3d(path: Path) -> None:
    import c3d

    with open(path, "rb") as handle, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader = c3d.Reader(handle)
        assert sum(1 for _ in reader.read_frames()) == reader.frame_count


def _check_bvh(path: Path) -> None:
    import bvhio

    assert bvhio.readAsBvh(str(path)).FrameCount >= 1


def _check_gltf(path: Path, full: bool = False) -> None:
    """The GLB container (header, strict JSON chunk, binary chunk holding every buffer view
    and accessor); pygltflib reads it too when `full` (it is slow, so for a sample)."""
    data = path.read_bytes()
    magic, version, length = struct.unpack_from("<4sII", data)
    assert magic == b"glTF" and version == 2 and length == len(data)
    json_length, json_type = struct.unpack_from("<II", data, 12)
    assert json_type == 0x4E4F534A
    document = json.loads(data[20:20 + json_length], parse_constant=lambda token: 1 / 0)
    bin_length, bin_type = struct.unpack_from("<II", data, 20 + json_length)
    assert bin_type == 0x004E4942 and document["buffers"][0]["byteLength"] <= bin_length
    views = document["bufferViews"]
    assert all(v.get("byteOffset", 0) + v["byteLength"] <= bin_length for v in views)
    sizes = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}
    for accessor in document["accessors"]:
        view = views[accessor["bufferView"]]
        assert accessor.get("byteOffset", 0) + accessor["count"] * sizes[accessor["type"]] * 4 <= view["byteLength"]
    assert document["nodes"] and len(document["animations"]) == 1
    chunk = data[28 + json_length:28 + json_length + bin_length]
    assert np.isfinite(np.frombuffer(chunk[: len(chunk) // 4 * 4], np.float32)).all(), "NaN or infinity in the buffer"
    if full:
        import pygltflib

        gltf = pygltflib.GLTF2().load(str(path))
        assert gltf.nodes and len(gltf.animations) == 1


CHECKS = {"csv": _check_csv, "npz": _check_npz, "openpose": _check_openpose, "coco": _check_coco, "trc": _check_trc,
          "c3d": _check_c3d, "bvh": _check_bvh, "gltf": _check_gltf}


def _one_sentence(err: UserError) -> None:
    text = str(err)
    assert text and "\n" not in text and "Traceback" not in text, text
    assert len(text) < 600, text


# ----------------------------------------------------------------------------- the tests


def test_every_fuzzed_file_is_read_or_refused_in_one_sentence_by_every_exporter(tmp_path, monkeypatch):
    monkeypatch.setattr(logging.getLogger("realtime"), "level", logging.ERROR)  # the warnings on odd files are expected
    # Each file is read once (the reader's own case below); the exporters get that result,
    # or the reader's UserError again, instead of parsing the same file eight times.
    read: dict[str, object] = {}

    def read_once(path):
        outcome = read.get(str(path))
        if outcome is None:
            try:
                outcome = read_tracks(path)
            except UserError as err:
                outcome = err
            read[str(path)] = outcome
        if isinstance(outcome, UserError):
            raise outcome
        return outcome

    monkeypatch.setattr(formats, "read_tracks", read_once)
    outcomes = {fmt: {"written": 0, "refused": 0} for fmt in ("reader", *FORMATS)}
    for case in range(FILES):
        seed = SEED * 100_003 + case
        folder = tmp_path / str(case)
        folder.mkdir()
        path, faults, _ = generate(seed, folder)
        where = f"FUZZ_SEED={SEED} case {case} (seed {seed}), faults {faults}"
        try:
            tracks = read_once(path)
            outcomes["reader"]["written"] += 1
            ids = list(tracks.people)
        except UserError as err:
            _one_sentence(err)
            outcomes["reader"]["refused"] += 1
            ids = []
        except Exception as err:  # noqa: BLE001 - anything else is the bug this test looks for
            pytest.fail(f"{where}: the reader raised {type(err).__name__}: {err}")
        for fmt in FORMATS:
            out = folder / OUT[fmt]
            person = ids[0] if ids and fmt in ("trc", "c3d", "bvh", "gltf") else None
            # each format's default smoothing on a tenth of the files, rts on another tenth (smoothing is slow)
            smooth = {0: None, 5: "rts"}.get(case % 10, "none")
            before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
            try:
                written = export_tracks(path, fmt, out, person=person, smooth=smooth)
            except UserError as err:
                _one_sentence(err)
                after = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
                assert after == before, f"{where}: {fmt} refused but changed the folder ({sorted(set(after) ^ set(before))})"
                outcomes[fmt]["refused"] += 1
                continue
            except Exception as err:  # noqa: BLE001
                pytest.fail(f"{where}: export --to {fmt} raised {type(err).__name__}: {err}")
            try:
                CHECKS[fmt](written, full=True) if fmt == "gltf" and case % 20 == 0 else CHECKS[fmt](written)
            except Exception as err:  # noqa: BLE001
                pytest.fail(f"{where}: export --to {fmt} wrote {written}, which its reader cannot open: "
                            f"{type(err).__name__}: {err}")
            outcomes[fmt]["written"] += 1
    for fmt, counts in outcomes.items():  # the fuzzing reached both outcomes everywhere
        assert counts["written"] > 0 and counts["refused"] > 0, (fmt, counts)


@pytest.mark.parametrize("case", [3, 17, 29])
def test_fuzzed_files_through_the_cli_exit_0_or_2_with_one_error_line(tmp_path, case):
    seed = SEED * 100_003 + case
    path, faults, _ = generate(seed, tmp_path)
    for fmt in ("npz", "coco"):
        out = tmp_path / OUT[fmt]
        proc = subprocess.run([sys.executable, "-m", "realtime.cli", "export", str(path), "--to", fmt, "-o", str(out)],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        where = f"FUZZ_SEED={SEED} case {case}, faults {faults}, --to {fmt}"
        assert "Traceback" not in proc.stderr, where
        if proc.returncode == 0:
            CHECKS[fmt](out)
        else:
            assert proc.returncode == 2, (where, proc.returncode, proc.stderr)
            errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
            assert len(errors) == 1 and proc.stderr.endswith("\n"), (where, proc.stderr)
            assert not out.exists(), where
