"""Where sentences end in scripts other than the Latin, Cyrillic and other cased alphabets: one module per
script family, each a `ScriptRule` of data that `indexing/sentences` turns into its patterns.

A cased alphabet ends a sentence at ". ! ? …" before a space and a word that is not lower case; that rule, with
its abbreviations, stays in `indexing/sentences`. The rules here add marks that end a sentence wherever they stand
(the ideographic full stop, the danda), marks that are a question mark only after a script's letters (Greek ";"),
and the space that parts sentences in scripts that write none (Thai).
"""

from __future__ import annotations

from granrag_mcp.indexing.sentence_rules import arabic, cjk, ethiopic, greek, indic, southeast_asian, thai
from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

__all__ = ["ScriptRule", "rules"]


def rules() -> tuple[ScriptRule, ...]:
    return (cjk.RULE, indic.RULE, arabic.RULE, greek.RULE, southeast_asian.RULE, thai.RULE, ethiopic.RULE)
