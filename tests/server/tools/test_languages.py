"""A folder of six script families indexes in one run, and every family is found through the MCP client: each
document's language in index_status, list_documents and the hits, its sentences as the narrow chunks, its words
matched by BM25, and a language filter on the searches."""

from __future__ import annotations

import pytest
from mcp.client import Client

from granrag_mcp.server.app import build_server
from granrag_mcp.settings import Settings
from tests.fakes import FakeEmbedder
from tests.helpers import fake_index
from tests.server.test_app import call, fail, fake_engine, fake_settings, run

# doc -> (language, its text, a query in its language, the one sentence that query is about)
FAMILIES = {
    "latin.txt": (
        "es",
        "El faro se encendió cada noche durante un siglo. Los pescadores volvían al puerto guiados por su luz. "
        "Hoy el edificio es un museo del mar.",
        "pescadores guiados al puerto",
        "Los pescadores volvían al puerto guiados por su luz.",
    ),
    "cyrillic.txt": (
        "ru",
        "Старая мельница стояла на берегу реки. Каждую осень крестьяне привозили туда зерно. Теперь в ней живут совы.",
        "крестьяне привозят зерно осенью",
        "Каждую осень крестьяне привозили туда зерно.",
    ),
    "arabic.txt": (
        "ar",
        "بنى التجار سوقا كبيرا قرب الميناء. هل تعرف لماذا اختاروا هذا المكان؟ "
        "لأن السفن كانت تصل كل صباح محملة بالتوابل.",
        "السفن محملة بالتوابل",
        "لأن السفن كانت تصل كل صباح محملة بالتوابل.",
    ),
    "devanagari.txt": (
        "hi",
        "गाँव के बीच में एक पुराना कुआँ था। गर्मियों में किसान वहाँ पानी भरने आते थे। अब उसके पास एक विद्यालय है।",
        "किसान पानी भरने आते",
        "गर्मियों में किसान वहाँ पानी भरने आते थे।",
    ),
    "cjk.txt": (
        "zh",
        "这座石桥建于明朝。每年春天，附近的农民在桥下种植水稻。桥的另一边有一座小寺庙。",
        "农民种植水稻",
        "每年春天，附近的农民在桥下种植水稻。",
    ),
    "thai.txt": (
        "th",
        "ตลาดน้ำเปิดทุกเช้าวันเสาร์ แม่ค้าพายเรือขายผลไม้และขนม นักท่องเที่ยวมาถ่ายรูปจำนวนมาก",
        "แม่ค้าพายเรือขายผลไม้",
        "ตลาดน้ำเปิดทุกเช้าวันเสาร์ แม่ค้าพายเรือขายผลไม้และขนม",  # a clause is not a sentence (PyThaiNLP's CRF)
    ),
}
LEXICAL_ONLY = {"broad_dense": 0, "narrow_dense": 0, "broad_lexical": 0, "narrow_lexical": 1}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, FakeEmbedder]:
    root = tmp_path_factory.mktemp("languages")
    folder = root / "mixed"
    folder.mkdir()
    for name, (_, text, _, _) in FAMILIES.items():
        (folder / name).write_text(text, encoding="utf-8")
    settings, embedder = fake_settings(root / "store"), FakeEmbedder(dimension=256)
    summary = fake_index([folder], settings, embedder)
    assert summary.added == len(FAMILIES)  # one run for the mixed folder
    return settings, embedder


def server_of(built: tuple[Settings, FakeEmbedder]):  # type: ignore[no-untyped-def]
    settings, embedder = built
    engine = fake_engine(settings, embedder)
    return build_server(settings, engine_factory=lambda _: engine)


def test_every_document_has_its_language_in_list_documents_which_filters_by_it(
    built: tuple[Settings, FakeEmbedder],
) -> None:
    async def scenario(client: Client):
        return await call(client, "list_documents", {}), await call(client, "list_documents", {"language": "th"})

    listed, thai = run(server_of(built), scenario)
    assert {d["doc_id"]: d["language"] for d in listed["documents"]} == {
        name: language for name, (language, *_) in FAMILIES.items()
    }
    assert (thai["total"], [d["doc_id"] for d in thai["documents"]]) == (1, ["thai.txt"])


@pytest.mark.parametrize("doc_id", list(FAMILIES))
def test_each_script_family_is_found_by_its_words_at_its_own_sentence(
    built: tuple[Settings, FakeEmbedder], doc_id: str
) -> None:
    language, _, query, sentence = FAMILIES[doc_id]
    arguments = {"query": query, "k": 3, "level": "narrow", "weights": LEXICAL_ONLY}

    async def scenario(client: Client):
        return await call(client, "search_fused", arguments)

    top = run(server_of(built), scenario)["hits"][0]
    assert (top["doc_id"], top["text"], top["language"]) == (doc_id, sentence, language)


def test_a_language_filter_keeps_its_documents_and_names_the_held_ones_when_none_match(
    built: tuple[Settings, FakeEmbedder],
) -> None:
    async def scenario(client: Client):
        chinese = await call(client, "search_narrow", {"query": "农民 水稻 faro", "k": 10, "language": "zh"})
        missing = await fail(client, "search_broad", {"query": "lighthouse", "language": "fi"})
        return chinese, missing

    chinese, missing = run(server_of(built), scenario)
    assert chinese["hits"] and {h["doc_id"] for h in chinese["hits"]} == {"cjk.txt"}
    assert "'fi'" in missing and "zh" in missing and "th" in missing


def test_index_status_counts_the_documents_of_each_language(built: tuple[Settings, FakeEmbedder]) -> None:
    settings, embedder = built
    writing = Settings(**{**settings.model_dump(), "allow_write": True})
    engine = fake_engine(writing, embedder)

    async def scenario(client: Client):
        return await call(client, "index_status", {})

    status = run(build_server(writing, engine_factory=lambda _: engine), scenario)
    assert status["languages"] == {language: 1 for language, *_ in FAMILIES.values()}


def test_an_english_question_over_chinese_text_reports_only_the_lists_it_fused(
    built: tuple[Settings, FakeEmbedder],
) -> None:
    # Its words cannot match Chinese text, so no BM25 list is searched: the result names only the dense lists.
    question = {"query": "When do the farmers plant rice near the stone bridge?", "k": 3, "language": "zh"}

    async def scenario(client: Client):
        fused = await call(client, "search_fused", question)
        narrow = await call(client, "search_narrow", question)
        own_words = await call(client, "search_fused", {**question, "query": "农民种植水稻"})
        return fused, narrow, own_words

    fused, narrow, own_words = run(server_of(built), scenario)
    assert set(fused["weights"]) == {"broad_dense", "mid_dense", "narrow_dense"}
    assert set(fused["depths"]) == set(fused["weights"])
    assert not any("lexical" in name for hit in fused["hits"] for name in hit.get("sources", {}))
    assert set(narrow.get("weights", {})) <= {"narrow_dense"}
    assert {"broad_lexical", "narrow_lexical"} <= set(own_words["weights"])  # the documents' words keep theirs
