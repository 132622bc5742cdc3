"""Sentence boundaries as character spans, for the narrow (sentence) chunk level.

Two passes, both linear in the length of the text:

1. Lines are grouped into blocks. A blank line, a list item, a markdown heading, a
   horizontal rule, or a line ending without punctuation followed by a line starting with
   an uppercase letter ends a block. Wrapped prose (the next line starts lowercase) stays
   in one block.
2. Inside a block, every run of terminal punctuation (. ! ? …) that is followed by
   whitespace is a candidate boundary; abbreviations, initials, dotted acronyms and a
   following lowercase word veto it.

A line that ends without punctuation is a title only when it is short: legal and technical
text wraps before its capitalised defined terms (a line ending in "this" before one that
starts "License"). A long sentence with an inline enumeration is then parted into its
clauses, after semicolons and before the enumerators ("(a)", "(ii)"), and Roman
numerals open list items (`indexing/sentence_rules/long_sentences`). That holds in every
script: an enumerator's letter is any alphabet's ("а)", "(α)", "(أ)", "(क)"), and each script
rule adds its own clause marks (the Arabic semicolon), enumerators ("（一）", "①") and, for
text without spaces, how many letters make a word.

Other scripts add their own boundaries (`indexing/sentence_rules`, one module per script
family): full stops that need no space after them (。 ।), marks that end a sentence only
between two of the script's words (Greek ";"), and the ends a script's own segmenter finds (Thai).
Text without them splits exactly as above.

Spans are then stripped of surrounding whitespace, so every non-whitespace character of
the text lies in exactly one span.
"""

from __future__ import annotations

import heapq
import itertools
import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.sentence_rules import long_sentences, rules

Span = tuple[int, int]

_TERMINATORS = tuple(".!?…")
_CLOSERS = "\"'”’)]»"
_OPENERS = "\"'“‘([«"

# Possessive quantifiers and the lookbehind keep this linear on long runs of punctuation:
# only the first character of a run can start a match.
_SENTENCE_END = re.compile(r"(?<![.!?…])([.!?…]++)[\"'”’)\]»]*+(?=\s|\Z)")
# Any alphabet's letter opens an item ("a)", "б)", "(γ)"), as inline (`long_sentences.RULE.enumerator`).
_LIST_MARKERS = r"[-*+•‣◦▪]|\d{1,3}[.)]|\(?[^\W\d_]\)|\(\d{1,3}\)"
_LIST_NUMBERS = r"\d{1,3}\.|[A-Za-z]\."
_HEADING = re.compile(r"#{1,6}(?=\s|\Z)")
_RULE = re.compile(r"([-=_*~])\1{2,}")
_DOTTED_ACRONYM = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
_NEXT_WORD = re.compile(r"\s*(\S{1,40})")

# Abbreviations longer than this are not looked up; it bounds the look-back per candidate.
_MAX_TOKEN = 40

# Never end a sentence, whatever follows ("Dr. Smith", "e.g. Python").
_TITLE_ABBREVIATIONS = frozenset(
    {
        "dr",
        "mr",
        "mrs",
        "ms",
        "mx",
        "prof",
        "st",
        "mt",
        "vs",
        "cf",
        "viz",
        "approx",
        "e.g",
        "i.e",
        "rev",
        "hon",
        "gen",
        "col",
        "capt",
        "lt",
        "sgt",
        "sen",
        "rep",
        "gov",
        "messrs",
        "mme",
        "mlle",
    }
)
# End a sentence unless a number follows ("No. 5", "Fig. 2", "pp. 10").
_NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "fig", "figs", "vol", "vols", "p", "pp", "ch", "sec", "eq", "eqs", "ref", "art", "nr"}
)
# After a dotted acronym ("U.S."), these words mark a new sentence; other capitals do not
# ("the U.S. Senate").
_SENTENCE_STARTERS = frozenset(
    {
        "a",
        "an",
        "the",
        "it",
        "its",
        "he",
        "she",
        "they",
        "we",
        "i",
        "you",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "in",
        "on",
        "at",
        "for",
        "but",
        "and",
        "or",
        "so",
        "however",
        "his",
        "her",
        "their",
        "our",
        "my",
        "your",
        "if",
        "when",
        "while",
        "as",
        "after",
        "before",
        "since",
        "then",
        "yes",
        "no",
        "what",
        "why",
        "how",
        "who",
        "where",
    }
)
_WORD_PUNCTUATION = string.punctuation + "“”‘’«»…"


