"""Thai: no sentence punctuation, and a space parts sentences and clauses alike (words run together inside both).

Where PyThaiNLP is installed (a dependency), its CRF sentence segmenter (CRFCut, trained on TED subtitles,
its model shipped in the wheel) decides which spaces end a sentence; without it every space between two Thai
letters does, which cuts clauses too (about four sentences where a reader sees one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from granrag_mcp.indexing.sentence_rules.rule import ScriptRule

LETTERS = "\u0e00-\u0e7f"
LONGEST_SEGMENTED = 20_000
"""Characters of the longest run the segmenter reads (it takes about a second for 10,000 on a busy core); a longer
run of Thai without a line break is no prose a reader would write, and is cut at every space."""
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=1)
def _segmenter() -> Callable[[str], list[str]] | None:
    """PyThaiNLP's CRFCut, loaded on the first Thai text, or None where PyThaiNLP or its CRF runtime is absent."""
    # Its model is in the wheel: PyThaiNLP may neither download (offline) nor make its data folder in the home
    # directory (read-only), which it would otherwise do on import.
    os.environ.setdefault("PYTHAINLP_OFFLINE", "1")
    os.environ.setdefault("PYTHAINLP_READ_ONLY", "1")
    try:
        from pythainlp.tokenize import crfcut
    except ImportError:
        return None
    return crfcut.segment


def sentence_ends(run: str) -> Sequence[int]:
    """The offsets in a run of Thai text (letters and the spaces between them) where its sentences end."""
    segment = _segmenter() if len(run) <= LONGEST_SEGMENTED else None
    if segment is not None:
        sentences = segment(run)
        if "".join(sentences) == run:
            ends, at = [], 0
            for sentence in sentences:
                at += len(sentence)
                ends.append(at)
            return ends
    return [match.end() for match in _SPACE.finditer(run)]


RULE = ScriptRule(name="thai", letters=LETTERS, segmenter=sentence_ends, characters_per_word=5.5)
"""Words run together, so a long sentence is measured in letters: 5.5 Thai letters (with their vowel and tone marks)
make a word, as the Thai XQuAD-A contexts hold 5.49 for each word of their English originals; more than 40 words is
more than 220 letters."""
