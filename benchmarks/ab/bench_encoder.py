"""The torch-only BERT runner (`granrag_mcp/bert.py`) against sentence-transformers, in fp32, on the bundled model.

Each measurement runs in a fresh process, the two runners alternating (A B, then B A, ...), so both see the
same phases of a shared machine:

    startup     process start to the first query vector: imports, model load, first forward
    rss         resident memory after the model is loaded, and after the first query
    query       single-query forward p50/p95 over SQuAD-A questions, torch on 1 thread (as the server runs)
    batch       sentences/s over SQuAD-A sentences, in the embedder's batches, torch on 1 thread (one worker)

The machine is shared, so besides wall time each figure has its CPU time (the thread's for a query or a batch
run, the process's for start-up): CPU time counts the work done, not the waits for a core. Each round's two runs
are adjacent in time, so the per-round ratio of the two runners is the figure least moved by the load; its
median over the rounds is `paired_gain`. The vectors of both runners are compared (cosine per text). The result
goes to benchmarks/results/encoder.json.

    .venv/bin/python benchmarks/ab/bench_encoder.py                  # 6 rounds, 300 questions, 2000 sentences
    .venv/bin/python benchmarks/ab/bench_encoder.py --rounds 2 --no-save
"""

from __future__ import annotations

import time

STARTED = time.time()  # before any import, for the child's start-up

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks._common import (  # noqa: E402
    conclude,
    git_revision,
    latency_summary,
    load_average,
    machine,
    offline_env,
    result_arguments,
)

RUNNERS = ("bert", "sentence-transformers")
WIN = 0.20  # the gain bert.py must show on a user-visible figure to be kept


