"""Fitting the candidate ranker on a QA set, and measuring it across documents.

`collect` runs HRR without the ranker on every question and keeps, for each candidate, its features and whether
it (and its parent) holds the answer. `cross_validate` splits the documents in two halves (per seed), fits on
one half and scores the other, so every figure is measured on documents the model never saw. `fit_ranker` fits
on everything and keeps the cross-validated figures in the ranker file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from granrag_mcp.evaluation.metrics import contains, hit_rate, mrr
from granrag_mcp.evaluation.qa import Question
from granrag_mcp.retrieval.candidate_ranker import (
    ALL_FEATURES,
    INSIDE_FEATURES,
    RANKED_HEAD,
    CandidateRanker,
    LinearModel,
    hrr_table,
    order_by,
)
from granrag_mcp.retrieval.hrr import hrr_candidates

SEEDS = (0, 1)
REGULARISATION = 1.0  # scikit-learn's C; the features are standardised first


@dataclass
class Dataset:
    """One row per HRR candidate of every question (features only for the first RANKED_HEAD of each)."""

    features: np.ndarray  # rows x ALL_FEATURES, NaN beyond the head
    question: np.ndarray  # question number of each row
    position: np.ndarray  # the row's place in HRR's order
    mid_hit: np.ndarray  # the candidate holds the answer
    parent: np.ndarray  # the candidate's parent chunk id
    broad_hit: np.ndarray  # the parent holds the answer
    groups: np.ndarray  # document of each question

    def save(self, path: Path) -> None:
        np.savez(path, **{name: getattr(self, name) for name in self.__dataclass_fields__})

    @classmethod
    def load(cls, path: Path) -> Dataset:
        with np.load(path, allow_pickle=False) as data:
            return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def collect(
    view: Any, questions: Sequence[Question], vectors: np.ndarray, progress: Callable[[int, int], None] | None = None
) -> Dataset:
    """Features and labels of HRR's candidates for every question (the view's own ranker is not applied)."""
    rows: list[np.ndarray] = []
    question, position, mid_hit, parent, broad_hit = [], [], [], [], []
    parents_known: dict[int, Any] = {}
    for number, (q, vector) in enumerate(zip(questions, vectors)):
        _, candidates = hrr_candidates(view, q.question, ranked=False)
        head = candidates[:RANKED_HEAD]
        table = hrr_table(view, q.question, vector, head) if head else {}
        block = np.full((len(candidates), len(ALL_FEATURES)), np.nan)
        for j, name in enumerate(ALL_FEATURES):
            if head:
                block[: len(head), j] = table[name]
        rows.append(block)
        wanted = [h.chunk.parent_id for h in candidates if h.chunk.parent_id not in parents_known]
        parents_known.update(view.catalog.chunks(wanted))
        for place, hit in enumerate(candidates):
            c = hit.chunk
            p = parents_known.get(c.parent_id) if c.parent_id is not None else None
            question.append(number)
            position.append(place)
            mid_hit.append(contains((c.doc_id, c.start, c.end), q.doc_id, q.answer_start))
            parent.append(c.parent_id if c.parent_id is not None else -1)
            broad_hit.append(p is not None and contains((p.doc_id, p.start, p.end), q.doc_id, q.answer_start))
        if progress is not None:
            progress(number + 1, len(questions))
    width = len(ALL_FEATURES)
    return Dataset(
        np.vstack(rows) if rows else np.zeros((0, width)),
        np.array(question, np.int32),
        np.array(position, np.int32),
        np.array(mid_hit, bool),
        np.array(parent, np.int64),
        np.array(broad_hit, bool),
        np.array([q.doc_id for q in questions]),
    )


def fit_model(data: Dataset, rows: np.ndarray, features: Sequence[str], c: float = REGULARISATION) -> LinearModel:
    """A logistic regression of `mid_hit` on the standardised features of the head rows `rows` select."""
    from sklearn.linear_model import LogisticRegression

    columns = [ALL_FEATURES.index(f) for f in features]
    keep = rows & (data.position < RANKED_HEAD)
    x, y = data.features[keep][:, columns], data.mid_hit[keep]
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    if len(set(y.tolist())) < 2:
        raise ValueError("the training questions' candidates are all hits or all misses: nothing to learn from")
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return LinearModel(tuple(features), mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]))


def ranks(data: Dataset, questions: np.ndarray, model: LinearModel | None) -> tuple[list[int | None], list[int | None]]:
    """(mid ranks, broad ranks) of the first hit for each question in `questions`, the head ordered by `model`
    (None: HRR's own order)."""
    mid_ranks: list[int | None] = []
    broad_ranks: list[int | None] = []
    starts = np.searchsorted(data.question, questions)
    ends = np.searchsorted(data.question, questions, side="right")
    for begin, end in zip(starts, ends):
        order = list(range(end - begin))
        head = min(RANKED_HEAD, end - begin)
        if model is not None and head:
            block = data.features[begin : begin + head]
            scores = model.score({name: block[:, ALL_FEATURES.index(name)] for name in model.features})
            order = order_by(scores) + order[head:]
        hits = data.mid_hit[begin:end][order]
        mid_ranks.append(int(np.argmax(hits)) + 1 if hits.any() else None)
        parents = list(
            dict.fromkeys(zip(data.parent[begin:end][order].tolist(), data.broad_hit[begin:end][order].tolist()))
        )
        broad_ranks.append(next((n for n, (_, hit) in enumerate(parents, 1) if hit), None))
    return mid_ranks, broad_ranks


def _summary(mid: list[int | None], broad: list[int | None]) -> dict[str, float]:
    return {
        "broad MRR@5": mrr(broad, 5),
        "broad HR@5": hit_rate(broad, 5),
        "broad HR@1": hit_rate(broad, 1),
        "mid MRR@5": mrr(mid, 5),
        "mid HR@5": hit_rate(mid, 5),
        "mid HR@1": hit_rate(mid, 1),
    }


def cross_validate(
    data: Dataset,
    features: Sequence[str] = ALL_FEATURES,
    seeds: Sequence[int] = SEEDS,
    others: Mapping[str, LinearModel] | None = None,
    c: float = REGULARISATION,
) -> dict[str, Any]:
    """Two-fold cross-validation across documents, per seed: HRR's order, the model fitted on the other half,
    and each model of `others` (fixed, not refitted) on the same questions. Figures averaged over the seeds."""
    documents = sorted(set(data.groups.tolist()))
    if len(documents) < 2:
        raise ValueError("cross-validation across documents needs questions about at least two documents")
    results: dict[str, list[dict[str, float]]] = {}
    every = np.arange(len(data.groups))
    for seed in seeds:
        shuffled = np.random.default_rng(seed).permutation(documents)
        halves = [set(shuffled[: len(shuffled) // 2].tolist()), set(shuffled[len(shuffled) // 2 :].tolist())]
        collected: dict[str, tuple[list, list]] = {}
        for half in halves:
            test_questions = every[np.isin(data.groups, list(half))]
            train_rows = ~np.isin(data.question, test_questions)
            models: dict[str, LinearModel | None] = {"HRR": None, "fitted": fit_model(data, train_rows, features, c)}
            models.update(others or {})
            for name, model in models.items():
                mid, broad = ranks(data, test_questions, model)
                got = collected.setdefault(name, ([], []))
                got[0].extend(mid)
                got[1].extend(broad)
        for name, (mid, broad) in collected.items():
            results.setdefault(name, []).append(_summary(mid, broad))
    return {
        name: {key: round(float(np.mean([r[key] for r in runs])), 4) for key in runs[0]}
        for name, runs in results.items()
    } | {"seeds": list(seeds), "documents": len(documents), "questions": int(len(data.groups))}


def fit_ranker(
    data: Dataset, name: str, fitted_on: str, c: float = REGULARISATION, baseline: CandidateRanker | None = None
) -> CandidateRanker:
    """Both models fitted on every question, with their cross-validated figures (and the baseline's, if given)."""
    every = np.ones(len(data.question), dtype=bool)
    others = {"baseline": baseline.hrr} if baseline is not None else None
    hrr_cv = cross_validate(data, ALL_FEATURES, others=others, c=c)
    chunks_cv = cross_validate(data, INSIDE_FEATURES, others={"baseline": baseline.chunks} if baseline else None, c=c)
    return CandidateRanker(
        name,
        fit_model(data, every, ALL_FEATURES, c),
        fit_model(data, every, INSIDE_FEATURES, c),
        fitted_on,
        {"hrr": hrr_cv, "chunks": chunks_cv},
    )


COMPARED = ("broad MRR@5", "broad HR@5", "mid MRR@5", "mid HR@5")


def beats(fitted: Mapping[str, float], shipped: Mapping[str, float]) -> bool:
    """The fitted ranker is used only when its cross-validated MRR@5 is at least the shipped one's at both levels
    and higher at one."""
    keys = ("broad MRR@5", "mid MRR@5")
    return all(fitted[k] >= shipped[k] for k in keys) and any(fitted[k] > shipped[k] for k in keys)


def format_comparison(figures: Mapping[str, Mapping[str, float]]) -> str:
    names = [n for n in ("HRR", "baseline", "fitted") if n in figures]
    labels = {"HRR": "HRR without ranker", "baseline": "shipped ranker", "fitted": "fitted ranker"}
    lines = [f"{'':22}" + "".join(f"{k:>13}" for k in COMPARED)]
    lines += [f"{labels[n]:22}" + "".join(f"{figures[n][k]:13.3f}" for k in COMPARED) for n in names]
    return "\n".join(lines)


def run_fit(
    view: Any,
    questions: Sequence[Question],
    vectors: np.ndarray,
    store: Path,
    source: str,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[bool, str]:
    """`eval --fit-ranker`: fit on the questions, compare with the shipped ranker across documents, and commit the
    fitted one into the store only when it wins. Returns (used, the report's text)."""
    from granrag_mcp.retrieval.candidate_ranker import shipped_ranker
    from granrag_mcp.retrieval.ranker_choice import write_store_ranker

    data = collect(view, questions, vectors, progress)
    shipped = shipped_ranker()
    ranker = fit_ranker(data, f"linear-fitted-{len(questions)}q", source, baseline=shipped)
    figures = ranker.cross_validation["hrr"]
    report = [
        f"candidate ranker, 2-fold cross-validation across {figures['documents']} documents, seeds "
        f"{figures['seeds']} ({figures['questions']} questions):",
        format_comparison(figures),
    ]
    used = beats(figures["fitted"], figures["baseline"])
    if used:
        generation = write_store_ranker(store, ranker)
        report.append(
            f"the fitted ranker beats the shipped one: the store carries it from {generation} on "
            "(servers with candidate_ranker=auto use it)"
        )
    else:
        report.append("the fitted ranker does not beat the shipped one: not used, the store is unchanged")
    return used, "\n".join(report)
