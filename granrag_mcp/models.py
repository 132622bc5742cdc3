"""The shapes MCP tools return: one hit shape everywhere, wrapped in small result models.

Every model here becomes a tool's output schema, so field descriptions are written for the model reading them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from granrag_mcp.chunk import Chunk
from granrag_mcp.fusion import Contribution

LevelName = Literal["broad", "mid", "narrow"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Model):
    """What one ranked list said about a fused hit."""

    rank: int = Field(description="1-based rank of the chunk in that list.")
    score: float = Field(description="Score the chunk had in that list (cosine similarity or BM25).")
    fused: float = Field(description="What this list added to the fused score: weight / (rrf_k + rank).")


class Hit(_Model):
    """One chunk of the index."""

    chunk_id: str = Field(
        description="Public id such as 'mid:42': pass it to expand_window, get_parent, rerank, get_chunks."
    )
    doc_id: str = Field(description="Document the chunk comes from (its path relative to the indexed folder).")
    level: LevelName = Field(
        description="broad (a long passage), mid (a paragraph or so, inside a broad chunk) or narrow (one "
        "sentence, inside a mid chunk)."
    )
    seq: int = Field(description="Position of the chunk among the chunks of its level in its document.")
    start: int = Field(description="Character offset of the chunk in its document.")
    end: int = Field(description="Character offset just past the chunk in its document.")
    score: float | None = Field(None, description="Relevance score (higher is better); null where nothing was scored.")
    text: str = Field(description="The chunk text (a prefix of it when truncated is true).")
    parent_id: str | None = Field(description="Id of the enclosing chunk one level up; null for broad chunks.")
    token_count: int = Field(description="Tokens of the whole chunk (cl100k), even when its text was truncated.")
    truncated: bool = Field(False, description="True when the text was cut to fit max_tokens.")
    sources: dict[str, Source] | None = Field(
        None, description="For fused hits: the contribution of each ranked list (broad_dense, narrow_lexical, ...)."
    )
    evidence: list[str] | None = Field(
        None, description="For hrr_search: ids of the mid chunks that led to this broad hit, best first."
    )

    @classmethod
    def of(
        cls,
        chunk: Chunk,
        score: float | None = None,
        sources: Mapping[str, Contribution] | None = None,
        evidence: Sequence[str] | None = None,
        text: str | None = None,
        truncated: bool = False,
    ) -> Hit:
        return cls(
            chunk_id=chunk.public_id,
            doc_id=chunk.doc_id,
            level=chunk.level,
            seq=chunk.seq,
            start=chunk.start,
            end=chunk.end,
            score=None if score is None else float(score),
            text=chunk.text if text is None else text,
            parent_id=chunk.public_parent_id,
            token_count=chunk.token_count,
            truncated=truncated,
            sources={name: Source(rank=c.rank, score=c.score, fused=c.fused) for name, c in sources.items()}
            if sources
            else None,
            evidence=list(evidence) if evidence else None,
        )


class Budgeted(_Model):
    generation: int = Field(description="Index generation that answered; chunk ids are valid within it.")
    tokens_used: int = Field(description="Tokens of text returned, within max_tokens.")
    omitted: int = Field(description="Results left out to stay within max_tokens; raise max_tokens to get them.")


class SearchResult(Budgeted):
    hits: list[Hit] = Field(description="Best first.")


class RankedResult(SearchResult):
    reranker: str = Field(description="The reranker that scored the hits (a cross-encoder or the embedding fallback).")


class WindowResult(Budgeted):
    chunk_id: str = Field(description="The chunk the window was built around.")
    doc_id: str
    start: int = Field(description="Character offset of the returned text in its document.")
    end: int = Field(description="Character offset just past the returned text.")
    text: str = Field(description="The window: the document text from start to end, in reading order.")
    truncated: bool = Field(description="True when the window text was cut to fit max_tokens.")
    members: list[Hit] = Field(
        description="The chunks of the window in reading order; their text is left empty, it is in `text`."
    )


class ParentGroup(_Model):
    parent: Hit = Field(description="The enclosing chunk one level up.")
    children_hit: list[str] = Field(description="The ids you passed that lie in this parent.")
    children_total: int = Field(description="How many children the parent has in all.")


class ParentsResult(Budgeted):
    parents: list[ParentGroup] = Field(description="Parents in the order their first child was given.")
    kept: list[Hit] = Field(
        description="With merge_threshold: children whose parent had too few of its children hit, left as they were."
    )


class DocumentInfo(_Model):
    doc_id: str
    source: str = Field(description="Path of the file the document was read from.")
    n_chars: int
    n_tokens: int


class DocumentList(_Model):
    generation: int
    total: int = Field(description="Documents matching the prefix in all (for paging with offset).")
    offset: int
    documents: list[DocumentInfo]
