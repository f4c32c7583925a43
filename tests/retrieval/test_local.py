"""Behaviour of the local BM25 corpus and the retrieval helpers it relies on."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Passage
from serc_dspy.retrieval import (
    DEFAULT_CONTEXT_CHARS,
    DEFAULT_TOP_K,
    CorpusError,
    LocalCorpus,
    RetrievalError,
    Retriever,
    as_retriever,
    cap_context,
)
from serc_dspy.retrieval.local import chunk_text

DOCS = {
    "eiffel": "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.",
    "everest": "Mount Everest is the highest mountain above sea level, in the Himalayas.",
    "amazon": "The Amazon river flows through South America into the Atlantic Ocean.",
    "python": "Python is a programming language created by Guido van Rossum.",
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _long_document(paragraphs: int = 12) -> str:
    sentence = "Sentence {i}.{j} talks about glaciers and their slow movement over rock."
    return "\n\n".join(
        " ".join(sentence.format(i=i, j=j) for j in range(4)) for i in range(paragraphs)
    )


# --- ranking -------------------------------------------------------------------------------


def test_passage_about_query_term_ranks_first() -> None:
    corpus = LocalCorpus.from_texts(DOCS)
    hits = corpus("When was the Eiffel Tower completed?", k=3)
    assert hits[0].source == "eiffel"
    assert "Eiffel" in hits[0].text


def test_scores_are_positive_and_descending() -> None:
    corpus = LocalCorpus.from_texts(DOCS | {"paris": "Paris is the capital of France."})
    hits = corpus("Paris tower", k=5)
    assert [h.source for h in hits][:2] == ["eiffel", "paris"]
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_passages_without_query_terms_are_not_returned() -> None:
    hits = LocalCorpus.from_texts(DOCS)("Himalayas", k=4)
    assert [h.source for h in hits] == ["everest"]


@pytest.mark.parametrize("query", ["", "   ", "the of and", "zzzunknownword"])
def test_queries_without_searchable_known_terms_return_nothing(query: str) -> None:
    assert LocalCorpus.from_texts(DOCS)(query, k=3) == []


def test_k_larger_than_corpus_is_clamped() -> None:
    corpus = LocalCorpus.from_texts({"a": "alpha river", "b": "beta river"})
    assert len(corpus) == 2
    hits = corpus("river", k=50)
    assert sorted(h.source for h in hits) == ["a", "b"]


def test_k_limits_results_and_defaults_to_paper_setting() -> None:
    corpus = LocalCorpus.from_texts({f"d{i}": f"shared term number {i}" for i in range(20)})
    assert len(corpus("shared", k=3)) == 3
    assert len(corpus("shared")) == DEFAULT_TOP_K == 8
    assert corpus("shared", k=0) == []


def test_results_do_not_mutate_stored_passages() -> None:
    corpus = LocalCorpus.from_texts(DOCS)
    first = corpus("Everest", k=1)[0]
    first.text = "changed"
    assert corpus("Everest", k=1)[0].text.startswith("Mount Everest")


def test_local_corpus_satisfies_retriever_protocol() -> None:
    corpus = LocalCorpus.from_texts(DOCS)
    assert isinstance(corpus, Retriever)
    assert corpus.name == "local:<memory>"


# --- loading -------------------------------------------------------------------------------


def test_folder_loads_txt_and_md_recursively_with_relative_sources(tmp_path: Path) -> None:
    _write(tmp_path / "eiffel.txt", DOCS["eiffel"])
    _write(tmp_path / "geo" / "everest.md", DOCS["everest"])
    _write(tmp_path / "ignored.csv", "Eiffel Eiffel Eiffel")
    _write(tmp_path / ".git" / "notes.txt", "Eiffel Eiffel Eiffel")
    corpus = LocalCorpus(tmp_path)
    assert len(corpus) == 2
    assert corpus.name == f"local:{tmp_path}"
    assert [h.source for h in corpus("Eiffel", k=5)] == ["eiffel.txt"]
    assert [h.source for h in corpus("Himalayas", k=5)] == ["geo/everest.md"]


def test_jsonl_uses_title_then_id_as_source(tmp_path: Path) -> None:
    rows = [
        {"id": "1", "title": "Eiffel Tower", "text": DOCS["eiffel"]},
        {"id": "ev-2", "title": "", "text": DOCS["everest"]},
        {"id": 3, "text": DOCS["amazon"]},
    ]
    path = _write(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    corpus = LocalCorpus(path)
    assert len(corpus) == 3
    assert corpus("Eiffel", k=1)[0].source == "Eiffel Tower"
    assert corpus("Himalayas", k=1)[0].source == "ev-2"
    assert corpus("Atlantic", k=1)[0].source == "3"
    assert corpus("Eiffel", k=1)[0].text == DOCS["eiffel"]  # title is not prefixed


def test_single_text_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "notes.md", DOCS["python"])
    hits = LocalCorpus(str(path))("Guido", k=2)
    assert [(h.source, h.text) for h in hits] == [("notes.md", DOCS["python"])]


# --- chunking ------------------------------------------------------------------------------


def test_long_document_is_split_into_bounded_non_empty_passages() -> None:
    text = _long_document()
    corpus = LocalCorpus.from_texts({"long": text}, chunk_chars=300)
    chunks = chunk_text(text, 300)
    assert len(corpus) == len(chunks) > 3
    assert all(0 < len(c) <= 300 for c in chunks)
    assert all(c == c.strip() for c in chunks)
    assert sum(len(c.split()) for c in chunks) == len(text.split())  # no text lost or repeated


def test_chunks_break_on_sentence_boundaries_when_possible() -> None:
    chunks = chunk_text(_long_document(paragraphs=2), 200)
    assert all(c.endswith(".") for c in chunks)


def test_short_paragraphs_are_packed_together() -> None:
    assert chunk_text("One.\n\nTwo.\n\nThree.", 800) == ["One.\n\nTwo.\n\nThree."]
    assert chunk_text("One.\n\nTwo.\n\nThree.", 11) == ["One.\n\nTwo.", "Three."]


def test_unbreakable_text_is_hard_cut() -> None:
    chunks = chunk_text("x" * 250, 100)
    assert [len(c) for c in chunks] == [100, 100, 50]


def test_chunk_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="chunk_chars"):
        LocalCorpus.from_texts(DOCS, chunk_chars=0)


# --- corpus errors -------------------------------------------------------------------------


def test_nonexistent_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        LocalCorpus(tmp_path / "missing")


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"no \.txt or \.md files"):
        LocalCorpus(tmp_path)


def test_folder_with_only_empty_files(tmp_path: Path) -> None:
    _write(tmp_path / "a.txt", "")
    _write(tmp_path / "b.md", "  \n\n \n")
    with pytest.raises(CorpusError, match="corpus has no text"):
        LocalCorpus(tmp_path)


def test_unsupported_single_file(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="unsupported corpus file"):
        LocalCorpus(_write(tmp_path / "data.csv", "a,b"))


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(CorpusError, match="cannot read"):
        LocalCorpus(path)


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ('["a list"]', "expected an object, got list"),
        ('{"id": "x", "title": "t"}', "missing 'text' string"),
    ],
)
def test_bad_jsonl_line_names_line_and_reason(tmp_path: Path, bad_line: str, reason: str) -> None:
    good = json.dumps({"id": "1", "title": "ok", "text": "fine text"})
    path = _write(tmp_path / "c.jsonl", f"{good}\n\n{bad_line}\n")
    with pytest.raises(CorpusError, match=f"c.jsonl, line 3: {reason}"):
        LocalCorpus(path)


def test_corpus_error_is_a_value_error_with_one_line_message(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as info:
        LocalCorpus(tmp_path / "missing")
    assert "\n" not in str(info.value)


# --- concurrency ---------------------------------------------------------------------------


def test_concurrent_calls_match_serial_results() -> None:
    docs = {
        f"doc{i}": f"{DOCS[key]} Extra note {i} about item{i % 7}."
        for i, key in enumerate(list(DOCS) * 10)
    }
    corpus = LocalCorpus.from_texts(docs)
    queries = ["Eiffel Paris", "Everest mountain", "Amazon river", "Python Guido", "item3 note"]
    queries = queries * 20
    serial = [corpus(q, k=5) for q in queries]
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(lambda q: corpus(q, k=5), queries))
    assert concurrent == serial
    assert all(serial)


# --- cap_context ---------------------------------------------------------------------------


def _p(text: str, source: str = "") -> Passage:
    return Passage(text=text, source=source)


def test_cap_context_default_is_paper_setting() -> None:
    assert DEFAULT_CONTEXT_CHARS == 20_000
    big = [_p("a" * 15_000), _p("b" * 15_000)]
    capped = cap_context(big)
    assert sum(len(p.text) for p in capped) == 20_000
    assert capped[1].text == "b" * 5_000


def test_cap_context_keeps_order_and_truncates_last() -> None:
    passages = [_p("aaaa", "1"), _p("bbbb", "2"), _p("cccc", "3")]
    capped = cap_context(passages, max_chars=10)
    assert [(p.source, p.text) for p in capped] == [("1", "aaaa"), ("2", "bbbb"), ("3", "cc")]
    assert passages[2].text == "cccc"  # input untouched


def test_cap_context_exact_fit_and_nothing_left() -> None:
    passages = [_p("aaaa"), _p("bbbb"), _p("cccc")]
    assert [p.text for p in cap_context(passages, max_chars=8)] == ["aaaa", "bbbb"]
    assert cap_context(passages, max_chars=0) == []
    assert cap_context([], max_chars=10) == []
    assert cap_context(passages, max_chars=100) == passages


# --- as_retriever --------------------------------------------------------------------------


def test_as_retriever_normalises_items_and_trims_to_k() -> None:
    def search(query: str, k: int) -> list[object]:
        return [
            _p("a passage", "p"),
            "plain string",
            {"text": "from dict", "source": "wiki", "score": 2},
            {"text": "bare dict"},
        ]

    retriever = as_retriever(search)
    assert retriever.__name__ == "search"  # type: ignore[attr-defined]
    assert retriever.name == "search"  # type: ignore[attr-defined]
    assert retriever("q", 10) == [
        Passage(text="a passage", source="p"),
        Passage(text="plain string"),
        Passage(text="from dict", source="wiki", score=2.0),
        Passage(text="bare dict"),
    ]
    assert len(retriever("q", 2)) == 2


def test_as_retriever_keeps_name_of_named_objects_and_is_idempotent() -> None:
    corpus = LocalCorpus.from_texts(DOCS)
    wrapped = as_retriever(corpus)
    assert wrapped.name == "local:<memory>"  # type: ignore[attr-defined]
    assert as_retriever(wrapped) is wrapped
    assert wrapped("Eiffel", 1) == corpus("Eiffel", 1)


@pytest.mark.parametrize(
    ("output", "message"),
    [
        (None, "returned None"),
        ("just text", "returned str"),
        ({"text": "a dict, not a list"}, "returned dict"),
        ([1], "item of type int"),
        ([{"source": "no text"}], "item of type dict"),
        ([{"text": "t", "score": "high"}], "bad dict"),
    ],
)
def test_as_retriever_rejects_bad_output(output: object, message: str) -> None:
    retriever = as_retriever(lambda query, k: output)
    with pytest.raises(RetrievalError, match=message):
        retriever("q", 3)


def test_as_retriever_wraps_backend_exceptions() -> None:
    def broken(query: str, k: int) -> list[Passage]:
        raise ConnectionError("search API down")

    with pytest.raises(RetrievalError, match="broken failed: search API down") as info:
        as_retriever(broken)("q", 3)
    assert isinstance(info.value.__cause__, ConnectionError)


def test_as_retriever_requires_callable() -> None:
    with pytest.raises(TypeError) as info:
        as_retriever("not callable")  # type: ignore[arg-type]
    assert isinstance(info.value, UserError)  # a configuration error: it aborts a run
