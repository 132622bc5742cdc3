from granrag_mcp.retrieval.ranking.features import analyse, sentence_stems, stem


def test_one_chunk_id_with_two_texts_gets_each_texts_own_stems() -> None:
    # Two stores opened in one process number their sentences alike: the remembered stems must follow the text.
    first = sentence_stems([7], ["Viruses replicate in host cells."])
    second = sentence_stems([7], ["Palermo lies on the coast of Sicily."])
    assert first == [stem(analyse("Viruses replicate in host cells."))]
    assert second == [stem(analyse("Palermo lies on the coast of Sicily."))]
    assert first != second


def test_a_sentence_asked_twice_in_one_call_is_stemmed_alike() -> None:
    stems = sentence_stems([3, 3, 4], ["Measles spreads quickly.", "Measles spreads quickly.", "Rain fell."])
    assert stems[0] == stems[1] == stem(analyse("Measles spreads quickly."))
    assert stems[2] == stem(analyse("Rain fell."))


def test_sentences_are_compared_by_their_own_languages_words_not_english_stems() -> None:
    stems = sentence_stems(
        [21, 22, 23], ["北京大学的学生", "Las inundaciones del río", "Rivers flooded."], ["zh", "es", "en"]
    )
    assert stems[0] == ["北京", "京大", "大学", "学的", "的学", "学生"]
    assert stems[1] == ["inund", "rio"]  # Spanish Snowball, not English
    assert stems[2] == stem(analyse("Rivers flooded.")) == ["river", "flood"]
