"""Chunking cut at a document's headings (indexing/chunking.py, semantic_chunking.py): no sentence or mid chunk
runs across a section start (a section shorter than the minimum stays with a neighbour), broad chunks break at
top-level sections; without headings the chunks are exactly those of the chunker before headings were kept."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.evaluation.qa import load_squad
from granrag_mcp.indexing.chunking import chunk_document
from granrag_mcp.indexing.semantic_chunking import group_sentences, semantic_documents
from granrag_mcp.indexing.structure import outline_of
from granrag_mcp.outline import Outline, Section
from granrag_mcp.records import ChunkSpan
from granrag_mcp.settings import ChunkSettings
from granrag_mcp.tokens import get_tokenizer
from tests.fakes import FakeEmbedder
from tests.helpers import shared_file
from tests.outlined import LAYOUT, build_report, extract

TOKENIZER = get_tokenizer("cl100k_base")
SMALL = dict(broad_tokens=160, broad_overlap=24, mid_tokens=48, sentence_max_tokens=32, semantic_min_tokens=16)
SQUAD = shared_file("datasets/squad-v1.1-dev-a.json")

# A longer report than the end-to-end one: several broad chunks per top-level section.
LONG = tuple(("text", item[1], item[2], item[3] * 3) if item[0] == "text" else item for item in LAYOUT)


def document() -> tuple[str, Outline]:
    extracted = extract(Path("report.outl"), build_report(LONG).source.encode())
    return extracted.text, outline_of(extracted, TOKENIZER)


def spans(chunker: str) -> tuple[str, Outline, list[ChunkSpan]]:
    text, outline = document()
    settings = ChunkSettings(chunker=chunker, **SMALL)  # type: ignore[arg-type]
    if chunker == "fixed":
        return text, outline, chunk_document(text, TOKENIZER, settings, outline.sections)
    [(found, _, _)] = semantic_documents(
        [("report.outl", text)], TOKENIZER, settings, FakeEmbedder(), sections=[outline.sections]
    )
    return text, outline, found


def crossed(text: str, span: ChunkSpan, starts: list[int]) -> list[int]:
    """The section starts strictly inside the span, whitespace at its edges aside."""
    piece = text[span.start : span.end]
    begin = span.start + len(piece) - len(piece.lstrip())
    end = span.start + len(piece.rstrip())
    return [s for s in starts if begin < s < end]


@pytest.mark.parametrize("chunker", ["fixed", "semantic"])
def test_no_sentence_or_mid_chunk_runs_across_a_heading(chunker: str) -> None:
    text, outline, found = spans(chunker)
    starts = [s.start for s in outline.sections]
    ends = [*starts[1:], len(text)]
    # "Methods" is a heading straight above "Sampling": the only section shorter than the minimum.
    short = {s for s, e in zip(starts, ends) if TOKENIZER.count(text[s:e]) < SMALL["semantic_min_tokens"]}
    assert short == {text.index("Methods\n")}
    assert all(not crossed(text, s, starts) for s in found if s.level == "narrow")
    # Merged with the section before it, the short one's start lies inside a mid chunk; with the one after, the
    # start of that one does.
    merged = short | {e for s, e in zip(starts, ends) if s in short}
    mids = [s for s in found if s.level == "mid"]
    assert all(set(crossed(text, s, starts)) <= merged for s in mids)
    assert sum(bool(crossed(text, s, starts)) for s in mids) <= 1
    begins = {s.start + len(text[s.start : s.end]) - len(text[s.start : s.end].lstrip()) for s in mids}
    assert set(starts) - merged <= begins  # every other section begins a mid chunk


@pytest.mark.parametrize("chunker", ["fixed", "semantic"])
def test_broad_chunks_break_at_top_level_sections(chunker: str) -> None:
    text, outline, found = spans(chunker)
    top = [s.start for s in outline.sections if s.level == 1]
    broad = [s for s in found if s.level == "broad"]
    assert len(broad) > len(top)  # each top-level section spans several broad chunks
    assert all(not crossed(text, s, top) for s in broad)
    assert all(any(text[b.start : b.end].lstrip().startswith(text[t : t + 7]) for b in broad) for t in top)


def test_a_section_start_begins_a_group_and_only_a_whole_short_section_merges_across() -> None:
    tokens = [30, 30, 30, 5, 30, 30]
    flat = np.zeros(5, dtype=np.float32)  # no topic boundary anywhere
    assert group_sentences(tokens, flat, 1.0, 200, 16) == [(0, 6)]
    assert group_sentences(tokens, flat, 1.0, 200, 16, starts=[2]) == [(0, 2), (2, 6)]
    # Sentence 3 alone is a section shorter than the minimum: it joins the nearer neighbour (the later one).
    near_later = np.array([0.5, 0.5, 0.9, 0.1, 0.5], dtype=np.float32)
    assert group_sentences(tokens, near_later, 1.0, 200, 16, starts=[3, 4]) == [(0, 3), (3, 6)]
    # A run under the minimum inside a larger section keeps to its section.
    tokens = [100, 5, 30, 30]
    assert group_sentences(tokens, np.array([0.1, 0.9, 0.1], np.float32), 0.5, 100, 16, starts=[2]) == [
        (0, 1),
        (1, 2),
        (2, 4),
    ]


def digest(found: list[ChunkSpan], into: hashlib._Hash) -> None:
    for s in found:
        into.update(repr((s.level, s.seq, s.start, s.end, s.token_count, s.parent_seq)).encode())


# sha256 of every span of every SQuAD-A article, from the chunkers as they were before documents kept headings,
# over the sentences as the rules part them now: the long-sentence rule parts the enumerations of one article
# (European Union law) into clauses, where no mid chunk starts (the fixed chunker's windows end at the sentence's
# start instead), and every other article's spans are as they were.
BEFORE_HEADINGS = {
    "fixed": "3f27cfafeb95e138c6908425e05019f043e0a7aee33c5ece866667fae896908f",
    "semantic": "ac17d6555a61f3f9268fa2b2a43b82f75182bcfbfde58b88a169c871eb26982d",
}


@pytest.mark.skipif(not SQUAD.exists(), reason=f"shared dataset {SQUAD} not available")
@pytest.mark.parametrize("chunker", ["fixed", "semantic"])
def test_without_headings_the_chunks_are_those_of_the_chunker_before_headings(chunker: str) -> None:
    documents = sorted(load_squad(SQUAD).documents.items())
    found = hashlib.sha256()
    settings = ChunkSettings(chunker=chunker)  # type: ignore[arg-type]
    if chunker == "fixed":
        for _, text in documents:
            digest(chunk_document(text, TOKENIZER, settings, ()), found)
    else:
        for spans_, _, _ in semantic_documents(documents, TOKENIZER, settings, FakeEmbedder(dimension=64)):
            digest(spans_, found)
    assert found.hexdigest() == BEFORE_HEADINGS[chunker]


def test_fixed_windows_keep_a_heading_only_section_with_the_text_before_it() -> None:
    first = " ".join(f"Alpha sentence number {n} runs on for a while." for n in range(8))
    second = " ".join(f"Gamma sentence number {n} runs on for a while." for n in range(8))
    text = f"Part\n{first}\nBeta\nGamma\n{second}\n"
    sections = [
        Section(0, 1, "Part"),
        Section(text.index("Beta"), 2, "Beta"),
        Section(text.index("Gamma\n"), 2, "Gamma"),
    ]
    settings = ChunkSettings(chunker="fixed", **{**SMALL, "broad_tokens": 512})  # type: ignore[arg-type]
    found = chunk_document(text, TOKENIZER, settings, sections)
    starts = [s.start for s in sections]
    mids = [s for s in found if s.level == "mid"]
    assert [crossed(text, s, starts) for s in mids if crossed(text, s, starts)] == [[text.index("Beta")]]
    assert any(text[m.start : m.end].lstrip().startswith("Gamma\n") for m in mids)
    assert any(text[m.start : m.end].rstrip().endswith("while.\nBeta") for m in mids)
