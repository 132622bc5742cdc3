"""A document's extraction waited for in short steps, so that a run keeps its per-file time limit and sees its stop
request while one file is being read.

The extraction runs in a helper thread; the run's thread only waits for it. A file over `file_seconds` is skipped
with an ExtractionError and a cancelled or stopped run ends at once: either way the run goes on (or lets go of the
store's writer lock) without that file, and the abandoned extraction finishes on its own, holding nothing of the
run's. Where extraction runs in a worker process with its own limits, that worker is what the thread waits on.
"""

from __future__ import annotations

import threading
import time

from granrag_mcp.errors import ExtractionError
from granrag_mcp.indexing.discovery import SourceFile
from granrag_mcp.indexing.extract import ExtractedText, extract_text
from granrag_mcp.progress import Progress

STEP_SECONDS = 0.1
"""How often the run looks at its stop request and the clock while a file is read."""
EXTRACT_THREAD = "granrag-extract"


class _Outcome:
    """What the helper thread hands back: the text or the error, and whether it is done."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.text: ExtractedText | None = None
        self.error: BaseException | None = None


def extract_waiting(source: SourceFile, seconds: float, progress: Progress) -> ExtractedText:
    """`extract_text(source)`, or ExtractionError once it has taken `seconds` (0: no limit); `progress.check()`
    raises the run's stop request while it waits."""
    outcome = _Outcome()

    def target() -> None:
        try:
            outcome.text = extract_text(source)
        except BaseException as error:  # handed to the waiting thread, which raises it as its own
            outcome.error = error
        finally:
            outcome.done.set()

    threading.Thread(target=target, name=EXTRACT_THREAD, daemon=True).start()
    deadline = time.monotonic() + seconds if seconds else None
    while not outcome.done.wait(STEP_SECONDS):
        progress.check()
        if deadline is not None and time.monotonic() >= deadline:
            raise ExtractionError(
                source.path,
                f"reading its text took more than {seconds:g} s, over GRANRAG_FILE_SECONDS; skipped (raise it to "
                "index this file)",
            )
    if outcome.error is not None:
        raise outcome.error
    assert outcome.text is not None
    return outcome.text
