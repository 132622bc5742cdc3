import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from granrag_mcp.indexing.chunking import chunk_document, token_windows
from granrag_mcp.settings import ChunkSettings
from granrag_mcp.tokens import get_tokenizer

SMALL = ChunkSettings(broad_tokens=60, broad_overlap=12, mid_tokens=20, sentence_max_tokens=8)


def long_text(paragraphs: int = 12) -> str:
    parts = []
    for i in range(paragraphs):
        parts.append(
            f"Paragraph {i} talks about café number {i} in Zürich. Dr. Müller measured 3.5 litres, e.g. twice. "
            f"Then the 日本 team arrived 🎉 and everyone cheered loudly for a very long while indeed."
        )
    return "\n\n".join(parts)


@pytest.fixture(scope="module")
def tokenizer():
    return get_tokenizer()


def by_level(chunks, level):
    return [c for c in chunks if c.level == level]


def test_token_windows_follow_the_overlap_formula():
    c, o = 10, 3
    windows = list(token_windows(35, c, o))
    assert windows[:4] == [(i * (c - o), i * (c - o) + c) for i in range(4)]
    assert windows[-1][1] == 35
    assert all(b[0] < a[1] for a, b in zip(windows, windows[1:]))  # consecutive windows overlap


def test_token_windows_do_not_emit_a_window_inside_the_previous_one():
    assert list(token_windows(10, 10, 3)) == [(0, 10)]
    assert list(token_windows(0, 10, 3)) == []


def test_broad_chunks_have_the_configured_size_and_overlap(tokenizer):
    text = long_text()
    broad = by_level(chunk_document(text, tokenizer, SMALL), "broad")
    assert len(broad) > 3
    bounds = tokenizer.boundaries(text).tolist()
    stride = SMALL.broad_tokens - SMALL.broad_overlap
    for i, chunk in enumerate(broad):
        assert chunk.seq == i
        assert chunk.start == bounds[i * stride]
        assert chunk.token_count == min(SMALL.broad_tokens, len(bounds) - 1 - i * stride)
    assert broad[-1].end == len(text)


def test_offsets_are_exact_and_text_is_the_span(tokenizer):
    text = long_text()
    for chunk in chunk_document(text, tokenizer, SMALL):
        assert 0 <= chunk.start < chunk.end <= len(text)
        assert text[chunk.start : chunk.end].strip()


def test_every_mid_has_one_broad_parent_that_contains_it(tokenizer):
    chunks = chunk_document(long_text(), tokenizer, SMALL)
    broad = by_level(chunks, "broad")
    for mid in by_level(chunks, "mid"):
        parent = broad[mid.parent_seq]
        assert parent.start <= mid.start and mid.end <= parent.end
        assert mid.token_count <= SMALL.mid_tokens


def test_mids_tile_their_broad_parent_without_overlap(tokenizer):
    chunks = chunk_document(long_text(), tokenizer, SMALL)
    mids = by_level(chunks, "mid")
    for broad in by_level(chunks, "broad"):
        own = [m for m in mids if m.parent_seq == broad.seq]
        assert own[0].start == broad.start and own[-1].end == broad.end
        assert all(a.end == b.start for a, b in zip(own, own[1:]))


def test_narrow_chunks_are_sentences_inside_their_mid(tokenizer):
    chunks = chunk_document(long_text(), tokenizer, SMALL)
    mids = by_level(chunks, "mid")
    narrow = by_level(chunks, "narrow")
    assert [n.seq for n in narrow] == list(range(len(narrow)))
    for sentence in narrow:
        parent = mids[sentence.parent_seq]
        assert parent.start <= sentence.start and sentence.end <= parent.end
        assert sentence.token_count <= SMALL.sentence_max_tokens


def test_sentences_are_not_cut_at_abbreviations_or_decimals(tokenizer):
    text = "Dr. Smith paid $3.50 for tea, e.g. green tea. The next day he paid more."
    settings = ChunkSettings(broad_tokens=200, broad_overlap=0, mid_tokens=100, sentence_max_tokens=100)
    narrow = by_level(chunk_document(text, tokenizer, settings), "narrow")
    assert [text[n.start : n.end] for n in narrow] == [
        "Dr. Smith paid $3.50 for tea, e.g. green tea.",
        "The next day he paid more.",
    ]


def test_a_long_sentence_is_split_at_the_cap(tokenizer):
    text = " ".join(f"word{i}" for i in range(100)) + "."
    settings = ChunkSettings(broad_tokens=1000, broad_overlap=0, mid_tokens=1000, sentence_max_tokens=16)
    narrow = by_level(chunk_document(text, tokenizer, settings), "narrow")
    assert len(narrow) > 5
    assert all(n.token_count <= 16 for n in narrow)
    assert "".join(text[n.start : n.end] for n in narrow).replace(" ", "") == text.replace(" ", "")


def test_empty_text_has_no_chunks(tokenizer):
    assert chunk_document("", tokenizer, SMALL) == []
    assert chunk_document("   \n\n ", tokenizer, SMALL) == []


def test_settings_reject_overlap_not_smaller_than_size():
    with pytest.raises(ValidationError, match="overlap"):
        ChunkSettings(broad_tokens=100, broad_overlap=100)
    with pytest.raises(ValidationError, match="mid chunk size"):
        ChunkSettings(broad_tokens=100, broad_overlap=10, mid_tokens=200)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=600))
def test_any_text_gives_exact_nested_spans(text):
    tokenizer = get_tokenizer()
    chunks = chunk_document(text, tokenizer, SMALL)
    broad = by_level(chunks, "broad")
    mids = by_level(chunks, "mid")
    for chunk in chunks:
        assert 0 <= chunk.start < chunk.end <= len(text)
    for mid in mids:
        assert broad[mid.parent_seq].start <= mid.start and mid.end <= broad[mid.parent_seq].end
    for sentence in by_level(chunks, "narrow"):
        assert mids[sentence.parent_seq].start <= sentence.start and sentence.end <= mids[sentence.parent_seq].end


def test_mid_chunks_end_at_sentence_boundaries(tokenizer):
    text = " ".join(f"Sentence number {i} is about topic {i} and nothing else." for i in range(80))
    settings = ChunkSettings(broad_tokens=400, broad_overlap=40, mid_tokens=50, sentence_max_tokens=40)
    chunks = chunk_document(text, tokenizer, settings)
    broad_ends = {c.end for c in by_level(chunks, "broad")}
    mids = by_level(chunks, "mid")
    inner = [m for m in mids if m.end not in broad_ends]
    assert inner and all(text[m.start : m.end].rstrip().endswith(".") for m in inner)
    narrow = by_level(chunks, "narrow")
    complete = [n for n in narrow if text[n.start : n.end].startswith("Sentence")]
    assert len(complete) >= len(narrow) - 2 * len(by_level(chunks, "broad"))  # only broad edges cut sentences


def test_a_sentence_longer_than_a_mid_is_cut_at_the_token_limit(tokenizer):
    text = " ".join(f"w{i}" for i in range(300)) + "."
    settings = ChunkSettings(broad_tokens=1000, broad_overlap=0, mid_tokens=64, sentence_max_tokens=32)
    mids = by_level(chunk_document(text, tokenizer, settings), "mid")
    assert len(mids) > 3 and all(m.token_count <= 64 for m in mids)
    assert all(a.end == b.start for a, b in zip(mids, mids[1:]))
