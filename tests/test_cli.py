"""The command line, run as a user runs it: a real process, the real bundled model."""

import json
import subprocess
import sys

import pytest

from tests.helpers import write_corpus

FACTS = {
    "geology/volcanoes.md": "Mount Etna is an active stratovolcano on the east coast of Sicily. "
    "Its eruptions are frequent and mostly effusive. Lava flows have reached the town of Catania.",
    "biology/octopus.txt": "An octopus has three hearts and blue blood. Two hearts pump blood through the gills. "
    "The third heart circulates blood to the rest of the body.",
    "history/printing.html": "<html><head><title>Printing</title><script>var x = 1;</script></head><body>"
    "<p>Johannes Gutenberg introduced movable-type printing to Europe around 1440.</p>"
    "<p>His press made books far cheaper to produce.</p></body></html>",
}


def granrag(*args, env=None, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "granrag_mcp.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    write_corpus(root / "docs", FACTS, repeat=1)
    (root / "docs" / "logo.svg").write_bytes(b"<svg/>")
    result = granrag("index", root / "docs", "--store", root / "store")
    assert result.returncode == 0, result.stderr
    assert "3 added" in result.stdout and "1 unsupported" in result.stdout
    assert "embedding sentences" in result.stderr  # progress goes to stderr
    return root


def test_an_index_run_ends_with_its_stages_on_stderr_and_in_its_json(tmp_path):
    write_corpus(tmp_path / "docs", FACTS, repeat=1)
    result = granrag("index", tmp_path / "docs", "--store", tmp_path / "store", "--json", "--quiet")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # stdout holds the JSON alone
    stages = summary["stages"]
    lines = [line.split() for line in result.stderr.splitlines() if line.startswith("stage ")]
    assert [line[1] for line in lines] == [row["stage"] for row in stages]
    assert {"extract", "chunk", "embed", "index", "commit"} <= {row["stage"] for row in stages}
    for line, row in zip(lines, stages):
        assert float(line[3]) == pytest.approx(row["wall_s"], abs=0.006)
        assert float(line[6]) == pytest.approx(row["cpu_s"], abs=0.006)
        assert row["wall_s"] >= 0 and row["cpu_s"] >= 0
    assert summary["total"]["wall"] >= max(row["wall_s"] for row in stages)
    assert any(line.startswith("run   total") for line in result.stderr.splitlines())


@pytest.mark.parametrize("command", ["index", "status", "search", "serve", "recover"])
def test_help_of_every_command_lists_its_options(command):
    result = granrag(command, "--help")
    assert result.returncode == 0
    assert "--store" in result.stdout and "usage: granrag-mcp " + command in result.stdout


def test_status_reports_the_store(store):
    result = granrag("status", "--store", store / "store", "--json")
    status = json.loads(result.stdout)
    assert status["documents"] == 3 and status["generation"] == 1
    assert status["model"] == "sentence-transformers/all-MiniLM-L6-v2" and status["dimension"] == 384
    assert all(status["chunks"][level] > 0 for level in ("broad", "mid", "narrow"))
    assert status["size_bytes"] > 0
    assert status["languages"] == {"en": 3}


@pytest.mark.parametrize(
    ("query", "doc_id", "needle"),
    [
        ("How many hearts does an octopus have?", "biology/octopus.txt", "three hearts"),
        ("Who brought movable type printing to Europe?", "history/printing.html", "Gutenberg"),
        ("Which volcano is on Sicily?", "geology/volcanoes.md", "Etna"),
    ],
)
def test_search_finds_the_known_passage_with_the_real_model(store, query, doc_id, needle):
    result = granrag("search", query, "--store", store / "store", "--level", "narrow", "-k", "3", "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)
    assert hits[0]["doc_id"] == doc_id and needle in hits[0]["text"]


def test_html_is_indexed_as_visible_text_only(store):
    result = granrag("search", "var x", "--store", store / "store", "--level", "broad", "--json", "--lexical")
    assert all("var x" not in hit["text"] for hit in json.loads(result.stdout))


def test_rerun_is_incremental(store):
    result = granrag("index", store / "docs", "--store", store / "store", "--quiet")
    assert result.returncode == 0 and "no changes" in result.stdout and "3 unchanged" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status", "--store", "/nonexistent/store"], "no index at /nonexistent/store"),
        (["index", "/nonexistent/docs", "--store", "/tmp/x"], "no such file or folder"),
        (["search", "", "--store", "/nonexistent/store"], "no index at"),
        (["status", "--store", "/tmp", "--log-level", "INFO"], "no index at /tmp"),
        (["serve", "--store", "/tmp/x", "--library", "/nonexistent/notes"], "library folder not found"),
        (["index", "/tmp", "--store", "/tmp/x", "--watch", "--json"], "--watch runs the local engine"),
    ],
)
def test_user_errors_are_one_line_without_traceback(args, message):
    result = granrag(*args)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_invalid_settings_are_one_line(tmp_path):
    result = granrag("index", tmp_path, "--broad-tokens", "100", "--broad-overlap", "200")
    assert result.returncode == 2 and "Traceback" not in result.stderr and "overlap" in result.stderr


