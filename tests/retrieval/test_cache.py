"""Behaviour of the on-disk retrieval cache: hits, persistence, failures and concurrency."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import diskcache
import pytest

from serc_dspy.core.errors import UserError
from serc_dspy.core.trace import Passage
from serc_dspy.retrieval import LocalCorpus, RetrievalError, Retriever
from serc_dspy.retrieval.cache import CachedRetriever, CacheError


class Counting:
    """A retriever that records its calls and answers deterministically from (query, k)."""

    name = "counting"

    def __init__(self, delay: float = 0.0, tag: str = "") -> None:
        self.calls: list[tuple[str, int]] = []
        self.delay = delay
        self.tag = tag
        self._lock = threading.Lock()

    def __call__(self, query: str, k: int) -> list[Passage]:
        with self._lock:
            self.calls.append((query, k))
        time.sleep(self.delay)
        return [
            Passage(text=f"{self.tag}{query} #{i}", source=f"src/{i}", score=1.0 / (i + 1))
            for i in range(k)
        ]


class Flaky(Counting):
    """Fails its first `failures` calls, as a web search does during an outage."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def __call__(self, query: str, k: int) -> list[Passage]:
        result = super().__call__(query, k)
        if len(self.calls) <= self.failures:
            raise RetrievalError("search API down")
        return result


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "retrieval"


def test_second_identical_run_makes_no_underlying_calls(db: Path) -> None:
    inner = Counting()
    cached = CachedRetriever(inner, db)
    queries = ["Eiffel Tower height", "Everest elevation", "Amazon length"]
    first = [cached(q, 3) for q in queries]
    second = [cached(q, 3) for q in queries]
    assert second == first
    assert len(inner.calls) == 3
    assert (cached.hits, cached.misses) == (3, 3)


def test_different_query_or_k_misses(db: Path) -> None:
    inner = Counting()
    cached = CachedRetriever(inner, db)
    cached("Eiffel", 3)
    assert len(cached("Eiffel", 5)) == 5
    cached("eiffel", 3)
    cached("Eiffel ", 3)
    assert inner.calls == [("Eiffel", 3), ("Eiffel", 5), ("eiffel", 3), ("Eiffel ", 3)]
    assert cached.hits == 0


def test_cache_persists_across_instances_on_the_same_file(db: Path) -> None:
    first = CachedRetriever(Counting(), db)
    stored = first("Eiffel", 4)
    first.close()
    inner = Counting(tag="changed ")
    second = CachedRetriever(inner, db)
    assert second("Eiffel", 4) == stored
    assert inner.calls == []
    assert second.hits == 1


