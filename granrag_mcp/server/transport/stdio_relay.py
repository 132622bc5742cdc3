"""Stdio for the MCP server: the SDK's own stdio transport, behind a line relay that answers what it would drop.

The SDK's transport reads one JSON-RPC message per line and silently drops a line it cannot parse, so a client
that sent a truncated line, a batch, a message with an id of the wrong type or a string with an unpaired
surrogate waits for an answer that never comes. A client that closes our stdout while we answer makes its
writer raise in the middle of a task group. The relay sits between the process's standard streams and the
SDK's (two pipes, two threads):

- inbound, each line is screened: valid messages go on unchanged, strings with unpaired surrogates are repaired
  (U+FFFD) and sent on, and everything else is answered at once with the JSON-RPC error it deserves (-32700 for
  what is not JSON, -32600 for what is not a request), with the request's id when it can be read;
- outbound, every line the SDK writes is copied to the client whole, and the relay's own answers go between
  lines, never inside one; when the client has gone, the SDK's output is drained and its input closed, so the
  server ends as if the client had hung up.

It uses nothing but the SDK's public `stdio_server` (through `MCPServer.run("stdio")`), `os.pipe` and `os.dup2`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from types import TracebackType
from typing import Any, BinaryIO

from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest message accepted. A longer line is answered with an error instead of being held in memory whole."""
_END = b'{"granrag-relay":"end"}\n'  # written by the relay itself, after the SDK has returned, to end the copy
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,256}")')
_NEEDS_A_LOOK = re.compile(rb"\\u[dD][89a-fA-F]|NaN|Infinity")
"""What a plain line never holds: a surrogate escape (perhaps unpaired), or a constant Python's parser takes."""


