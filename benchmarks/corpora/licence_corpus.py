"""A legal set with within-document questions: ten licence texts the operating system ships, with questions
written by hand against them, written out as a SQuAD v1.1 file.

The texts are Debian's `/usr/share/common-licenses` (package base-files): Apache-2.0, Artistic, BSD, CC0-1.0,
GFDL-1.3, GPL-2, GPL-3, LGPL-2.1, MPL-1.1 and MPL-2.0. Each text's own terms allow verbatim copies (the GNU texts
forbid changing them), so the project keeps none of their text: `licence_questions.json` holds each question with
its answer as character offsets into the file, and the file's SHA-256, so a changed text is refused rather than
read at the wrong offsets. The questions are the project's own (MIT). Every question is meant to be asked inside
its own document (a `doc_ids` filter): the licences share much of their wording, as policies of one kind do.

An article is one licence, its paragraphs the file's blank-line separated blocks (inner line breaks and list
items kept as written), so an answer's offset in the paragraph is its offset in the file less the block's start.

    .venv/bin/python benchmarks/corpora/licence_corpus.py OUT.json [--licences /usr/share/common-licenses]
    granrag-mcp eval --squad OUT.json --store STORE --skip-graph
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

QUESTIONS = Path(__file__).with_name("licence_questions.json")
LICENCES = Path("/usr/share/common-licenses")
_BLANK_LINES = re.compile(r"\n[ \t\f\v]*\n(?:[ \t\f\v]*\n)*")


def paragraphs(text: str) -> list[tuple[int, str]]:
    """(offset, block) for every blank-line separated block with any non-whitespace character, trailing spaces of
    the block dropped."""
    out, start = [], 0
    for match in [*_BLANK_LINES.finditer(text), None]:
        end = match.start() if match is not None else len(text)
        block = text[start:end].rstrip()
        if block.strip():
            out.append((start, block))
        start = match.end() if match is not None else len(text)
    return out


def build(licences: Path = LICENCES, questions: Path = QUESTIONS) -> dict:
    """The SQuAD v1.1 form of the set; ValueError when a licence file is missing or not the one the offsets
    were taken from."""
    spec = json.loads(questions.read_text(encoding="utf-8"))
    data = []
    for document in spec["documents"]:
        path = licences / document["file"]
        if not path.is_file():
            raise ValueError(f"{path} is missing: install Debian's base-files or pass --licences FOLDER")
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != document["sha256"]:
            raise ValueError(f"{path} is not the text the questions' offsets were taken from (SHA-256 differs)")
        text = raw.decode("utf-8")
        blocks = paragraphs(text)
        qas: dict[int, list[dict]] = {}
        for number, question in enumerate(document["questions"]):
            start, end = question["start"], question["end"]
            index = next(i for i, (offset, block) in enumerate(blocks) if offset <= start < offset + len(block))
            offset, block = blocks[index]
            if end > offset + len(block):
                raise ValueError(f"{document['file']}: the answer of {question['question']!r} crosses a blank line")
            answer = {"text": text[start:end], "answer_start": start - offset}
            qid = f"{document['file']}-{number}"
            qas.setdefault(index, []).append({"id": qid, "question": question["question"], "answers": [answer]})
        data.append(
            {
                "title": document["file"],
                "paragraphs": [{"context": block, "qas": qas.get(i, [])} for i, (_, block) in enumerate(blocks)],
            }
        )
    return {"version": "1.1", "source": spec["source"], "data": data}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="the SQuAD v1.1 file to write (outside the project)")
    parser.add_argument("--licences", type=Path, default=LICENCES, help="the folder of the licence texts")
    args = parser.parse_args()
    try:
        squad = build(args.licences)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(squad, ensure_ascii=False) + "\n", encoding="utf-8")
    questions = sum(len(p["qas"]) for article in squad["data"] for p in article["paragraphs"])
    print(f"{len(squad['data'])} documents, {questions} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
