import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from granrag_mcp.stdio_wire import LineReader

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the event-loop wire is for POSIX pipes")


def lines_of(chunks: list[bytes], max_line_bytes: int = 1 << 20) -> list[str]:
    async def main() -> list[str]:
        reader = asyncio.StreamReader()
        for chunk in chunks:
            reader.feed_data(chunk)
        reader.feed_eof()
        return [line async for line in LineReader(reader, max_line_bytes)]

    return asyncio.run(main())


def test_lines_are_cut_at_newlines_wherever_the_chunks_end() -> None:
    assert lines_of([b'{"a"', b': 1}\n{"b": 2}\n{"c"', b": 3}\n"]) == ['{"a": 1}\n', '{"b": 2}\n', '{"c": 3}\n']
    assert lines_of([b"one\ntwo\n\nthree"]) == ["one\n", "two\n", "\n", "three"]
    assert lines_of([]) == []


def test_text_is_utf8_even_when_a_character_is_split_between_chunks() -> None:
    encoded = "caf\u00e9 \U0001f600\n".encode()
    assert lines_of([encoded[:4], encoded[4:7], encoded[7:]]) == ["caf\u00e9 \U0001f600\n"]
    assert lines_of([b"bad \xff byte\n"]) == ["bad \ufffd byte\n"]


def test_a_line_over_the_limit_is_dropped_and_the_next_one_kept() -> None:
    long_line = [b"x" * 700, b"x" * 700, b"x" * 700 + b"\n"]
    assert lines_of([b"first\n", *long_line, b"after\n"], max_line_bytes=1000) == ["first\n", "after\n"]
    assert lines_of([b"y" * 2000 + b"\nok\n"], max_line_bytes=1000) == ["ok\n"]


ECHO_SERVER = textwrap.dedent("""
    import asyncio, sys
    from granrag_mcp.stdio_wire import wire_pipes

    async def main():
        async with wire_pipes() as (stdin, stdout):
            print("mode", "loop" if stdin is not None else "sdk", file=sys.stderr, flush=True)
            if stdin is not None:
                print("stray print while serving", flush=True)
                async for line in stdin:
                    if line.startswith("big"):
                        await stdout.write("z" * int(line.split()[1]) + "\\n")
                    else:
                        await stdout.write("echo " + line)
                    await stdout.flush()
        print("after serving", flush=True)

    asyncio.run(main())
""")


def run_echo(stdin: object = None, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ECHO_SERVER], stdin=stdin, input=input_text, capture_output=True,
                          text=True, timeout=60, check=True)


def test_pipes_are_served_on_the_loop_and_stray_output_goes_to_stderr() -> None:
    done = run_echo(input_text="one\ntw\u00f6\n")
    assert "mode loop" in done.stderr
    assert done.stdout == "echo one\necho tw\u00f6\nafter serving\n"
    assert "stray print while serving" in done.stderr


def test_answers_larger_than_the_pipe_buffer_all_arrive() -> None:
    sizes = [300_000, 10, 1_000_000]
    done = run_echo(input_text="".join(f"big {n}\n" for n in sizes))
    assert [len(line) for line in done.stdout.splitlines()[:3]] == sizes


def test_a_regular_file_on_stdin_is_left_to_the_sdk(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text("one\n")
    with requests.open() as stdin:
        done = run_echo(stdin)
    assert "mode sdk" in done.stderr
    assert done.stdout == "after serving\n"


def test_a_client_that_stops_reading_makes_the_writer_fail_instead_of_hang() -> None:
    script = ECHO_SERVER.replace('"echo " + line', '"echo " * 50_000 + line')
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("one\n")
    process.stdin.flush()
    process.stdout.read(10)
    process.stdout.close()
    process.stdin.write("two\n")
    process.stdin.flush()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "BrokenPipeError" in stderr


LATE_SERVER = textwrap.dedent("""
    import asyncio, os, pathlib
    from granrag_mcp.stdio_wire import wire_pipes

    async def main():
        try:
            async with wire_pipes() as (stdin, stdout):
                async for line in stdin:
                    await stdout.write("z" * 300_000 + "\\n")  # not flushed: most of it waits in the transport
                    raise RuntimeError("failed after answering")
        finally:
            # Files opened after the wire is handed back may get its old descriptor numbers.
            others = [open(pathlib.Path(os.environ["OTHER_FILES"]) / f"other{i}", "w") for i in range(6)]
            await asyncio.sleep(2)
            for f in others:
                f.close()

    asyncio.run(main())
""")


def test_an_answer_still_buffered_when_the_server_fails_is_delivered_and_goes_nowhere_else(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", LATE_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "OTHER_FILES": str(tmp_path)})
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"go\n")
    process.stdin.flush()
    time.sleep(1)  # the client reads late: the pipe took 64 KiB, the rest waits in the server
    answer = process.stdout.read()
    _, stderr = process.communicate(timeout=60)
    assert len(answer) == 300_001
    assert b"failed after answering" in stderr
    assert sorted(p.stat().st_size for p in tmp_path.glob("other*")) == [0] * 6


def test_a_socket_client_that_shuts_down_its_sending_side_of_stdout_still_gets_the_answers() -> None:
    our_in, their_in = socket.socketpair()
    our_out, their_out = socket.socketpair()
    with our_in, our_out:
        process = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], stdin=our_in, stdout=our_out,
                                   stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    with their_in, their_out:
        assert process.stderr.readline() == "mode loop\n"  # serving: the shutdown below reaches a watched socket
        their_out.shutdown(socket.SHUT_WR)  # as some clients do with the read-only end of a socketpair
        their_in.sendall(b"one\ntwo\n")
        their_in.shutdown(socket.SHUT_WR)
        received = b"".join(iter(lambda: their_out.recv(65536), b""))
    process.communicate(timeout=60)
    assert received == b"echo one\necho two\nafter serving\n"


def test_unflushed_stray_output_goes_to_stderr_not_onto_the_wire() -> None:
    script = ECHO_SERVER.replace('print("stray print while serving", flush=True)',
                                 'print("stray print while serving")')
    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    done = subprocess.run([sys.executable, "-c", script], input="one\n", capture_output=True, text=True,
                          timeout=60, check=True, env=env)
    assert done.stdout == "echo one\nafter serving\n"
    assert "stray print while serving" in done.stderr


def test_stderr_on_the_wire_pipe_is_left_to_the_sdk() -> None:
    done = subprocess.run([sys.executable, "-c", ECHO_SERVER], input="one\n", stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=60, check=True)
    assert "mode sdk" in done.stdout


def test_a_flushed_answer_survives_the_server_dying_right_after() -> None:
    script = ECHO_SERVER.replace("await stdout.flush()", "await stdout.flush(); os._exit(3)").replace(
        "import asyncio, sys", "import asyncio, os, sys")
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"big 100000\n")
    process.stdin.flush()
    time.sleep(1)  # the pipe holds 64 KiB; flush returns only once the rest is in it too
    answer = process.stdout.read()
    process.communicate(timeout=60)
    assert process.returncode == 3
    assert len(answer) == 100_001
