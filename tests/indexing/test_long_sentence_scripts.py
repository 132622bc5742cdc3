"""Long enumerated sentences parted into clauses in every script family (`sentence_rules/long_sentences` and each
script's own marks): sentences that must part, and ordinary ones that must not; spans still cover the text."""

from __future__ import annotations

import pytest

from granrag_mcp.indexing.sentences import split_sentences
from tests.indexing.test_sentences import assert_span_invariants, hang_guard


def sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in split_sentences(text)]


PARTED = [
    pytest.param(
        [
            "Арендатор обязан в течение всего срока действия настоящего договора:",
            "а) своевременно вносить арендную плату в размере и в порядке, которые установлены договором;",
            "б) содержать арендуемое помещение в надлежащем санитарном состоянии и не допускать его порчи;",
            "в) по окончании срока вернуть помещение арендодателю в том состоянии, в котором он его получил.",
        ],
        " ",
        id="cyrillic",
    ),
    pytest.param(
        [
            "Ο μισθωτής υποχρεούται καθ' όλη τη διάρκεια της μίσθωσης:",
            "α) να καταβάλλει εγκαίρως το μίσθωμα στον λογαριασμό που του έχει υποδείξει ο εκμισθωτής·",
            "β) να διατηρεί το ακίνητο σε καλή κατάσταση και να μην προκαλεί καμία ζημιά σε αυτό·",
            "γ) να επιστρέψει το ακίνητο μετά τη λήξη της σύμβασης στην κατάσταση που το παρέλαβε.",
        ],
        " ",
        id="greek",
    ),
    pytest.param(
        [
            "يلتزم المستأجر طوال مدة العقد بما يلي:",
            "(أ) دفع الأجرة في مواعيدها المحددة وفقا للشروط الواردة في هذا العقد دون أي تأخير؛",
            "(ب) المحافظة على العين المؤجرة وعدم إحداث أي ضرر بها أو تغيير في معالمها الأصلية؛",
            "(ج) إعادة العين المؤجرة إلى المؤجر عند انتهاء العقد بالحالة التي تسلمها بها في بداية المدة.",
        ],
        " ",
        id="arabic",
    ),
    pytest.param(
        [
            "किरायेदार अनुबंध की पूरी अवधि के दौरान निम्नलिखित कार्य करेगा:",
            "(क) निर्धारित तिथि पर पूरा किराया मकान मालिक के बैंक खाते में जमा करेगा;",
            "(ख) मकान को साफ और अच्छी हालत में रखेगा तथा उसमें कोई नुकसान नहीं करेगा;",
            "(ग) अनुबंध समाप्त होने पर मकान को उसी हालत में लौटा देगा जिसमें उसने उसे लिया था।",
        ],
        " ",
        id="devanagari",
    ),
    pytest.param(
        [
            "承租人在租赁期间应当履行下列义务：",
            "（一）按照合同约定的时间和方式向出租人支付租金，不得无故拖欠，",
            "（二）妥善保管和使用租赁房屋，不得擅自改变房屋的结构和用途，",
            "（三）租赁期满后将房屋按照原状返还给出租人，并结清全部费用。",
        ],
        "",
        id="cjk-bracketed-numerals",
    ),
    pytest.param(
        [
            "本软件的使用者必须遵守以下规定",
            "①不得将本软件用于任何违法的目的或者侵犯他人的合法权益",
            "②不得对本软件进行反向工程、反编译或者反汇编",
            "③在分发本软件的副本时必须完整保留原有的版权声明和许可条款。",
        ],
        "",
        id="cjk-circled-numbers",
    ),
    pytest.param(
        [
            "借主は、契約期間中、次に掲げる義務を負うものとする",
            "（ア）賃料を毎月末日までに貸主の指定する銀行口座に振り込むこと、",
            "（イ）建物を善良な管理者の注意をもって使用し、これを損傷しないこと、",
            "（ウ）契約が終了したときは建物を原状に回復して貸主に返還すること。",
        ],
        "",
        id="japanese-katakana-items",
    ),
    pytest.param(
        [
            "임차인은 이 계약의 기간 동안 아래에 적힌 의무를 성실하게 지켜야 한다:",
            "가) 매월 말일까지 임대인이 미리 지정한 은행 계좌로 정해진 차임을 빠짐없이 지급할 것,",
            "나) 임차한 주택을 선량한 관리자의 주의로 사용하고 어떤 방식으로도 훼손하지 않을 것,",
            "다) 계약이 끝나면 주택을 원래의 상태로 되돌려 놓은 다음 임대인에게 곧바로 반환할 것.",
        ],
        " ",
        id="korean",
    ),
    pytest.param(
        [
            "Le locataire s'engage pendant toute la durée du bail à respecter les obligations suivantes :",
            "a) payer le loyer aux dates convenues sur le compte indiqué par le bailleur;",
            "b) entretenir le logement et ne pas le dégrader de quelque manière que ce soit;",
            "c) rendre le logement dans l'état où il l'a reçu à la fin du bail.",
        ],
        " ",
        id="latin",
    ),
]


@pytest.mark.parametrize(("clauses", "joiner"), PARTED)
def test_a_long_enumerated_sentence_parts_into_its_clauses(clauses: list[str], joiner: str) -> None:
    text = joiner.join(clauses)
    assert sentences(text) == clauses
    assert_span_invariants(text)


def test_the_arabic_semicolon_parts_clauses_as_the_latin_one_does() -> None:
    clauses = [
        "تشمل مسؤوليات الإدارة المحلية في المدينة ما يلي:",
        "(١) صيانة الطرق العامة والجسور والأرصفة بشكل دوري؛",
        "ويدخل في ذلك إصلاح الإنارة في الشوارع الرئيسية والفرعية؛",
        "(٢) جمع النفايات من المنازل والمحلات التجارية والأسواق الشعبية ونقلها كل صباح إلى أماكن المعالجة "
        "الواقعة خارج حدود المدينة.",
    ]
    assert sentences(" ".join(clauses)) == clauses


