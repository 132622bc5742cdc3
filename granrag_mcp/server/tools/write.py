"""Write tools, registered only with `serve --allow-write`: index files and folders, remove documents, and see
what is being written. Without the flag they do not exist, so a read-only server cannot be talked into writing."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from granrag_mcp.errors import GranragError
from granrag_mcp.indexing.discovery import text_of
from granrag_mcp.indexing.formats import format_names
from granrag_mcp.server.library.state import EngineHolder, holder_of
from granrag_mcp.server.library.writes import Runs, allowed_roots, check_paths, indexed_doc_ids, result_of
from granrag_mcp.server.schemas.write import IndexStatus, RunResult
from granrag_mcp.server.tools.base import READ_ONLY
from granrag_mcp.server.tools.presenting import description

log = logging.getLogger(__name__)
A = TypeVar("A", bound=Callable[..., Awaitable[Any]])

INDEXING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
REMOVING = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)


def _tool(server: MCPServer, title: str, annotations: ToolAnnotations) -> Callable[[A], A]:
    def add(fn: A) -> A:
        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except GranragError as exc:
                raise ToolError(str(exc)) from None

        server.add_tool(
            wrapper,
            title=title,
            description=description(fn).replace("{formats}", format_names()),
            annotations=annotations,
            structured_output=True,
        )
        return fn

    return add


async def announce(holder: EngineHolder, ctx: Context[Any, Any]) -> None:
    """Serve and announce the committed generation now, rather than at the library watch's next look; a caller on a
    protocol from before `subscriptions/listen` is told on its own session."""
    legacy = ctx.request_context.protocol_version not in MODERN_PROTOCOL_VERSIONS
    try:
        await holder.watch.check(holder.engine, ctx.session if legacy else None)
    except Exception as exc:  # a notification nobody receives must not fail the committed run
        log.debug("resource change notifications not sent: %s", exc)


def register(server: MCPServer, budget: int) -> None:
    """Add the write tools (`budget` is unused: they return no document text)."""
    runs = Runs()

    @_tool(server, "Index files and folders", INDEXING)
    async def index_paths(
        ctx: Context[Any, Any],
        paths: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=4096)]],
            Field(
                min_length=1,
                max_length=100,
                description="Absolute paths of files or folders (walked recursively) inside the allowed roots.",
            ),
        ],
        prune: Annotated[
            bool, Field(description="Also remove indexed documents that are not under these paths.")
        ] = False,
    ) -> RunResult:
        """Index files of the formats {formats} into the library, incrementally: unchanged files are skipped,
        changed ones re-indexed. Only paths inside the allowed roots (the server's folders, else the client's roots) are
        accepted. Reports progress while it runs; searches keep answering from the current index and switch when
        the new one is committed. Returns the counts and the doc_ids covered, usable as doc_ids filters of the
        search tools. Cancel the call to stop it: the previous index stays.
        """
        holder = holder_of(ctx)
        roots, origin = await allowed_roots(ctx, holder.settings.allowed_root_paths)
        settings = holder.settings
        checked = await anyio.to_thread.run_sync(check_paths, paths, roots, origin, settings.allow_broad_roots)
        run = await runs.start("index", [text_of(str(p)) for p in checked.paths])
        try:
            engine = await anyio.to_thread.run_sync(holder.engine)

            def work(progress):
                from granrag_mcp.engine import run_index

                return run_index(
                    checked.paths,
                    settings,
                    prune=prune,
                    embedder=engine.embedder,
                    progress=progress,
                    roots=checked.roots,
                )

            summary = await runs.execute(ctx, run, work)
        except GranragError as exc:
            runs.finish(run, result_of(run, None, "failed", str(exc), None))
            raise
        except BaseException:
            runs.abandon(run)  # a cancel before the work began; a no-op once the run has finished
            raise
        doc_ids = indexed_doc_ids(checked.files, summary)
        if summary.committed:
            message = (
                f"committed generation {summary.generation}: searches now see it; {summary.added} added, "
                f"{summary.updated} updated, {summary.removed} removed"
            )
            await announce(holder, ctx)
        else:
            message = f"no changes: generation {summary.generation} stays current"
        return runs.finish(
            run,
            result_of(
                run, summary, "committed" if summary.committed else "unchanged", message, summary.generation, doc_ids
            ),
        )

    @_tool(server, "Remove documents", REMOVING)
    async def remove_documents(
        ctx: Context[Any, Any],
        doc_ids: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=1000)]],
            Field(min_length=1, max_length=1000, description="doc_ids to remove, from list_documents or hits."),
        ],
    ) -> RunResult:
        """Remove documents from the library by doc_id (their files are not touched). Unknown doc_ids are an
        error and nothing is removed. Searches switch to the index without them when it is committed.
        """
        holder = holder_of(ctx)
        run = await runs.start("remove", list(doc_ids))
        try:
            settings = holder.settings

            def work(progress):
                from granrag_mcp.indexing.removal import remove_documents as remove

                return remove(doc_ids, settings.store, command="serve (remove_documents)", progress=progress)

            summary = await runs.execute(ctx, run, work)
        except GranragError as exc:
            runs.finish(run, result_of(run, None, "failed", str(exc), None))
            raise
        except BaseException:
            runs.abandon(run)
            raise
        await announce(holder, ctx)
        message = f"committed generation {summary.generation} without {summary.removed} document(s)"
        return runs.finish(run, result_of(run, summary, "committed", message, summary.generation, doc_ids))

    @_tool(server, "Index status", READ_ONLY)
    async def index_status(ctx: Context[Any, Any]) -> IndexStatus:
        """What the library holds (generation, documents, chunks per level), the index or removal run in progress
        with its stage and share done, the last run's result, and the folders index_paths may read.
        """
        holder = holder_of(ctx)
        roots, origin = await allowed_roots(ctx, holder.settings.allowed_root_paths)
        generation, counts, languages = 0, {}, {}
        if not await anyio.to_thread.run_sync(holder.empty):
            view, _ = await anyio.to_thread.run_sync(holder.view)
            generation, counts = view.snapshot.generation, view.snapshot.manifest.counts
            languages = await anyio.to_thread.run_sync(view.catalog.language_counts)
        running = runs.running
        return IndexStatus(
            generation=generation,
            documents=counts.get("documents", 0),
            chunks={level: counts.get(level, 0) for level in ("broad", "mid", "narrow")},
            languages=languages,
            running=running.info() if running else None,
            last_run=runs.last,
            allowed_roots=[str(r) for r in roots],
            roots_from=origin,
        )
