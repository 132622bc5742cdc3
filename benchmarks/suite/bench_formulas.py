"""Formula regions (pages/formulas): how many printed formulas are found, how many regions lie on no formula, and
what finding them costs per page. Pages written at run time with reportlab in DejaVu Sans (it holds the symbols):
formula pages mix prose lines with displayed formulas and sentences holding an inline one, the formulas drawn
from templates with random symbols; prose pages are paragraphs of SQuAD (English) and XQuAD (Greek, Russian,
Spanish, Vietnamese) contexts, where every region found is a false one. No formula reader is measured: none ships
its weights in a package.

    python benchmarks/suite/bench_formulas.py                  # results/formulas.json
    python benchmarks/suite/bench_formulas.py --pages 4 --no-save
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: `benchmarks` and `granrag_mcp` from it

from benchmarks import _common  # noqa: E402

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
DATASETS = Path("/work/shared/datasets")
PROSE_SETS = {
    "en": DATASETS / "squad-v1.1-dev-a.json",
    "el": DATASETS / "xquad-a" / "xquad-a.el.json",
    "ru": DATASETS / "xquad-a" / "xquad-a.ru.json",
    "es": DATASETS / "xquad-a" / "xquad-a.es.json",
    "vi": DATASETS / "xquad-a" / "xquad-a.vi.json",
}
TEMPLATES = [
    "{a} = ∑ᵢ {b}ᵢ {c}ᵢ",
    "∫₀^∞ e^(−{a}x) dx = 1/{a}",
    "{a}² + {b}² ≤ {c}²",
    "∇ · {A} = ρ / ε₀",
    "P({a} | {b}) ≈ P({b} | {a}) P({a})",
    "{a} ∈ ℝⁿ, ‖{a}‖ ≠ 0",
    "lim {n}→∞ (1 + 1/{n})^{n} = e",
    "∂{f}/∂{a} = {b} × {c}",
    "√({a}² + {b}²) ≥ |{a}|",
    "∏ₖ (1 − {a}ₖ) ≤ exp(−∑ₖ {a}ₖ)",
]
HELD_OUT = [
    "{f}({a}) = ∑ₙ {b}ₙ {a}ⁿ",
    "‖{a} − {b}‖₂ ≤ ε",
    "∮ {A} · d{a} = −dΦ/dt",
    "{A} ⊂ {b} ∪ {c}",
    "σ² = E[({a} − μ)²]",
    "∀ε > 0 ∃δ > 0",
    "det({A} − λI) = 0",
    "{a}₁ ⊕ {b}₁ → {c}₂",
]
"""Templates written after the detector's rules were set on TEMPLATES, and not tuned on: the held-out figure."""
VARIABLES = list("xyzabcfgnkAB") + ["α", "β", "γ", "λ", "μ", "σ", "θ"]
PROSE_LINES = [
    "The survey of the valley counted every working mill in the spring of that year.",
    "Rain had fallen on most days, and the roads were slow to travel in 1846.",
    "Several members asked for the accounts to be printed in full (see p. 12).",
]
LINE_HEIGHT = 26.0


def formula(rng: random.Random, templates: list[str]) -> str:
    names = rng.sample(VARIABLES, 4)
    return rng.choice(templates).format(a=names[0], b=names[1], c=names[2], n=names[3], A=names[0], f=names[1])


def formula_page(rng: random.Random, templates: list[str]) -> tuple[bytes, list[float]]:
    """One page of prose lines, displayed formulas and sentences with an inline formula; the formulas' baselines."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    sheet = canvas.Canvas(buffer, pagesize=A4)
    baselines = []
    y = 790.0
    while y > 80:
        kind = rng.choice(["prose", "prose", "displayed", "inline"])
        sheet.setFont("DejaVu", 11)
        if kind == "prose":
            sheet.drawString(72, y, rng.choice(PROSE_LINES))
        elif kind == "displayed":
            sheet.setFont("DejaVu", 13)
            sheet.drawString(rng.choice([120, 160, 200]), y, formula(rng, templates))
            baselines.append(y)
        else:
            sheet.drawString(72, y, f"It follows that {formula(rng, templates)} for the mills.")
            baselines.append(y)
        y -= LINE_HEIGHT
    sheet.showPage()
    sheet.save()
    return buffer.getvalue(), baselines


def prose_page(paragraphs: list[str]) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    buffer = io.BytesIO()
    style = ParagraphStyle("body", fontName="DejaVu", fontSize=10.5, leading=14, spaceAfter=8)
    SimpleDocTemplate(buffer, pagesize=A4).build([Paragraph(p, style) for p in paragraphs])
    return buffer.getvalue()


def contexts(path: Path, count: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    found = [p["context"] for article in data for p in article["paragraphs"]]
    return found[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=40, help="formula pages written (prose: 3 contexts a page)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    _common.offline_env()
    import pypdfium2
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont

    from granrag_mcp.pages.formulas import formula_boxes

    pdfmetrics.registerFont(TTFont("DejaVu", str(FONT)))
    out: dict[str, Any] = {"load_average_start": _common.load_average()}
    rng = random.Random(args.seed)
    seconds, pages = 0.0, 0
    for name, templates in (("formula_pages", TEMPLATES), ("held_out_formula_pages", HELD_OUT)):
        found_formulas = printed = false_regions = regions = 0
        for _ in range(args.pages):
            data, baselines = formula_page(rng, templates)
            document = pypdfium2.PdfDocument(data)
            started = time.perf_counter()
            boxes = formula_boxes(document[0])
            seconds += time.perf_counter() - started
            pages += 1
            document.close()
            spans = [((1 - b[3]) * A4[1], (1 - b[1]) * A4[1]) for b in boxes]
            printed += len(baselines)
            found_formulas += sum(any(top - 4 <= y <= bottom for top, bottom in spans) for y in baselines)
            regions += len(boxes)
            false_regions += sum(not any(top - 4 <= y <= bottom for y in baselines) for top, bottom in spans)
        out[name] = {
            "pages": args.pages,
            "formulas": printed,
            "found": found_formulas,
            "recall": round(found_formulas / max(printed, 1), 3),
            "regions": regions,
            "regions_on_no_formula": false_regions,
            "precision": round((regions - false_regions) / max(regions, 1), 3),
        }
    out["prose_pages"] = {}
    for language, path in PROSE_SETS.items():
        if not path.exists():  # the data sets are read where they are kept, never copied into the project
            out["prose_pages"][language] = {"skipped": f"{path} not found"}
            continue
        texts = contexts(path, 3 * max(args.pages // 4, 1))
        data = prose_page(texts)
        document = pypdfium2.PdfDocument(data)
        count = 0
        for number in range(len(document)):
            started = time.perf_counter()
            count += len(formula_boxes(document[number]))
            seconds += time.perf_counter() - started
            pages += 1
        out["prose_pages"][language] = {"pages": len(document), "regions": count}
        document.close()
    out["seconds_per_page"] = round(seconds / max(pages, 1), 4)
    out["load_average_end"] = _common.load_average()
    out["machine"] = _common.machine()
    _common.finish("formulas", out, save=not args.no_save)


if __name__ == "__main__":
    main()
