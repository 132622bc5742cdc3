import numpy as np

from granrag_mcp.store import lexical
from granrag_mcp.store.lexical import LexicalIndex, analyse, row_type

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


QUERIES = ("quasar radio", "bread oven", "galaxies", "telescopes observe", "zzzz", "a" * 40 + " radio")
MORE_TEXTS = TEXTS + [f"Spectrum line {i} of the quasar catalogue, entry {i * 7} near galaxy {i % 5}." for i in range(60)]


def test_a_mapped_index_reads_its_arrays_from_the_file_and_answers_the_same(tmp_path):
    index = LexicalIndex.build(list(range(100, 100 + len(MORE_TEXTS))), MORE_TEXTS)
    assert list(index.vocabulary) == sorted(index.vocabulary)
    index.write(tmp_path / "m.npz")
    mapped = LexicalIndex.read(tmp_path / "m.npz", map_from_bytes=0)
    for array in (mapped.data, mapped.indices, mapped.indptr, mapped.vocabulary, mapped.ids):
        assert not array.flags.owndata and not array.flags.writeable  # a view of the file's pages
        assert array.ctypes.data % 64 == 0  # members are aligned: numpy is slow on unaligned arrays
    with np.load(tmp_path / "m.npz") as plain:  # still a file np.load reads
        assert np.array_equal(plain["data"], index.data) and np.array_equal(plain["vocabulary"], index.vocabulary)
    for query in QUERIES:
        assert mapped.search(query, 10) == index.search(query, 10)


def test_an_index_written_before_the_vocabulary_was_sorted_still_answers_the_same(tmp_path):
    index = LexicalIndex.build(list(range(len(MORE_TEXTS))), MORE_TEXTS)
    # The earlier layout: terms in first-seen order (columns permuted to match), no vocabulary_sorted flag.
    first_seen = list(dict.fromkeys(t for text in MORE_TEXTS for t in analyse(text)))
    column = {term: j for j, term in enumerate(index.vocabulary.tolist())}
    order = [column[term] for term in first_seen]
    lengths = np.diff(index.indptr)[order]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index.indptr.dtype)
    pieces = [np.arange(index.indptr[j], index.indptr[j + 1]) for j in order]
    stored = np.concatenate(pieces)
    with open(tmp_path / "old.npz", "wb") as handle:
        np.savez(handle, ids=index.ids, vocabulary=np.array(first_seen, dtype=str), data=index.data[stored],
                 indices=index.indices[stored], indptr=indptr,
                 shape=np.asarray([len(index.ids), len(first_seen)], dtype=np.int64))
    for threshold in (0, 10**9):  # np.savez does not align its members, so both read it into memory
        old = LexicalIndex.read(tmp_path / "old.npz", map_from_bytes=threshold)
        assert old.data.flags.writeable
        for query in QUERIES:
            assert old.search(query, 10) == index.search(query, 10)
    old.write(tmp_path / "again.npz")  # written again: aligned, but its vocabulary still unsorted, and says so
    again = LexicalIndex.read(tmp_path / "again.npz", map_from_bytes=0)
    assert not again.data.flags.writeable
    for query in QUERIES:
        assert again.search(query, 10) == index.search(query, 10)


def test_a_compressed_file_is_read_into_memory(tmp_path):
    index = LexicalIndex.build(list(range(len(MORE_TEXTS))), MORE_TEXTS)
    with open(tmp_path / "z.npz", "wb") as handle:
        np.savez_compressed(handle, ids=index.ids, vocabulary=index.vocabulary, data=index.data,
                            indices=index.indices, indptr=index.indptr, vocabulary_sorted=np.asarray(True))
    loaded = LexicalIndex.read(tmp_path / "z.npz", map_from_bytes=0)
    assert loaded.data.flags.writeable  # read into memory: mapped arrays are read-only
    for query in QUERIES:
        assert loaded.search(query, 10) == index.search(query, 10)


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


def test_an_index_written_with_single_precision_weights_answers_the_same(tmp_path, monkeypatch):
    new = LexicalIndex.build(list(range(len(MORE_TEXTS))), MORE_TEXTS)
    monkeypatch.setattr(lexical, "WEIGHT_TYPE", np.float32)
    monkeypatch.setattr(lexical, "row_type", lambda rows: np.int32)
    LexicalIndex.build(list(range(len(MORE_TEXTS))), MORE_TEXTS).write(tmp_path / "wide.npz")
    old = LexicalIndex.read(tmp_path / "wide.npz", map_from_bytes=0)
    assert old.data.dtype == np.float32 and old.indices.dtype == np.int32
    for query in QUERIES:
        assert [i for i, _ in old.search(query, 10)] == [i for i, _ in new.search(query, 10)]
