"""The bundle's entry point: the installed package's command line (`serve ...` comes from the manifest)."""

import sys

from granrag_mcp.cli import main

if __name__ == "__main__":
    sys.exit(main())
