"""The ranking adaptation run in a child process beside the concept graph's build.

Both stages are single-threaded Python for the most part and independent of each other (the adaptation reads the
catalog and indexes, never the graph), so on two cores they take about as long as the longer of the two instead of
their sum. This process embeds the pseudo-queries first, in the batch the adaptation itself would embed them in, so
the child loads no model and writes the same adaptation file. A store that keeps token vectors needs each query's
token vectors from the model, and a small store is adapted faster than a process starts: both adapt in this process,
after the graph.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, ProgressCallback
from granrag_mcp.indexing.adapt import adapt_generation, pseudo_query_vectors
from granrag_mcp.store.manifest import StoreIdentity
from granrag_mcp.store.vector_index import search_threads

_BOOTSTRAP = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from granrag_mcp.indexing.adapt_beside import child_main; child_main()"
)
BESIDE_FROM_SENTENCES = 2_000
"""The fewest sentences for which the adaptation runs in a child process: below, it takes less than the child's
start (an interpreter, numpy and FAISS imported)."""
MIN_CORES_USED = 1.4
"""The run's CPU seconds per wall second so far below which it adapts in its own process: its embedding batches,
side by side, found no second core free (other work shares the machine), and there the child's start was measured
to cost CPU time without saving any wall time."""


class CoreMeter:
    """This process's CPU seconds (all its threads) per wall second since the meter was made."""

    def __init__(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def cores_used(self) -> float:
        wall = time.perf_counter() - self.wall
        return (time.process_time() - self.cpu) / wall if wall > 0 else 0.0


class KnownVectors:
    """An embedder that has the vectors of some texts and no model: any other text is an error."""

    def __init__(self, name: str, dimension: int, max_tokens: int, vectors: Mapping[str, np.ndarray]) -> None:
        self.name, self.dimension, self.max_tokens = name, dimension, max_tokens
        self._vectors = dict(vectors)

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        missing = [text for text in texts if text not in self._vectors]
        if missing:
            raise RuntimeError(f"no vector for {missing[0]!r}: the adaptation's process embeds nothing of its own")
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        return np.stack([self._vectors[text] for text in texts])

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        raise RuntimeError("the adaptation's process has no tokenizer")


def child_main() -> None:
    """The child: a JSON line (folder, identity, the embedder's name and sizes, the pseudo-queries, FAISS's threads)
    and the queries' vectors as one .npy array on stdin; the adaptation file written into the folder."""
    header = json.loads(sys.stdin.buffer.readline())
    vectors = np.load(io.BytesIO(sys.stdin.buffer.read()), allow_pickle=False)
    known = KnownVectors(header["name"], header["dimension"], header["max_tokens"], dict(zip(header["texts"], vectors)))
    with search_threads(header["threads"]):
        adapt_generation(Path(header["folder"]), StoreIdentity.model_validate(header["identity"]), known)


class Adapting:
    """The adaptation of a generation, under way beside other work or still to be run: `wait` returns once its
    file is written. As a context manager, its child process, if one was started, has ended when the block is
    left."""

    def __init__(
        self,
        folder: Path,
        identity: StoreIdentity,
        embedder: Embedder,
        threads: int,
        beside_from: int = BESIDE_FROM_SENTENCES,
        meter: CoreMeter | None = None,
    ) -> None:
        self.folder, self.identity, self.embedder, self.threads = folder, identity, embedder, threads
        self.beside_from, self.meter = beside_from, meter
        self.child: subprocess.Popen[bytes] | None = None
        self.errors: IO[bytes] | None = None

    def start(self, sentences: int) -> None:
        """Start the child when the store is large enough, keeps no token vectors and the run found a second core
        free (else `wait` adapts here)."""
        if sentences < self.beside_from or self.identity.token_vector_dims:
            return
        if self.meter is not None and self.meter.cores_used() < MIN_CORES_USED:
            return
        vectors = pseudo_query_vectors(self.folder, self.identity, self.embedder)
        if not vectors:  # too few pseudo-queries: the adaptation keeps the defaults at once
            return
        header = {
            "folder": str(self.folder),
            "identity": self.identity.model_dump(mode="json"),
            "name": self.embedder.name,
            "dimension": self.embedder.dimension,
            "max_tokens": self.embedder.max_tokens,
            "texts": list(vectors),
            "threads": self.threads,
        }
        array = io.BytesIO()
        np.save(array, np.stack(list(vectors.values())).astype(np.float32), allow_pickle=False)
        # The child imports modules from this process's path, in its order (this package, not another install), and
        # from nothing else: isolated mode leaves out the working folder. It writes nothing to stdout, which may be
        # a stdio server's protocol stream.
        command = [sys.executable, "-I", "-c", _BOOTSTRAP, json.dumps([entry for entry in sys.path if entry])]
        # Input and errors in unnamed temporary files: no pipe to fill while the child starts or the graph is built.
        payload, self.errors = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        with payload:
            payload.write(json.dumps(header).encode() + b"\n" + array.getvalue())
            payload.seek(0)
            self.child = subprocess.Popen(command, stdin=payload, stdout=subprocess.DEVNULL, stderr=self.errors)

    def wait(self) -> None:
        if self.child is None:
            with search_threads(self.threads):
                adapt_generation(self.folder, self.identity, self.embedder)
            return
        if self.child.wait() != 0:
            assert self.errors is not None
            self.errors.seek(0)
            last = self.errors.read().decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise RuntimeError(f"the ranking adaptation failed (exit {self.child.returncode}): {last[0]}")

    def __enter__(self) -> Adapting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End a child still running (a failed run removes the folder it writes into), and wait for it."""
        if self.child is not None and self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        if self.errors is not None:
            self.errors.close()
