"""Every setting in one validated object: environment variables GRANRAG_*, overridden by CLI flags."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from granrag_mcp.chunking import ChunkSettings
from granrag_mcp.embedding import DEFAULT_MODEL, Precision
from granrag_mcp.rerank import DEFAULT_CROSS_ENCODER
from granrag_mcp.store.manifest import StoreIdentity, VectorMode
from granrag_mcp.tokens import DEFAULT_ENCODING

def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GRANRAG_", extra="ignore", frozen=True)

    store: Path = Field(Path("index_store"), description="Folder of the index store.")
    model: str = Field(DEFAULT_MODEL, description="Sentence-transformers model name (local cache) or local path.")
    vector_mode: VectorMode = Field("mean", description="How mid and broad vectors are formed: mean, truncate, windows.")
    tokenizer: str = Field(DEFAULT_ENCODING, description="tiktoken encoding that counts chunk tokens.")
    broad_tokens: int = Field(2048, ge=16, le=32768, description="Tokens per broad chunk.")
    broad_overlap: int = Field(200, ge=0, description="Tokens shared by consecutive broad chunks.")
    mid_tokens: int = Field(512, ge=8, description="Tokens per mid chunk (nested in a broad chunk).")
    sentence_max_tokens: int = Field(128, ge=4, description="Longer sentences are split into pieces of this size.")
    chunker: Literal["fixed", "semantic"] = Field(
        "semantic", description="How mid chunks are cut: semantic (where the topic changes) or fixed token windows."
    )
    semantic_percentile: float = Field(
        95.0, gt=0, le=100, description="semantic: a mid chunk ends where the distance exceeds this percentile."
    )
    semantic_overrides: str = Field(
        "", description="semantic: per-path percentiles, comma-separated PATTERN=PERCENTILE ('**/math/**=90')."
    )
    batch_size: int = Field(
        256, ge=1, le=4096, description="Most texts per embedding batch (a batch also stops at 4096 word pieces)."
    )
    embed_workers: int | None = Field(
        None, ge=1, le=256, description="Embedding batches run side by side, one thread each (default: one per core)."
    )
    precision: Precision = Field(
        "auto", description="Embedding arithmetic: fp32, bf16, or auto (bf16 where the CPU has AVX512-BF16/AMX)."
    )
    threads: int = Field(
        1, ge=1, le=256, description="CPU threads of the model and FAISS inside one query (serve, search, eval)."
    )
    reranker: str = Field(
        "auto", description="auto, embedding, embedding-windows, cross-encoder, or a cross-encoder name or path."
    )
    cross_encoder: str = Field(DEFAULT_CROSS_ENCODER, description="Cross-encoder tried by reranker=auto/cross-encoder.")
    transport: Literal["stdio", "http"] = Field("stdio", description="MCP transport of `serve`.")
    host: str = Field("127.0.0.1", description="HTTP bind address.")
    port: int = Field(8765, ge=0, le=65535, description="HTTP port (0 picks a free one).")
    auth_token: SecretStr | None = Field(None, description="Bearer token; required to bind a non-loopback host.")
    max_tokens: int = Field(4000, ge=50, le=100000, description="Default token budget of a tool result.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level (stderr).")
    query_memory: int = Field(
        256, ge=0, le=100_000, description="Recent searches remembered per client session, in memory (0: off)."
    )
    similar_query_threshold: float = Field(
        0.92, ge=0.0, le=1.0, description="Cosine at which an earlier query of the session is listed as similar."
    )

    @model_validator(mode="after")
    def _check(self) -> Settings:
        self.chunking  # validates the chunk sizes together
        if self.transport == "http" and not is_loopback(self.host) and not self.auth_token:
            raise ValueError(
                f"binding {self.host} exposes the server beyond this machine: set GRANRAG_AUTH_TOKEN to a secret "
                "bearer token, or bind 127.0.0.1"
            )
        return self

    @property
    def chunking(self) -> ChunkSettings:
        return ChunkSettings(
            broad_tokens=self.broad_tokens,
            broad_overlap=self.broad_overlap,
            mid_tokens=self.mid_tokens,
            sentence_max_tokens=self.sentence_max_tokens,
            chunker=self.chunker,
            semantic_percentile=self.semantic_percentile,
            semantic_overrides=tuple(e.strip() for e in self.semantic_overrides.split(",") if e.strip()),
        )


def identity_for(settings: Settings, dimension: int) -> StoreIdentity:
    """The store identity these settings ask for, with the embedding model's dimension."""
    return StoreIdentity(
        model=settings.model,
        dimension=dimension,
        tokenizer=settings.tokenizer,
        vector_mode=settings.vector_mode,
        chunking=settings.chunking,
    )
