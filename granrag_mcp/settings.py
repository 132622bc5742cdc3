"""Every setting in one validated object: environment variables GRANRAG_*, overridden by CLI flags."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from granrag_mcp.devices import Device
from granrag_mcp.embedding import DEFAULT_MODEL, Precision
from granrag_mcp.indexing.chunking import ChunkSettings
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


def check_token(token: str) -> None:
    """Refuse a bearer token that no client can send in a header, so the server would refuse every request."""
    if token != token.strip():
        raise ValueError(
            "GRANRAG_AUTH_TOKEN starts or ends with whitespace (often a newline from a file or `echo`), which no "
            "client can send: remove it"
        )
    if not all(" " <= char <= "~" for char in token):
        raise ValueError(
            "GRANRAG_AUTH_TOKEN holds characters that an HTTP header cannot carry (control or non-ASCII "
            "characters): use printable ASCII only, such as the output of `openssl rand -hex 32`"
        )


class Settings(BaseSettings):
    # Errors do not echo their input: the input can hold the auth token.
    model_config = SettingsConfigDict(env_prefix="GRANRAG_", extra="ignore", frozen=True, hide_input_in_errors=True)

    store: Path = Field(Path("index_store"), description="Folder of the index store.")
    model: str = Field(DEFAULT_MODEL, description="Sentence-transformers model name (local cache) or local path.")
    vector_mode: VectorMode = Field("mean", description="How mid and broad vectors are formed: mean, truncate, windows.")
    tokenizer: str = Field(DEFAULT_ENCODING, description="tiktoken encoding that counts chunk tokens.")
    broad_tokens: int = Field(2048, ge=16, le=32768, description="Tokens per broad chunk.")
    broad_overlap: int = Field(200, ge=0, description="Tokens shared by consecutive broad chunks.")
    mid_tokens: int = Field(512, ge=8, description="Tokens per mid chunk (nested in a broad chunk).")
    sentence_max_tokens: int = Field(128, ge=4, description="Longer sentences are split into pieces of this size.")
    batch_size: int = Field(
        256, ge=1, le=4096, description="Most texts per embedding batch (a batch also stops at 4096 word pieces)."
    )
    embed_workers: int | None = Field(
        None, ge=1, le=256, description="Embedding batches run side by side, one thread each (default: one per core)."
    )
    precision: Precision = Field(
        "auto", description="Embedding arithmetic: fp32, bf16, fp16, or auto (CPU: bf16 where it has AVX512-BF16/AMX; GPU: bf16 "
        "where it has it, else fp16)."
    )
    device: Device = Field(
        "auto", description="Where the embedding model runs: cpu, cuda, or auto (the GPU where torch sees one)."
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
    http_max_connections: int = Field(
        100, ge=1, le=65536, description="Most open HTTP connections; one more is answered 503 at once."
    )
    http_header_timeout: float = Field(
        10.0, gt=0, le=3600, allow_inf_nan=False,
        description="Seconds an HTTP connection may take to send a whole request head, from connecting or from the "
        "end of its previous request; then it is closed.",
    )
    http_max_sessions: int = Field(
        64, ge=1, le=100000, description="Most open MCP sessions over HTTP; one more is answered 503."
    )
    http_session_idle_timeout: float = Field(
        600.0, gt=0, le=86400, allow_inf_nan=False,
        description="Seconds an MCP session over HTTP may go without a request before it is closed.",
    )
    max_tokens: int = Field(4000, ge=50, le=100000, description="Default token budget of a tool result.")
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level (stderr).")

    @model_validator(mode="after")
    def _check(self) -> Settings:
        self.chunking  # validates the chunk sizes together
        if self.transport == "http" and not is_loopback(self.host) and not self.auth_token:
            raise ValueError(
                f"binding {self.host} exposes the server beyond this machine: set GRANRAG_AUTH_TOKEN to a secret "
                "bearer token, or bind 127.0.0.1"
            )
        if self.transport == "http" and self.auth_token is not None:
            check_token(self.auth_token.get_secret_value())
        return self

    @property
    def chunking(self) -> ChunkSettings:
        return ChunkSettings(
            broad_tokens=self.broad_tokens,
            broad_overlap=self.broad_overlap,
            mid_tokens=self.mid_tokens,
            sentence_max_tokens=self.sentence_max_tokens,
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
