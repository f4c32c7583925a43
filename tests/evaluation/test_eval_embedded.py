"""End to end with the real embedded model: `serc run` -> `serc eval` -> `serc report`.

Three LongForm Bio entities drawn from the Wikipedia extracts, which serve both as the run's
retriever and as the FActScore knowledge source. Two entities get short FActScore-format drafts
(`--drafts`, the first two sentences of ChatGPT's labelled bios) so the scorer has facts to
judge (SmolLM2 alone often answers with little more than the name); the third is generated.
The model is tiny, so this asserts that the files and tables are produced, not what the scores
are. Answers are kept short to stay within a few minutes on two CPU cores.
"""

import json

import pytest
from conftest import SHARED_DATA

from serc_dspy.cli import main

pytestmark = pytest.mark.embedded

WIKI = SHARED_DATA / "factscore_wiki" / "wikipedia_dev.json"
LABELED = SHARED_DATA / "factscore" / "labeled_dev" / "ChatGPT.jsonl"


@pytest.fixture(scope="module")
def wiki():
    for path in (WIKI, LABELED):
        if not path.is_file():
            pytest.skip(f"shared data not found at {path}")
    from serc_dspy.backends import find_smollm2_gguf

    find_smollm2_gguf()  # fails loudly if the [local] extra is missing
    return WIKI


def test_run_eval_report_with_the_embedded_model(wiki, tmp_path, capsys):
    from serc_dspy.core.text import split_sentences

    articles = json.loads(wiki.read_text(encoding="utf-8"))
    bios = [json.loads(line) for line in LABELED.read_text(encoding="utf-8").splitlines()]
    with_article = [b for b in bios if b["topic"] in articles]
    drafted, generated = with_article[:2], with_article[2]["topic"]
    topics = [b["topic"] for b in drafted] + [generated]
    entities = tmp_path / "entities.txt"
    entities.write_text("\n".join(topics + ["Not In The Run"]) + "\n", encoding="utf-8")
    drafts = tmp_path / "drafts.jsonl"
    drafts.write_text("".join(json.dumps({
        "input": b["input"], "topic": b["topic"],
        "output": " ".join(split_sentences(b["output"])[:2])}) + "\n" for b in drafted),
        encoding="utf-8")
    run = tmp_path / "results" / "initial.jsonl"

    assert main(["run", "--method", "initial", "--dataset", "bio", "--dataset-path",
                 str(entities), "--drafts", str(drafts), "--knowledge", str(wiki),
                 "--limit", "3", "--max-tokens", "80", "--out", str(run), "--quiet",
                 "--lm", "smollm2"]) == 0
    records = {r["id"]: r for r in map(json.loads, run.read_text().splitlines())}
    assert sorted(records) == sorted(topics)
    assert all(r["error"] is None and r["answer"] for r in records.values())
    assert records[generated]["trace"]["usage"]["total"]["calls"] == 1
    assert records[generated]["trace"]["usage"]["total"]["completion_tokens"] > 0
    assert all(records[b["topic"]]["trace"]["draft_given"] for b in drafted)

    assert main(["eval", str(run), "--metric", "factscore", "--knowledge", str(wiki),
                 "--k", "1", "--max-tokens", "160", "--quiet", "--evaluator-lm", "smollm2"]) == 0
    scores = [json.loads(line) for line in
              (tmp_path / "results" / "initial.factscore.jsonl").read_text().splitlines()]
    assert sorted(s["id"] for s in scores) == sorted(topics)
    for score in scores:
        assert score["error"] is None, score["error"]
        for fact in score["answer"]["facts"]:
            assert fact["label"] in ("SUPPORTED", "NOT_SUPPORTED") or fact["error"]
    summary = json.loads((tmp_path / "results" / "initial.factscore.summary.json").read_text())
    assert summary["answers"] == 3 and summary["evaluator_usage"]["calls"] > 0
    judged = [f for s in scores for f in s["answer"]["facts"] if f["label"]]
    assert judged, "the drafted bios should yield facts that get a support label"

    capsys.readouterr()
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    text = capsys.readouterr().out
    assert "### Cost per question" in text and "| initial | bio | 3 |" in text
    assert (tmp_path / "report" / "report.md").is_file()
    if summary["factscore"] is not None:
        assert "### FActScore (LongForm Bio)" in text and "| initial | 3 |" in text
        assert (tmp_path / "report" / "score_vs_tokens.png").is_file()
