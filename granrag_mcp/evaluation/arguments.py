"""The arguments of `granrag-mcp eval`. Flags that set a setting (--store, --model, --vector-mode, --reranker,
--cross-encoder, --batch-size, the chunker's) are named after its Settings field, so `cli.load_settings` reads
them."""

from __future__ import annotations

import argparse
from pathlib import Path

from granrag_mcp.embedding.choice import MODEL_HELP

# Spelled here so building the CLI's parser imports no retrieval code; a test checks it against `STRATEGIES`.
ALL_STRATEGIES = "Base,BM25,Level,C2P,S2P,Union,RRF,HRR"
EVAL_EXTRA = "pip install 'granrag-mcp[eval]'"
"""The install of the modules only `eval` uses (the chart's matplotlib, `--fit-ranker`'s scikit-learn)."""

DESCRIPTION = """\
Measure retrieval quality on a QA set: for every strategy (Base, C2P, S2P, Union, RRF, HRR), the hit rate
HR@k and mean reciprocal rank MRR@k (k = 1, 3, 5, 10) at the broad and at the mid level. A question hits at a
level when a returned chunk of that level is in the answer's document and contains the answer's first
character. All strategies run through the same retrieval core as the MCP tools, and each question is
embedded once.

With --squad FILE the corpus (one document per article, <title>.txt, paragraphs joined by a blank line) is
indexed into --store first when the store does not hold it yet, so the whole evaluation is one command. With
several files each set is evaluated on its own, in its own store (STORE/<file name>), into its own table.
With --qa FILE.jsonl the store must already hold the documents the questions name.

When the store has a concept graph, a second table compares the graph tools with flat search on questions
built from the corpus itself (docs/evaluation.md): bridge questions ("How is A connected to B?", two concepts
that never share a sentence) and one overview question per document, and the bridge protocol's questions (names
taken from the text, not the graph) asked through the MCP tools; --skip-graph leaves it out.

The table goes to stdout; a report folder (--out) receives report.md, metrics.json, per_query.jsonl and a
PNG chart of the broad-level metrics. Progress goes to stderr.
"""

EPILOG = """\
examples:
  granrag-mcp eval --squad squad-dev.json --store /tmp/eval-store
  granrag-mcp eval --squad squad-dev.json --store /tmp/eval-store --sample 500 --seed 1
  granrag-mcp eval --squad squad-dev.json --store /tmp/eval-store-windows --vector-mode windows
  granrag-mcp eval --squad squad-dev.json covidqa.json --store /tmp/eval-stores --skip-graph
  granrag-mcp eval --qa questions.jsonl --store ./index_store --strategies base,rrf,hrr --skip-graph

JSONL lines: {"question": "...", "doc_id": "<document id in the store>", "answer_start": 120,
"answer_end": 134} (character offsets into the document text; optional "id" and "answer" fields, the
answer text being checked against the document).
"""


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def strategy_list(value: str) -> list[str]:
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
        nargs="+",
        action="extend",
        metavar="FILE",
        help="QA set(s) in SQuAD JSON format; their articles are indexed into --store if needed. Several files "
        "(or the flag repeated) give one table each, every set in its own store and report folder named after "
        "the file (STORE/<name>, OUT/<name>)",
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
    parser.add_argument(
        "--model",
        help=MODEL_HELP,
    )
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
        type=positive_int,
        metavar="N",
        help="evaluate a random sample of N questions (default: all; use all for published numbers)",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of --sample (default 0)")
    parser.add_argument(
        "--articles",
        type=positive_int,
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
        type=strategy_list,
        metavar="LIST",
        default=ALL_STRATEGIES,
        help=f"comma-separated strategies to run (default all: {ALL_STRATEGIES})",
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
        type=positive_int,
        default=200,
        metavar="N",
        help="bridge questions built from the concept graph, and as many by the bridge protocol (default 200)",
    )
    parser.add_argument(
        "--no-chart", action="store_true", help="skip the PNG chart (it needs matplotlib, the 'eval' extra)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser
