"""CHANGELOG.md has version headings with dates, newest first, and the newest is the version pyproject.toml ships."""

from __future__ import annotations

import re
import tomllib
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
HEADING = re.compile(r"^## (\d+)\.(\d+)\.(\d+) - (\d{4}-\d{2}-\d{2})$", flags=re.M)


def versions() -> list[tuple[tuple[int, int, int], date]]:
    return [((int(a), int(b), int(c)), date.fromisoformat(day)) for a, b, c, day in HEADING.findall(CHANGELOG)]


def test_every_second_level_heading_is_unreleased_or_a_dated_version() -> None:
    headings = re.findall(r"^## .*$", CHANGELOG, flags=re.M)
    assert headings and headings[0] == "## Unreleased", "the changelog opens with ## Unreleased"
    assert all(HEADING.match(h) for h in headings[1:]), [h for h in headings[1:] if not HEADING.match(h)]


def test_versions_and_dates_run_newest_first() -> None:
    found = versions()
    assert len(found) >= 2
    assert [v for v, _ in found] == sorted((v for v, _ in found), reverse=True)
    assert len({v for v, _ in found}) == len(found), "each version once"
    assert [d for _, d in found] == sorted((d for _, d in found), reverse=True)


def test_the_newest_version_is_the_one_pyproject_ships() -> None:
    (major, minor, patch), _ = versions()[0]
    assert f"{major}.{minor}.{patch}" == VERSION, "move pyproject's version with the changelog's newest heading"