def scrub(value: Any) -> Any:
    """`value` (parsed JSON) with every unpaired surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    return value


def readable_id(raw: bytes) -> int | str | None:
    """The request id of a line that cannot be parsed, where one can be read from its start; else None."""
    match = _ID.search(raw[:4096])
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if isinstance(value, int | str) else None


def error_line(request_id: int | str | None, code: int, message: str) -> bytes:
    error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # Python's parser takes NaN and Infinity; the SDK's does not


def _valid_id(value: Any) -> int | str | None:
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def plain(line: bytes) -> bool:
    """Whether `line` is a JSON-RPC message the SDK takes as it is: most lines are, and this check parses them once,
    as the SDK will, where `screen`'s own path parses, repairs and compares. A notification whose line names an id
    is not plain (its id had the wrong type), nor is a line with a surrogate escape, NaN or Infinity in it."""
    if _NEEDS_A_LOOK.search(line):
        return False
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return False
    return not isinstance(message, JSONRPCNotification) or b'"id"' not in line


def screen(line: bytes) -> tuple[bytes | None, bytes | None]:
    """(what to pass to the SDK, what to answer the client) for one line read from the client."""
    if plain(line):
        return line if line.endswith(b"\n") else line + b"\n", None
    text = line.decode("utf-8", "replace").strip()
    if not text:
        return None, None
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:  # valid JSON, perhaps, but nested deeper than any message of the protocol needs
        request_id = readable_id(line)
        log.warning("answered a line nested too deeply to parse (id %r) with a parse error", request_id)
        return None, error_line(
            request_id,
            PARSE_ERROR,
            "parse error: the line is too deeply nested (arrays or objects inside one another, hundreds of levels "
            "deep) to be read; send a flatter JSON-RPC message",
        )
    except ValueError:
        request_id = readable_id(line)
        log.warning("answered a line that is not JSON (id %r) with a parse error: %.200r", request_id, text)
        return None, error_line(
            request_id, PARSE_ERROR, "parse error: the line is not complete JSON; send one JSON-RPC message per line"
        )
    if isinstance(value, list):
        log.warning("answered a JSON-RPC batch with an error: batches are not supported")
        return None, error_line(
            None, INVALID_REQUEST, "invalid request: JSON-RPC batches are not supported; send one message per line"
        )
    repaired = scrub(value)
    try:
        if isinstance(repaired, dict) and "id" in repaired and _valid_id(repaired["id"]) is None:
            # The SDK's model takes such a message for a notification and never answers it.
            raise ValueError(f"an id of type {type(repaired['id']).__name__}")
        jsonrpc_message_adapter.validate_python(repaired, by_name=False)
    except (ValidationError, ValueError) as exc:
        request_id = _valid_id(repaired.get("id")) if isinstance(repaired, dict) else None
        problems = (
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            if isinstance(exc, ValidationError)
            else str(exc)
        )
        log.warning("answered an invalid JSON-RPC message (id %r) with an error: %.300s", request_id, problems)
        return None, error_line(
            request_id,
            INVALID_REQUEST,
            "invalid request: not a JSON-RPC 2.0 message "
            '(a request needs jsonrpc "2.0", a string method, an id that is a string or an '
            "integer, and params that are an object)",
        )
    if repaired is value or repaired == value:
        return line if line.endswith(b"\n") else line + b"\n", None
    return json.dumps(repaired, ensure_ascii=False).encode() + b"\n", None


class StdioRelay:
    """While entered, fd 0 and fd 1 are pipes to and from the relay, and the relay serves the real stdin/stdout.

    Use around the SDK's stdio transport: ``with StdioRelay(): server.run("stdio")``.
    """

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._write_lock = threading.Lock()  # one whole line at a time on the client's stdout
        self._feed_lock = threading.Lock()  # guards the SDK's input pipe, which either thread may close
        self._client_gone = threading.Event()
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> StdioRelay:
        sys.stdout.flush()
        self._saved_in, self._saved_out = os.dup(0), os.dup(1)
        self._client_in: BinaryIO = os.fdopen(os.dup(0), "rb")
        self._client_out: BinaryIO = os.fdopen(os.dup(1), "wb")
        feed_read, feed_write = os.pipe()
        drain_read, drain_write = os.pipe()
        os.dup2(feed_read, 0)
        os.dup2(drain_write, 1)
        os.close(feed_read)
        self._feed: BinaryIO | None = os.fdopen(feed_write, "wb")
        self._drain: BinaryIO = os.fdopen(drain_read, "rb")
        self._drain_end = drain_write  # kept to write the end marker once the SDK has returned
        for target, name in ((self._pump_in, "granrag-stdin"), (self._pump_out, "granrag-stdout")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            os.write(self._drain_end, _END)  # everything the SDK wrote is before this line
        except OSError:
            pass
        self._threads[1].join(timeout=10)
        self._close_feed()
        sys.stdout.flush()
        os.dup2(self._saved_in, 0)
        os.dup2(self._saved_out, 1)
        for fd in (self._saved_in, self._saved_out, self._drain_end):
            os.close(fd)
        for stream in (self._drain, self._client_out):
            try:
                stream.close()
            except OSError:
                pass

    @property
    def client_gone(self) -> bool:
        return self._client_gone.is_set()

    def _send(self, data: bytes) -> None:
        if self._client_gone.is_set():
            return
        with self._write_lock:
            try:
                self._client_out.write(data)
                self._client_out.flush()
            except (BrokenPipeError, ConnectionResetError, ValueError, OSError) as exc:
                if not self._client_gone.is_set():
                    log.info("the client closed the server's stdout (%s); shutting down", type(exc).__name__)
                self._client_gone.set()
                self._close_feed()  # the SDK reads end of input and returns

    def _close_feed(self) -> None:
        with self._feed_lock:
            if self._feed is not None:
                try:
                    self._feed.close()
                except OSError:
                    pass
                self._feed = None

    def _forward(self, data: bytes) -> None:
        with self._feed_lock:
            if self._feed is None:
                return
            try:
                self._feed.write(data)
                self._feed.flush()
            except (BrokenPipeError, OSError, ValueError):
                self._feed = None

    def _pump_in(self) -> None:
        try:
            while not self._client_gone.is_set():
                line = self._client_in.readline(self.max_line_bytes + 1)
                if not line:
                    break
                if len(line) > self.max_line_bytes:
                    self._refuse_long_line(line)
                    continue
                forward, answer = screen(line)
                if answer is not None:
                    self._send(answer)
                if forward is not None:
                    self._forward(forward)
        except (OSError, ValueError) as exc:  # stdin closed or broken under us: the same as end of input
            log.info("stdin ended: %s", exc)
        finally:
            self._close_feed()

    def _refuse_long_line(self, start: bytes) -> None:
        rest = start
        while rest and not rest.endswith(b"\n"):  # skip the rest of the line without holding it
            rest = self._client_in.readline(1 << 20)
        request_id = readable_id(start)
        log.warning("answered a message of more than %d bytes (id %r) with an error", self.max_line_bytes, request_id)
        self._send(
            error_line(
                request_id,
                INVALID_REQUEST,
                f"invalid request: a message may be at most "
                f"{self.max_line_bytes // (1024 * 1024)} MiB; send smaller arguments",
            )
        )

    def _pump_out(self) -> None:
        for line in iter(self._drain.readline, b""):
            if line == _END:
                break
            self._send(line)
