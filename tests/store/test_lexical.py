import math
import random

import numpy as np
import pytest

from granrag_mcp.store import lexical
from granrag_mcp.store.lexical import ARRAYS, LexicalIndex, array_files, row_type
from granrag_mcp.text.analysis import analyse

TEXTS = [
    "The quasar emits radio waves.",
    "Bake the bread in the oven.",
    "Radio telescopes observe quasars and galaxies.",
    "The the the and of",
]


def test_analyse_lowercases_drops_stopwords_and_folds_plurals():
    assert analyse("The Quasars and the Galaxies") == ["quasar", "galaxy"]


def test_search_ranks_documents_sharing_rare_terms_first():
    index = LexicalIndex.build([10, 11, 12, 13], TEXTS)
    hits = index.search("quasar radio", 3)
    assert [chunk_id for chunk_id, _ in hits][:2] in ([10, 12], [12, 10])
    assert all(score > 0 for _, score in hits)
    assert 11 not in [chunk_id for chunk_id, _ in hits]


def test_search_caps_k_and_ignores_unknown_or_stopword_queries():
    index = LexicalIndex.build([1, 2, 3, 4], TEXTS)
    assert len(index.search("quasar", 100)) == 2
    assert index.search("zzzz unknown", 5) == []
    assert index.search("the and of", 5) == []
    assert index.search("quasar", 0) == []


def test_round_trip_gives_identical_results(tmp_path):
    index = LexicalIndex.build([5, 6, 7, 8], TEXTS)
    index.write(tmp_path / "x.bm25")
    loaded = LexicalIndex.read(tmp_path / "x.bm25")
    assert np.array_equal(loaded.ids, index.ids)
    for query in ("quasar radio", "bread oven", "galaxies"):
        assert loaded.search(query, 4) == index.search(query, 4)


@pytest.mark.parametrize("map_from_bytes", [0, 10**9])
def test_empty_index_answers_nothing(tmp_path, map_from_bytes):
    LexicalIndex.build([], []).write(tmp_path / "e.bm25")
    assert LexicalIndex.read(tmp_path / "e.bm25", map_from_bytes=map_from_bytes).search("anything", 3) == []


QUERIES = ("quasar radio", "bread oven", "galaxies", "telescopes observe", "zzzz", "a" * 40 + " radio")
MORE_TEXTS = TEXTS + [
    f"Spectrum line {i} of the quasar catalogue, entry {i * 7} near galaxy {i % 5}." for i in range(60)
]


def test_an_index_is_written_as_one_plain_npy_file_per_array(tmp_path):
    index = LexicalIndex.build(list(range(100, 100 + len(MORE_TEXTS))), MORE_TEXTS)
    index.write(tmp_path / "m.bm25")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"m.bm25.{name}.npy" for name in ARRAYS)
    assert [p.name for p in array_files(tmp_path / "m.bm25")] == [f"m.bm25.{name}.npy" for name in ARRAYS]
    for name in ARRAYS:  # files any numpy reads, no pickled objects
        assert np.array_equal(np.load(tmp_path / f"m.bm25.{name}.npy", allow_pickle=False), getattr(index, name))


def test_a_mapped_index_reads_its_arrays_from_the_files_and_answers_the_same(tmp_path):
    index = LexicalIndex.build(list(range(100, 100 + len(MORE_TEXTS))), MORE_TEXTS)
    assert list(index.vocabulary) == sorted(index.vocabulary)
    index.write(tmp_path / "m.bm25")
    mapped = LexicalIndex.read(tmp_path / "m.bm25", map_from_bytes=0)
    for array in (mapped.data, mapped.indices, mapped.indptr, mapped.vocabulary, mapped.ids):
        assert not array.flags.owndata and not array.flags.writeable  # a view of the file's pages
        assert type(array) is np.ndarray  # not np.memmap, whose every slice costs
        assert array.ctypes.data % 64 == 0  # aligned: numpy is slow on unaligned arrays
    in_memory = LexicalIndex.read(tmp_path / "m.bm25", map_from_bytes=10**9)
    assert in_memory.data.flags.writeable
    for query in QUERIES:
        assert mapped.search(query, 10) == index.search(query, 10) == in_memory.search(query, 10)


def test_a_missing_array_file_is_not_read_as_an_empty_index(tmp_path):
    LexicalIndex.build(list(range(len(MORE_TEXTS))), MORE_TEXTS).write(tmp_path / "m.bm25")
    (tmp_path / "m.bm25.indices.npy").unlink()
    with pytest.raises(FileNotFoundError):
        LexicalIndex.read(tmp_path / "m.bm25")


def brute_force_bm25(texts: list[str], query: str, k1: float, b: float) -> dict[int, float]:
    """Okapi BM25 straight from its definition (Lucene's idf), one document at a time; zero scores left out."""
    documents = [analyse(text) for text in texts]
    average = sum(map(len, documents)) / len(documents)
    scores = {}
    for row, terms in enumerate(documents):
        score = 0.0
        for term in set(analyse(query)):
            tf = terms.count(term)
            if tf:
                df = sum(term in other for other in documents)
                idf = math.log(1 + (len(documents) - df + 0.5) / (df + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(terms) / average))
        if score > 0:
            scores[row] = score
    return scores