@dataclass(frozen=True, slots=True)
class _Line:
    start: int
    end: int
    first: str  # first non-whitespace character
    last: str  # last non-whitespace character
    ends_with_terminator: bool  # terminal punctuation, possibly followed by closing quotes
    is_list_item: bool
    is_heading: bool
    is_rule: bool
    words: int
    is_field: bool  # starts with a field's label ("Date:")


def check_sentence_cap(path: Path, text: str, cap: int) -> None:
    """ExtractionError when `text` has more than `cap` sentences (0: no cap): each costs memory until the commit."""
    if cap and len(text) > cap and (count := len(split_sentences(text))) > cap:
        raise ExtractionError(path, f"{count:,} sentences, over GRANRAG_MAX_SENTENCES ({cap:,}); raise it to index it")


def split_sentences(text: str) -> list[Span]:
    """(start, end) spans of the sentences of `text`, in order, stripped of whitespace; a long sentence parted
    into its clauses (`sentence_rules/long_sentences`)."""
    return [clause for clauses in sentence_clauses(text) for clause in clauses]


def sentence_clauses(text: str) -> list[list[Span]]:
    """`split_sentences`' spans, one list per sentence: the sentence alone, or the clauses it is parted into."""
    spans: list[Span] = []
    for block_start, block_end in _blocks(text):
        _split_block(text, block_start, block_end, spans)
    return [_clauses(text, span) for span in spans]


@dataclass(frozen=True, slots=True)
class _LinePatterns:
    list_marker: re.Pattern[str]
    """A marker that opens a list item at the start of a line."""
    list_number: re.Pattern[str]
    """An item's number or letter with a full stop, which stays with the item it opens."""
    clause_break: re.Pattern[str]
    """Where a clause of a long sentence ends: after a semicolon, or before an inline enumerator."""
    enumerator: re.Pattern[str]
    """An inline enumerator, after whitespace and before it, or a script's own wherever it stands."""
    field_label: re.Pattern[str]
    unspaced_letter: re.Pattern[str] | None
    """A letter of a script written without spaces, which is no enumerator's letter."""
    measured: tuple[tuple[re.Pattern[str], float], ...]
    """For each script measured in letters: one of its letters, and how many make a word."""
    any_measured: re.Pattern[str] | None
    """A letter of any script measured in letters (none: every word counts one)."""
    measured_word: re.Pattern[str] | None
    """A whitespace-parted word that holds a letter of a script measured in letters."""


@lru_cache(maxsize=1)
def _line_patterns() -> _LinePatterns:
    rule = long_sentences.RULE
    scripts = rules()
    marks = re.escape(rule.breaks_after + "".join(script.clause_marks for script in scripts))
    # A mark that is a script's question mark after its letters ends no clause there (Greek ";").
    vetoes = "".join(
        f"(?<![{script.letters}][{re.escape(script.marks_after_letters)}])"
        for script in scripts
        if script.marks_after_letters and script.letters
    )
    after_marks = [f"(?<=[{marks}]){vetoes}\\s+"]
    after_marks += [
        f"(?<=[{script.letters}][{re.escape(script.clause_marks_after_letters)}])\\s+"
        for script in scripts
        if script.clause_marks_after_letters
    ]
    own = "|".join(f"(?:{script.enumerators})" for script in scripts if script.enumerators)
    before_enumerator = [f"\\s+(?=(?:{rule.enumerator})\\s)"] + ([f"\\s*+(?={own})"] if own else [])
    enumerator = f"(?<=\\s)(?:{rule.enumerator})(?=\\s)" + (f"|{own}" if own else "")
    unspaced = "".join(script.letters for script in scripts if script.unspaced)
    measured = tuple(
        (re.compile(f"[{script.letters}]"), script.characters_per_word)
        for script in scripts
        if script.characters_per_word
    )
    measured_letters = "".join(script.letters for script in scripts if script.characters_per_word)
    return _LinePatterns(
        list_marker=re.compile(f"(?:{_LIST_MARKERS}|{rule.roman_item})(?=\\s|\\Z)" + (f"|{own}" if own else "")),
        list_number=re.compile(f"{_LIST_NUMBERS}|{rule.roman_item}"),
        clause_break=re.compile("|".join(after_marks + before_enumerator)),
        field_label=re.compile(rule.field_label),
        enumerator=re.compile(enumerator),
        unspaced_letter=re.compile(f"[{unspaced}]") if unspaced else None,
        measured=measured,
        any_measured=re.compile(f"[{measured_letters}]") if measured_letters else None,
        measured_word=re.compile(f"(?<!\\S)[^\\s{measured_letters}]*+[{measured_letters}]\\S*+")
        if measured_letters
        else None,
    )


