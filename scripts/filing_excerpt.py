#!/usr/bin/env python3
"""Writes experiments/fixtures/filing-pdftotext-mini: four pages of 3M's 2018 10-K as financebench-dev
holds them (`pdftotext -raw`: a statement's page header, title, period line and column row in the same
paragraph as its rows), and eight questions written for them, each with the lines that answer it as gold.

    python3 scripts/filing_excerpt.py ../shared/data/financebench-dev experiments/fixtures/filing-pdftotext-mini
"""
import json
import pathlib
import sys

PAGES = ["page 47", "page 56", "page 58", "page 60"]
# (id, question, the answering lines: each found once in the excerpt, or "@page N" for the N-th occurrence).
QUESTIONS = [
    ("capex-2018", "What is the FY2018 capital expenditure amount (in USD millions) for 3M, as shown in its cash flow statement?",
     ["Purchases of property, plant and equipment (PP&E) (1,577) (1,373) (1,420)"]),
    ("current-liabilities-2018", "What were 3M's total current liabilities at December 31, 2018, according to its balance sheet?",
     ["Total current liabilities 7,244 7,687"]),
    ("diluted-eps-2018", "What was 3M's diluted earnings per share in 2018?",
     ["Earnings per share attributable to 3M common shareholders — diluted $ 8.89 $ 7.93 $ 8.16"]),
    ("dividends-2018", "How much did 3M pay in dividends to its shareholders in 2018?",
     ["Dividends paid to stockholders (3,193) (2,803) (2,678)", "Dividends paid to shareholders (3,193) (2,803) (2,678)"]),
    ("capex-outlook-2019", "How much capital spending does 3M expect for 2019?",
     ["The Company expects 2019 capital spending to be approximately $1.7 billion to $1.9 billion as 3M continues to invest in its businesses."]),
    ("net-ppe-2018", "What was the year-end FY2018 net property, plant and equipment of 3M on its balance sheet?",
     ["Property, plant and equipment — net 8,738 8,866"]),
    ("inventories-2018", "What were 3M's total inventories at the end of 2018?",
     ["Total inventories 4,366 4,034"]),
    ("operating-income-2018", "What was 3M's operating income in FY2018 according to its income statement?",
     ["Operating income 7,207 7,692 7,027"]),
]


def main(source: str, dest: str) -> None:
    doc = next(d for d in map(json.loads, open(pathlib.Path(source) / "documents.jsonl")) if d["id"] == "3M_2018_10K")
    raw = doc["text"].encode()
    pages = {s["title"]: raw[s["start"]:s["end"]].decode() for s in doc["sections"]}
    text, sections = "", []
    for title in PAGES:
        if text:
            text += "\n\n"
        start = len(text.encode())
        text += pages[title]
        sections.append({"title": title, "start": start, "end": len(text.encode()), "level": 1})
    body = text.encode()
    out = pathlib.Path(dest)
    out.mkdir(parents=True, exist_ok=True)
    document = {"id": "3M_2018_10K-excerpt", "title": "3M Company 2018 Form 10-K, pages 47, 56, 58 and 60", "text": text,
                "sections": sections, "split": "test"}
    (out / "documents.jsonl").write_text(json.dumps(document, ensure_ascii=False) + "\n")
    lines = []
    for qid, question, answers in QUESTIONS:
        evidence = []
        for answer in answers:
            at = body.find(answer.encode())
            assert at >= 0 and body.find(answer.encode(), at + 1) < 0, f"{answer!r} is not in the excerpt exactly once"
            evidence.append({"doc_id": document["id"], "start": at, "end": at + len(answer.encode())})
        lines.append(json.dumps({"id": qid, "text": question, "doc_ids": [document["id"]], "evidence": evidence, "answers": [],
                                 "split": "test"}, ensure_ascii=False))
    (out / "queries.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
