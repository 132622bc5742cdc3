"""Child process for the crash tests: one index run that reports its commit phases on stdout.

Usage: python -m tests.store.crash_child DOCS STORE [KILL_AT_OP]

With KILL_AT_OP = K the process SIGKILLs itself at the Kth fsync, rename or replace inside the commit.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from granrag_mcp.store import writer as writer_module
from tests.helpers import index

COMMIT_OPERATIONS = ("fsync", "rename", "replace")


def die_at_operation(kill_at: int) -> None:
    count = 0

    def wrap(original):
        def operation(*args, **kwargs):
            nonlocal count
            if publishing:
                count += 1
                if count == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)

        return operation

    for name in COMMIT_OPERATIONS:
        setattr(os, name, wrap(getattr(os, name)))


publishing = False


def main() -> None:
    global publishing
    docs, store = Path(sys.argv[1]), Path(sys.argv[2])
    if len(sys.argv) > 3:
        die_at_operation(int(sys.argv[3]))
    original_publish = writer_module.StoreWriter.publish

    def reporting_publish(self, folder, manifest):
        global publishing
        print("publish-begin", flush=True)
        publishing = True
        result = original_publish(self, folder, manifest)
        print("publish-end", flush=True)
        return result

    writer_module.StoreWriter.publish = reporting_publish
    print("started", flush=True)
    index(docs, store)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
