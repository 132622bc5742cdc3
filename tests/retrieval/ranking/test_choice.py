import dataclasses

import pytest

from granrag_mcp.errors import InvalidInputError
from granrag_mcp.retrieval.ranking.choice import STORE_RANKER_FILE, RankerChoice, write_store_ranker
from granrag_mcp.retrieval.ranking.model import read_ranker, shipped_ranker
from granrag_mcp.store.store import Snapshot, read_current
from tests.helpers import index, write_corpus


def test_a_fitted_ranker_is_a_new_checksummed_generation_and_survives_reindexing(tmp_path):
    docs = write_corpus(tmp_path / "docs")
    index(docs, tmp_path / "store")
    first = Snapshot.open(tmp_path / "store")
    fitted = dataclasses.replace(shipped_ranker(), name="fitted-test")
    name = write_store_ranker(tmp_path / "store", fitted)
    assert name == "gen-000002" == read_current(tmp_path / "store").generation
    second = Snapshot.open(tmp_path / "store")  # verifies every checksum, the ranker's included
    assert STORE_RANKER_FILE in second.manifest.files and second.manifest.counts == first.manifest.counts
    choice = RankerChoice("auto")
    assert choice.for_snapshot(first) is shipped_ranker()
    assert choice.for_snapshot(second).name == "fitted-test"
    assert choice.for_snapshot(second) is choice.for_snapshot(second)
    assert RankerChoice("shipped").for_snapshot(second) is shipped_ranker()
    assert RankerChoice("off").for_snapshot(second) is None

    (docs / "extra.md").write_text("A new document about lighthouses and their keepers.")
    index(docs, tmp_path / "store")
    third = Snapshot.open(tmp_path / "store")
    assert third.generation == 3 and STORE_RANKER_FILE in third.manifest.files
    assert read_ranker(third.folder / STORE_RANKER_FILE).name == "fitted-test"
    for snapshot in (first, second, third):
        snapshot.close()


def test_a_ranker_file_setting_is_read_at_start_and_a_bad_one_refused(tmp_path):
    shipped_ranker().write(tmp_path / "mine.json")
    assert RankerChoice(str(tmp_path / "mine.json")).for_snapshot(None).name == shipped_ranker().name
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InvalidInputError, match="cannot use the candidate ranker"):
        RankerChoice(str(tmp_path / "bad.json"))


def test_fitting_into_a_store_without_an_index_says_how_to_build_one(tmp_path):
    with pytest.raises(InvalidInputError, match="granrag-mcp index"):
        write_store_ranker(tmp_path / "empty", shipped_ranker())


def test_auto_and_shipped_pick_the_maxsim_ranker_for_a_store_with_token_vectors(tmp_path):
    from tests.fakes import FakeTokenEmbedder

    index(write_corpus(tmp_path / "docs"), tmp_path / "store", FakeTokenEmbedder(), token_vector_dims=32)
    snapshot = Snapshot.open(tmp_path / "store")
    assert RankerChoice("auto").for_snapshot(snapshot) is shipped_ranker(tokens=True)
    assert RankerChoice("shipped").for_snapshot(snapshot) is shipped_ranker(tokens=True)
    assert RankerChoice("off").for_snapshot(snapshot) is None


def test_an_adapted_reliance_factor_scales_only_a_ranker_that_adapts_its_reliance(tmp_path):
    from granrag_mcp.store.adaptation import Adaptation

    index(write_corpus(tmp_path / "docs"), tmp_path / "store")
    snapshot = Snapshot.open(tmp_path / "store")
    halved = Adaptation({}, ranker_dense_scale=0.5)
    choice = RankerChoice("auto")
    assert not shipped_ranker().adapts_reliance  # its best factor on labelled questions was 1 on both domains
    assert choice.for_snapshot(snapshot, adaptation=halved) is shipped_ranker()
    adapting = dataclasses.replace(shipped_ranker(), name="adapting", adapts_reliance=True)
    write_store_ranker(tmp_path / "store", adapting)
    later = Snapshot.open(tmp_path / "store")
    scaled = choice.for_snapshot(later, adaptation=halved)
    assert scaled.name == "adapting*dense0.5"
    at = scaled.hrr.features.index("dense_gap")
    assert scaled.hrr.coef[at] == 0.5 * adapting.hrr.coef[at]
    assert read_ranker(later.folder / STORE_RANKER_FILE).adapts_reliance
    for opened in (snapshot, later):
        opened.close()
