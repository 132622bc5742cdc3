"""The `granrag-mcp` command: index, status, search, recover, serve.

Heavy modules are imported inside the commands, after the arguments are parsed, so `--help` is instant.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from granrag_mcp import __version__
from granrag_mcp.cli_chunker import add_chunker_flags
from granrag_mcp.cli_library import add_library_flag, add_watch_flag, check_library
from granrag_mcp.embedding.choice import MODEL_HELP
from granrag_mcp.errors import GranragError
from granrag_mcp.indexing.formats import format_list
from granrag_mcp.levels import FINEST, LEVELS, level_list
from granrag_mcp.settings import offline_models

log = logging.getLogger("granrag_mcp")


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", type=Path, help="index store folder (env GRANRAG_STORE, default ./index_store)")


def _add_model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        help=MODEL_HELP,
    )
    parser.add_argument(
        "--vector-mode",
        choices=["mean", "truncate", "windows"],
        help="how mid and broad vectors are formed (env GRANRAG_VECTOR_MODE, default mean)",
    )
    parser.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16", "fp16"],
        help="embedding arithmetic (env GRANRAG_PRECISION, default auto: bf16 where the CPU has it natively; on a "
        "GPU bf16 where it has it, else fp16)",
    )
    parser.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        help="where the embedding model runs (env GRANRAG_DEVICE, default auto: the GPU where torch sees one)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="granrag-mcp",
        description="Dual-granular and hierarchical retrieval over persistent FAISS indices, as an MCP server.",
    )
    parser.add_argument("--version", action="version", version=f"granrag-mcp {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="stderr log level")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_command(name: str, **options: Any) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[common], **options)

    index = add_command(
        "index",
        help="index files and folders (incremental)",
        description=f"Index {format_list('and')} files (folders are walked recursively) into {level_list('and')} "
        "chunks with FAISS and BM25 indices. Re-running re-embeds only new or changed documents.",
    )
    index.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders to index")
    _add_store(index)
    _add_model(index)
    index.add_argument("--prune", action="store_true", help="remove documents that are no longer under PATH")
    index.add_argument("--rebuild", action="store_true", help="start over: ignore the current index")
    index.add_argument("--broad-tokens", type=int, help="tokens per broad chunk (default 2048)")
    index.add_argument("--broad-overlap", type=int, help="tokens shared by consecutive broad chunks (default 200)")
    index.add_argument("--mid-tokens", type=int, help="tokens per mid chunk (default 512)")
    index.add_argument("--sentence-max-tokens", type=int, help="longer sentences are split (default 128)")
    add_chunker_flags(index)
    index.add_argument("--batch-size", type=int, help="most texts per embedding batch (default 256)")
    index.add_argument("--embed-workers", type=int, help="embedding batches run side by side (default: one per core)")
    index.add_argument(
        "--token-vectors",
        action="store_true",
        default=None,
        help="also store each sentence's token vectors for MaxSim in the candidate ranker (env GRANRAG_TOKEN_VECTORS)",
    )
    index.add_argument("--token-vector-dims", type=int, help="dimensions of each stored token vector (default 96)")
    index.add_argument(
        "--graph",
        action=argparse.BooleanOptionalAction,
        help="build the concept graph of the graph tools (env GRANRAG_GRAPH, default on); --no-graph skips it",
    )
    index.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    index.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local (this process) or ray: extract, chunk and embed on a Ray cluster (needs the [ray] extra)",
    )
    index.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --engine ray: auto (the running cluster) or ray://host:port (default: RAY_ADDRESS, else a local "
        "cluster on this machine)",
    )
    index.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_watch_flag(index)

    status = add_command(
        "status",
        help="show what the index holds",
        description="Documents, chunks per level, model, size on disk and generation of the current index.",
    )
    _add_store(status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")

    search = add_command(
        "search",
        help="search the index from a terminal",
        description="Search one level of the index and print the hits.",
    )
    search.add_argument("query", help="what to look for")
    _add_store(search)
    _add_model(search)
    search.add_argument("--level", choices=LEVELS, default=FINEST, help=f"level (default {FINEST})")
    search.add_argument("-k", type=int, default=5, help="number of hits (1-100, default 5)")
    search.add_argument("--lexical", action="store_true", help="fuse BM25 with the dense hits (RRF)")
    search.add_argument("--json", action="store_true", help="print hits as JSON")

    recover = add_command(
        "recover",
        help="fall back to the previous intact generation",
        description="Make the newest intact generation older than the current one current again "
        "(after the current one was damaged).",
    )
    _add_store(recover)

    from granrag_mcp.evaluation.arguments import add_eval_parser

    add_eval_parser(commands, parents=[common])
    serve = add_command(
        "serve",
        help="run the MCP server (stdio or streamable HTTP)",
        description="Serve the index to MCP clients. Read-only unless --allow-write.",
    )
    _add_store(serve)
    _add_model(serve)
    serve.add_argument("--transport", choices=["stdio", "http"], help="MCP transport (default stdio)")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument("--threads", type=int, help="CPU threads inside one query (env GRANRAG_THREADS, default 1)")
    serve.add_argument(
        "--reranker", help="auto, embedding, embedding-windows, cross-encoder, or a cross-encoder name or local path"
    )
    serve.add_argument("--cross-encoder", help="cross-encoder tried by --reranker auto (name or local path)")
    serve.add_argument(
        "--allow-write",
        action="store_true",
        default=None,
        help="offer the tools that index and remove documents (env GRANRAG_ALLOW_WRITE, default off)",
    )
    serve.add_argument(
        "--allowed-roots",
        metavar="DIRS",
        help=f"with --allow-write: folders the agent may index, joined by {os.pathsep!r}; the client's MCP roots "
        "are asked only when none are given (env GRANRAG_ALLOWED_ROOTS)",
    )
    add_library_flag(serve)
    serve.add_argument(
        "--index-if-empty",
        type=Path,
        metavar="PATH",
        help="if the store holds no index yet, index PATH first (the README's run command uses docs/)",
    )
    return parser


def load_settings(args: argparse.Namespace):
    from granrag_mcp.settings import Settings

    # Every flag that sets a setting is named after its field; the other flags are not fields.
    overrides = {name: getattr(args, name) for name in Settings.model_fields if getattr(args, name, None) is not None}
    return Settings(**overrides)


def _configure_logging(level: str) -> None:
    from granrag_mcp.log_format import OneLineFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter("[granrag] %(levelname)s %(message)s"))
    logging.basicConfig(level=getattr(logging, level), handlers=[handler])
    for noisy in ("sentence_transformers", "transformers", "httpx", "faiss", "watchfiles"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    offline_models()
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(args)
        _configure_logging(settings.log_level)
        handler = {
            "index": cmd_index,
            "status": cmd_status,
            "search": cmd_search,
            "recover": cmd_recover,
            "serve": cmd_serve,
            "eval": cmd_eval,
        }[args.command]
        return handler(args, settings) or 0
    except GranragError as exc:
        print(f"granrag-mcp: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # stdout's reader left (`status | head`): no file-system fault to report as one
        raise
    except OSError as exc:  # the file system refused something no command anticipated: still the user's to fix
        log.debug("unexpected file system error", exc_info=True)
        where = f" on {exc.filename}" if exc.filename else ""
        print(
            f"granrag-mcp: error: {exc.strerror or exc}{where}; check that the path exists and that this user may "
            f"read it (and, for `index` and `recover`, write it)",
            file=sys.stderr,
        )
        return 1
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or 'settings'}: {e['msg']}" for e in exc.errors())
        print(f"granrag-mcp: error: invalid settings: {problems}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("granrag-mcp: interrupted", file=sys.stderr)
        return 130


def cmd_index(args: argparse.Namespace, settings) -> int:
    from granrag_mcp.engine import run_index

    if args.ray_address is not None and args.engine != "ray":
        from granrag_mcp.errors import InvalidInputError

        raise InvalidInputError("--ray-address needs --engine ray")
    if args.watch:
        from granrag_mcp.cli_library import watch_library

        return watch_library(args, settings)
    summary = run_index(
        args.paths,
        settings,
        prune=args.prune,
        rebuild=args.rebuild,
        quiet=args.quiet,
        engine=args.engine,
        ray_address=args.ray_address,
    )
    for line in summary.stage_lines():  # where the time went, on stderr: stdout is the summary's (or its JSON)
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps({**summary.__dict__, "store": str(summary.store), "stages": summary.stage_table()}, indent=2))
        return 0
    state = (
        f"committed generation {summary.generation}"
        if summary.committed
        else (f"no changes; generation {summary.generation} stays current")
    )
    print(
        f"{state} in {summary.store}: {summary.added} added, {summary.updated} updated, {summary.unchanged} unchanged, "
        f"{summary.removed} removed, {len(summary.failed)} failed, {summary.unsupported} unsupported files skipped"
    )
    for path, reason in summary.failed:
        print(f"  failed: {path}: {reason}")
    return 0


def store_status(store: Path) -> dict[str, Any]:
    from granrag_mcp.store.store import Snapshot

    snapshot = Snapshot.open(store)
    try:
        manifest = snapshot.manifest
        size = sum(p.stat().st_size for p in Path(store).rglob("*") if p.is_file())
        return {
            "store": str(store),
            "generation": manifest.generation,
            "created_at": manifest.created_at,
            "documents": manifest.counts.get("documents", 0),
            "chunks": {level: manifest.counts.get(level, 0) for level in LEVELS},
            "languages": snapshot.catalog.language_counts(),
            "model": manifest.identity.model,
            "dimension": manifest.identity.dimension,
            "vector_mode": manifest.identity.vector_mode,
            "tokenizer": manifest.identity.tokenizer,
            "chunking": manifest.identity.chunking.model_dump(),
            "size_bytes": size,
        }
    finally:
        snapshot.close()


def cmd_status(args: argparse.Namespace, settings) -> int:
    status = store_status(settings.store)
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    chunks = status["chunks"]
    print(f"store       {status['store']}")
    print(f"generation  {status['generation']} (committed {status['created_at']})")
    print(f"documents   {status['documents']}")
    print("chunks      " + ", ".join(f"{level} {chunks[level]}" for level in LEVELS))
    print("languages   " + (", ".join(f"{code} {n}" for code, n in status["languages"].items()) or "none"))
    print(f"model       {status['model']} (dimension {status['dimension']}, vectors: {status['vector_mode']})")
    print(f"tokenizer   {status['tokenizer']} {status['chunking']}")
    print(f"size        {status['size_bytes'] / 1e6:.1f} MB")
    return 0


def cmd_search(args: argparse.Namespace, settings) -> int:
    from granrag_mcp.engine import Engine
    from granrag_mcp.errors import InvalidInputError
    from granrag_mcp.retrieval.citations import citation_line, cite_chunks
    from granrag_mcp.retrieval.level_search import search_level

    if not 1 <= args.k <= 100:
        raise InvalidInputError(f"-k must be between 1 and 100, got {args.k}")
    engine = Engine(settings, load_reranker_now=False)
    view = engine.view()
    hits = search_level(view, args.query, args.level, args.k, lexical=args.lexical)
    cited = cite_chunks(view, [h.chunk for h in hits])
    if args.json:
        rows = [
            {
                "chunk_id": h.chunk.public_id,
                "doc_id": h.chunk.doc_id,
                "start": h.chunk.start,
                "end": h.chunk.end,
                "score": h.score,
                "pages": list(pages) if (pages := cited[h.chunk.id].pages) else None,
                "section": list(cited[h.chunk.id].section),
                "sections": [list(path) for path in cited[h.chunk.id].sections],
                "text": h.chunk.text,
            }
            for h in hits
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for rank, hit in enumerate(hits, 1):
        c = hit.chunk
        snippet = " ".join(c.text.split())
        snippet = snippet if len(snippet) <= 300 else snippet[:297] + "..."
        where = citation_line(c.doc_id, cited[c.id])
        print(f"{rank:>2}. {c.public_id}  {where} [{c.start}:{c.end}]  score {hit.score:.3f}\n    {snippet}")
    if not hits:
        print("no hits")
    return 0


def cmd_eval(args: argparse.Namespace, settings) -> int:
    from granrag_mcp.evaluation.command import cmd_eval as run_eval

    return run_eval(args, settings)


def cmd_recover(args: argparse.Namespace, settings) -> int:
    from granrag_mcp.store.writer import StoreWriter

    with StoreWriter(settings.store, command="recover") as writer:
        name = writer.rollback()
    print(f"{name} is current again in {settings.store}")
    return 0


def cmd_serve(args: argparse.Namespace, settings) -> int:
    # numpy's BLAS sizes its thread pool when numpy is first imported, which the server's modules do: one thread
    # per tool call must be asked for before that, as run_server asks it of torch.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from granrag_mcp.store.store import read_current

    check_library(settings.library)

    if args.index_if_empty is not None and read_current(settings.store) is None:
        from granrag_mcp.engine import run_index  # the indexing pipeline only when there is something to index

        log.info("no index in %s yet: indexing %s first", settings.store, args.index_if_empty)
        run_index([args.index_if_empty], settings)
    from granrag_mcp.server.app import run_server

    run_server(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
