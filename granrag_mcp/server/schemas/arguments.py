"""The tools' argument types, shared so that every tool describes and bounds a query, an id or a budget alike.

They live at module level: the SDK evaluates the annotations of the tool functions to build input schemas.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from granrag_mcp.records import MAX_QUERY_CHARS
from granrag_mcp.retrieval.rrf import RRF_LISTS

Query = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for: a question or keywords.")
]
ChunkId = Annotated[
    str, Field(min_length=1, max_length=64, description="A chunk id from a result's chunk_id, such as 'mid:42'.")
]
ChunkIds = Annotated[
    list[ChunkId], Field(min_length=1, max_length=100, description="1 to 100 chunk ids from earlier results.")
]
Lexical = Annotated[
    bool | None,
    Field(
        description="true: also match the words exactly (BM25), fused with the dense hits by RRF; false: dense "
        "only; null (default): the dense and BM25 weights this index adapted to its text (in `weights`)."
    ),
]
MaxTokens = Annotated[
    int,
    Field(
        ge=50,
        le=100_000,
        description="Budget in tokens (cl100k) for the returned text; results past it are counted in `omitted`.",
    ),
]
WeightName = Literal[RRF_LISTS]  # type: ignore[valid-type]
Weights = Annotated[
    dict[WeightName, Annotated[float, Field(ge=0, le=100)]] | None,
    Field(description="rrf only: weight of each ranked list; lists not given keep the weights this index adapted to."),
]
DocIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=1000)]] | None,
    Field(
        min_length=1, max_length=1000, description="Only search these documents (doc_ids from list_documents or hits)."
    ),
]
DocPrefix = Annotated[
    str | None,
    Field(
        max_length=1000, description="Only search documents whose doc_id starts with this, such as a folder 'notes/'."
    ),
]
Language = Annotated[
    str | None,
    Field(
        min_length=2,
        max_length=8,
        description="Only search documents in this language: an ISO 639-1 code such as 'en' or 'zh', as "
        "list_documents shows them.",
    ),
]
DiversifyMethod = Annotated[
    Literal["none", "mmr", "kmeans"],
    Field(
        description="For hits that repeat each other. mmr: maximal marginal relevance (see mmr_lambda); kmeans: "
        "one hit per cluster (at most 5), the others' ids in its `cluster`."
    ),
]
MmrLambda = Annotated[
    float, Field(ge=0.0, le=1.0, description="diversify='mmr' only: 1 ranks by relevance only, 0 by novelty only.")
]
ExcludeSeen = Annotated[
    bool,
    Field(description="Leave out chunks this search history already returned (counted in seen_dropped)."),
]
