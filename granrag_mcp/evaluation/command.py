"""The `granrag-mcp eval` command: retrieval quality of every strategy on a QA set, in one run.

Wiring into cli.py: call `add_eval_parser(commands)` in `build_parser()` and map "eval" to `cmd_eval` in
`main()`. The flags --store, --model, --vector-mode, --reranker, --cross-encoder and --batch-size use the
attribute names of cli's `_SETTING_FLAGS`, so `load_settings(args)` turns them into Settings fields.
Heavy modules are imported inside `cmd_eval`, so `--help` stays instant.

Longer than most modules because it is one command: its arguments, the store it builds or reuses, the run
and the report.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shlex
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from granrag_mcp.engine import Engine
    from granrag_mcp.retrieval.view import View

log = logging.getLogger("granrag_mcp.evaluation")

STRATEGY_NOTES = {
    "Base": "broad dense index only (`View.search`, level broad); mid column: the mid dense index (level mid).",
    "BM25": "the BM25 index of the level alone.",
    "Level": "`search_level` with the store's adapted dense and BM25 weights (the default of search_broad, and of "
    "search_narrow at level mid).",
    "C2P": "narrow, mid and broad dense hits mapped to their broad ancestor and merged by max score; mid column: "
    "narrow and mid hits mapped to mid, the top broad hits to their best-matching mid descendant, max score.",
    "S2P": "sentence (narrow) dense hits mapped to their broad (mid) ancestors, in order of first occurrence.",
    "Union": "`View.search_union(k=10)` (broad + sentences, what a caller asking for 10 hits gets): a sentence "
    "counts as its broad ancestor; mid column: a sentence counts as its mid parent, a broad hit as its "
    "best-matching mid descendant. Not over-fetched: a deeper call changes the head of the list.",
    "RRF": "`View.search_rrf(k=10)` (dense + BM25 over the broad and narrow levels, lists 30 deep), level broad / "
    "level mid.",
    "HRR": "`View.hrr_search` (30 sentences and 10 mids, 20 mid candidates reranked, mapped to broad parents); "
    "mid column: the reranked mid candidates.",
}

DESCRIPTION = """\
Measure retrieval quality on a QA set: for every strategy (Base, C2P, S2P, Union, RRF, HRR), the hit rate
HR@k and mean reciprocal rank MRR@k (k = 1, 3, 5, 10) at the broad and at the mid level. A question hits at a
level when a returned chunk of that level is in the answer's document and contains the answer's first
character. All strategies run through the same retrieval core as the MCP tools, and each question is
embedded once.

With --squad FILE the corpus (one document per article, <title>.txt, paragraphs joined by a blank line) is
indexed into --store first when the store does not hold it yet, so the whole evaluation is one command.
With --qa FILE.jsonl the store must already hold the documents the questions name.

When the store has a concept graph, a second table compares the graph tools with flat search on questions
built from the corpus itself (docs/evaluation.md): bridge questions ("How is A connected to B?", two concepts
that never share a sentence) and one overview question per document; --skip-graph leaves it out.

The table goes to stdout; a report folder (--out) receives report.md, metrics.json, per_query.jsonl and a
PNG chart of the broad-level metrics. Progress goes to stderr.
"""

EPILOG = """\
examples:
  granrag-mcp eval --squad squad-dev.json --store /tmp/eval-store
  granrag-mcp eval --squad squad-dev.json --store /tmp/eval-store --sample 500 --seed 1
  granrag-mcp eval --squad squad-dev.json --store /tmp/eval-store-windows --vector-mode windows
  granrag-mcp eval --qa questions.jsonl --store ./index_store --strategies base,rrf,hrr --skip-graph