def test_parent_directories_are_created_and_wal_is_used(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "cache"
    CachedRetriever(Counting(), path)("q", 1)
    assert path.is_dir()
    with sqlite3.connect(path / "cache.db") as conn:  # diskcache's own file in the directory
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_retriever_name_separates_entries(db: Path) -> None:
    web = CachedRetriever(Counting(tag="web "), db, retriever_name="web")
    local = CachedRetriever(Counting(tag="local "), db, retriever_name="local")
    assert web("Eiffel", 1)[0].text == "web Eiffel #0"
    assert local("Eiffel", 1)[0].text == "local Eiffel #0"
    assert web.name == "web"


def test_default_name_comes_from_the_wrapped_retriever(db: Path) -> None:
    def search(query: str, k: int) -> list[Passage]:
        return []

    class Plain:
        def __call__(self, query: str, k: int) -> list[Passage]:
            return []

    corpus = LocalCorpus.from_texts({"a": "alpha"})
    assert CachedRetriever(Counting(), db).name == "counting"
    assert CachedRetriever(corpus, db).name == "local:<memory>"
    assert CachedRetriever(search, db).name == "search"
    assert CachedRetriever(Plain(), db).name == "Plain"


def test_failures_are_not_cached_and_propagate(db: Path) -> None:
    inner = Flaky(failures=2)
    cached = CachedRetriever(inner, db)
    for _ in range(2):
        with pytest.raises(RetrievalError, match="search API down"):
            cached("Eiffel", 2)
    assert len(cached("Eiffel", 2)) == 2
    assert len(cached("Eiffel", 2)) == 2
    assert len(inner.calls) == 3
    assert (cached.hits, cached.misses) == (1, 1)


def test_malformed_results_are_rejected_and_not_cached(db: Path) -> None:
    calls = []

    def broken(query: str, k: int) -> list[int]:
        calls.append(query)
        return [42]  # neither a Passage, a string nor a dict with text

    cached = CachedRetriever(broken, db)  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(RetrievalError):
            cached("q", 1)
    assert len(calls) == 2


def test_passages_round_trip_exactly(db: Path) -> None:
    passages = [
        Passage(
            text='Line one\nline "two"\ttab — café 東京 🚀',
            source="https://x.org/a?b=1&c",
            score=0.1 + 0.2,
        ),
        Passage(text="tiny score", source="", score=1e-300),
        Passage(text="negative", source="s", score=-3.5),
        Passage(text="default score"),
    ]

    def fixed(query: str, k: int) -> list[Passage]:
        return passages

    CachedRetriever(fixed, db)("q", 4)
    again = CachedRetriever(Counting(), db, retriever_name="fixed")("q", 4)
    assert again == passages
    assert [p.score for p in again] == [0.1 + 0.2, 1e-300, -3.5, 0.0]


def test_results_are_fresh_objects(db: Path) -> None:
    cached = CachedRetriever(Counting(), db)
    cached("q", 1)[0].text = "mutated"
    assert cached("q", 1)[0].text == "q #0"


def test_disabled_cache_always_calls_through_and_touches_no_file(db: Path) -> None:
    inner = Counting()
    cached = CachedRetriever(inner, db, enabled=False)
    assert cached("q", 2) == cached("q", 2)
    assert len(inner.calls) == 2
    assert (cached.hits, cached.misses) == (0, 0)
    assert not db.exists()


def test_clear_forgets_only_this_retriever(db: Path) -> None:
    inner = Counting()
    cached = CachedRetriever(inner, db)
    other = CachedRetriever(Counting(), db, retriever_name="other")
    cached("a", 1)
    cached("b", 1)
    other("a", 1)
    assert cached.clear() == 2
    cached("a", 1)
    assert len(inner.calls) == 3
    assert other("a", 1) and other.hits == 1


def test_unusable_path_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "old.sqlite").write_bytes(b"SQLite format 3\x00")  # an earlier release's file
    with pytest.raises(CacheError, match="cannot open retrieval cache .*is a file") as info:
        CachedRetriever(Counting(), tmp_path / "old.sqlite")
    assert isinstance(info.value, UserError)
    (tmp_path / "plain").write_text("x")
    with pytest.raises(CacheError, match="cannot open retrieval cache"):
        CachedRetriever(Counting(), tmp_path / "plain" / "cache")  # a file as a parent


def test_unreadable_entry_is_fetched_again(db: Path) -> None:
    inner = Counting()
    CachedRetriever(inner, db)("q", 1)
    with diskcache.Cache(str(db)) as store:
        store.set(("counting", "q", 1), "not json")
    assert CachedRetriever(inner, db)("q", 1)[0].text == "q #0"
    assert len(inner.calls) == 2


def test_is_a_retriever(db: Path) -> None:
    cached = CachedRetriever(Counting(), db)
    assert isinstance(cached, Retriever)
    assert "retrieval" in repr(cached)


# --- concurrency ---------------------------------------------------------------------------


def test_concurrent_identical_queries_call_the_retriever_once(db: Path) -> None:
    inner = Counting(delay=0.2)
    cached = CachedRetriever(inner, db)
    start = threading.Barrier(16)

    def run(_: int) -> list[Passage]:
        start.wait()
        return cached("Eiffel Tower height", 3)

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(run, range(16)))
    assert inner.calls == [("Eiffel Tower height", 3)]
    assert all(r == results[0] for r in results)
    assert (cached.hits, cached.misses) == (15, 1)


def test_different_queries_are_fetched_in_parallel(db: Path) -> None:
    inside = threading.Barrier(4, timeout=5)

    def search(query: str, k: int) -> list[Passage]:
        inside.wait()  # breaks (raising) unless all four misses are in flight at once
        return [Passage(text=query)]

    cached = CachedRetriever(search, db)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda q: cached(q, 1), ["a", "b", "c", "d"]))
    assert [r[0].text for r in results] == ["a", "b", "c", "d"]


