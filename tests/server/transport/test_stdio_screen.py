"""The relay's screen: a plain message is passed on as it came, parsed once; the others are still looked at whole."""

from __future__ import annotations

import json

import pytest

from granrag_mcp.server.transport.stdio_relay import plain, screen

CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_narrow","arguments":{"query":"x"}}}'


@pytest.mark.parametrize(
    "line",
    [
        CALL,
        CALL + b"\n",
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b'{"jsonrpc":"2.0","id":"a","result":{}}\n',
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"q":"caf\u00e9 \U0001f600"}}\n'.encode(),
    ],
)
def test_a_plain_message_goes_on_unchanged(line: bytes) -> None:
    assert plain(line)
    assert screen(line) == (line if line.endswith(b"\n") else line + b"\n", None)


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n', -32600),  # the SDK would take it for a notification
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}\n', -32600),
        (b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":NaN}}\n', -32700),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping"\n', -32700),
        (b'[{"jsonrpc":"2.0","id":5,"method":"ping"}]\n', -32600),
    ],
)
def test_a_line_the_sdk_would_drop_is_answered(line: bytes, code: int) -> None:
    assert not plain(line)
    forward, answer = screen(line)
    assert forward is None and answer is not None
    assert json.loads(answer)["error"]["code"] == code


def test_an_unpaired_surrogate_is_repaired_not_passed_on() -> None:
    line = b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a","arguments":{"query":"x\\ud800"}}}\n'
    assert not plain(line)
    forward, answer = screen(line)
    assert answer is None and forward is not None
    assert json.loads(forward)["params"]["arguments"]["query"] == "x\ufffd"
