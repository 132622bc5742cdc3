"""Which candidate ranker a server uses, and the ranker a store carries.

A ranker fitted with `granrag-mcp eval --fit-ranker` is written into a new generation of the store (listed and
checksummed in its manifest like every index file), so it travels with the index it was fitted on and a reader
never sees a half-written one. The setting `candidate_ranker` picks: `auto` (the store's ranker where its current
generation carries one, else the shipped one), `shipped`, `off`, or the path of a ranker file. The shipped ranker
is the MaxSim variant for a store with token vectors.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.retrieval.ranking.model import CandidateRanker, read_ranker, shipped_ranker
from granrag_mcp.retrieval.ranking.reliance import scaled_model
from granrag_mcp.store.adaptation import Adaptation, read_adaptation
from granrag_mcp.store.generation import new_generation
from granrag_mcp.store.store import RANKER_FILE as STORE_RANKER_FILE
from granrag_mcp.store.store import Snapshot, load_manifest, read_current
from granrag_mcp.store.writer import StoreWriter

log = logging.getLogger(__name__)

"""The ranker's file in a generation folder."""


class RankerChoice:
    """The setting, resolved per snapshot: the same generation always gives the same ranker object."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._fixed: CandidateRanker | None = None
        self._by_folder: dict[Path, CandidateRanker] = {}
        self._adaptations: dict[Path, Adaptation | None] = {}
        self._scaled: dict[tuple[Path, float], CandidateRanker] = {}
        if spec not in ("auto", "off", "shipped"):
            self._fixed = read_ranker(Path(spec).expanduser())

    def adaptation(self, snapshot: Snapshot) -> Adaptation | None:
        """The ranking settings the snapshot's generation adapted to its text, read once per generation."""
        if snapshot.folder not in self._adaptations:
            self._adaptations[snapshot.folder] = read_adaptation(snapshot.folder)
        return self._adaptations[snapshot.folder]

    def for_snapshot(
        self, snapshot: Snapshot, adaptation: Adaptation | None = None, use_adaptation: bool = True
    ) -> CandidateRanker | None:
        """The ranker the setting names, with the embedding reliance the generation adapted to (or `adaptation`;
        none without `use_adaptation`, nor for a ranker that does not adapt its reliance). A fixed ranker file is
        used as it is."""
        if self.spec == "off":
            return None
        if self._fixed is not None:
            return self._fixed
        ranker = self._chosen(snapshot)
        adaptation = adaptation or (self.adaptation(snapshot) if use_adaptation else None)
        scale = adaptation.ranker_dense_scale if adaptation is not None else 1.0
        if scale == 1.0 or not ranker.adapts_reliance:
            return ranker
        key = (snapshot.folder, scale)
        if key not in self._scaled:
            self._scaled[key] = replace(
                ranker, name=f"{ranker.name}*dense{scale:g}", hrr=scaled_model(ranker.hrr, scale)
            )
        return self._scaled[key]

    def _chosen(self, snapshot: Snapshot) -> CandidateRanker:
        # The shipped ranker with MaxSim features where the store holds token vectors.
        tokens = bool(snapshot.manifest.identity.token_vector_dims)
        if self.spec == "shipped" or STORE_RANKER_FILE not in snapshot.manifest.files:
            return shipped_ranker(tokens)
        ranker = self._by_folder.get(snapshot.folder)
        if ranker is None:  # the file was checksummed when the snapshot opened
            ranker = self._by_folder[snapshot.folder] = read_ranker(snapshot.folder / STORE_RANKER_FILE)
        return ranker


def write_store_ranker(store: Path, ranker: CandidateRanker) -> str:
    """Commit a new generation that holds the current one's files and `ranker`; returns its name."""
    with StoreWriter(store, command="eval --fit-ranker") as writer:
        pointer = read_current(store)
        if pointer is None:
            raise InvalidInputError(f"no index at {store}: build one with `granrag-mcp index` first")
        manifest = load_manifest(store, pointer)
        with new_generation(writer) as draft:
            draft.share(store / pointer.generation, manifest.files, leave_out=[STORE_RANKER_FILE])
            ranker.write(draft.folder / STORE_RANKER_FILE)
            final = draft.publish(manifest.identity, manifest.counts, manifest.next_chunk_id, manifest.created_at)
    log.info("the store %s carries the ranker %s from %s on", store, ranker.name, final.name)
    return final.name
