"""Long sentences of legal and technical text, as data.

- Wrapped lines: such text is wrapped at a fixed width and capitalises its defined terms (a line ending in "this"
  before one that starts "License"), so a line that ends without punctuation before a capital is not a title when
  it is as long as wrapped prose; a title line is short.
- Clauses: where one sentence runs on through an enumeration ("(a) ...; and (b) ...") or a chain of semicolons,
  each clause is its own narrow chunk, so a question about one clause meets a sentence-sized chunk instead of a
  paragraph-sized one. Sentences of ordinary length keep their semicolons.
- List items: besides bullets, numbers and letters, lower-case Roman numerals ("ii.", "(iv)") open an item at the
  start of a line, as licences and statutes number their sub-items.
- Every script: an enumerator's letter is any alphabet's ("а)", "(α)", "(أ)", "(क)"), and a script's own marks
  are its rule's fields in `sentence_rules` (`ScriptRule.clause_marks`, `.enumerators`, `.characters_per_word`):
  the Arabic semicolon, CJK bracketed and circled numbers, and a length in letters for text without spaces.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LongSentenceRule:
    wrapped_line_words: int
    """A line of at least this many words that ends without punctuation is wrapped prose, not a title."""
    field_label: str
    """A regular expression of a field's label at the start of a line ("Date:"), which opens a new sentence even
    after a long line (a header's "Authors: ..." line before its "Date: ..." line)."""
    min_words: int
    """A sentence is parted into clauses only when it has more words than this."""
    min_enumerators: int
    """... and at least this many inline enumerators."""
    min_clause_words: int
    """A clause with fewer words stays with the clause before it (the first, with the one after it)."""
    breaks_after: str
    """Marks after which a clause ends (before whitespace)."""
    enumerator: str
    """A regular expression of an inline enumerator that opens a clause, after whitespace and before it. Its
    `letter` group, where it matched, must be a letter that is not upper case ("A)" is a sentence's or a grade's, not
    an item's) nor one of a script written without spaces (an ideograph glossed in brackets)."""
    roman_item: str
    """A regular expression of a Roman-numeral marker that opens a list item at the start of a line."""


RULE = LongSentenceRule(
    wrapped_line_words=8,
    field_label=r"[A-Z][\w -]{0,30}:(?=\s)",
    min_words=40,
    min_enumerators=2,
    min_clause_words=5,
    breaks_after=";",
    enumerator=r"\(?(?:(?P<letter>[^\W\d_])|\d{1,2})\)|\([ivx]{1,5}\)",
    roman_item=r"\(?[ivx]{1,5}[.)]",
)