def _opens_clause(match: re.Match[str], patterns: _LinePatterns) -> bool:
    """Whether an enumerator's match opens a clause: its letter, if any, is lower case or uncased, and not one of a
    script written without spaces (`long_sentences.RULE.enumerator`)."""
    letter = match.groupdict().get("letter")
    if letter is None:
        return True
    unspaced = patterns.unspaced_letter
    return not letter.isupper() and (unspaced is None or unspaced.match(letter) is None)


def _length(text: str, patterns: _LinePatterns) -> float:
    """Words of `text`: its whitespace-parted words, where a word of a script written without spaces counts its
    letters over the script's letters per word."""
    words = len(text.split())
    if text.isascii() or patterns.any_measured is None or patterns.any_measured.search(text) is None:
        return words
    # Whole-text counts rather than a loop over words: the same sum, with a few regex scans per sentence.
    measured_words = len(patterns.measured_word.findall(text)) if patterns.measured_word is not None else 0
    letters = sum(len(letter.findall(text)) / per_word for letter, per_word in patterns.measured)
    return words - measured_words + letters


def _clauses(text: str, span: Span) -> list[Span]:
    """The span, or its clauses when it is a sentence longer than the rule's `min_words` with an enumeration."""
    rule = long_sentences.RULE
    patterns = _line_patterns()
    start, end = span
    # No sentence is longer in words than in characters: most sentences are decided without measuring them.
    if end - start <= rule.min_words or _length(text[start:end], patterns) <= rule.min_words:
        return [span]
    opening = (match for match in patterns.enumerator.finditer(text, start, end) if _opens_clause(match, patterns))
    if sum(1 for _ in itertools.islice(opening, rule.min_enumerators)) < rule.min_enumerators:
        return [span]
    pieces: list[Span] = []
    piece_start = start
    for match in patterns.clause_break.finditer(text, start, end):
        if not _opens_clause(match, patterns):
            continue
        if match.start() > piece_start:  # a script's enumerator right after another break opens no empty clause
            pieces.append((piece_start, match.start()))
        piece_start = match.end()
    pieces.append((piece_start, end))
    merged: list[Span] = []
    lengths: list[float] = []  # each merged clause's length, kept so that a run of short pieces merges in linear time
    for piece in pieces:
        length = _length(text[piece[0] : piece[1]], patterns)
        if merged and (lengths[-1] < rule.min_clause_words or length < rule.min_clause_words):
            # A short first clause joins the next, a short later one the clause before it.
            merged[-1] = (merged[-1][0], piece[1])
            lengths[-1] += length
        else:
            merged.append(piece)
            lengths.append(length)
    return merged