def test_empty_input_leaves_the_store_untouched(store, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    before = (store / "store" / "CURRENT").read_text()
    result = granrag("index", empty, "--store", store / "store")
    assert result.returncode == 1 and "nothing to index" in result.stderr
    assert (store / "store" / "CURRENT").read_text() == before


def test_model_mismatch_names_both_sides(store):
    result = granrag("index", store / "docs", "--store", store / "store", "--mid-tokens", "256")
    assert result.returncode == 1
    assert "mid_tokens: store=512, requested=256" in result.stderr and "--rebuild" in result.stderr


def assert_one_line_error(result, *needles):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    for needle in needles:
        assert needle in result.stderr


@pytest.mark.parametrize(
    ("command", "args"),
    [("index", ["DOCS"]), ("status", []), ("search", ["octopus"]), ("recover", []), ("serve", [])],
)
def test_a_store_that_is_a_file_is_one_line(tmp_path, command, args):
    docs = write_corpus(tmp_path / "docs", FACTS, repeat=1)
    store = tmp_path / "store.txt"
    store.write_text("not a store")
    args = [docs if a == "DOCS" else a for a in args]
    result = granrag(command, *args, "--store", store)
    assert_one_line_error(result, f"the store {store} is a file", "pass --store")
    assert store.read_text() == "not a store"


def test_a_read_only_store_refuses_index_and_recover_and_still_serves_reads(store, tmp_path):
    from tests.store.mounts import read_only_view

    with read_only_view(store / "store", tmp_path / "view") as view:
        for command in (["index", store / "docs"], ["recover"]):
            result = granrag(*command, "--store", view)
            assert_one_line_error(result, "Read-only file system", f"`{command[0]}` needs write access")
        status = granrag("status", "--store", view, "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["generation"] == 1
        search = granrag("search", "octopus hearts", "--store", view, "--json")
        assert search.returncode == 0 and json.loads(search.stdout)[0]["doc_id"] == "biology/octopus.txt"


def test_a_full_disk_is_one_line_for_index_and_recover(store, tmp_path):
    import shutil

    from tests.store.mounts import fill, small_disk

    docs = tmp_path / "docs"
    shutil.copytree(store / "docs", docs)
    with small_disk(tmp_path / "disk", kib=2048) as disk:
        shutil.copytree(store / "store", disk / "store")
        (docs / "tides.txt").write_text("The moon's gravity raises two tidal bulges on the oceans.")
        assert granrag("index", docs, "--store", disk / "store", "--quiet").returncode == 0  # generation 2
        filler = fill(disk)
        (docs / "tides.txt").write_text("Spring tides follow the full and the new moon.")
        result = granrag("index", docs, "--store", disk / "store", "--quiet")
        assert_one_line_error(result, "No space left on device", "generation is gen-000002 and is intact")
        assert not list((disk / "store").glob(".tmp-gen-*"))
        result = granrag("recover", "--store", disk / "store")
        assert_one_line_error(result, "could not make gen-000001 current", "No space left on device")
        status = granrag("status", "--store", disk / "store", "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["generation"] == 2
        filler.unlink()
        assert granrag("recover", "--store", disk / "store").returncode == 0


def test_an_unanticipated_file_system_error_is_one_line(tmp_path):
    too_long = tmp_path / ("x" * 300)  # longer than any file name may be
    result = granrag("index", too_long, "--store", tmp_path / "store")
    assert_one_line_error(result, "File name too long", "check that the path exists")


def test_index_watch_follows_the_folder_and_stops_on_sigterm(tmp_path):
    import signal
    import threading
    import time

    docs = write_corpus(tmp_path / "docs", FACTS, repeat=1)
    process = subprocess.Popen(
        [sys.executable, "-m", "granrag_mcp.cli", "index", docs, "--store", tmp_path / "store", "--watch", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    watchdog = threading.Timer(180, process.kill)  # a line that never comes ends the process, and so the read
    watchdog.start()
    try:
        first = process.stdout.readline()
        assert first.startswith("committed: generation 1 committed: 3 added"), first
        time.sleep(1)  # the watch starts after the first run
        (docs / "geology" / "volcanoes.md").unlink()
        second = process.stdout.readline()
        assert second.startswith("committed: generation 2 committed: 0 added, 0 updated, 1 removed, 2 unchanged")
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        watchdog.cancel()
        process.kill()
