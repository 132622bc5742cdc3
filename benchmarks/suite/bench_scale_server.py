"""A whole `granrag-mcp serve` over a store with ~1M narrow chunks: tool latency over stdio and resident memory.

1. **Build** (once; `--keep-dir DIR --reuse` reuses it): a real store in DIR/store, written by the project's own
   store code (`StoreWriter`, `Catalog`, `LexicalIndex`, `VectorIndex`, `Manifest`), with synthetic documents
   chunked by the project's chunker (`chunk_document`: broad 2048 / mid 512 tokens / sentences) until the
   narrow level holds --narrow chunks (default 1,000,000), with the broad and mid levels that gives. Nothing is
   embedded (far too slow at ~500 sentences/s):
   - texts: each sentence is a SQuAD-A sentence with about 15% of its words swapped for words drawn from the
     whole corpus and about 1% replaced by new words (a corpus word with a random suffix), so BM25 sees a
     growing vocabulary with a long tail of rare terms; 3-9 sentences a paragraph, 15-35 paragraphs a document;
   - vectors: a sentence's vector is the MiniLM vector of the SQuAD-A sentence it was made from plus Gaussian
     noise shaped like real sentence vectors (`bench_scale_store.py`'s "realistic" data, spread 1.1); mid and
     broad vectors are the token-weighted means of their sentences' vectors, as the indexer's default `mean`
     mode makes them.
   The manifest names the real default model (all-MiniLM-L6-v2, dimension 384) and chunk settings, so the real
   server opens the store. The build also saves the exact top-10 narrow neighbours of 500 SQuAD-A question
   vectors and 500 draws from the data's mixture (DIR/truth.npz) and the layout needed to regenerate every
   vector (DIR/plan.npz).
   `--rewrite-vectors` publishes a new generation of the same store whose catalog and BM25 files are copies of
   the current ones and whose vector files are rebuilt from the same (regenerated) vectors by the current
   `VectorIndex` code: how a change of the vector index is measured on identical data. With `--reencode` the
   current generation's vector files are instead read and written again by the current code, as an index run
   does to levels whose documents did not change (how an existing store picks up a new encoding).
   `--rewrite-lexical` does the same for the BM25 files, rebuilt from the catalog's texts.
2. **Serve**: `granrag-mcp serve --store DIR/store` as a subprocess (stdio, HF_HUB_OFFLINE=1, default settings)
   driven by the MCP SDK's client; search_narrow, search_broad, search_fused and expand_window are called
   --calls times each (after 5 warm-up calls) with SQuAD-A questions (a separate slice per tool, so no query
   comes from the server's query cache) and narrow ids from earlier hits. Reported: p50/p95 round trip per
   tool, and the server's /proc/PID/status (VmRSS, RssAnon, RssFile, VmHWM) after `initialize`, after the
   first search (model loaded, store opened), after each tool and at the end, with the final resident set
   broken down by mapping from /proc/PID/smaps (each store file, other files, anonymous memory).
3. **Recall**: after the session, the store's narrow index is opened as the server opens it and searched
   with the saved queries (k=10); recall@10 against the exact answers.

    .venv/bin/python benchmarks/suite/bench_scale_server.py --keep-dir /tmp/scale-server --label fp32
    .venv/bin/python benchmarks/suite/bench_scale_server.py --keep-dir /tmp/scale-server --reuse --label again
    .venv/bin/python benchmarks/suite/bench_scale_server.py --keep-dir /tmp/scale-server --reuse --rewrite-vectors --label fp16
    .venv/bin/python benchmarks/suite/bench_scale_server.py --keep-dir /tmp/scale-server --reuse --rewrite-vectors --reencode \
        --label fp16-reencoded
    .venv/bin/python benchmarks/suite/bench_scale_server.py --keep-dir /tmp/small --narrow 20000 --calls 20 --no-save

Time on the shared 2-core machine (load 1.3-2.5), OMP_NUM_THREADS=1: the 1M build 11 min (texts and chunking
2.5 min, catalog and BM25 1.5 min, vectors and ground truth 0.5 min, the HNSW graph 6 min), `--rewrite-vectors`
6 min (15 s with `--reencode`), the server session and recall 2 min. A generation takes 3.1 GiB on disk with a float32
graph, 2.4 GiB with a float16 one (the catalog alone 0.9 GiB). Run heavy builds with OMP_NUM_THREADS=1 on a machine shared with latency measurements.

Results are merged into benchmarks/results/scale_server.json under --label (--name to change the file).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import re
import shutil
import sys
import time
from bisect import bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import squad_corpus  # noqa: E402
from benchmarks.suite import bench_scale_store  # noqa: E402
from benchmarks.suite.bench_tools import call, server_params  # noqa: E402

DIM = 384
K = 10
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SWAP_RATE = 0.15  # words replaced by a word drawn from the whole corpus
NEW_WORD_RATE = 0.01  # words replaced by a word seen nowhere else
PARAGRAPH_SENTENCES = (3, 9)
DOCUMENT_PARAGRAPHS = (15, 35)
TRUTH_QUERIES = 500
WARMUP = 5
TOOLS = ("search_narrow", "search_broad", "search_fused", "expand_window")
_WORD = re.compile(r"\w+")
_SUFFIX = "abcdefghiklmnoprstuvyz"


# synthetic corpus


def squad_sentences() -> list[str]:
    """The SQuAD-A sentences in the order of `bench_scale_store.real_vectors` (so sentence i has vector i)."""
    from granrag_mcp.indexing.sentences import split_sentences

    documents, _ = squad_corpus.load()
    return [text[a:b] for text in documents.values() for a, b in split_sentences(text)]


class TextMaker:
    """Documents of perturbed SQuAD-A sentences, remembering which base sentence each sentence came from."""

    def __init__(self, sentences: list[str], seed: int) -> None:
        self.sentences = sentences
        self.words = [w for s in sentences for w in _WORD.findall(s)]  # drawn by frequency
        self.rng = random.Random(seed)

    def _word(self, match: re.Match[str]) -> str:
        draw = self.rng.random()
        if draw < NEW_WORD_RATE:
            stem = self.rng.choice(self.words)
            return stem + "".join(self.rng.choice(_SUFFIX) for _ in range(self.rng.randint(2, 4)))
        if draw < NEW_WORD_RATE + SWAP_RATE:
            return self.rng.choice(self.words)
        return match.group(0)

    def document(self) -> tuple[str, list[int], list[int]]:
        """Text, the start offset of each sentence, and the base sentence of each."""
        parts: list[str] = []
        starts: list[int] = []
        bases: list[int] = []
        offset = 0
        for paragraph in range(self.rng.randint(*DOCUMENT_PARAGRAPHS)):
            if paragraph:
                parts.append("\n\n")
                offset += 2
            for number in range(self.rng.randint(*PARAGRAPH_SENTENCES)):
                if number:
                    parts.append(" ")
                    offset += 1
                base = self.rng.randrange(len(self.sentences))
                sentence = _WORD.sub(self._word, self.sentences[base])
                starts.append(offset)
                bases.append(base)
                parts.append(sentence)
                offset += len(sentence)
        return "".join(parts), starts, bases


# building the store


def chunk_corpus(target: int, seed: int) -> tuple[list, dict[str, list], np.ndarray]:
    """Documents chunked by the project's chunker until `target` narrow chunks; chunks get ids as the indexer
    gives them (per document: broad, then mid, then narrow). Returns the documents, the chunks per level and the
    base sentence of every narrow chunk."""
    from granrag_mcp.indexing.chunking import chunk_document
    from granrag_mcp.records import Chunk
    from granrag_mcp.settings import ChunkSettings
    from granrag_mcp.store.catalog import DocumentInfo
    from granrag_mcp.tokens import get_tokenizer

    maker = TextMaker(squad_sentences(), seed)
    tokenizer, settings = get_tokenizer("cl100k_base"), ChunkSettings()
    documents: list[tuple[Any, str, list]] = []
    chunks: dict[str, list] = {"broad": [], "mid": [], "narrow": []}
    bases: list[int] = []
    next_id = 1
    while len(chunks["narrow"]) < target:
        text, starts, sentence_bases = maker.document()
        doc_id = f"synthetic/{len(documents):06d}.txt"
        spans = chunk_document(text, tokenizer, settings)
        ids: dict[str, dict[int, int]] = {"broad": {}, "mid": {}, "narrow": {}}
        own = []
        for span in spans:
            parent_level = {"broad": None, "mid": "broad", "narrow": "mid"}[span.level]
            parent = ids[parent_level][span.parent_seq] if parent_level else None
            ids[span.level][span.seq] = next_id
            own.append(
                Chunk(
                    next_id,
                    doc_id,
                    span.level,
                    span.seq,
                    span.start,
                    span.end,
                    span.token_count,
                    parent,
                    text[span.start : span.end],
                )
            )
            if span.level == "narrow":
                bases.append(sentence_bases[bisect_right(starts, span.start) - 1])
            next_id += 1
        for chunk in own:
            chunks[chunk.level].append(chunk)
        info = DocumentInfo(
            doc_id, hashlib.sha256(text.encode()).hexdigest(), f"/synthetic/{doc_id}", len(text), tokenizer.count(text)
        )
        documents.append((info, text, own))
        if len(documents) % 500 == 0:
            log(f"{len(documents)} documents, {len(chunks['narrow'])} narrow chunks")
    return documents, chunks, np.asarray(bases, dtype=np.int64)


def layout(chunks: dict[str, list], bases: np.ndarray) -> dict[str, np.ndarray]:
    """Everything needed to regenerate the vectors: ids per level, each child's parent row, token weights."""
    row = {level: {c.id: i for i, c in enumerate(chunks[level])} for level in ("broad", "mid")}
    return {
        "broad_ids": np.array([c.id for c in chunks["broad"]], dtype=np.int64),
        "mid_ids": np.array([c.id for c in chunks["mid"]], dtype=np.int64),
        "narrow_ids": np.array([c.id for c in chunks["narrow"]], dtype=np.int64),
        "mid_parent": np.array([row["broad"][c.parent_id] for c in chunks["mid"]], dtype=np.int64),
        "narrow_parent": np.array([row["mid"][c.parent_id] for c in chunks["narrow"]], dtype=np.int64),
        "narrow_tokens": np.array([max(c.token_count, 1) for c in chunks["narrow"]], dtype=np.float32),
        "narrow_base": bases,
    }


