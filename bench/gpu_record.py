"""One JSON file per GPU run in bench/gpu_runs/: what ran where, and what it measured.

    record = new_record(device="NVIDIA H100 80GB HBM3", torch_version="2.11.0+cu130", commit="73a27a1")
    record["results"].append(result("default", seg_every=1, fps=48.2, warmup_s=77.0))
    path = write_record(record, Path("bench/gpu_runs"))      # atomic; never overwrites another run's file
    print(quote(newest(Path("bench/gpu_runs"))))            # the line docs/gpu-performance.md carries

A record (every number finite; `validate` says which field is wrong):

    device      str   torch.cuda.get_device_name(), e.g. "NVIDIA H200"
    torch       str   torch.__version__
    commit      str   the code that ran (`git rev-parse --short HEAD`), "unknown" if not known
    date        str   when the run began, UTC, "2026-11-28T05:14Z"
    input_size  str   the network input of pose and seg, "1024x768"
    people      int   people in the frame (pose crops per frame)
    results     list  one per timed configuration:
        mode       str    the `sapiens-rt run` speed flags of the configuration at that commit, "default"
                          for none (what a user gets without asking)
        seg_every  int    seg on every Nth frame (pose on every frame)
        fps        float  frames per second, pipelined (frame N+1 launched before N is collected)
        warmup_s   float | None   the Predictor's warm-up (compiles, captures), None where not measured
        optional: config (the Predictor options, unambiguous across commits), launches (host launch calls per
        frame), estimate_fps (bench/gpu_estimate.py's), input_size / people where they differ from the record's,
        process ("second launch": a fresh process after the first compiled and saved the cache), note
    microbenchmarks  dict (optional) of lists of dicts: "linear", "attention", "kernels", "profile" rows from
                     bench/gpu_kernels.py (times inside CUDA graphs), "detector"
    backfilled  dict (optional): field -> how it was read from bench/RESULTS.md's text, for runs recorded
                before this file existed
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

RUNS = Path(__file__).resolve().parent / "gpu_runs"
REQUIRED = {"device": str, "torch": str, "commit": str, "date": str, "input_size": str, "people": int, "results": list}
RESULT_REQUIRED = {"mode": str, "seg_every": int, "fps": float, "warmup_s": (float, type(None))}
DATE_FORMAT = "%Y-%m-%dT%H:%MZ"


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime(DATE_FORMAT)


def new_record(*, device: str, torch_version: str, commit: str, input_size: str = "1024x768", people: int = 1,
               date: Optional[str] = None) -> dict:
    """An empty record of a run beginning now (or at `date`)."""
    return {"device": device, "torch": torch_version, "commit": commit, "date": date or now_utc(),
            "input_size": input_size, "people": people, "results": [], "microbenchmarks": {}}


def result(mode: str, *, seg_every: int, fps: float, warmup_s: Optional[float], **extra) -> dict:
    """One timed configuration (see the module doc for `extra`'s keys)."""
    return {"mode": mode, "seg_every": seg_every, "fps": fps, "warmup_s": warmup_s, **extra}


def _is(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):  # a bool is an int to Python, never a count or a rate here
        return bool in kinds
    if float in kinds and isinstance(value, int):
        return True
    return isinstance(value, kinds)


def _non_finite(value, where: str) -> Optional[str]:
    """The path of the first NaN or infinity inside `value`, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where}: a key that is not a string ({key!r})"
            found = _non_finite(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _non_finite(item, f"{where}[{i}]")
            if found:
                return found
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        return f"{where}: a {type(value).__name__}, not a JSON value"
    return None


def validate(record: dict) -> None:
    """ValueError naming the first field that is missing, of the wrong type, out of range or not finite."""
    if not isinstance(record, dict):
        raise ValueError(f"a GPU run record is a dict, not a {type(record).__name__}")
    for name, kind in REQUIRED.items():
        if name not in record:
            raise ValueError(f"the GPU run record has no {name!r} field")
        if not _is(record[name], kind):
            raise ValueError(f"the GPU run record's {name!r} is a {type(record[name]).__name__}, not a {kind.__name__}")
    for name in ("device", "torch", "commit"):
        if not record[name].strip():
            raise ValueError(f"the GPU run record's {name!r} is empty")
    try:
        datetime.strptime(record["date"], DATE_FORMAT)
    except ValueError:
        raise ValueError(f"the GPU run record's date {record['date']!r} is not like 2026-11-28T05:14Z (UTC)") from None
    if not re.fullmatch(r"[1-9]\d*x[1-9]\d*", record["input_size"]):
        raise ValueError(f"the GPU run record's input_size {record['input_size']!r} is not HEIGHTxWIDTH like 1024x768")
    if record["people"] < 1:
        raise ValueError(f"the GPU run record's people is {record['people']}, not 1 or more")
    found = _non_finite(record, "record")
    if found:
        raise ValueError(f"the GPU run record holds a value JSON cannot keep finite: {found}")
    for i, row in enumerate(record["results"]):
        if not isinstance(row, dict):
            raise ValueError(f"results[{i}] is a {type(row).__name__}, not a dict")
        for name, kind in RESULT_REQUIRED.items():
            if name not in row:
                raise ValueError(f"results[{i}] has no {name!r}")
            if not _is(row[name], kind):
                raise ValueError(f"results[{i}].{name} is a {type(row[name]).__name__}")
        if not row["mode"].strip():
            raise ValueError(f"results[{i}].mode is empty (\"default\" names a run with no speed flags)")
        if row["seg_every"] < 1 or row["fps"] <= 0 or (row["warmup_s"] is not None and row["warmup_s"] < 0):
            raise ValueError(f"results[{i}] has seg_every {row['seg_every']}, fps {row['fps']}, warmup_s {row['warmup_s']}: "
                             "seg_every must be 1 or more, fps above 0 and the warm-up not negative")
    benches = record.get("microbenchmarks", {})
    if not isinstance(benches, dict) or not all(isinstance(v, list) and all(isinstance(r, dict) for r in v)
                                                for v in benches.values()):
        raise ValueError("microbenchmarks is a dict of lists of dicts (kind -> rows)")


def slug(device: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "gpu"


def file_name(record: dict) -> str:
    """<date>-<device>.json, the date as 2026-11-28T0514Z (no colons: every file system takes it)."""
    return f"{record['date'].replace(':', '')}-{slug(record['device'])}.json"


def free_path(record: dict, folder: Path) -> Path:
    """Where a new run's record goes: its own name, with -2, -3, ... if a run of the same minute is there."""
    path = Path(folder) / file_name(record)
    n = 2
    while path.exists():
        path = path.with_name(f"{file_name(record).removesuffix('.json')}-{n}.json")
        n += 1
    return path


def write_record(record: dict, folder: Path = RUNS, path: Optional[Path] = None) -> Path:
    """Validate, then write atomically (a temporary file in the same folder, flushed, renamed over): a reader,
    a crash or Ctrl+C mid-write sees the previous version or the new one whole, never a part. `path`: this
    run's own file (rewritten as results come in); default a new name (`free_path`). Returns the path."""
    validate(record)
    text = json.dumps(record, indent=1, allow_nan=False) + "\n"
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = Path(path) if path is not None else free_path(record, folder)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_record(path: Path) -> dict:
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    validate(record)
    return record


def records(folder: Path = RUNS) -> list[tuple[Path, dict]]:
    """Every record in `folder`, oldest first: by the run's date, then in the order `free_path` named them."""
    found = [(path, read_record(path)) for path in sorted(Path(folder).glob("*.json"))]
    return sorted(found, key=lambda item: (datetime.strptime(item[1]["date"], DATE_FORMAT), len(item[0].name), item[0].name))


def newest(folder: Path = RUNS) -> tuple[Path, dict]:
    found = records(folder)
    if not found:
        raise FileNotFoundError(f"no GPU run record in {folder}")
    return found[-1]


def quote(path: Path, record: dict) -> str:
    """The one line docs/gpu-performance.md carries for the newest record (a test checks it matches):
    per configuration (mode, input size, people, process, call) its fps by seg rate and its warm-up."""
    groups: dict[tuple, list[dict]] = {}
    for row in record["results"]:
        key = (row["mode"], row.get("input_size", record["input_size"]), row.get("people", record["people"]),
               row.get("process", ""), row.get("call"))
        groups.setdefault(key, []).append(row)
    parts = []
    for (mode, size, people, process, _), rows in groups.items():
        where = [w for w in (size if size != record["input_size"] else "",
                             f"{people} people" if people != record["people"] else "", process) if w]
        rates = ", ".join(f"{row['fps']:g} fps" + ("" if row["seg_every"] == 1 else f" with seg every {row['seg_every']} frames")
                          for row in rows)
        warm = [row["warmup_s"] for row in rows if row["warmup_s"] is not None]
        parts.append(f"`{mode}`{' (' + ', '.join(where) + ')' if where else ''} {rates}"
                     + (f", warm-up {warm[0]:g} s" if warm else ""))
    people = f"{record['people']} person" if record["people"] == 1 else f"{record['people']} people"
    return (f"Newest record: `bench/gpu_runs/{Path(path).name}` ({record['device']}, torch {record['torch']}, code at "
            f"{record['commit']}, {record['date']}; pose + seg at {record['input_size']}, {people}, seg every frame unless "
            f"said): " + "; ".join(parts) + ".")
