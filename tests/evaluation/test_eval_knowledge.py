"""The topic-keyed knowledge source in FActScore's SQLite layout."""

import json
import sqlite3

import pytest
from conftest import SHARED_DATA
from eval_fixtures import WIKI

from serc_dspy.core.errors import UserError
from serc_dspy.retrieval.knowledge import (
    SEPARATOR,
    KnowledgeError,
    KnowledgeSource,
    UnknownTopicError,
)

WIKI_JSON = SHARED_DATA / "factscore_wiki" / "wikipedia_dev.json"


def test_separator_is_factscores():
    assert SEPARATOR == "####SPECIAL####SEPARATOR####"


def test_build_sqlite_round_trip_in_factscore_layout(tmp_path):
    data = {**WIKI, "Plain Title": "First paragraph about Plain Title.\n\nSecond paragraph."}
    db = tmp_path / "kb.db"
    KnowledgeSource.build_sqlite(data, db, passage_chars=80)

    with sqlite3.connect(db) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(documents)")]
        rows = dict(conn.execute("SELECT title, text FROM documents"))
    assert columns == ["title", "text"]
    assert set(rows) == {"Ada Lovelace", "Alan Turing", "Plain Title"}
    assert SEPARATOR in rows["Ada Lovelace"]

    source = KnowledgeSource(db)  # reopen from disk
    assert source.topics() == ["Ada Lovelace", "Alan Turing", "Plain Title"]
    passages = source.passages("Ada Lovelace")
    assert len(passages) == len(rows["Ada Lovelace"].split(SEPARATOR)) > 1
    assert all(len(p.text) <= 80 and p.source == "Ada Lovelace" for p in passages)
    text = " ".join(p.text for p in passages)
    assert "born in London in 1815" in text and "Work." in text
    assert "biography at some site" not in text  # the References section is dropped
    assert "==" not in text
    # Paragraphs are packed up to the limit; whitespace is normalised when read back.
    assert [p.text for p in source.passages("Plain Title")] == [
        "First paragraph about Plain Title. Second paragraph."]


def test_build_from_a_json_file_and_refuse_to_overwrite(tmp_path):
    path = tmp_path / "wiki.json"
    path.write_text(json.dumps({"X": "X is a thing."}), encoding="utf-8")
    db = tmp_path / "x.db"
    KnowledgeSource.build_sqlite(path, db)
    with pytest.raises(KnowledgeError, match="already exists"):
        KnowledgeSource.build_sqlite(path, db)
    assert len(KnowledgeSource.build_sqlite(path, db, overwrite=True)) == 1


def test_bm25_is_restricted_to_the_topics_article():
    source = KnowledgeSource.from_json(WIKI)
    hits = source.get_passages("Ada Lovelace", "worked at Bletchley Park in the war", k=5)
    assert hits and all(p.source == "Ada Lovelace" for p in hits)
    assert all("Bletchley" not in p.text for p in hits)
    # The most relevant passage of the topic's own article comes first.
    hits = source.get_passages("Ada Lovelace", "Analytical Engine Babbage", k=1)
    assert "Analytical Engine" in hits[0].text


def test_fewer_matches_than_k_are_filled_in_article_order(tmp_path):
    source = KnowledgeSource.from_json({"T": ["alpha one.", "beta two.", "gamma three."]})
    hits = source.get_passages("T", "gamma", k=3)
    assert [p.text for p in hits] == ["gamma three.", "alpha one.", "beta two."]
    assert hits[0].score > 0 and hits[1].score == 0
    assert len(source.get_passages("T", "gamma", k=10)) == 3


def test_topic_lookup_is_case_insensitive_and_unknown_topics_raise():
    source = KnowledgeSource.from_json(WIKI)
    assert "ada lovelace" in source and "Grace Hopper" not in source
    assert source.get_passages("ada lovelace", "London", k=1)[0].source == "Ada Lovelace"
    with pytest.raises(UnknownTopicError, match="Grace Hopper") as info:
        source.get_passages("Grace Hopper", "born", k=3)
    assert isinstance(info.value, UserError)


def test_reads_a_database_written_by_factscore_with_token_markers(tmp_path):
    db = tmp_path / "enwiki.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE documents (title PRIMARY KEY, text)")
        conn.execute("INSERT INTO documents VALUES (?, ?)", (
            "Marie Curie", SEPARATOR.join(["<s>Marie Curie was a physicist.</s><s>She was",
                                           " born in Warsaw.</s>"])))
    source = KnowledgeSource.open(db)
    assert [p.text for p in source.passages("Marie Curie")] == [
        "Marie Curie was a physicist. She was", "born in Warsaw."]


def test_general_retriever_searches_every_topic():
    source = KnowledgeSource.from_json(WIKI)
    hits = source("Bletchley Park Second World War", 2)
    assert hits and hits[0].source == "Alan Turing"


@pytest.mark.parametrize("content, message", [
    ("not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"T": 5}', "must be a string"),
    ("{}", "no article text"),
])
def test_bad_json_is_a_one_line_user_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(KnowledgeError, match=message):
        KnowledgeSource.open(path)


def test_bad_database_files_are_user_errors(tmp_path):
    with pytest.raises(KnowledgeError, match="not found"):
        KnowledgeSource.open(tmp_path / "missing.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(KnowledgeError, match="not an SQLite database"):
        KnowledgeSource.open(junk)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(KnowledgeError, match="no 'documents' table"):
        KnowledgeSource.open(empty)


@pytest.mark.skipif(not WIKI_JSON.is_file(), reason=f"shared data not found at {WIKI_JSON}")
def test_real_wikipedia_extracts(tmp_path):
    source = KnowledgeSource.build_sqlite(WIKI_JSON, tmp_path / "wiki.db")
    raw = json.loads(WIKI_JSON.read_text(encoding="utf-8"))
    assert len(source) == len(raw) == 44
    hits = source.get_passages("Anna May Wong", "Anna May Wong was born in Los Angeles.", k=5)
    assert len(hits) == 5 and all(p.source == "Anna May Wong" for p in hits)
    assert "1905" in hits[0].text
    assert max(len(p.text) for t in source.topics() for p in source.passages(t)) <= 1000


def test_knowledge_sources_deep_copy_shared_and_pickle_round_trip(tmp_path):
    import copy
    import pickle

    from serc_dspy import SERC
    from serc_dspy.retrieval.knowledge import KnowledgeSource

    articles = {"Ada": "Ada Lovelace wrote the first algorithm. She was born in London."}
    memory = KnowledgeSource.from_json(articles)
    on_disk = KnowledgeSource.build_sqlite(articles, tmp_path / "k.db")
    for source in (memory, on_disk):
        program = copy.deepcopy(SERC(retriever=source))
        assert program.retriever("algorithm", 1)[0].text == source("algorithm", 1)[0].text
        again = pickle.loads(pickle.dumps(source))
        assert again("born London", 1)[0].source == "Ada"
        assert again.name == source.name