def rss_mib() -> tuple[float, float]:
    """(resident now, peak resident) of this process, in MiB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


# --- child: one runner, fresh process -----------------------------------------------------------------------


def load_runner(runner: str) -> Any:
    """The encoder, imports included (they are part of the start-up being measured)."""
    if runner == "bert":
        from granrag_mcp.embedding.encoders import load_encoder
    else:
        from granrag_mcp.embedding.encoders import SentenceTransformersEncoder
    from granrag_mcp.embedding.embedder import DEFAULT_MODEL, resolve_model_location

    location = resolve_model_location(DEFAULT_MODEL)
    encoder = load_encoder(location) if runner == "bert" else SentenceTransformersEncoder(location)
    encoder.set_precision("fp32")
    return encoder


def child(runner: str, spawned: float, texts_file: Path, vectors_file: Path) -> dict[str, Any]:
    import numpy as np
    import torch

    from granrag_mcp.embedding.embedder import normalise, plan_batches

    imported = time.time()
    encoder = load_runner(runner)
    loaded = time.time()
    rss_loaded, _ = rss_mib()

    def forward(texts: list[str]) -> np.ndarray:
        with torch.inference_mode():
            return normalise(encoder.pooled(encoder.features(texts)).float().numpy())

    forward(["when did the bridge open"])
    first = time.time()
    startup_cpu = time.process_time()
    rss_first, _ = rss_mib()

    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    torch.set_num_threads(1)
    questions = texts["questions"]
    for question in questions[:20]:  # warm-up: kernels for the common shapes
        forward([question])
    times, cpu_times, query_vectors = [], [], []
    for question in questions:
        began, began_cpu = time.perf_counter(), time.thread_time()
        query_vectors.append(forward([question])[0])
        times.append(time.perf_counter() - began)
        cpu_times.append(time.thread_time() - began_cpu)

    sentences = texts["sentences"]
    batches = plan_batches(encoder.token_lengths(sentences), 256)
    sentence_vectors = np.empty((len(sentences), encoder.dimension), dtype=np.float32)
    forward(sentences[:64])  # warm-up
    began, began_cpu = time.perf_counter(), time.thread_time()
    for rows in batches:
        sentence_vectors[rows] = forward([sentences[i] for i in rows])
    batch_seconds, batch_cpu = time.perf_counter() - began, time.thread_time() - began_cpu
    np.save(vectors_file, np.vstack([np.stack(query_vectors), sentence_vectors]))
    return {
        "runner": runner,
        "startup_s": round(first - spawned, 3),
        "startup_cpu_s": round(startup_cpu, 3),
        "python_start_s": round(STARTED - spawned, 3),
        "imports_s": round(imported - STARTED, 3),
        "load_s": round(loaded - imported, 3),
        "first_forward_s": round(first - loaded, 3),
        "rss_after_load_mib": round(rss_loaded, 1),
        "rss_after_first_query_mib": round(rss_first, 1),
        "query": latency_summary(times),
        "query_cpu_p50_ms": round(statistics.median(cpu_times) * 1000, 3),
        "batch_sentences_per_s": round(len(sentences) / batch_seconds, 1),
        "batch_sentences_per_cpu_s": round(len(sentences) / batch_cpu, 1),
        "batch_seconds": round(batch_seconds, 2),
        "peak_rss_mib": round(rss_mib()[1], 1),
    }


# --- parent: alternate the runners, compare -------------------------------------------------------------------


def texts(questions: int, sentences: int) -> dict[str, list[str]]:
    from benchmarks.corpora import squad_corpus
    from granrag_mcp.indexing.sentences import split_sentences

    documents, bench_questions = squad_corpus.load()
    chosen = squad_corpus.sample(bench_questions, questions, seed=0)
    found = [text[s:e] for text in documents.values() for s, e in split_sentences(text)]
    return {"questions": [q.question for q in chosen], "sentences": found[:sentences]}


def run_child(runner: str, texts_file: Path, vectors_file: Path) -> dict[str, Any]:
    spawned = time.time()
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            runner,
            "--spawned",
            repr(spawned),
            "--texts",
            str(texts_file),
            "--vectors",
            str(vectors_file),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{runner} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    values = [run[key] if "." not in key else run[key.split(".")[0]][key.split(".")[1]] for run in runs]
    return round(statistics.median(values), 3)


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    keys = [
        "startup_s",
        "startup_cpu_s",
        "imports_s",
        "load_s",
        "first_forward_s",
        "rss_after_load_mib",
        "rss_after_first_query_mib",
        "query.p50_ms",
        "query.p95_ms",
        "query_cpu_p50_ms",
        "batch_sentences_per_s",
        "batch_sentences_per_cpu_s",
        "peak_rss_mib",
    ]
    return {key.replace(".", "_"): median_of(runs, key) for key in keys}


LOWER_IS_BETTER = [
    "startup_s",
    "startup_cpu_s",
    "query_p50_ms",
    "query_cpu_p50_ms",
    "rss_after_load_mib",
    "rss_after_first_query_mib",
]
HIGHER_IS_BETTER = ["batch_sentences_per_s", "batch_sentences_per_cpu_s"]


def gains(bert: dict[str, float], st: dict[str, float]) -> dict[str, float]:
    """How much less bert.py takes (time, memory) or how much more it does (throughput), as a fraction."""
    out = {key: round(1 - bert[key] / st[key], 3) for key in LOWER_IS_BETTER}
    out.update({key: round(bert[key] / st[key] - 1, 3) for key in HIGHER_IS_BETTER})
    return out


def paired_gains(bert_runs: list[dict[str, Any]], st_runs: list[dict[str, Any]]) -> dict[str, float]:
    """`gains` of each round's two adjacent runs, median over the rounds."""
    per_round = [gains(summary([mine]), summary([theirs])) for mine, theirs in zip(bert_runs, st_runs)]
    return {key: round(statistics.median(g[key] for g in per_round), 3) for key in per_round[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--sentences", type=int, default=2000)
    result_arguments(parser, "encoder")
    parser.add_argument("--child", choices=RUNNERS, help=argparse.SUPPRESS)
    parser.add_argument("--spawned", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--texts", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    offline_env()
    if args.child:
        print(json.dumps(child(args.child, args.spawned, args.texts, args.vectors)))
        return

    import numpy as np

    info = {**machine(), "revision": git_revision(), "precision": "fp32", "torch_threads_query_and_batch": 1}
    with tempfile.TemporaryDirectory() as folder:
        texts_file = Path(folder) / "texts.json"
        texts_file.write_text(json.dumps(texts(args.questions, args.sentences)), encoding="utf-8")
        runs: dict[str, list[dict[str, Any]]] = {runner: [] for runner in RUNNERS}
        for round_ in range(args.rounds):
            order = RUNNERS if round_ % 2 == 0 else RUNNERS[::-1]
            for runner in order:
                result = run_child(runner, texts_file, Path(folder) / f"{runner}.npy")
                runs[runner].append(result)
                print(
                    f"round {round_ + 1} {runner}: start-up {result['startup_s']} s "
                    f"(CPU {result['startup_cpu_s']} s), query p50 {result['query']['p50_ms']} ms "
                    f"(CPU {result['query_cpu_p50_ms']} ms), {result['batch_sentences_per_s']} sentences/s "
                    f"({result['batch_sentences_per_cpu_s']} per CPU s), RSS {result['rss_after_load_mib']} MiB, "
                    f"load {load_average()}",
                    file=sys.stderr,
                )
        mine, theirs = np.load(Path(folder) / "bert.npy"), np.load(Path(folder) / "sentence-transformers.npy")
    cosine = (mine * theirs).sum(axis=1)
    medians = {runner: summary(results) for runner, results in runs.items()}
    gain = gains(medians["bert"], medians["sentence-transformers"])
    paired = paired_gains(runs["bert"], runs["sentence-transformers"])
    result = {
        "benchmark": "encoder",
        "machine": info,
        "questions": args.questions,
        "sentences": args.sentences,
        "rounds": args.rounds,
        "median": medians,
        "bert_gain_of_medians": gain,
        "paired_gain": paired,
        "keep_bert": any(value >= WIN for value in paired.values()),
        "cosine_min": round(float(cosine.min()), 6),
        "runs": runs,
    }
    conclude(args, result)


if __name__ == "__main__":
    main()
