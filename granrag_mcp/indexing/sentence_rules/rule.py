"""One script family's sentence rule, as data."""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    """Marks that end a sentence only between two words of the script (Greek ";" is its "?")."""
    space_ends_sentences: bool = False
    """A space between two of the script's letters parts sentences (the script has no sentence punctuation)."""
    segmenter: Callable[[str], Sequence[int]] | None = None
    """A segmenter for the script, which writes no sentence punctuation: given a run of the script's letters and the
    spaces between them, the offsets inside it where sentences end (in place of `space_ends_sentences`)."""
    clause_marks: str = ""
    """Marks after which a clause of a long sentence ends, before whitespace (the script's semicolon), beside the
    Latin ";" of `long_sentences.RULE.breaks_after`."""
    clause_marks_after_letters: str = ""
    """Clause marks that part a long sentence only after the script's letters (the Greek ano teleia, which is also
    the middle dot of other text)."""
    enumerators: str = ""
    """A regular expression of the script's own enumerators ("（一）", "①"), which open a clause of a long sentence
    and a list item wherever they stand, with or without whitespace around them."""
    characters_per_word: float = 0.0
    """For a script written without spaces between words: how many of its letters make one word, so a long
    sentence is measured in words (`long_sentences.RULE.min_words`) as a spaced script's is."""
