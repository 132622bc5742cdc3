"""The chunker flags, shared by `index` and `eval` (both build stores)."""

from __future__ import annotations

import argparse


def add_chunker_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--chunker",
        choices=["fixed", "semantic"],
        help="how mid chunks are cut: semantic, where the topic changes, or fixed token windows "
        "(env GRANRAG_CHUNKER, default semantic; part of the store's identity)",
    )
    parser.add_argument(
        "--semantic-percentile",
        type=float,
        metavar="P",
        help="semantic: a mid chunk ends where the sentence distance exceeds this percentile "
        "(env GRANRAG_SEMANTIC_PERCENTILE, default 95)",
    )
    parser.add_argument(
        "--semantic-overrides",
        metavar="PATTERN=P,...",
        help="semantic: percentiles by document path, first match wins, such as "
        "'**/math/**=90,**/glossary/**=98' (env GRANRAG_SEMANTIC_OVERRIDES)",
    )
