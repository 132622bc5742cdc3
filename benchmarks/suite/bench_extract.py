"""Text extraction cost per file encoding on the SQuAD-A corpus: discovery plus extract_text, no model.

The corpus is written four ways into a temporary folder: UTF-8 .txt, windows-1252 .txt (characters it lacks become
'?'), UTF-16 .txt with a byte-order mark, and UTF-8 .html (one <p> per paragraph and a hidden <div> per article).
Only non-UTF-8 files without a byte-order mark reach the charset detector, so the windows-1252 row is its cost.
Rounds alternate the variants; the median round is reported. Usage:

    .venv/bin/python benchmarks/suite/bench_extract.py [--rounds 5]

Prints one JSON object and writes benchmarks/results/extract.json. Run it with PYTHONPATH pointing at another
checkout to compare code versions on the same machine and load.
"""

from __future__ import annotations

import argparse
import html
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import squad_corpus  # noqa: E402
from granrag_mcp.errors import ExtractionError  # noqa: E402
from granrag_mcp.indexing.discovery import discover  # noqa: E402
from granrag_mcp.indexing.extract import extract_text  # noqa: E402


def _write_variants(documents: dict[str, str], root: Path) -> dict[str, Path]:
    folders = {name: root / name for name in ("utf8_txt", "cp1252_txt", "utf16_txt", "utf8_html")}
    for folder in folders.values():
        folder.mkdir()
    for number, text in enumerate(documents.values()):
        name = f"doc{number:04d}"
        (folders["utf8_txt"] / f"{name}.txt").write_bytes(text.encode("utf-8"))
        (folders["cp1252_txt"] / f"{name}.txt").write_bytes(text.encode("cp1252", errors="replace"))
        (folders["utf16_txt"] / f"{name}.txt").write_bytes(text.encode("utf-16"))
        paragraphs = "".join(f"<p>{html.escape(p)}</p>\n" for p in text.split("\n\n"))
        page = f"<html><body>{paragraphs}<div style='display:none'><p>hidden</p></div></body></html>"
        (folders["utf8_html"] / f"{name}.html").write_bytes(page.encode("utf-8"))
    return folders


def _extract_all(folder: Path) -> tuple[float, int, int]:
    """(seconds, characters extracted, files that failed)."""
    with _common.Timer() as timer:
        characters = failed = 0
        for source in discover([folder]).files:
            try:
                characters += len(extract_text(source).text)
            except ExtractionError:
                failed += 1
    return timer.seconds, characters, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    _common.offline_env()
    documents, _ = squad_corpus.load()
    load_at_start = _common.load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folders = _write_variants(documents, Path(tmp))
        seconds: dict[str, list[float]] = {name: [] for name in folders}
        facts: dict[str, tuple[int, int]] = {}
        for _ in range(args.rounds):
            for name, folder in folders.items():
                took, characters, failed = _extract_all(folder)
                seconds[name].append(took)
                facts[name] = (characters, failed)
        raw_mib = {name: _common.dir_size(folder) / 2**20 for name, folder in folders.items()}
    result = {
        "benchmark": "extract",
        "revision": _common.git_revision(),
        "machine": _common.machine(),
        "load_at_start": load_at_start,
        "documents": len(documents),
        "rounds": args.rounds,
        "variants": {
            name: {
                "median_s": round(statistics.median(times), 4),
                "min_s": round(min(times), 4),
                "mib": round(raw_mib[name], 2),
                "mib_per_s": round(raw_mib[name] / statistics.median(times), 1),
                "characters": facts[name][0],
                "failed": facts[name][1],
            }
            for name, times in seconds.items()
        },
    }
    _common.save_result("extract", result)
    _common.emit(result)


if __name__ == "__main__":
    main()