@pytest.mark.parametrize("k1, b", [(1.2, 0.75), (0.9, 0.4), (2.0, 1.0)])
def test_scores_are_okapi_bm25_as_defined(tmp_path, k1, b):
    rng = random.Random(f"{k1}-{b}")
    words = ["quasar", "radio", "galaxy", "oven", "bread", "survey", "spectrum", "line", "star", "dust", "comet"]
    texts = [" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in range(120)] + MORE_TEXTS
    index = LexicalIndex.build(list(range(1000, 1000 + len(texts))), texts, k1=k1, b=b)
    index.write(tmp_path / "s.bm25")
    stored = LexicalIndex.read(tmp_path / "s.bm25", map_from_bytes=0)
    for query in QUERIES + ("quasar quasar dust", "star comet line", "survey of the bread oven"):
        expected = brute_force_bm25(texts, query, k1, b)
        hits = stored.search(query, len(texts))
        assert {row - 1000 for row, _ in hits} == set(expected)
        for chunk_id, score in hits:
            assert score == pytest.approx(expected[chunk_id - 1000], rel=2e-3)  # float16 weights
        scores = [expected[chunk_id - 1000] for chunk_id, _ in hits]
        assert all(a >= c * (1 - 4e-3) for a, c in zip(scores, scores[1:]))  # only near-ties trade places


def test_weights_are_stored_in_half_precision_and_rows_in_the_narrowest_type():
    index = LexicalIndex.build(list(range(len(MORE_TEXTS))), MORE_TEXTS)
    assert index.data.dtype == np.float16
    assert index.indices.dtype == np.uint16
    assert row_type(2**16) is np.uint16  # row numbers 0..65535
    assert row_type(2**16 + 1) is np.int32
    assert row_type(2**31 + 1) is np.int64


def test_half_precision_weights_rank_as_single_precision_ones(monkeypatch):
    texts = MORE_TEXTS + [f"Radio survey {i}: quasar {i % 3} seen near bread oven {i % 11}" for i in range(200)]
    compact = LexicalIndex.build(list(range(len(texts))), texts)
    monkeypatch.setattr(lexical, "WEIGHT_TYPE", np.float32)
    monkeypatch.setattr(lexical, "row_type", lambda rows: np.int32)
    wide = LexicalIndex.build(list(range(len(texts))), texts)
    assert wide.data.dtype == np.float32 and wide.indices.dtype == np.int32
    for query in QUERIES + ("radio survey quasar", "oven 7", "galaxy catalogue entry"):
        got, expected = compact.search(query, 20), wide.search(query, 20)
        assert len(got) == len(expected)
        for (_, score), (_, exact) in zip(got, expected):
            assert abs(score - exact) <= 2e-3 * exact
        # Only scores equal in float32 to about 3 digits may trade places.
        exact_of = dict(expected)
        scores_in_order = [exact_of.get(chunk_id, 0.0) for chunk_id, _ in got]
        assert all(a >= b * (1 - 2e-3) for a, b in zip(scores_in_order, scores_in_order[1:]))


MIXED = {
    1: ("The river floods every spring.", "en"),
    2: ("这条河每年春天都会泛滥。", "zh"),
    3: ("नदी हर वसंत में बाढ़ लाती है।", "hi"),
    4: ("Река разливается каждую весну.", "ru"),
}


def mixed_index() -> LexicalIndex:
    return LexicalIndex.build(
        list(MIXED), [text for text, _ in MIXED.values()], languages=[lang for _, lang in MIXED.values()]
    )


@pytest.mark.parametrize(
    "query, expected", [("春天泛滥", 2), ("floods", 1), ("वसंत में बाढ़", 3), ("весной разливаются реки", 4)]
)
def test_each_chunk_is_analysed_by_its_language_and_a_query_finds_it_in_any(query, expected):
    assert mixed_index().search(query, 1)[0][0] == expected


def test_the_languages_an_index_was_analysed_in_are_kept_with_it(tmp_path):
    mixed_index().write(tmp_path / "m.bm25")
    loaded = LexicalIndex.read(tmp_path / "m.bm25")
    assert loaded.languages == ("en", "hi", "ru", "zh")
    assert loaded.search("春天泛滥", 1)[0][0] == 2


def test_an_english_index_is_written_as_before_and_an_old_index_reads_as_english(tmp_path):
    english = LexicalIndex.build([1, 2], ["Rivers flood.", "Farmers plant rice."], languages=["en", "und"])
    english.write(tmp_path / "e.bm25")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f.name for f in array_files(tmp_path / "e.bm25"))
    loaded = LexicalIndex.read(tmp_path / "e.bm25")
    assert loaded.languages == ("en",)
    assert loaded.search("rivers", 1)[0][0] == 1
    assert loaded.query_terms("rivers flooded") == analyse("rivers flooded")