def level_vectors(plan: dict[str, np.ndarray], seed: int) -> dict[str, np.ndarray]:
    """Narrow: the base sentence's MiniLM vector plus shaped noise. Mid and broad: token-weighted means (the
    indexer's `mean` mode)."""
    from granrag_mcp.embedding.embedder import normalise
    from granrag_mcp.indexing.chunk_vectors import pool

    generator = bench_scale_store.Generator("realistic", len(plan["narrow_ids"]))
    rng = np.random.default_rng(seed)
    narrow = np.empty((len(plan["narrow_base"]), DIM), dtype=np.float32)
    for begin in range(0, len(narrow), bench_scale_store.BLOCK):
        rows = plan["narrow_base"][begin : begin + bench_scale_store.BLOCK]
        block = rng.standard_normal((len(rows), DIM), dtype=np.float32) @ generator.shape
        block *= generator.spread
        block += generator.centres[rows]
        narrow[begin : begin + len(rows)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    mid_sums = pool(narrow * plan["narrow_tokens"][:, None], plan["narrow_parent"], len(plan["mid_ids"]))
    broad_sums = pool(mid_sums, plan["mid_parent"], len(plan["broad_ids"]))
    return {"broad": normalise(broad_sums), "mid": normalise(mid_sums), "narrow": narrow}


def write_vectors(folder: Path, plan: dict[str, np.ndarray], vectors: dict[str, np.ndarray]) -> dict[str, Any]:
    from granrag_mcp.store.store import vector_file
    from granrag_mcp.store.vector_index import VectorIndex

    out = {}
    for level in ("broad", "mid", "narrow"):
        began = time.perf_counter()
        index = VectorIndex.empty(DIM)
        index.add(plan[f"{level}_ids"], vectors[level])
        index.write(folder / vector_file(level))  # settles: the HNSW graph is built here above the threshold
        out[level] = {
            "kind": index.kind,
            "storage": getattr(index, "storage", "fp32"),
            "vectors": len(index),
            "seconds": round(time.perf_counter() - began, 1),
            "bytes": (folder / vector_file(level)).stat().st_size,
        }
        log(f"{level}: {out[level]}")
        del index
    return out


def write_truth(path: Path, narrow: np.ndarray, ids: np.ndarray, seed: int) -> None:
    """Exact top-10 narrow neighbours of SQuAD-A question vectors and of draws from the data's mixture."""
    import faiss

    generator = bench_scale_store.Generator("realistic", len(ids))
    sets = {
        "questions": generator.query_sets(TRUTH_QUERIES, seed)["questions"],
        "mixture": generator.draw(TRUTH_QUERIES, seed + 1_000_003),
    }
    exact = faiss.IndexFlatIP(DIM)
    exact.add(narrow)
    saved = {}
    for name, queries in sets.items():
        _, rows = exact.search(queries, K)
        saved[f"q_{name}"], saved[f"t_{name}"] = queries, ids[rows]
    np.savez(path, **saved)


def build_store(keep: Path, target: int, seed: int) -> dict[str, Any]:
    from granrag_mcp.settings import ChunkSettings
    from granrag_mcp.store.catalog import Catalog
    from granrag_mcp.store.lexical import LexicalIndex
    from granrag_mcp.store.manifest import Manifest, StoreIdentity
    from granrag_mcp.store.store import CATALOG_FILE, lexical_file
    from granrag_mcp.store.writer import StoreWriter

    store = keep / "store"
    if store.exists():
        shutil.rmtree(store)
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    documents, chunks, bases = chunk_corpus(target, seed)
    seconds["texts_and_chunking"] = round(time.perf_counter() - began, 1)
    plan = layout(chunks, bases)
    np.savez(keep / "plan.npz", **plan)
    with StoreWriter(store, command="bench") as writer:
        generation = writer.numbering()[0] + 1
        folder = writer.new_folder(generation)
        began = time.perf_counter()
        catalog = Catalog.open_writable(folder / CATALOG_FILE)
        for info, text, own in documents:
            catalog.insert_document(info, text, own)
        catalog.commit()
        catalog.close()
        seconds["catalog"] = round(time.perf_counter() - began, 1)
        n_documents = len(documents)
        del documents
        began = time.perf_counter()
        for level in ("broad", "mid", "narrow"):
            LexicalIndex.build([c.id for c in chunks[level]], [c.text for c in chunks[level]]).write(
                folder / lexical_file(level)
            )
        seconds["bm25"] = round(time.perf_counter() - began, 1)
        counts = {level: len(chunks[level]) for level in chunks}
        next_id = int(max(plan["narrow_ids"].max(), plan["mid_ids"].max(), plan["broad_ids"].max())) + 1
        del chunks
        log(f"catalog and BM25 written {seconds}; vectors ...")
        began = time.perf_counter()
        vectors = level_vectors(plan, seed)
        seconds["generate_vectors"] = round(time.perf_counter() - began, 1)
        began = time.perf_counter()
        write_truth(keep / "truth.npz", vectors["narrow"], plan["narrow_ids"], seed)
        seconds["ground_truth"] = round(time.perf_counter() - began, 1)
        indices = write_vectors(folder, plan, vectors)
        identity = StoreIdentity(
            model=MODEL, dimension=DIM, tokenizer="cl100k_base", vector_mode="mean", chunking=ChunkSettings()
        )
        manifest = Manifest(
            generation=generation,
            identity=identity,
            counts={**counts, "documents": n_documents},
            next_chunk_id=next_id,
            files={},
        )
        began = time.perf_counter()
        final = writer.publish(folder, manifest)
        seconds["publish"] = round(time.perf_counter() - began, 1)
    return {
        "generation": final.name,
        "counts": manifest.counts,
        "indices": indices,
        "seconds": seconds,
        "store_bytes": _common.dir_size(final),
    }


def rewrite_generation(keep: Path, rebuilt: str, write: Callable[[Path, Path], dict[str, Any]]) -> dict[str, Any]:
    """Publish a new generation of the store: the current one's files copied, except those ending in `rebuilt`,
    which `write(current folder, new folder)` makes with the current code."""
    from granrag_mcp.store.manifest import MANIFEST_FILE
    from granrag_mcp.store.store import load_manifest, read_current
    from granrag_mcp.store.writer import StoreWriter

    store = keep / "store"
    with StoreWriter(store, command="bench") as writer:
        pointer = read_current(store)
        base = load_manifest(store, pointer)
        generation = writer.numbering()[0] + 1
        folder = writer.new_folder(generation)
        for name in base.files:
            if name != MANIFEST_FILE and not name.endswith(rebuilt):
                shutil.copyfile(store / pointer.generation / name, folder / name)
        began = time.perf_counter()
        written = write(store / pointer.generation, folder)
        seconds = round(time.perf_counter() - began, 1)
        final = writer.publish(folder, base.model_copy(update={"generation": generation, "files": {}}))
    return {"generation": final.name, "written": written, "seconds": seconds, "store_bytes": _common.dir_size(final)}


def rewrite_vectors(keep: Path, seed: int, reencode: bool) -> dict[str, Any]:
    """Vector files rebuilt by the current `VectorIndex` code from the regenerated vectors, or (`reencode`) the
    current generation's indices read and written again, as an index run does to a level whose documents did
    not change."""
    from granrag_mcp.store.store import vector_file
    from granrag_mcp.store.vector_index import VectorIndex

    def write(current: Path, folder: Path) -> dict[str, Any]:
        if not reencode:
            plan = dict(np.load(keep / "plan.npz"))
            return write_vectors(folder, plan, level_vectors(plan, seed))  # the vectors truth.npz was made from
        indices = {}
        for level in ("broad", "mid", "narrow"):
            index = VectorIndex.read(current / vector_file(level))
            before = index.storage
            index.write(folder / vector_file(level))
            indices[level] = {
                "kind": index.kind,
                "storage_before": before,
                "storage": index.storage,
                "vectors": len(index),
                "bytes": (folder / vector_file(level)).stat().st_size,
            }
            log(f"{level}: {indices[level]}")
            del index
        return indices

    return rewrite_generation(keep, ".faiss", write)


def rewrite_lexical(keep: Path) -> dict[str, Any]:
    """BM25 files rebuilt from the catalog's chunk texts by the current `LexicalIndex` code."""
    from granrag_mcp.store.catalog import Catalog
    from granrag_mcp.store.lexical import LexicalIndex, array_files
    from granrag_mcp.store.store import CATALOG_FILE, lexical_file

    def write(current: Path, folder: Path) -> dict[str, Any]:
        catalog = Catalog.open_readonly(current / CATALOG_FILE)
        sizes = {}
        for level in ("broad", "mid", "narrow"):
            chunks = catalog.chunks_of_level(level)
            LexicalIndex.build([c.id for c in chunks], [c.text for c in chunks]).write(folder / lexical_file(level))
            sizes[level] = sum(file.stat().st_size for file in array_files(folder / lexical_file(level)))
            log(f"{level}: BM25 of {len(chunks)} chunks, {sizes[level]} bytes")
            del chunks
        catalog.close()
        return sizes

    return rewrite_generation(keep, ".npy", write)  # only the BM25 arrays are .npy files


# the server session


def proc_memory(pid: int) -> dict[str, float]:
    fields = {
        "VmRSS": "rss_mib",
        "RssAnon": "anon_mib",
        "RssFile": "file_mib",
        "RssShmem": "shmem_mib",
        "VmHWM": "peak_mib",
    }
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in fields:
            out[fields[key]] = round(int(line.split()[1]) / 1024, 1)
    return out


def smaps_breakdown(pid: int, store: Path) -> dict[str, dict[str, float]]:
    """Resident MiB per mapping group: each store file by name, other files, anonymous memory."""
    groups: dict[str, dict[str, float]] = {}
    name = "anonymous"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if head and not head[0].endswith(":"):  # a mapping's header: address perms offset dev inode [path]
            path = head[5] if len(head) > 5 else ""
            if path.startswith(str(store)):
                name = "store: " + Path(path).name
            elif path.startswith("/") and ".so" in path:
                name = "shared libraries"
            elif path.startswith("/"):
                name = "other files"
            else:
                name = "anonymous"  # heap, stack, anonymous mappings
        elif head and head[0] in ("Rss:", "Anonymous:"):
            group = groups.setdefault(name, {"rss_mib": 0.0, "anon_mib": 0.0})
            group["rss_mib" if head[0] == "Rss:" else "anon_mib"] += int(head[1]) / 1024
    return {
        k: {f: round(v, 1) for f, v in g.items()} for k, g in sorted(groups.items(), key=lambda kv: -kv[1]["rss_mib"])
    }


def server_pid() -> int:
    """The granrag-mcp child of this process (the stdio client spawned it)."""
    children = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        children += (task / "children").read_text().split()
    for pid in children:
        if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return int(pid)
    raise RuntimeError("the server process was not found")


async def session(store: Path, questions: list[str], calls: int, errlog_path: Path) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import stdio_client

    block = calls + WARMUP
    slices = {tool: questions[slot * block : (slot + 1) * block] for slot, tool in enumerate(TOOLS[:3])}
    out: dict[str, Any] = {"memory": {}}
    with open(errlog_path, "w") as errlog:
        began = time.perf_counter()
        async with Client(stdio_client(server_params(store), errlog=errlog), mode="legacy") as client:
            out["initialize_s"] = round(time.perf_counter() - began, 2)
            pid = server_pid()
            out["memory"]["after_initialize"] = proc_memory(pid)
            first, _ = await call(client, "search_narrow", {"query": questions[-1]})
            out["first_search_narrow_s"] = round(first, 2)
            out["memory"]["after_first_search"] = proc_memory(pid)
            narrow_ids: list[str] = []
            for tool in TOOLS:
                times = []
                for number in range(block):
                    if tool == "expand_window":
                        arguments = {"chunk_id": narrow_ids[number % len(narrow_ids)]}
                    else:
                        arguments = {"query": slices[tool][number]}
                    seconds, content = await call(client, tool, arguments)
                    if tool == "search_narrow":
                        narrow_ids += [hit["chunk_id"] for hit in content.get("hits", [])[:2]]
                    if number >= WARMUP:
                        times.append(seconds)
                out[tool] = _common.latency_summary(times)
                out["memory"][f"after_{tool}"] = proc_memory(pid)
                log(
                    f"{tool}: p50 {out[tool]['p50_ms']} ms, p95 {out[tool]['p95_ms']} ms; "
                    f"server {out['memory'][f'after_{tool}']}"
                )
            out["memory"]["at_end"] = proc_memory(pid)
            out["smaps_at_end"] = smaps_breakdown(pid, store)
    return out


# recall and sizes


def narrow_recall(store: Path) -> dict[str, Any]:
    import faiss

    from granrag_mcp.store.store import read_current, vector_file
    from granrag_mcp.store.vector_index import VectorIndex

    faiss.omp_set_num_threads(1)
    pointer = read_current(store)
    index = VectorIndex.read(store / pointer.generation / vector_file("narrow"))
    truth = np.load(store.parent / "truth.npz")
    out: dict[str, Any] = {
        "kind": index.kind,
        "storage": getattr(index, "storage", "fp32"),
        "ef_search": index.ef_search,
    }
    for name in ("questions", "mixture"):
        out[name] = _common.recall_and_latency(index.search, truth[f"q_{name}"], truth[f"t_{name}"], K)
    return out


def bm25_sizes(store: Path) -> dict[str, float]:
    """MiB of the arrays of each level's BM25 index, and its number of terms."""
    from granrag_mcp.store.lexical import ARRAYS, array_files
    from granrag_mcp.store.store import lexical_file, read_current

    folder = store / read_current(store).generation
    out = {}
    for level in ("broad", "mid", "narrow"):
        files = array_files(folder / lexical_file(level))
        arrays = {name: np.load(file, mmap_mode="r") for name, file in zip(ARRAYS, files)}
        out[level] = round(sum(array.nbytes for array in arrays.values()) / 2**20, 1)
        out[f"{level}_vocabulary_terms"] = int(arrays["vocabulary"].shape[0])
    return out


def store_files(store: Path) -> dict[str, int]:
    from granrag_mcp.store.store import read_current

    folder = store / read_current(store).generation
    return {p.name: p.stat().st_size for p in sorted(folder.iterdir())}


# driver


def log(message: str) -> None:
    print(f"[bench_scale_server] {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep-dir", type=Path, required=True, help="where the store and its side files live")
    parser.add_argument("--reuse", action="store_true", help="use the store already in --keep-dir")
    parser.add_argument(
        "--rewrite-vectors",
        action="store_true",
        help="publish a new generation whose vector files the current code rebuilds",
    )
    parser.add_argument(
        "--reencode",
        action="store_true",
        help="with --rewrite-vectors: read the current vector files and write them again instead",
    )
    parser.add_argument(
        "--rewrite-lexical",
        action="store_true",
        help="publish a new generation whose BM25 files the current code rebuilds from the catalog",
    )
    parser.add_argument("--narrow", type=int, default=1_000_000)
    parser.add_argument("--calls", type=int, default=200, help="measured calls per tool")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="default")
    parser.add_argument("--name", default="scale_server")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    _common.offline_env()
    keep = args.keep_dir.resolve()
    keep.mkdir(parents=True, exist_ok=True)
    store = keep / "store"
    info = _common.machine()
    row: dict[str, Any] = {"label": args.label, "machine": info, "git": _common.git_revision()}

    if not args.reuse:
        log(f"building {args.narrow} narrow chunks into {store} (load {info['load_at_start']}) ...")
        row["build"] = build_store(keep, args.narrow, args.seed)
        (keep / "build.json").write_text(json.dumps(row["build"]))
    else:
        row["build"] = {**json.loads((keep / "build.json").read_text()), "reused": True}
    if args.rewrite_vectors:
        log("rewriting the vector files in a new generation ...")
        row["rewrite"] = {**rewrite_vectors(keep, args.seed, args.reencode), "reencode": args.reencode}
    if args.rewrite_lexical:
        log("rewriting the BM25 files in a new generation ...")
        row["rewrite_lexical"] = rewrite_lexical(keep)
    row["load_before_session"] = _common.load_average()
    row["store_files"] = store_files(store)
    row["bm25_in_memory_mib"] = bm25_sizes(store)

    _, questions = squad_corpus.load()
    texts = [q.question for q in questions]
    random.Random(args.seed).shuffle(texts)
    log(f"server session over {store} ...")
    row["session"] = asyncio.run(session(store, texts, args.calls, keep / f"server-{args.label}.log"))
    row["load_after_session"] = _common.load_average()
    row["narrow_recall"] = narrow_recall(store)
    row["load_at_end"] = _common.load_average()
    log(json.dumps(row["narrow_recall"]))

    if not args.no_save:
        target = _common.RESULTS / f"{args.name}.json"
        saved = json.loads(target.read_text()) if target.exists() else {"benchmark": "scale_server", "runs": {}}
        saved["runs"][args.label] = row
        _common.save_result(args.name, saved)
    _common.emit(row)


if __name__ == "__main__":
    main()