def test_a_greek_question_mark_inside_a_long_sentence_is_no_clause_break() -> None:
    clauses = [
        "Η επιτροπή εξέτασε δύο ερωτήματα:",
        "α) ποιο είναι το συνολικό κόστος; 500 ευρώ ανά μονάδα σύμφωνα με τον ετήσιο προϋπολογισμό του δήμου,",
        "β) πότε θα ολοκληρωθούν οι εργασίες στη γέφυρα του λιμανιού και ποιος θα αναλάβει την επίβλεψη τους "
        "μέχρι την παράδοση του έργου στους κατοίκους.",
    ]
    text = " ".join(clauses)
    assert sentences(text) == clauses
    assert_span_invariants(text)


NOT_PARTED = [
    pytest.param(
        "Комиссия рассмотрела все поступившие заявления, т. е. около двухсот обращений граждан и организаций, и "
        "установила, что значение функции f(x) при больших g(y) растёт быстрее, чем предполагалось в исходном "
        "проекте, поэтому пункт а) прежней редакции следует исключить, а сроки, отчёты и т. д. пересмотреть до "
        "конца следующего квартала вместе с экспертами.",
        id="cyrillic-one-enumerator-a-formula-and-abbreviations",
    ),
    pytest.param(
        "قام الباحثون بجمع البيانات من عدة مستشفيات في المنطقة على مدى ثلاث سنوات؛ وقد شملت الدراسة المرضى "
        "البالغين فقط؛ أما الأطفال فقد استبعدوا لأسباب أخلاقية؛ ثم حللت النتائج باستخدام نماذج إحصائية متعددة "
        "للتحقق من صحة الفرضيات الأولية التي وضعها الفريق في بداية المشروع البحثي الطويل.",
        id="arabic-semicolons-without-enumeration",
    ),
    pytest.param(
        "इस अध्ययन में शोधकर्ताओं ने कई अस्पतालों से तीन वर्षों तक आंकड़े एकत्र किए और पाया कि उपचार (क) के बाद "
        "रोगियों की स्थिति में सुधार हुआ, लेकिन यह सुधार सभी आयु वर्गों में समान नहीं था, इसलिए आगे और गहन शोध "
        "की आवश्यकता है ताकि परिणामों की पुष्टि की जा सके।",
        id="devanagari-one-enumerator",
    ),
    pytest.param("承租人应当履行下列义务：（一）支付租金，（二）保管房屋，（三）返还房屋。", id="cjk-short-sentence"),
    pytest.param(
        "In this lesson the characters for water (水) and fire (火) are written side by side so that the "
        "students can compare their strokes, count them aloud, and notice how each one has changed over many "
        "centuries of use in books, letters, signs and the names of places across the region.",
        id="ideographs-glossed-in-english",
    ),
    pytest.param(
        "The committee compared option (A) with option (B) and found that neither met the budget, so the members "
        "agreed to postpone the decision until the next meeting, when the engineers would bring revised plans, "
        "updated costs and a clearer schedule for the work on the northern bridge.",
        id="latin-upper-case-letters",
    ),
]


@pytest.mark.parametrize("text", NOT_PARTED)
def test_an_ordinary_sentence_stays_whole(text: str) -> None:
    assert sentences(text) == [text]
    assert_span_invariants(text)


def test_a_chinese_sentence_is_measured_in_ideographs() -> None:
    # Three enumerated items of 19 ideographs each and a 9-ideograph lead: 66 ideographs, over 1.6 x 40 = 64.
    item = "按照合同约定的时间和方式支付全部租金，"
    text = "承租人应当履行下列义务：" + "".join(f"（{n}）{item}" for n in "一二三")
    assert len(sentences(text)) == 4
    shorter = "承租人应当履行下列义务：" + "".join(f"（{n}）{item[6:]}" for n in "一二三")
    assert sentences(shorter) == [shorter]


def test_list_items_of_any_alphabet_open_at_the_start_of_a_line() -> None:
    text = "Арендатор обязан:\nа) вносить плату;\nб) беречь помещение.\n（一）支付租金；\n（二）返还房屋。"
    assert sentences(text) == [
        "Арендатор обязан:",
        "а) вносить плату;",
        "б) беречь помещение.",
        "（一）支付租金；",
        "（二）返还房屋。",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "（一）" * 100_000,
        "①" * 200_000,
        "а) " * 100_000,
        "إلخ؛ " * 100_000,
        "中 (1)" * 100_000,
        "α· " * 100_000,
        "中" + "x" * 300_000 + " 中",
    ],
    ids=str.__len__,
)
def test_pathological_enumerations_do_not_hang(text: str) -> None:
    with hang_guard(seconds=120):
        assert_span_invariants(text)


def test_the_greek_ano_teleia_parts_clauses_in_either_code_point() -> None:
    greek = next(param.values[0] for param in PARTED if param.id == "greek")
    text = " ".join(greek).replace("\u00b7", "\u0387")
    assert "\u0387" in text
    assert sentences(text) == [clause.replace("\u00b7", "\u0387") for clause in greek]
    # A middle dot after Latin letters is no clause mark: only the enumerators part this sentence.
    latin = [
        "Rules for guests: a) keep the keys of the rooms in the locked box near the front door · the porter "
        "checks it each evening,",
        "b) keep the gate shut at night · the garden closes at ten and opens again at seven in the morning.",
    ]
    assert sentences(" ".join(latin)) == latin
