"""A generation's adaptation file: depths and rank constants round-trip, and a file of the first version still reads."""

import json

import pytest

from granrag_mcp.store.adaptation import Adaptation, read_adaptation, write_adaptation


def test_depths_and_rank_constants_round_trip(tmp_path):
    adaptation = Adaptation(
        {"rrf": {"narrow_dense": 0.7, "narrow_lexical": 1.3}},
        0.5,
        200,
        {"rrf": {"share": 0.35}},
        {"rrf": {"narrow_dense": 10}},
        {"rrf": 20},
    )
    write_adaptation(tmp_path, adaptation)
    read = read_adaptation(tmp_path)
    assert read == adaptation
    assert read.list_depths("rrf") == {"narrow_dense": 10} and read.rrf_k("rrf") == 20
    assert read.list_depths("hrr") == {} and read.rrf_k("hrr") is None


def test_a_first_version_file_reads_without_depths_or_constants(tmp_path):
    data = Adaptation({"rrf": {"narrow_dense": 1.0}}).to_json()
    del data["depths"], data["rrf_k"]
    (tmp_path / "adaptation.json").write_text(json.dumps({**data, "format_version": 1}))
    read = read_adaptation(tmp_path)
    assert read is not None and read.weights("rrf") == {"narrow_dense": 1.0}
    assert read.depths == {} and read.rrf_ks == {}
    (tmp_path / "adaptation.json").write_text(json.dumps({**data, "format_version": 99}))
    with pytest.raises(ValueError, match="version 1 or 2"):
        read_adaptation(tmp_path)
