"""Where sentences end in scripts other than the Latin, Cyrillic and other cased alphabets: one module per
script family, each a `ScriptRule` of data that `indexing/sentences` turns into its patterns.

A cased alphabet ends a sentence at ". ! ? …" before a space and a word that is not lower case; that rule, with
its abbreviations, stays in `indexing/sentences`. The rules here add marks that end a sentence wherever they stand
(the ideographic full stop, the danda), marks that are a question mark only after a script's letters (Greek ";"),
and the space that parts sentences in scripts that write none (Thai).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScriptRule:
    name: str
    full_stops: str = ""
    """Marks that end a sentence wherever they stand, with or without a space after them."""
    closers: str = ""
    """Closing quotes and brackets that stay with the sentence a full stop ends."""
    letters: str = ""
    """A regular-expression character class body for the script's letters (and its combining marks)."""
    unspaced: bool = False
    """The script writes no space between sentences: a Latin ". ! ?" right before its letters ends a sentence."""
    marks_after_letters: str = ""
    """Marks that end a sentence only after the script's letters and before a space (Greek ";" is its "?")."""
    space_ends_sentences: bool = False
    """A space between two of the script's letters parts sentences (the script has no sentence punctuation)."""


def rules() -> tuple[ScriptRule, ...]:
    from granrag_mcp.indexing.sentence_rules import arabic, cjk, ethiopic, greek, indic, southeast_asian

    return (cjk.RULE, indic.RULE, arabic.RULE, greek.RULE, southeast_asian.RULE, ethiopic.RULE)
