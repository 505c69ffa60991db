"""The golden fixtures in tests/reference are intact, complete, and the only ones read.

`python3 tests/test_reference.py --write` rewrites MANIFEST after a deliberate
regeneration (see tests/reference/README.md).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "reference"
ROOT = HERE.parent
# The official tiny RTMDet .safetensors, rebuilt from the .pth by conftest.
OFFICIAL_RTMDET_SAFETENSORS_SHA256 = "d08d06e6c568999c27c7c96adc8e28bb8144dc515421410a27362562e026e731"
NOT_LISTED = {"MANIFEST", "README.md"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listed(folder: Path) -> dict[str, tuple[str, int]]:
    """MANIFEST rows: relative path -> (sha256, size in bytes)."""
    rows = {}
    for line in (folder / "MANIFEST").read_text().splitlines():
        digest, size, path = line.split(maxsplit=2)
        rows[path] = (digest, int(size))
    return rows


def present(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name not in NOT_LISTED)


def problems(folder: Path) -> list[str]:
    """Every way the folder differs from its MANIFEST, one sentence each."""
    rows, files = listed(folder), present(folder)
    found = [f"{path} is listed in MANIFEST but missing" for path in rows if path not in files]
    found += [f"{path} is not listed in MANIFEST" for path in files if path not in rows]
    for path in files:
        if path in rows:
            digest, size = rows[path]
            if (folder / path).stat().st_size != size or sha256(folder / path) != digest:
                found.append(f"{path} differs from its MANIFEST sha256")
    return found


def write_manifest(folder: Path) -> None:
    lines = [f"{sha256(folder / p)}  {(folder / p).stat().st_size}  {p}" for p in present(folder)]
    (folder / "MANIFEST").write_text("\n".join(lines) + "\n")


def test_fixtures_match_their_manifest():
    assert problems(FOLDER) == []


@pytest.mark.parametrize("change", ["flip", "remove", "add"])
def test_manifest_check_sees_a_changed_byte_a_missing_and_an_extra_file(tmp_path, change):
    copy = tmp_path / "reference"
    for path in present(FOLDER) + ["MANIFEST"]:
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_bytes((FOLDER / path).read_bytes())
    victim = copy / "fixtures" / "pose_io.safetensors"
    if change == "flip":
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 0x01
        victim.write_bytes(bytes(data))
        assert problems(copy) == ["fixtures/pose_io.safetensors differs from its MANIFEST sha256"]
    elif change == "remove":
        victim.unlink()
        assert problems(copy) == ["fixtures/pose_io.safetensors is listed in MANIFEST but missing"]
    else:
        (copy / "fixtures" / "stray.bin").write_bytes(b"x")
        assert problems(copy) == ["fixtures/stray.bin is not listed in MANIFEST"]


def test_rebuilt_rtmdet_safetensors_is_the_official_file(rtmdet_fixtures_dir):
    assert sha256(rtmdet_fixtures_dir / "tiny_w025_state_dict.safetensors") == OFFICIAL_RTMDET_SAFETENSORS_SHA256


def test_nothing_reads_the_shared_folder_beside_the_checkout():
    """The project stands alone: tests, benchmarks and CI use tests/reference."""
    pattern = re.compile(r"""["']shared["']\s*/|["'][^"'\n]*\.\./shared[^"'\n]*["']""")  # a path built or quoted, not prose
    offenders = []
    for path in [*ROOT.glob("tests/*.py"), *ROOT.glob("bench/*.py"), ROOT / ".ci" / "run"]:
        if path.name != Path(__file__).name and pattern.search(path.read_text()):
            offenders.append(path.relative_to(ROOT).as_posix())
    assert offenders == []


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_manifest(FOLDER)
        print(f"wrote {FOLDER / 'MANIFEST'}")
    else:
        print(__doc__)
