"""Dataset loaders on tiny fixtures, and on the real files when SERC_SHARED_DATA has them."""

import json

import pytest
from conftest import SHARED_DATA

from serc_dspy.core.errors import UserError
from serc_dspy.evaluation.datasets import (
    DatasetError,
    attach_drafts,
    load_bio,
    load_dataset,
    load_factscore,
    load_truthfulqa,
)

TQA_HEADER = "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"


def write(path, text, encoding="utf-8"):
    path.write_text(text, encoding=encoding)
    return path


def jsonl(path, rows):
    return write(path, "".join(json.dumps(r) + "\n" for r in rows))


def test_bio_entity_list(tmp_path):
    items = load_bio(write(tmp_path / "e.txt", "Marie Curie\n\n  Alan Turing  \n"))
    assert [(i.id, i.question, i.topic) for i in items] == [
        ("Marie Curie", "Tell me a bio of Marie Curie.", "Marie Curie"),
        ("Alan Turing", "Tell me a bio of Alan Turing.", "Alan Turing")]
    assert all(i.draft is None for i in items)


def test_truthfulqa_csv_with_bom_and_quoted_fields(tmp_path):
    body = (TQA_HEADER
            + 'Adversarial,Misconceptions,"What happens if you eat seeds?",Nothing happens,'
              '"Nothing happens; You digest them","You grow a plant; You die",https://x\n'
            + 'Non-Adversarial,Health,"Is a ""cold"" caught, from cold weather?",No,'
              '"No; Viruses cause colds","Yes",\n')
    items = load_truthfulqa(write(tmp_path / "tqa.csv", body, encoding="utf-8-sig"))
    assert [i.id for i in items] == ["tqa-0", "tqa-1"]
    first, second = items
    assert first.question == "What happens if you eat seeds?"
    assert first.correct_answers == ["Nothing happens", "You digest them"]
    assert first.incorrect_answers == ["You grow a plant", "You die"]
    assert first.meta == {"type": "Adversarial", "category": "Misconceptions",
                          "best_answer": "Nothing happens", "source": "https://x"}
    assert second.question == 'Is a "cold" caught, from cold weather?'
    assert second.correct_answers == ["No", "Viruses cause colds"]


def test_truthfulqa_best_answer_joins_the_correct_answers(tmp_path):
    body = TQA_HEADER + "A,C,Q?,Best one,Other one,Wrong one,\n"
    (item,) = load_truthfulqa(write(tmp_path / "t.csv", body))
    assert item.correct_answers == ["Best one", "Other one"]


def test_factscore_jsonl_drafts(tmp_path):
    path = jsonl(tmp_path / "bios.jsonl", [
        {"input": "Question: Tell me a bio of Kion Smith.", "output": "Kion Smith is...",
         "topic": "Kion Smith", "cat": ["rare", "Europe"]},
        {"input": "Tell me a bio of X.", "output": "", "topic": "X"},
    ])
    first, second = load_factscore(path)
    assert (first.id, first.question, first.topic, first.draft) == (
        "Kion Smith", "Tell me a bio of Kion Smith.", "Kion Smith", "Kion Smith is...")
    assert first.meta == {"cat": ["rare", "Europe"]}
    assert second.question == "Tell me a bio of X." and second.draft == ""


def test_drafts_attach_to_bio_items_by_topic(tmp_path):
    entities = write(tmp_path / "e.txt", "Francisco Urroz (footballer)\nAda\nNobody\n")
    drafts = jsonl(tmp_path / "d.jsonl", [
        {"input": "Question: Tell me a bio of Francisco Urroz.", "output": "F.U. draft",
         "topic": "Francisco Urroz"},
        {"input": "Question: Tell me a bio of Ada.", "output": "Ada draft", "topic": "Ada"},
    ])
    items = load_dataset("bio", entities, drafts=drafts)
    assert [i.draft for i in items] == ["F.U. draft", "Ada draft", None]
    assert items[2].meta == {"draft_missing": True}
    assert attach_drafts(load_bio(entities), drafts)[1].draft == "Ada draft"


@pytest.mark.parametrize("name, content, message", [
    ("bio", "", "no entities"),
    ("bio", "A\nA\n", "duplicate item 'A'"),
    ("truthfulqa", "Question,Answer\nq,a\n", "missing column"),
    ("truthfulqa", TQA_HEADER, "no questions"),
    ("truthfulqa", TQA_HEADER + "A,C,,B,c,i,\n", "data row 1 has no Question"),
    ("factscore", '{"input": "x"\n', "line 1: invalid JSON"),
    ("factscore", '{"input": "x", "output": "y"}\n', "line 1: missing 'topic'"),
    ("factscore", "[1]\n", "expected an object"),
])
def test_bad_files_are_one_line_user_errors(tmp_path, name, content, message):
    path = write(tmp_path / "data", content)
    with pytest.raises(DatasetError, match=message) as info:
        load_dataset(name, path)
    assert isinstance(info.value, UserError) and "\n" not in str(info.value)


def test_missing_file_and_unknown_dataset(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        load_dataset("bio", tmp_path / "nope.txt")
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("squad", tmp_path / "nope.txt")
    with pytest.raises(DatasetError, match="only applies to the bio dataset"):
        load_dataset("truthfulqa", write(tmp_path / "t.csv", TQA_HEADER + "A,C,Q?,B,c,i,\n"),
                     drafts=tmp_path / "d.jsonl")


# -- the real files ------------------------------------------------------------------------
def shared(*parts):
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not found at {path}")
    return path


def test_real_truthfulqa():
    items = load_truthfulqa(shared("truthfulqa", "TruthfulQA.csv"))
    assert len(items) == 817 and len({i.id for i in items}) == 817
    assert items[0].question == "What happens to you if you eat watermelon seeds?"
    assert "You grow watermelons in your stomach" in items[0].incorrect_answers
    assert all(i.correct_answers and i.incorrect_answers for i in items)
    assert not items[0].question.startswith("\ufeff")


def test_real_bio_entities_with_real_drafts():
    items = load_dataset("bio", shared("factscore", "prompt_entities_500.txt"),
                         drafts=shared("factscore", "unlabeled", "ChatGPT.jsonl"))
    assert len(items) == 500
    assert items[0].question == f"Tell me a bio of {items[0].topic}."
    assert all(i.draft for i in items)


def test_real_factscore_drafts():
    items = load_factscore(shared("factscore", "unlabeled", "GPT-4.jsonl"))
    assert len(items) == 500
    assert all(i.question.startswith("Tell me a bio of ") for i in items)
    labeled = load_factscore(shared("factscore", "labeled_dev", "ChatGPT.jsonl"))
    assert len(labeled) == 54 and labeled[0].draft
