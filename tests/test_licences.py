"""No copyleft licence in the default install: the dependency closure of granrag-mcp without extras, each
distribution judged by its metadata (License, License-Expression, classifiers) and by the licence files it ships."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
COPYLEFT = re.compile(r"\b(?:A|L)?GPL|GNU (?:AFFERO |LESSER |LIBRARY )?GENERAL PUBLIC LICEN[CS]E", re.IGNORECASE)
GRANT = re.compile(
    r"(?:modify|use|distribute) it\s+under\s+the\s+terms\s+of\s+the\s+GNU\s+(?:Affero\s+|Lesser\s+|Library\s+)?General",
    re.IGNORECASE,
)
"""The FSF's notice that grants a copyleft licence, wherever it stands in a file ("YAKE! License Agreement")."""
RUNTIME_EXCEPTION = re.compile(r"GCC\s+Runtime\s+Library\s+Exception", re.IGNORECASE)
"""The GCC runtime that numerical wheels bundle (numpy, scipy) is GPL with an exception that lets any program
link it: its grant is no copyleft for the program."""
LICENCE_TITLE = 400
"""A licence file is a copyleft licence when it opens with one (its title within this many characters); one that
only mentions the GPL further down (Apache's LLVM exception, the MPL's "Secondary License", Python's history) is
not."""
LICENCE_FILE = re.compile(r"(?:^|/)(?:LICEN[CS]E|COPYING|NOTICE)[^/]*$|(?:^|/)licenses/[^/]+$", re.IGNORECASE)
REVIEWED = {
    ("setuptools", "setuptools/_vendor/autocommand-2.2.2.dist-info/LICENSE"): "setuptools (MIT) vendors autocommand "
    "(LGPL-3.0) for its own command line; granrag-mcp never imports it; torch requires setuptools",
    (
        "torch",
        "torch-2.13.0+cpu.dist-info/licenses/third_party/kineto/libkineto/third_party/dynolog/third_party/cpr/test/LICENSE",
    ): "the GPL-3.0 of the test folder of cpr, a library inside the profiler's sources; the tests are not in the wheel",
}
"""Copyleft texts read and found not to apply to the code the default install runs, with the reason."""


def _applies(requirement: Requirement, extra: str = "") -> bool:
    return requirement.marker is None or requirement.marker.evaluate({**default_environment(), "extra": extra})


def default_closure() -> dict[str, metadata.Distribution]:
    """The installed distributions the default install needs: pyproject's dependencies, recursively (each with the
    extras it is asked for)."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    todo = [(Requirement(line), "") for line in project["dependencies"]]
    found: dict[str, metadata.Distribution] = {}
    asked: set[tuple[str, str]] = set()
    while todo:
        requirement, extra = todo.pop()
        name = canonicalize_name(requirement.name)
        if not _applies(requirement, extra):
            continue
        for wanted in [""] + sorted(requirement.extras):
            if (name, wanted) in asked:
                continue
            asked.add((name, wanted))
            dist = found.get(name) or metadata.distribution(name)
            found[name] = dist
            todo += [(Requirement(line), wanted) for line in dist.requires or []]
    return found


def licence_texts(dist: metadata.Distribution) -> dict[str, str]:
    """What a distribution says its licence is: metadata fields, classifiers and every licence file it ships."""
    meta = dist.metadata
    out = {field: meta.get(field, "") for field in ("License", "License-Expression")}
    out["classifiers"] = " ; ".join(c for c in meta.get_all("Classifier") or [] if c.startswith("License"))
    for file in dist.files or []:
        if LICENCE_FILE.search(str(file)):
            path = Path(str(dist.locate_file(file)))
            if path.is_file() and path.suffix != ".py":  # a licence list in code (packaging's SPDX table) is none
                out[str(file)] = path.read_text(encoding="utf-8", errors="replace")
    return out


def copyleft(texts: dict[str, str]) -> list[str]:
    """The places that give a GPL, LGPL or AGPL licence: a metadata field that names one, a licence file that opens
    with one."""
    found = []
    for where, text in texts.items():
        text = text or ""
        # A short field names the licence; a long one is a licence file's text pasted in (scipy's): its title.
        is_name = where in ("License", "License-Expression", "classifiers") and len(text) <= LICENCE_TITLE
        if COPYLEFT.search(text if is_name else text[:LICENCE_TITLE]) or (
            GRANT.search(text) and not RUNTIME_EXCEPTION.search(text)
        ):
            found.append(where)
    return found


def test_the_default_install_has_no_copyleft_distribution() -> None:
    closure = default_closure()
    assert {"faiss-cpu", "mcp", "graspologic-native", "scipy"} <= set(closure)
    listing = {name: {k: v[:80] for k, v in licence_texts(d).items() if v} for name, d in sorted(closure.items())}
    offenders = {(name, where) for name, dist in closure.items() for where in copyleft(licence_texts(dist))} - set(
        REVIEWED
    )
    assert not offenders, listing


def test_the_check_recognises_copyleft_in_metadata_and_in_licence_files() -> None:
    assert copyleft({"License": "LGPLv3"}) == ["License"]
    assert copyleft({"classifiers": "License :: OSI Approved :: GNU General Public License v3 (GPLv3)"})
    assert copyleft({"LICENSE": "GNU AFFERO GENERAL PUBLIC LICENSE\nVersion 3"}) == ["LICENSE"]
    preamble = "An Agreement\n" + "x" * LICENCE_TITLE + "\nyou can redistribute it and/or modify it under the terms "
    assert copyleft({"LICENSE": preamble + "of the GNU Affero General Public License as published by"})
    assert not copyleft({"License": "MIT", "LICENSE.txt": "Permission is hereby granted, free of charge"})
    apache_llvm = "Apache License 2.0 " + "x" * LICENCE_TITLE + " software that is licensed under the GPLv2"
    assert not copyleft({"LICENSE.txt": apache_llvm})


def test_yake_is_not_in_the_default_install() -> None:
    assert "yake" not in default_closure()