def test_many_threads_and_instances_share_one_file_consistently(db: Path) -> None:
    instances = [CachedRetriever(Counting(delay=0.01, tag=f"i{n} "), db) for n in range(3)]
    jobs = [(instances[i % 3], f"query {i % 10}") for i in range(120)]
    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(lambda job: job[0](job[1], 2), jobs))
    by_query: dict[str, list[list[Passage]]] = {}
    for (_, query), result in zip(jobs, results, strict=True):
        by_query.setdefault(query, []).append(result)
    assert len(by_query) == 10
    assert all(all(r == rs[0] for r in rs) for rs in by_query.values())


def test_first_writer_wins_when_another_writer_races(db: Path) -> None:
    early = CachedRetriever(Counting(tag="early "), db)

    def racing(query: str, k: int) -> list[Passage]:
        early(query, k)  # another process stores its result while we are still searching
        return [Passage(text="late")]

    late = CachedRetriever(racing, db, retriever_name="counting")
    assert late("q", 1)[0].text == "early q #0"


_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from serc_dspy.retrieval.cache import CachedRetriever
    from serc_dspy.core.trace import Passage

    path, tag = sys.argv[1], sys.argv[2]

    def search(query, k):
        time.sleep(0.05)
        return [Passage(text=f"{tag} {query}", source=tag, score=0.5)]

    cached = CachedRetriever(search, path, retriever_name="shared")
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps([p.model_dump() for p in cached("same query", 1)]), flush=True)
    """
)


def test_processes_sharing_the_file_get_the_same_result(db: Path) -> None:
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(db), f"proc{n}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    for worker in workers:  # start all searches together, once every process has imported
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.flush()
    outputs = []
    for worker in workers:
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0
        outputs.append(json.loads(out))
    assert all(o == outputs[0] for o in outputs)
    assert outputs[0][0]["source"] in {"proc0", "proc1"}
    with diskcache.Cache(str(db)) as store:
        assert len(store) == 1


def test_serc_with_local_and_cached_retrievers_deep_copies_and_pickles(tmp_path, caplog):
    import copy
    import logging
    import pickle

    from serc_dspy import SERC, LocalCorpus

    corpus = LocalCorpus.from_texts({"a.txt": "Marie Curie was born in Warsaw in 1867."})
    for retriever in (corpus, CachedRetriever(corpus, tmp_path / "cache")):
        program = SERC(retriever=retriever)
        with caplog.at_level(logging.WARNING):
            twin = copy.deepcopy(program)
        assert "Failed to deep copy" not in caplog.text
        revived = pickle.loads(pickle.dumps(program))
        for copy_ in (twin, revived):
            [passage] = copy_.retriever("Warsaw", 1)
            assert "Warsaw" in passage.text


def test_a_plain_function_is_cached_as_serc_would_take_it(tmp_path):
    from serc_dspy.retrieval.cache import CachedRetriever

    calls = []

    def search(query, k):
        calls.append(query)
        return [f"{query} passage"]

    cached = CachedRetriever(search, tmp_path / "cache")
    first = cached("Marie Curie", 2)
    assert [p.text for p in first] == ["Marie Curie passage"]
    assert [p.text for p in cached("Marie Curie", 2)] == ["Marie Curie passage"]
    assert calls == ["Marie Curie"]  # the second call came from the cache


def test_an_edited_corpus_under_the_same_name_never_reads_the_old_evidence(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "curie.txt").write_text("Marie Curie was born in Kraków.", encoding="utf-8")
    old = CachedRetriever(LocalCorpus(folder), tmp_path / "cache")
    assert "Kraków" in old("Marie Curie born", 1)[0].text
    (folder / "curie.txt").write_text("Marie Curie was born in Warsaw.", encoding="utf-8")
    new = CachedRetriever(LocalCorpus(folder), tmp_path / "cache")
    assert new.name == old.name and new.content_sha256 != old.content_sha256
    assert "Warsaw" in new("Marie Curie born", 1)[0].text
    assert new.clear() == 2  # one name: both corpora's entries go
