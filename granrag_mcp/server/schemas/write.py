"""What the write tools return: an index or removal run, and the state of the store and its writer."""

from __future__ import annotations

from pydantic import Field

from granrag_mcp.server.schemas.lean import Lean


class _Model(Lean):
    """A result model: optional fields that hold nothing are left out of its JSON (see `lean`)."""


class FailedFile(_Model):
    path: str = Field(description="The file that was not indexed.")
    reason: str = Field(description="Why: unreadable, no text, duplicate document id...")


class RunResult(_Model):
    """One index or removal run."""

    kind: str = Field(description="index or remove.")
    outcome: str = Field(description="committed, unchanged (nothing to do), cancelled or failed.")
    message: str = Field(description="One line on what happened and what to do next.")
    generation: int | None = Field(description="The generation being served after the run.")
    added: int = Field(0, description="New documents.")
    updated: int = Field(0, description="Documents re-indexed because their file changed.")
    unchanged: int = Field(0, description="Documents whose file did not change (not re-embedded).")
    removed: int = Field(0, description="Documents removed.")
    unsupported: int = Field(0, description="Files skipped: of no supported format (see the README's formats table).")
    failed: list[FailedFile] = Field(default_factory=list, description="Files that could not be indexed.")
    doc_ids: list[str] = Field(
        default_factory=list,
        description="Documents the run covered (at most 200): pass them as doc_ids to the search tools, or read "
        "one as the resource granrag://documents/{doc_id}.",
    )
    more_doc_ids: int = Field(0, description="Covered documents left out of doc_ids.")
    started_at: str = Field(description="When the run began (UTC, ISO 8601).")
    seconds: float = Field(description="How long it ran.")


class RunningJob(_Model):
    kind: str = Field(description="index or remove.")
    targets: list[str] = Field(description="The paths being indexed or the doc_ids being removed.")
    stage: str = Field(description="What it is doing now, with counts (files, chunks).")
    progress: float = Field(description="Share of the work done, 0 to 1.")
    started_at: str = Field(description="When it began (UTC, ISO 8601).")


class IndexStatus(_Model):
    """The store, what is being written to it, and the last run."""

    generation: int = Field(description="The generation being served; 0 while the library is empty.")
    documents: int = Field(description="Documents in the index.")
    chunks: dict[str, int] = Field(description="Chunks per level (broad, mid, narrow).")
    languages: dict[str, int] = Field(
        default_factory=dict,
        description="Documents per language (ISO 639-1; 'und' when unsure, 'unknown' for documents indexed before "
        "languages were told).",
    )
    running: RunningJob | None = Field(None, description="The run in progress in this server; absent when none.")
    last_run: RunResult | None = Field(None, description="The last run this server finished; absent when none yet.")
    allowed_roots: list[str] = Field(description="Folders index_paths may read.")
    roots_from: str = Field(
        description="Where allowed_roots come from: the server's GRANRAG_ALLOWED_ROOTS setting, or the "
        "client's MCP roots when it is empty."
    )
