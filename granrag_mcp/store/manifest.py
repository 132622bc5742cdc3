"""The manifest: what a generation is, what built it, and the checksum of every file in it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from granrag_mcp.settings import AUTO_MODEL, ChunkSettings, Settings, VectorMode

FORMAT_NAME = "granrag-store"
FORMAT_VERSION = 2
"""2: a level's BM25 index is plain .npy files (1 kept it in one .npz). A store of another version is rebuilt."""
MANIFEST_FILE = "manifest.json"


class StoreIdentity(BaseModel):
    """Everything that must match between a store and the process that opens it."""

    model_config = ConfigDict(frozen=True)

    model: str
    """The embedding model. In an identity a process asks for, `auto` (settings.AUTO_MODEL) accepts any."""
    dimension: int
    tokenizer: str
    vector_mode: VectorMode
    chunking: ChunkSettings
    token_vector_dims: int | None = 0
    """Dimensions of the stored token vectors (0: none). In an identity a process asks for, None accepts any."""

    def differences(self, wanted: StoreIdentity) -> list[str]:
        """Human-readable 'name: store=X, requested=Y' lines for every setting that differs."""
        out = []
        for field in ("model", "dimension", "tokenizer", "vector_mode"):
            have, want = getattr(self, field), getattr(wanted, field)
            if have != want and not (field == "model" and want == AUTO_MODEL):
                out.append(f"{field}: store={have!r}, requested={want!r}")
        want_tokens = wanted.token_vector_dims
        if want_tokens is not None and (self.token_vector_dims or 0) != want_tokens:
            out.append(f"token_vector_dims: store={self.token_vector_dims or 0}, requested={want_tokens}")
        for field, have in self.chunking.model_dump().items():
            want = getattr(wanted.chunking, field)
            if have != want:
                out.append(f"{field}: store={have}, requested={want}")
        return out


class FileEntry(BaseModel):
    sha256: str
    bytes: int


class Manifest(BaseModel):
    format: Literal["granrag-store"] = "granrag-store"
    format_version: int = FORMAT_VERSION
    generation: int = Field(ge=1)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    identity: StoreIdentity
    counts: dict[str, int]
    next_chunk_id: int
    files: dict[str, FileEntry]


def identity_for(settings: Settings, dimension: int) -> StoreIdentity:
    """The store identity these settings ask for, with the embedding model's dimension."""
    return StoreIdentity(
        model=settings.model,
        dimension=dimension,
        tokenizer=settings.tokenizer,
        vector_mode=settings.vector_mode,
        chunking=settings.chunking,
        token_vector_dims=None,  # a reader uses the token vectors a store has, if any
    )
