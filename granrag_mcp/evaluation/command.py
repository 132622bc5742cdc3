"""The `granrag-mcp eval` run: the QA set, the corpus in the store, every strategy on every question, the report.

Its arguments are in `arguments.py`. Heavy modules are imported inside `cmd_eval`, so `--help` stays instant.
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

from granrag_mcp.embedding.queries import embed_queries
from granrag_mcp.evaluation.arguments import EVAL_EXTRA, strategy_list
from granrag_mcp.levels import FINEST, LEVELS, parent_of

log = logging.getLogger("granrag_mcp.evaluation")


def readapted(engine: Engine, view: View, reference: Path) -> View:
    """The view with its ranking adapted against another reference (the store is not changed)."""
    from granrag_mcp.indexing.adapt import Reference, adapt
    from granrag_mcp.retrieval.view import View

    base = engine.candidate_rankers.for_snapshot(view.snapshot, use_adaptation=False)
    plain = View(view.snapshot, view.embedder, view.reranker, candidate_ranker=base)
    adaptation = adapt(plain, reference=Reference.read(reference))
    log.info("adapted against %s: %s", reference, adaptation.measured)
    ranker = engine.candidate_rankers.for_snapshot(view.snapshot, adaptation=adaptation)
    return View(
        view.snapshot,
        view.embedder,
        view.reranker,
        candidate_ranker=ranker,
        adaptation=adaptation,
        per_generation=view.per_generation,
    )


# --- the run -----------------------------------------------------------------------------------------------


def extra_modules(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(module, what needs it and what else to do) for each module of the eval extra this run imports."""
    needed = []
    if not args.no_chart:
        needed.append(("matplotlib", "the chart needs matplotlib: install the eval extra ({}), or pass --no-chart"))
    if args.fit_ranker:
        needed.append(("sklearn", "--fit-ranker needs scikit-learn: install the eval extra ({})"))
    return needed


def _check_extra_dependencies(args: argparse.Namespace) -> None:
    """Fail before the corpus is indexed, in one line that names the install, when an extra's module is missing."""
    import importlib

    from granrag_mcp.errors import InvalidInputError

    for module, message in extra_modules(args):
        try:
            importlib.import_module(module)
        except ImportError:
            raise InvalidInputError(message.format(EVAL_EXTRA)) from None


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


def _machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"


def _command_line() -> str:
    return "granrag-mcp " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "granrag-mcp eval"


def set_name(path: Path) -> str:
    """A QA set's name in the folders of a run over several sets: its file name without the suffix."""
    return path.stem


def cmd_eval(args: argparse.Namespace, settings) -> int:
    """Evaluate each QA set into its own table: one --squad file as it is, several each in its own store and
    report folder under --store and --out, named after the file."""
    from granrag_mcp.errors import InvalidInputError

    files = args.squad if isinstance(args.squad, list) else [args.squad] if args.squad is not None else []
    if len(files) <= 1:
        return evaluate_set(argparse.Namespace(**{**vars(args), "squad": files[0] if files else None}), settings)
    names = [set_name(path) for path in files]
    if len(set(names)) < len(names):
        raise InvalidInputError(f"the --squad files {names} need different names: each gets a store of its name")
    if args.fit_ranker:
        raise InvalidInputError("--fit-ranker fits on one QA set: pass one --squad file")
    out = args.out or Path("reports") / f"eval-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    for path, name in zip(files, names):
        print(f"\n{path.name} (store {settings.store / name})")
        code = evaluate_set(
            argparse.Namespace(
                **{
                    **vars(args),
                    "squad": path,
                    "out": out / name,
                    "corpus_dir": args.corpus_dir / name if args.corpus_dir is not None else None,
                }
            ),
            settings.model_copy(update={"store": settings.store / name}),
        )
        if code:
            return code
    return 0


def evaluate_set(args: argparse.Namespace, settings) -> int:
    """The run on one QA set (`args.squad` one file or None)."""
    from granrag_mcp.embedding.factory import make_embedder
    from granrag_mcp.engine import Engine, with_store_model
    from granrag_mcp.errors import InvalidInputError, StoreNotFoundError
    from granrag_mcp.evaluation.graph_questions import graph_report
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
        STRATEGY_NOTES,
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
    from granrag_mcp.store.vector_index import search_threads

    started_at = datetime.now().astimezone().isoformat(timespec="seconds")
    began = time.perf_counter()
    timings: dict[str, float] = {}
    progress = Progress(enabled=not args.quiet, interval=2.0)
    strategies = args.strategies if isinstance(args.strategies, list) else strategy_list(args.strategies)
    if args.qa is not None and (args.articles or args.corpus_dir):
        raise InvalidInputError("--articles and --corpus-dir only apply to --squad")
    _check_extra_dependencies(args)
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
    settings = with_store_model(settings)  # `auto`: the model the store's text chose
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
    vectors = embed_queries(embedder, texts, progress=progress.callback("embedding questions"))
    timings["embedding questions"] = time.perf_counter() - t
    if reranker is not None and uses_embedding_fallback(reranker):
        t = time.perf_counter()
        reranked = parent_of(FINEST)  # HRR reranks the chunks that hold its sentences
        assert reranked is not None
        mids = catalog.chunks_of_level(reranked)
        progress.message(
            f"embedding the reranker's windows of all {len(mids)} {reranked} chunks once for the whole run "
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
    # One FAISS thread while questions run one at a time: waking its pool costs more than one search's work.
    with search_threads(1):
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
        graph_result = graph_report(engine, settings, args.bridge_questions, args.seed, progress, notes)
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
            "chunks": {level: manifest.counts.get(level, 0) for level in LEVELS},
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