def _blocks(text: str) -> Iterator[Span]:
    """Runs of lines that no line break separates into different sentences."""
    block_start: int | None = None
    previous: _Line | None = None
    offset = 0
    for raw_line in text.split("\n"):
        line = _describe_line(raw_line, offset)
        offset += len(raw_line) + 1
        if line is None:
            if block_start is not None and previous is not None:
                yield block_start, previous.end
            block_start, previous = None, None
            continue
        if block_start is not None and previous is not None and _is_hard_break(previous, line):
            yield block_start, previous.end
            block_start = None
        if block_start is None:
            block_start = line.start
        previous = line
    if block_start is not None and previous is not None:
        yield block_start, previous.end


def _describe_line(raw_line: str, offset: int) -> _Line | None:
    """Facts about one line; None for a blank line."""
    content = raw_line.strip()
    if not content:
        return None
    return _Line(
        start=offset,
        end=offset + len(raw_line),
        first=content[0],
        last=content[-1],
        ends_with_terminator=content.rstrip(_CLOSERS).endswith(_TERMINATORS)
        or content.rstrip(_script_patterns().closers)[-1:] in tuple(_script_patterns().terminators),
        is_list_item=_line_patterns().list_marker.match(content) is not None,
        is_heading=_HEADING.match(content) is not None,
        is_rule=_RULE.fullmatch(content) is not None,
        words=len(content.split()),
        is_field=_line_patterns().field_label.match(content) is not None,
    )


def _is_hard_break(previous: _Line, line: _Line) -> bool:
    if line.is_list_item or line.is_heading or previous.is_heading or previous.is_rule:
        return True
    if previous.ends_with_terminator:
        return False  # the punctuation pass decides ("Dr.\nSmith" is one sentence)
    if line.first.islower():
        return False  # wrapped prose
    if previous.words >= long_sentences.RULE.wrapped_line_words and not line.is_field:
        return False  # wrapped prose before a capitalised term, not a title
    # A title line followed by text. A line ending in ",", ":" or "-" is still mid-sentence.
    return line.first.isupper() and (previous.last.isalnum() or previous.last in _CLOSERS)


@dataclass(frozen=True, slots=True)
class _ScriptPatterns:
    terminators: str
    """Every script's full stops, for a line that ends a sentence."""
    closers: str
    """The closing quotes and brackets that may follow them."""
    boundary: re.Pattern[str] | None
    """Where another script's sentence ends: the position after the match."""
    before_unspaced: re.Pattern[str] | None
    """A Latin ". ! ?" right before the letters of a script that writes no space between sentences."""
    segmented: tuple[tuple[re.Pattern[str], Callable[[str], Sequence[int]]], ...] = ()
    """For each script with a segmenter: a run of its letters and inner spaces, and the segmenter of such a run."""


@lru_cache(maxsize=1)
def _script_patterns() -> _ScriptPatterns:
    """The patterns of every script rule, built once on first use."""
    stops = "".join(rule.full_stops for rule in rules())
    closers = "".join(dict.fromkeys("".join(rule.closers for rule in rules())))
    alternatives = []
    if stops:
        # A run of full stops and the closing quotes after it; the lookbehind starts a match at a run's first mark.
        alternatives.append(f"(?<![{re.escape(stops)}])[{re.escape(stops)}]++[{re.escape(closers)}]*+")
    for rule in rules():
        if rule.marks_after_letters:
            marks = re.escape(rule.marks_after_letters)
            # Between two words of the script, so a Greek letter used as a symbol in English ("TNF-α; R&D") is not
            # read as a Greek question.
            alternatives.append(f"(?<=[{rule.letters}][{rule.letters}])[{marks}]++(?=\\s+[{rule.letters}])")
        if rule.space_ends_sentences:
            alternatives.append(f"(?<=[{rule.letters}])\\s++(?=[{rule.letters}])")
    unspaced = "".join(rule.letters for rule in rules() if rule.unspaced)
    segmented = tuple(
        (re.compile(f"[{rule.letters}]++(?:[ \\t]++[{rule.letters}]++)*+"), rule.segmenter)
        for rule in rules()
        if rule.segmenter is not None
    )
    return _ScriptPatterns(
        terminators=stops,
        closers=closers,
        boundary=re.compile("|".join(alternatives)) if alternatives else None,
        before_unspaced=re.compile(f"(?<![.!?…])[.!?…]++(?=[{unspaced}])") if unspaced else None,
        segmented=segmented,
    )


