import numpy as np

from granrag_mcp.store.lexical import LexicalIndex, analyse

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
    index.write(tmp_path / "x.bm25.npz")
    loaded = LexicalIndex.read(tmp_path / "x.bm25.npz")
    assert np.array_equal(loaded.ids, index.ids)
    for query in ("quasar radio", "bread oven", "galaxies"):
        assert loaded.search(query, 4) == index.search(query, 4)


def test_empty_index_answers_nothing(tmp_path):
    index = LexicalIndex.build([], [])
    index.write(tmp_path / "e.npz")
    assert LexicalIndex.read(tmp_path / "e.npz").search("anything", 3) == []
