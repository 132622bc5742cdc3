"""The log's one line per record: names and text that reach a message (file names, client input) cannot break
it into lines, colour the terminal or forge a record, because control characters are written as escapes."""

from __future__ import annotations

import logging
import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]|[\ud800-\udfff]")


def escaped(text: str) -> str:
    """`text` with control characters, line separators and lone surrogates (undecodable name bytes) escaped."""
    return _CONTROL.sub(lambda match: match.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


class OneLineFormatter(logging.Formatter):
    """Escapes what a record's message holds; a traceback, added after the message, keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802  (the logging API's name)
        return escaped(super().formatMessage(record))