def _candidates(text: str, block_start: int, block_end: int) -> Iterator[tuple[int, re.Match[str] | None]]:
    """Possible sentence ends in position order: a Latin terminator's match (its context decides), or another
    script's boundary (None: always an end)."""
    patterns = _script_patterns()
    latin = [_SENTENCE_END.finditer(text, block_start, block_end)]
    if patterns.before_unspaced is not None:
        latin.append(patterns.before_unspaced.finditer(text, block_start, block_end))
    streams: list[Iterator[tuple[int, re.Match[str] | None]]] = [
        ((match.end(), match) for match in stream) for stream in latin
    ]
    if patterns.boundary is not None:
        streams.append((match.end(), None) for match in patterns.boundary.finditer(text, block_start, block_end))
    for run, segmenter in patterns.segmented:
        streams.append(_segmented_ends(text, block_start, block_end, run, segmenter))
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=lambda candidate: candidate[0])


def _segmented_ends(
    text: str, block_start: int, block_end: int, run: re.Pattern[str], segmenter: Callable[[str], Sequence[int]]
) -> Iterator[tuple[int, re.Match[str] | None]]:
    """The sentence ends a script's segmenter finds inside each run of that script's text (always ends)."""
    for match in run.finditer(text, block_start, block_end):
        for offset in sorted(segmenter(match.group())):
            if 0 < offset < len(match.group()):
                yield match.start() + offset, None


def _split_block(text: str, block_start: int, block_end: int, spans: list[Span]) -> None:
    piece_start = block_start
    for end, match in _candidates(text, block_start, block_end):
        if end <= piece_start:
            continue
        if match is None:
            _append_stripped(text, piece_start, end, spans)
            piece_start = end
            continue
        if match.end() - piece_start <= 8 and _line_patterns().list_number.fullmatch(
            text[piece_start : match.end()].strip()
        ):
            continue  # "1. The writer ...": the number belongs to the item it opens
        if _ends_sentence(text, match, block_start, block_end):
            _append_stripped(text, piece_start, match.end(), spans)
            piece_start = match.end()
    _append_stripped(text, piece_start, block_end, spans)


def _ends_sentence(text: str, match: re.Match[str], block_start: int, block_end: int) -> bool:
    following = _NEXT_WORD.match(text, match.end(), block_end)
    if following is None:
        return True
    next_word = following.group(1)
    if next_word[0].islower():
        return False
    terminator = match.group(1) if match.re is _SENTENCE_END else match.group(0)
    if terminator != ".":
        return True  # "!", "?", "?!", or an ellipsis before a capital
    token = _previous_token(text, match.start(), block_start).lstrip(_OPENERS)
    return not _is_abbreviation(token, next_word)


def _previous_token(text: str, position: int, block_start: int) -> str:
    """The run of non-whitespace characters just before `position` (at most _MAX_TOKEN long)."""
    window = text[max(block_start, position - _MAX_TOKEN) : position]
    if not window or window[-1].isspace():
        return ""
    return window.rsplit(None, 1)[-1]


def _is_abbreviation(token: str, next_word: str) -> bool:
    """Whether `token` followed by "." and then `next_word` (not lowercase) is mid-sentence."""
    lowered = token.lower()
    if lowered in _TITLE_ABBREVIATIONS:
        return True
    if lowered in _NUMBER_ABBREVIATIONS:
        return next_word[0].isdigit()
    if len(token) == 1 and token.isupper():
        return True  # an initial: "J. R. R. Tolkien"
    if _DOTTED_ACRONYM.fullmatch(token):
        return next_word.strip(_WORD_PUNCTUATION).lower() not in _SENTENCE_STARTERS
    return False


def _append_stripped(text: str, start: int, end: int, spans: list[Span]) -> None:
    piece = text[start:end]
    leading = len(piece) - len(piece.lstrip())
    if leading == len(piece):
        return
    spans.append((start + leading, start + len(piece.rstrip())))
