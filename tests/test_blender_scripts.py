"""Scripts that run inside Blender (`import bpy`) live in `realtime/blender_scripts/`, a folder of
package data that is not a package: nothing importable imports `bpy`, and the exporters run the
scripts from there."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from realtime.export import to_blender, to_fbx

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "realtime" / "blender_scripts"


def _imports_bpy(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "bpy" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "bpy":
            return True
    return False


def test_only_the_blender_scripts_folder_imports_bpy():
    importable = [p for package in ("realtime", "viz", "trackers") for p in (REPO / package).rglob("*.py")
                  if SCRIPTS not in p.parents]
    assert [str(p.relative_to(REPO)) for p in importable if _imports_bpy(p)] == []
    assert sorted(p.name for p in SCRIPTS.glob("*.py") if _imports_bpy(p)) == [
        "blender_compat.py", "blender_fbx.py", "blender_import.py"]


def test_the_scripts_folder_is_package_data_not_a_package():
    assert not (SCRIPTS / "__init__.py").exists()
    if sys.version_info >= (3, 11):
        import tomllib

        setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
        assert "blender_scripts/*.py" in setuptools["package-data"]["realtime"]


def test_the_exporters_run_the_scripts_from_there():
    assert to_fbx.SCRIPT == SCRIPTS / "blender_fbx.py" and to_fbx.SCRIPT.is_file()
    assert to_blender.SCRIPT == SCRIPTS / "blender_import.py" and to_blender.SCRIPT.is_file()
