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

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.evaluation.arguments import EVAL_EXTRA
from granrag_mcp.evaluation.metrics import contains, hit_rate, mrr
from granrag_mcp.evaluation.qa import Question
from granrag_mcp.retrieval.candidate_ranking import RANKED_HEAD, hrr_table
from granrag_mcp.retrieval.hrr import hrr_candidates
from granrag_mcp.retrieval.ranking.features import (
    ALL_FEATURES,
    INSIDE_FEATURES,
    KNOWN_FEATURES,
    LIST_FEATURES,
    TOKEN_FEATURES,
    order_by,
)
from granrag_mcp.retrieval.ranking.model import CandidateRanker, LinearModel

SEEDS = (0, 1)
LEGACY_FEATURES = (
    LIST_FEATURES + INSIDE_FEATURES,
    LIST_FEATURES + INSIDE_FEATURES + TOKEN_FEATURES,
    KNOWN_FEATURES,
)
"""The column lists of dataset files that do not name theirs: before the MaxSim features, before the rank
features, and the current one."""
REGULARISATION = 1.0  # scikit-learn's C; the features are standardised first


@dataclass
class Dataset:
    """One row per HRR candidate of every question (features only for the first RANKED_HEAD of each)."""

    features: np.ndarray  # rows x KNOWN_FEATURES, NaN beyond the head (and for MaxSim, in a store without tokens)
    question: np.ndarray  # question number of each row
    position: np.ndarray  # the row's place in HRR's order
    mid_hit: np.ndarray  # the candidate holds the answer
    parent: np.ndarray  # the candidate's parent chunk id
    broad_hit: np.ndarray  # the parent holds the answer
    groups: np.ndarray  # document of each question

    def save(self, path: Path) -> None:
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__}
        np.savez(path, **fields, feature_names=np.array(KNOWN_FEATURES[: self.features.shape[1]]))

    @classmethod
    def load(cls, path: Path) -> Dataset:
        """A saved dataset, its feature columns placed by name: a file of an older feature list gets NaN columns for
        the features it lacks, wherever they now stand."""
        with np.load(path, allow_pickle=False) as data:
            loaded = cls(**{name: data[name] for name in cls.__dataclass_fields__})
            names = [str(n) for n in data["feature_names"]] if "feature_names" in data else None
        if names is None:  # written before files named their columns: the lists that had that many
            names = next(list(known) for known in LEGACY_FEATURES if len(known) == loaded.features.shape[1])
        features = np.full((len(loaded.features), len(KNOWN_FEATURES)), np.nan)
        features[:, [KNOWN_FEATURES.index(name) for name in names]] = loaded.features
        loaded.features = features
        return loaded

    @property
    def has_tokens(self) -> bool:
        """Whether the MaxSim features were collected (the store held token vectors)."""
        at = KNOWN_FEATURES.index(TOKEN_FEATURES[0])
        if self.features.shape[1] <= at:
            return False
        column = self.features[self.position < RANKED_HEAD, at]
        return bool(len(column)) and not np.isnan(column).any()

    def feature_sets(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The features of the `hrr` and `chunks` models fitted on this data: with MaxSim where collected."""
        extra = TOKEN_FEATURES if self.has_tokens else ()
        return ALL_FEATURES + extra, INSIDE_FEATURES + extra


def collect(
    view: Any, questions: Sequence[Question], vectors: np.ndarray, progress: Callable[[int, int], None] | None = None
) -> Dataset:
    """Features and labels of HRR's candidates for every question (the view's own ranker is not applied); the
    MaxSim features where the store holds token vectors."""
    tokens = view.snapshot.token_vectors is not None
    if tokens and callable(getattr(view.embedder, "embed_tokens", None)):
        # The questions' token vectors in batches, as their vectors were (one forward each, not one per question).
        view.embedder.embed_tokens([q.question.strip() for q in questions], lambda states: states)
    rows: list[np.ndarray] = []
    question, position, mid_hit, parent, broad_hit = [], [], [], [], []
    parents_known: dict[int, Any] = {}
    for number, (q, vector) in enumerate(zip(questions, vectors)):
        _, candidates = hrr_candidates(view, q.question, ranked=False)
        head = candidates[:RANKED_HEAD]
        table = hrr_table(view, q.question, vector, head, tokens=tokens) if head else {}
        block = np.full((len(candidates), len(KNOWN_FEATURES)), np.nan)
        for j, name in enumerate(KNOWN_FEATURES):
            if name in table:
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
    width = len(KNOWN_FEATURES)
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
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        raise InvalidInputError(f"fitting the candidate ranker needs scikit-learn: {EVAL_EXTRA}") from None

    columns = [KNOWN_FEATURES.index(f) for f in features]
    keep = rows & (data.position < RANKED_HEAD)
    x, y = data.features[keep][:, columns], data.mid_hit[keep]
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    if len(set(y.tolist())) < 2:
        raise ValueError("the training questions' candidates are all hits or all misses: nothing to learn from")
    model = LogisticRegression(C=c, max_iter=2000).fit((x - mean) / scale, y)
    return LinearModel(tuple(features), mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0]))


def ranks(data: Dataset, questions: np.ndarray, model: Any) -> tuple[list[int | None], list[int | None]]:
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
            scores = model.score({name: block[:, KNOWN_FEATURES.index(name)] for name in model.features})
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
    fit: Callable[[Dataset, np.ndarray, Sequence[str]], Any] | None = None,
) -> dict[str, Any]:
    """Two-fold cross-validation across documents, per seed: HRR's order, the model fitted on the other half,
    and each model of `others` (fixed, not refitted) on the same questions. Figures averaged over the seeds.
    `fit(data, training rows, features)` fits another kind of model (anything with `features` and `score`);
    by default the logistic regression."""
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
            fitted = fit(data, train_rows, features) if fit is not None else fit_model(data, train_rows, features, c)
            models: dict[str, Any] = {"HRR": None, "fitted": fitted}
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
    """Both models fitted on every question, with their cross-validated figures (and the baseline's, if given).
    Where the data has the MaxSim features (a store with token vectors), the models use them."""
    every = np.ones(len(data.question), dtype=bool)
    hrr_features, chunk_features = data.feature_sets()
    others = {"baseline": baseline.hrr} if baseline is not None else None
    hrr_cv = cross_validate(data, hrr_features, others=others, c=c)
    chunks_cv = cross_validate(data, chunk_features, others={"baseline": baseline.chunks} if baseline else None, c=c)
    return CandidateRanker(
        name,
        fit_model(data, every, hrr_features, c),
        fit_model(data, every, chunk_features, c),
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
    from granrag_mcp.retrieval.ranking.choice import write_store_ranker
    from granrag_mcp.retrieval.ranking.model import shipped_ranker

    data = collect(view, questions, vectors, progress)
    shipped = shipped_ranker(tokens=data.has_tokens)  # the one the server would use on this store
    kind = "linear-maxsim" if data.has_tokens else "linear"
    ranker = fit_ranker(data, f"{kind}-fitted-{len(questions)}q", source, baseline=shipped)
    figures = ranker.cross_validation["hrr"]
    report = [
        f"candidate ranker{' with MaxSim (the store holds token vectors)' if data.has_tokens else ''}, 2-fold "
        f"cross-validation across {figures['documents']} documents, seeds "
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