JSONL lines: {"question": "...", "doc_id": "<document id in the store>", "answer_start": 120,
"answer_end": 134} (character offsets into the document text; optional "id" and "answer" fields, the
answer text being checked against the document).
"""


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def readapted(engine: Engine, view: View, reference: Path) -> View:
    """The view with its ranking adapted against another reference (the store is not changed)."""
    from granrag_mcp.retrieval.ranking.adapt import Reference, adapt
    from granrag_mcp.retrieval.view import View

    base = engine.candidate_rankers.for_snapshot(view.snapshot, use_adaptation=False)
    plain = View(view.snapshot, view.embedder, view.reranker, candidate_ranker=base)
    adaptation = adapt(plain, reference=Reference.read(reference))
    log.info("adapted against %s: %s", reference, adaptation.measured)
    ranker = engine.candidate_rankers.for_snapshot(view.snapshot, adaptation=adaptation)
    return View(view.snapshot, view.embedder, view.reranker, candidate_ranker=ranker, adaptation=adaptation)


def _strategy_list(value: str) -> list[str]:
    from granrag_mcp.evaluation.strategies import parse_strategies

    try:
        return parse_strategies(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_eval_parser(
    subparsers: argparse._SubParsersAction,
    parents: list[argparse.ArgumentParser] = (),  # type: ignore[assignment]
) -> argparse.ArgumentParser:
    """Add the "eval" command to the `granrag-mcp` subcommands and return its parser."""
    parser = subparsers.add_parser(
        "eval",
        parents=list(parents),
        help="measure retrieval quality (HR@k, MRR@k) on a SQuAD or JSONL QA set",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--squad",
        type=Path,
        metavar="FILE",
        help="QA set in SQuAD JSON format; its articles are indexed into --store if needed",
    )
    source.add_argument(
        "--qa",
        type=Path,
        metavar="FILE.jsonl",
        help="QA set as JSONL (question, doc_id, answer_start, answer_end per line) over the "
        "documents already in --store",
    )
    parser.add_argument(
        "--store",
        type=Path,
        help="index store folder (env GRANRAG_STORE, default ./index_store); "
        "with --squad use a dedicated one: the corpus is added to it",
    )
    parser.add_argument("--model", help="sentence-transformers model name or local path (env GRANRAG_MODEL)")
    parser.add_argument(
        "--vector-mode",
        choices=["mean", "truncate", "windows"],
        help="how mid and broad vectors are formed (env GRANRAG_VECTOR_MODE, default mean); must "
        "match the store, so each mode needs its own store",
    )
    parser.add_argument(
        "--reranker",
        help="reranker of HRR: auto, embedding, embedding-windows, cross-encoder, or a "
        "cross-encoder name or local path (env GRANRAG_RERANKER, default auto)",
    )
    parser.add_argument("--cross-encoder", help="cross-encoder tried by --reranker auto (env GRANRAG_CROSS_ENCODER)")
    parser.add_argument("--batch-size", type=int, help="most texts per embedding batch (default 256)")
    from granrag_mcp.cli_chunker import add_chunker_flags

    add_chunker_flags(parser)
    parser.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16"],
        help="embedding arithmetic (env GRANRAG_PRECISION, default auto)",
    )
    parser.add_argument("--out", type=Path, metavar="DIR", help="report folder (default reports/eval-<timestamp>)")
    parser.add_argument(
        "--sample",
        type=_positive_int,
        metavar="N",
        help="evaluate a random sample of N questions (default: all; use all for published numbers)",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of --sample (default 0)")
    parser.add_argument(
        "--articles",
        type=_positive_int,
        metavar="N",
        help="--squad only: use only the first N articles (corpus and questions)",
    )
    parser.add_argument(
        "--corpus-dir",
        type=Path,
        metavar="DIR",
        help="--squad only: write the corpus documents here and keep them (default: a temporary "
        "folder, removed after indexing)",
    )
    parser.add_argument(
        "--strategies",
        type=_strategy_list,
        metavar="LIST",
        default=",".join(STRATEGY_NOTES),
        help=f"comma-separated strategies to run (default all: {','.join(STRATEGY_NOTES)})",
    )
    parser.add_argument(
        "--adapt-reference",
        type=Path,
        metavar="FILE",
        help="adapt the store's ranking again, in memory, against this reference (the shares tuned on another "
        "corpus and its pseudo-query figures, as granrag_mcp/retrieval/ranking/reference.json): the "
        "cross-domain protocol of docs/evaluation.md",
    )
    parser.add_argument(
        "--fit-ranker",
        action="store_true",
        help="fit the candidate ranker on these questions instead of the strategy table; the store "
        "carries it if its cross-validated MRR@5 beats the shipped ranker's (needs scikit-learn)",
    )
    parser.add_argument(
        "--skip-graph",
        action="store_true",
        help="skip the concept graph's bridge and overview questions (run by default when the store has a graph)",
    )
    parser.add_argument(
        "--bridge-questions",
        type=_positive_int,
        default=200,
        metavar="N",
        help="bridge questions built from the concept graph (default 200)",
    )
    parser.add_argument(
        "--no-chart", action="store_true", help="skip the PNG chart (it needs matplotlib, the 'eval' extra)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


# --- the run -----------------------------------------------------------------------------------------------


def _check_chart_dependency(args: argparse.Namespace) -> None:
    from granrag_mcp.errors import InvalidInputError

    if args.no_chart:
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InvalidInputError(
            "the chart needs matplotlib: install the eval extra (pip install 'granrag-mcp[eval]'), or pass --no-chart"
        ) from None


def _stored_texts(store: Path, doc_ids: list[str]) -> tuple[dict[str, str | None], int] | None:
    """Texts the store holds for `doc_ids` and its document count; None when there is no index yet."""
    from granrag_mcp.store.store import Snapshot, read_current

    if read_current(store) is None:
        return None
    snapshot = Snapshot.open(store)
    try:
        catalog = snapshot.catalog
        return {doc_id: catalog.document_text(doc_id) for doc_id in doc_ids}, catalog.count_documents()
    finally:
        snapshot.close()


def _ensure_corpus(documents: dict[str, str], settings, args: argparse.Namespace, progress) -> dict[str, Any]:
    """Index the SQuAD corpus into the store unless it holds every document with the same text already."""
    from granrag_mcp.engine import run_index
    from granrag_mcp.evaluation.qa import write_corpus

    held = _stored_texts(settings.store, list(documents))
    stale = list(documents) if held is None else [d for d, text in documents.items() if held[0][d] != text]
    if not stale:
        progress.message(f"the store {settings.store} already holds the {len(documents)} corpus documents")
        return {"indexed": False}
    progress.message(f"indexing {len(stale)} of {len(documents)} corpus documents into {settings.store}")
    began = time.perf_counter()
    if args.corpus_dir is not None:
        write_corpus(documents, args.corpus_dir)
        summary = run_index([args.corpus_dir], settings, quiet=args.quiet)
    else:
        with tempfile.TemporaryDirectory(prefix="granrag-eval-corpus-") as folder:
            write_corpus(documents, Path(folder))
            summary = run_index([Path(folder)], settings, quiet=args.quiet)
    seconds = time.perf_counter() - began
    if summary.failed:
        from granrag_mcp.errors import InvalidInputError

        raise InvalidInputError(f"indexing the corpus failed for {summary.failed}")
    return {
        "indexed": True,
        "seconds": seconds,
        "stages": summary.seconds,
        "added": summary.added,
        "updated": summary.updated,
        "new_chunks": summary.new_chunks,
    }


def _single_threaded_faiss() -> int | None:
    """One query at a time: FAISS's OpenMP threads cost more than they save (measured 8-16 ms instead of 0.3 ms
    per flat search of 5,472 vectors on 2 cores). The results are identical; returns the previous setting."""
    try:
        import faiss
    except ImportError:  # pragma: no cover - faiss is a dependency
        return None
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    return previous


def _restore_faiss_threads(previous: int | None) -> None:
    if previous is not None:
        import faiss

        faiss.omp_set_num_threads(previous)


def _machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"


def _command_line() -> str:
    return "granrag-mcp " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "granrag-mcp eval"


def _graph_questions(view, tokens, n_bridges: int, seed: int, progress, notes: list[str]) -> dict[str, Any] | None:
    """The bridge and overview questions of `graph_questions`, or None with a note when the store has no graph."""
    from granrag_mcp.evaluation.graph_questions import evaluate
    from granrag_mcp.retrieval.graph import NoGraphError

    progress.message(f"concept graph: {n_bridges} bridge questions and one overview question per document")
    try:
        return evaluate(view, tokens, n_bridges, seed)
    except NoGraphError:
        notes.append("the store has no concept graph (indexed with GRANRAG_GRAPH=false): no bridge or overview table")
        return None


def cmd_eval(args: argparse.Namespace, settings) -> int:
    from granrag_mcp.engine import Engine, make_embedder
    from granrag_mcp.errors import InvalidInputError, StoreNotFoundError
    from granrag_mcp.evaluation.metrics import first_hit_rank
    from granrag_mcp.evaluation.qa import (
        check_offsets,
        load_jsonl,
        load_squad,
        sample_questions,
    )
    from granrag_mcp.evaluation.report import format_table, summarise_all, write_report
    from granrag_mcp.evaluation.strategies import (
        EVAL_LEVELS,
        NEEDED,
        CachedEmbedder,
        MemoReranker,
        StrategyRunner,
        prime_reranker,
        uses_embedding_fallback,
    )
    from granrag_mcp.progress import Progress
    from granrag_mcp.rerankers import load_reranker
    from granrag_mcp.retrieval.view import check_query
    from granrag_mcp.store.store import read_current

    started_at = datetime.now().astimezone().isoformat(timespec="seconds")
    began = time.perf_counter()
    timings: dict[str, float] = {}
    progress = Progress(enabled=not args.quiet, interval=2.0)
    strategies = args.strategies if isinstance(args.strategies, list) else _strategy_list(args.strategies)
    if args.qa is not None and (args.articles or args.corpus_dir):
        raise InvalidInputError("--articles and --corpus-dir only apply to --squad")
    _check_chart_dependency(args)
    out = args.out or Path("reports") / f"eval-{datetime.now().strftime('%Y%m%d-%H%M%S')}"

    # 1. The QA set, and the corpus in the store.
    qa = load_squad(args.squad, args.articles) if args.squad is not None else load_jsonl(args.qa)
    progress.message(
        f"{len(qa.questions)} questions from {qa.source}"
        + (f" ({len(qa.documents)} documents)" if qa.documents else "")
    )
    indexing: dict[str, Any] = {"indexed": False}
    if qa.documents:
        indexing = _ensure_corpus(qa.documents, settings, args, progress)
        if indexing["indexed"]:
            timings["indexing"] = indexing["seconds"]
    elif read_current(settings.store) is None:
        raise StoreNotFoundError(
            f"no index at {settings.store}: --qa needs a store that holds the documents its "
            "questions name (build one with `granrag-mcp index`)"
        )

    # 2. The engine, with the caching embedder and the memoising reranker in front of the models.
    t = time.perf_counter()
    embedder = CachedEmbedder(make_embedder(settings))
    reranker = None
    if "HRR" in strategies or args.fit_ranker:
        reranker = MemoReranker(load_reranker(settings.reranker, embedder, settings.cross_encoder))
    engine = Engine(settings, embedder=embedder, reranker=reranker, load_reranker_now=False)
    view = engine.view()
    if args.adapt_reference is not None:
        view = readapted(engine, view, args.adapt_reference)
    catalog = view.snapshot.catalog
    timings["loading models"] = time.perf_counter() - t

    # 3. Answer offsets against the stored texts; documents beyond the QA corpus.
    doc_ids = sorted({q.doc_id for q in qa.questions})
    stored = {d: catalog.document_text(d) for d in doc_ids}
    absent = [d for d, text in stored.items() if text is None]
    if absent:
        shown = ", ".join(absent[:5]) + (f" and {len(absent) - 5} more" if len(absent) > 5 else "")
        raise InvalidInputError(
            f"the store {settings.store} does not hold the document(s) {shown} named by the "
            "QA set; index them first (doc_id is the path relative to the indexed folder)"
        )
    check_offsets(qa.questions, stored)  # type: ignore[arg-type]
    notes: list[str] = []
    n_docs = catalog.count_documents()
    corpus_size = len(qa.documents) if qa.documents else len(doc_ids)
    if qa.documents and n_docs > corpus_size:
        notes.append(
            f"the store holds {n_docs - corpus_size} documents beyond the QA corpus; they compete in "
            "retrieval, so these numbers are not comparable with a store of the corpus alone"
        )
        log.warning(notes[-1])

    # 4. The questions: sample, validate, embed once.
    questions = sample_questions(qa.questions, args.sample, args.seed)
    texts = []
    for q in questions:
        try:
            texts.append(check_query(q.question))
        except InvalidInputError as exc:
            raise InvalidInputError(f"question {q.qid}: {exc}") from None
    t = time.perf_counter()
    vectors = embedder.embed(texts, progress=progress.callback("embedding questions"))
    timings["embedding questions"] = time.perf_counter() - t
    if reranker is not None and uses_embedding_fallback(reranker):
        t = time.perf_counter()
        mids = catalog.chunks_of_level("mid")
        progress.message(
            f"embedding the reranker's windows of all {len(mids)} mid chunks once for the whole run "
            "(embedding fallback; this takes a few minutes on a small CPU)"
        )
        prime_reranker(reranker, [c.text for c in mids])
        timings["embedding reranker windows"] = time.perf_counter() - t

    if args.fit_ranker:  # the candidate ranker's fit replaces the strategy table
        from granrag_mcp.evaluation.fit_ranker import run_fit

        _, text = run_fit(
            view,
            questions,
            vectors,
            settings.store,
            f"{qa.source.name} ({len(questions)} questions)",
            progress.callback("fitting the candidate ranker"),
        )
        print(text)
        return 0

    # 5. Every strategy on every question.
    runner = StrategyRunner(view, strategies)
    ranks: dict[str, dict[str, list[int | None]]] = {s: {level: [] for level in EVAL_LEVELS} for s in strategies}
    rows: list[dict[str, Any]] = []
    t = time.perf_counter()
    threads = _single_threaded_faiss()
    try:
        for number, (q, text, vector) in enumerate(zip(questions, texts, vectors), 1):
            rankings = runner.run(text, vector)
            row: dict[str, Any] = {
                "id": q.qid,
                "question": q.question,
                "doc_id": q.doc_id,
                "answer_start": q.answer_start,
                "answer_end": q.answer_end,
                "answer": q.answer,
                "strategies": {},
            }
            for name, ranking in rankings.items():
                entry = {}
                for level in EVAL_LEVELS:
                    top = ranking[level][:NEEDED]
                    rank = first_hit_rank(runner.spans(top), q.doc_id, q.answer_start)
                    ranks[name][level].append(rank)
                    entry[level] = {"rank": rank, "top": runner.public_ids(top)}
                row["strategies"][name] = entry
            rows.append(row)
            progress.update("evaluating questions", number, len(questions))
    finally:
        _restore_faiss_threads(threads)
    timings["retrieval (all strategies)"] = time.perf_counter() - t
    for name, seconds in runner.seconds.items():
        timings[f"retrieval: {name}"] = seconds
    if runner.hrr_mismatches:
        notes.append(
            f"for {runner.hrr_mismatches} questions the HRR mid list, mapped to broad parents, differs from "
            "hrr_search's broad list (span dedupe of the parents)"
        )

    # 6. The concept graph against flat search: bridge and overview questions built from the store.
    graph_result = None
    if not args.skip_graph:
        t = time.perf_counter()
        graph_result = _graph_questions(view, engine.tokenizer, args.bridge_questions, args.seed, progress, notes)
        timings["graph questions"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - began

    # 7. Outputs.
    summary = summarise_all(ranks)
    manifest = view.snapshot.manifest
    meta: dict[str, Any] = {
        "run": {
            "command": _command_line(),
            "started": started_at,
            "machine": _machine(),
            "qa_file": str(qa.source),
            "qa_format": qa.format,
            "articles": args.articles,
            "questions_total": len(qa.questions),
            "questions_evaluated": len(questions),
            "sampled": len(questions) < len(qa.questions),
            "sample": args.sample,
            "seed": args.seed,
            "strategies": strategies,
        },
        "store": {
            "path": str(settings.store),
            "generation": manifest.generation,
            "documents": n_docs,
            "chunks": {level: manifest.counts.get(level, 0) for level in ("broad", "mid", "narrow")},
            "model": manifest.identity.model,
            "dimension": manifest.identity.dimension,
            "vector_mode": manifest.identity.vector_mode,
            "tokenizer": manifest.identity.tokenizer,
            "chunking": manifest.identity.chunking.model_dump(),
        },
        "reranker": reranker.name if reranker is not None else None,
        "embedding_precision": getattr(embedder.inner, "precision", None),
        "indexing": indexing,
        "timings": timings,
        "embedding_calls": {"texts embedded by the model during the evaluation": embedder.model_texts},
        "strategy_notes": {s: STRATEGY_NOTES[s] for s in strategies},
        "graph": graph_result,
        "notes": notes,
    }
    paths = write_report(out, summary, meta, rows, chart=not args.no_chart)
    print(format_table(summary))
    if graph_result is not None:
        from granrag_mcp.evaluation.graph_questions import graph_table

        print("\n" + graph_table(graph_result))
    progress.message(f"{len(questions)} questions in {timings['total']:.0f} s; report in {paths['report'].parent}")
    return 0
