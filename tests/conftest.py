"""Shared test helpers: where the reference fixtures live, tiny synthetic media."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# shared/ sits beside the checkout (CI clones main with shared/ next to it).
REFERENCE = Path(os.environ.get("SAPIENS_REFERENCE_DIR", ROOT.parent / "shared" / "reference"))
FIXTURES = REFERENCE / "fixtures"
RTMDET_FIXTURES = REFERENCE / "rtmdet" / "fixtures"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    if not (REFERENCE / "SPEC.md").is_file():
        pytest.fail(f"reference material not found at {REFERENCE}; set SAPIENS_REFERENCE_DIR to shared/reference")
    return REFERENCE


@pytest.fixture(scope="session")
def fixtures_dir(reference_dir: Path) -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def rtmdet_fixtures_dir(reference_dir: Path) -> Path:
    return RTMDET_FIXTURES


@pytest.fixture(autouse=True)
def _no_hub_downloads(monkeypatch):
    """Tests never reach the network; code that would download must say so clearly."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
