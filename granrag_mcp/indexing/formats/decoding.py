"""Bytes of a document to text: a byte-order mark wins, then a declared charset, then UTF-8, then a detector.

The detector (charset-normalizer) only sees files that are not valid UTF-8, which are nearly always in a legacy
single-byte code page. It tells scripts apart well (Cyrillic, Greek, Central European) but not the Latin code pages
from each other: French in Latin-1 can come out first as Baltic. So whenever windows-1252 is among the code pages it
finds plausible at all, we take that: it is what "Latin-1" files and undeclared Western web pages are written in.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

_BYTE_ORDER_MARKS = (  # UTF-32 first: its little-endian mark begins with the UTF-16 one
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_WESTERN = "cp1252"
# The detector decodes its whole input once per candidate code page (about 3 MiB/s), so it sees a sample; the file
# is then decoded with the winner, and only a file that the winner cannot decode is shown to it whole.
_DETECT_SAMPLE_BYTES = 64 * 1024
_REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # Python codec name
    replaced: bool  # bytes invalid in that encoding became U+FFFD
    guessed: bool  # the encoding came from the detector, not a byte-order mark, a declaration or valid UTF-8


def byte_order_mark(data: bytes) -> tuple[str, int] | None:
    """(codec, length of the mark) when `data` starts with a Unicode byte-order mark."""
    for mark, encoding in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            return encoding, len(mark)
    return None


def decode(data: bytes, declared: str | None = None) -> Decoded:
    """The text of `data`; `declared` is a codec the document names for itself (HTML's <meta charset>)."""
    mark = byte_order_mark(data)
    if mark is not None:
        encoding, length = mark
        return _decode_as(data[length:], encoding)
    if declared is not None:
        return _decode_as(data, declared)
    try:
        return Decoded(data.decode("utf-8"), "utf-8", replaced=False, guessed=False)
    except UnicodeDecodeError:
        pass
    if _mostly_utf8(data):
        return _decode_as(data, "utf-8")  # a damaged UTF-8 file: a code page would garble all its good characters
    guessed = _detect(data[:_DETECT_SAMPLE_BYTES], data)
    if guessed is None and len(data) > _DETECT_SAMPLE_BYTES:
        guessed = _detect(data, data)
    if guessed is not None:
        return guessed
    return _decode_as(data, "utf-8")


def _decode_as(data: bytes, encoding: str) -> Decoded:
    try:
        return Decoded(data.decode(encoding), encoding, replaced=False, guessed=False)
    except UnicodeDecodeError:
        return Decoded(data.decode(encoding, errors="replace"), encoding, replaced=True, guessed=False)


def _mostly_utf8(data: bytes) -> bool:
    """More valid non-ASCII UTF-8 characters than invalid sequences."""
    text = data.decode("utf-8", errors="replace")
    invalid = text.count(_REPLACEMENT) - data.count(_REPLACEMENT.encode())
    valid = len(text) - len(text.encode("ascii", errors="ignore")) - text.count(_REPLACEMENT)
    return valid > invalid


def _detect(sample: bytes, data: bytes) -> Decoded | None:
    """`data` decoded with the code page the detector finds for `sample`, if that decodes all of it."""
    from charset_normalizer import (
        from_bytes,  # imported here: only non-UTF-8 files need it
    )

    matches = from_bytes(sample)
    best = matches.best()
    if best is None:
        return None
    candidates = [_WESTERN] if any(_WESTERN in m.could_be_from_charset for m in matches) else []
    for encoding in [*candidates, best.encoding]:
        try:
            return Decoded(data.decode(encoding), encoding, replaced=False, guessed=True)
        except UnicodeDecodeError:
            continue
    return None
