"""The package as a user installs it: the sdist and wheel built from the checkout, the wheel installed into a new
venv outside it with the README's commands, a folder indexed with the installed `granrag-mcp index`, and a search
answered by the installed `granrag-mcp serve` through the SDK's stdio client.

It skips only when pip cannot reach the package registry (the build backend and the dependencies come from there).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "granrag_mcp"
README = (ROOT / "README.md").read_text(encoding="utf-8")

# The README's install lines, in the order the test runs them: the CPU build of torch first, then the package
# (here the wheel just built stands in for the name on the registry).
TORCH_INSTALL = ["pip", "install", "torch==2.13.0"]
PACKAGE_INSTALL = ["pip", "install", "granrag-mcp"]

# What pip prints when the registry is out of reach, as opposed to a package that is wrong.
UNREACHABLE = re.compile(
    r"NewConnectionError|Max retries exceeded|Temporary failure in name resolution|Network is unreachable|"
    r"No matching distribution found for (torch|setuptools)|Could not find a version that satisfies the "
    r"requirement (torch|setuptools)",
)
SERVE = ["serve", "--store"]  # then the store, "--library" and the notes folder, as the README's client lines run it
STEP_TIMEOUT = 900  # seconds for one pip or build step: the dependencies are large on a cold cache
SESSION_TIMEOUT = 240

FACTS = {
    "bridges.md": "# Bridges\n\nThe Zephyr Bridge over the Calder was completed in 1931 by the engineer Ada Moreau.\n",
    "orchards.md": "# Orchards\n\nThe Quillon apple ripens in late September and keeps until March in a cool cellar.\n",
}

pytestmark = pytest.mark.packaging


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH pointing into a checkout, nothing fetched at run time."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    return env | {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"} | extra


def run_step(command: list[str | Path], what: str, cwd: Path) -> str:
    """Run one install or build step; skip if the registry is out of reach, fail with pip's words otherwise."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        if UNREACHABLE.search(output):
            pytest.skip(f"pip cannot reach the package registry, so {what} cannot be installed: {output[-400:]}")
        pytest.fail(f"{what} failed (exit {done.returncode}):\n{output[-3000:]}")
    return output


def data_files() -> set[str]:
    """Every file of the package the code may load that is not Python source."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and, built from it (python -m build's default), the wheel."""
    out = tmp_path_factory.mktemp("dist")
    run_step([sys.executable, "-m", "build", "--outdir", out, ROOT], "the build backend (setuptools)", cwd=out)
    (sdist,) = out.glob("granrag_mcp-*.tar.gz")
    (wheel,) = out.glob("granrag_mcp-*.whl")
    return sdist, wheel


def test_the_wheel_and_the_sdist_carry_every_data_file(built: tuple[Path, Path]) -> None:
    sdist, wheel = built
    expected = data_files()
    assert {"granrag_mcp/embedding/minilm_token_basis.npy", "granrag_mcp/retrieval/candidate_ranker.json"} <= expected
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert expected <= in_wheel, expected - in_wheel
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert expected <= in_sdist, expected - in_sdist
    metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info/METADATA")
    torch_requirement = re.search(r"^Requires-Dist: torch(\S*)", metadata.decode(), re.MULTILINE)
    assert torch_requirement and not torch_requirement.group(1).startswith("=="), "torch must be a range"


def test_the_readme_gives_the_install_lines_this_test_runs() -> None:
    for line in (TORCH_INSTALL, PACKAGE_INSTALL):
        assert " ".join(line) in README, f"README lacks `{' '.join(line)}`"
    assert f"claude mcp add granrag -- uvx granrag-mcp {' '.join(SERVE)} ~/granrag-store --library ~/notes" in README


def test_the_installed_wheel_indexes_a_folder_and_answers_a_search_over_stdio(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    _, wheel = built
    home = tmp_path / "user"  # outside the checkout: nothing of it is importable from here
    home.mkdir()
    env_dir = home / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    # The README's commands; --no-compile skips byte-compiling every module of every dependency, most never imported.
    run_step([bin_dir / TORCH_INSTALL[0], *TORCH_INSTALL[1:], "--no-compile"], "torch", cwd=home)
    run_step([bin_dir / PACKAGE_INSTALL[0], *PACKAGE_INSTALL[1:-1], wheel, "--no-compile"], "the wheel", cwd=home)

    where = run_step([bin_dir / "python", "-c", "import granrag_mcp; print(granrag_mcp.__file__)"], "import", home)
    assert Path(where.strip()).is_relative_to(env_dir), where

    notes = home / "notes"
    notes.mkdir()
    for name, text in FACTS.items():
        (notes / name).write_text(text, encoding="utf-8")
    store = home / "store"
    params = StdioServerParameters(
        command=str(bin_dir / "granrag-mcp"),
        args=[*SERVE, str(store), "--library", str(notes)],
        env=clean_env(),
        cwd=home,
    )

    async def main() -> dict:
        with (tmp_path / "server.stderr").open("w") as errlog, anyio.fail_after(SESSION_TIMEOUT):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                tools = {tool.name for tool in (await client.list_tools()).tools}
                assert {"search_narrow", "search_fused"} <= tools
                while True:  # the library is indexed in the background at the first start; searches say so meanwhile
                    result = await client.call_tool("search_narrow", {"query": "Who built the Zephyr Bridge?", "k": 2})
                    found = result.structured_content or {}
                    if not result.is_error and found.get("hits"):
                        return found
                    await anyio.sleep(1)

    found = anyio.run(main)
    top = found["hits"][0]
    assert top["doc_id"] == "bridges.md" and "Ada Moreau" in top["text"], found
