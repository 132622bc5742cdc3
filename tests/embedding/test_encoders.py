import json
from pathlib import Path

import numpy as np
import pytest

from granrag_mcp.embedding.embedder import normalise, resolve_model_location
from granrag_mcp.embedding.encoders import (
    NORMALIZE,
    POOLING,
    TRANSFORMER,
    MeanPoolingEncoder,
    SentenceTransformersEncoder,
    mean_pooling_settings,
)

MEAN = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False}


def model_folder(tmp_path: Path, kinds: list[str], pooling: dict, config: dict | None = None) -> Path:
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    paths = {TRANSFORMER: "", POOLING: "1_Pooling", NORMALIZE: "2_Normalize"}
    modules = [{"idx": i, "name": str(i), "path": paths.get(kind, "x"), "type": kind} for i, kind in enumerate(kinds)]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 8, **pooling}))
    (folder / "sentence_bert_config.json").write_text(json.dumps(config or {"max_seq_length": 128}))
    return folder


def test_the_common_layout_is_recognised(tmp_path: Path) -> None:
    folder = model_folder(
        tmp_path, [TRANSFORMER, POOLING, NORMALIZE], MEAN, {"max_seq_length": 200, "do_lower_case": True}
    )
    assert mean_pooling_settings(folder) == {"max_tokens": 200, "lower_case": True}
    assert mean_pooling_settings(model_folder(tmp_path / "b", [TRANSFORMER, POOLING], MEAN)) == {
        "max_tokens": 128,
        "lower_case": False,
    }


@pytest.mark.parametrize(
    ("kinds", "pooling", "config"),
    [
        ([TRANSFORMER, POOLING, NORMALIZE], {**MEAN, "pooling_mode_cls_token": True}, None),  # two modes
        ([TRANSFORMER, POOLING, NORMALIZE], {**MEAN, "pooling_mode_mean_tokens": False}, None),  # no mean
        ([TRANSFORMER, POOLING, "sentence_transformers.models.Dense", NORMALIZE], MEAN, None),  # a projection
        ([TRANSFORMER, POOLING], MEAN, {"do_lower_case": False}),  # no max_seq_length
    ],
)
def test_other_layouts_go_to_sentence_transformers(tmp_path: Path, kinds, pooling, config) -> None:
    assert mean_pooling_settings(model_folder(tmp_path, kinds, pooling, config)) is None


def test_a_folder_without_modules_is_not_the_common_layout(tmp_path: Path) -> None:
    assert mean_pooling_settings(tmp_path) is None
    (tmp_path / "modules.json").write_text("not json")
    assert mean_pooling_settings(tmp_path) is None


def test_the_transformers_runner_gives_sentence_transformers_vectors() -> None:
    import torch

    location = resolve_model_location("sentence-transformers/all-MiniLM-L6-v2")
    plain = MeanPoolingEncoder(Path(location), max_tokens=256, lower_case=False)
    full = SentenceTransformersEncoder(location)
    assert (plain.dimension, plain.max_tokens) == (full.dimension, full.max_tokens) == (384, 256)
    texts = ["  The bridge opened in 1931.  ", "Short.", "word " * 400, "Zürich 漢字 🙂 émigré"]
    with torch.inference_mode():
        mine = normalise(plain.pooled(plain.features(texts)).numpy())
        theirs = normalise(full.pooled(full.features(texts)).numpy())
    np.testing.assert_allclose(mine, theirs, atol=1e-5)
