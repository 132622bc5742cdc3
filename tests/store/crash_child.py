"""Child process for the crash tests: one index run that reports its commit phases on stdout.

Usage: python -m tests.store.crash_child DOCS STORE
"""

from __future__ import annotations

import sys
from pathlib import Path

from granrag_mcp.store import store as store_module
from tests.helpers import index


def main() -> None:
    docs, store = Path(sys.argv[1]), Path(sys.argv[2])
    original_publish = store_module.StoreWriter.publish

    def reporting_publish(self, folder, manifest):
        print("publish-begin", flush=True)
        result = original_publish(self, folder, manifest)
        print("publish-end", flush=True)
        return result

    store_module.StoreWriter.publish = reporting_publish
    print("started", flush=True)
    index(docs, store)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
