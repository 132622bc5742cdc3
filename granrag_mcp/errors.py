"""Errors a user or an agent can act on. Every message says what to do next."""

from pathlib import Path


class GranragError(Exception):
    """Base class: the message is shown as-is to the user (CLI) or the model (ToolError)."""


class InvalidInputError(GranragError):
    """Arguments that cannot be served (empty query, malformed id, bad option)."""


class UnknownChunkError(InvalidInputError):
    """A well-formed chunk id that the current index does not hold."""


class NoDocumentsError(GranragError):
    """An index run found nothing it could index."""


class StoreNotFoundError(GranragError):
    """No committed index at the given location."""


class StoreMismatchError(GranragError):
    """The store was built with another model, dimension, tokenizer or chunk settings."""


class StoreCorruptError(GranragError):
    """A file of the store fails its checksum or cannot be parsed."""


class IndexBusyError(GranragError):
    """Another process holds the writer lock."""


class ModelLoadError(GranragError):
    """An embedding or reranking model could not be loaded from local files."""


class StoreWriteError(GranragError):
    """A commit failed while writing (disk full, I/O error); the previous generation stays current."""


class StoreAccessError(GranragError):
    """The store's location cannot be used: a file in the way, no permission, or a read-only file system."""


class ExtractionError(GranragError):
    """A document that cannot be turned into text; the index run skips it and goes on."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
