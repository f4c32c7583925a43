"""The HTML decoding view: structure, provenance links, escaping, and a real browser."""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from serc_dspy.cli import main
from serc_dspy.core.trace import Check, Correction, Event, Fact, Firewall, Passage, Sentence, Trace
from serc_dspy.view import render_trace

DRAFT = ("Marie Curie was born in Kraków in 1867. She won the Nobel Prize in Chemistry in 1903. "
         "She enjoyed painting.")
ANSWER = "Marie Curie was born in Warsaw in 1867. She won the Nobel Prize in Physics in 1903."


def fixture_trace(passage_text: str = "Marie Curie was born in Warsaw in 1867.",
                  source: str = "https://en.wikipedia.org/wiki/Marie_Curie") -> Trace:
    sentences = [Sentence(index=0, text="Marie Curie was born in Kraków in 1867."),
                 Sentence(index=1, text="She won the Nobel Prize in Chemistry in 1903."),
                 Sentence(index=2, text="She enjoyed painting.")]
    facts = [
        Fact(id="f0.0", text="Marie Curie was born in Kraków.", sentence=0, check="c0",
             verdict="CONTRADICTED", status="corrected", correction="Marie Curie was born in "
             "Warsaw.", quote="Marie Curie was born in Warsaw in 1867."),
        Fact(id="f0.1", text="Marie Curie was born in 1867.", sentence=0, check="c0",
             verdict="SUPPORTED", status="kept"),
        Fact(id="f1.0", text="Marie Curie won the Nobel Prize in Chemistry in 1903.",
             sentence=1, check="c1", verdict="CONTRADICTED", status="corrected",
             correction="Marie Curie won the Nobel Prize in Physics in 1903."),
        Fact(id="f1.1", text="Marie Curie was honoured for chemistry.", sentence=1,
             check="c1", verdict="SUPPORTED", status="corrected",
             correction="Marie Curie was honoured for physics."),
        Fact(id="f2.0", text="Marie Curie enjoyed painting.", sentence=2, check="c2",
             verdict="NOT_FOUND", status="pruned", second_verdict="NOT_FOUND"),
        Fact(id="f2.1", text="Marie Curie liked music.", sentence=2, check="c3",
             status="unverified"),
    ]
    checks = [Check(id="c0", facts=["f0.0", "f0.1"], sentence=0, query="Marie Curie birth",
                    passages=[Passage(text=passage_text, source=source)],
                    evidence="Born in Warsaw in 1867."),
              Check(id="c1", facts=["f1.0", "f1.1"], sentence=1, query="Curie Nobel 1903",
                    passages=[Passage(text="The 1903 Nobel Prize in Physics.", source="c.txt")],
                    evidence="Physics, 1903."),
              Check(id="c2", facts=["f2.0"], sentence=2, query="Curie painting",
                    evidence="Nothing."),
              Check(id="c3", facts=["f2.1"], sentence=2, query="Curie music",
                    error="ConnectionError: search backend is down")]
    corrections = [
        Correction(original=facts[0].text, fixed="Marie Curie was born in Warsaw.", fact="f0.0",
                   match_score=1.0),
        Correction(original=facts[2].text, fixed=facts[2].correction, fact="f1.0",
                   match_score=1.0),
        Correction(original=facts[3].text, fixed="Marie Curie was honoured for physics.",
                   fact="f1.1", match_score=1.0, propagated=True)]
    return Trace(question="Tell me a bio of Marie Curie.", initial_answer=DRAFT, received=DRAFT,
                 draft_given=True, answer=ANSWER, sentences=sentences, facts=facts,
                 checks=checks, corrections=corrections,
                 firewall=Firewall(enabled=True, query_entity="Marie Curie",
                                   answer_entity="Pierre Curie (physicist)",
                                   evidence_entity="Marie Curie (chemist)", same_entity=False,
                                   reset=True, replaced_answer="Pierre Curie was a physicist.",
                                   analysis="Different people.", decision="reset"),
                 events=[Event(phase="detect", kind="error",
                               message="check c3 failed: facts f2.1 kept unverified")])


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.edits, self.ids, self.links, self.scripts, self.open = [], set(), [], 0, []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and "edit" in (attrs.get("class") or ""):
            self.edits.append(attrs)
        elif tag == "a":
            self.links.append(attrs.get("href"))
        if tag == "script":
            self.scripts += 1


def parse(page: str) -> _Collect:
    collector = _Collect()
    collector.feed(page)
    return collector


def test_each_edit_links_to_its_facts_and_its_provenance():
    page = render_trace(fixture_trace())
    found = parse(page)
    facts = [set(e["data-facts"].split()) for e in found.edits]
    assert {"f0.0"} in facts  # Kraków -> Warsaw
    assert any("f1.0" in f for f in facts)  # Chemistry -> Physics
    assert any("f2.0" in f for f in facts)  # the pruned sentence
    for edit in found.edits:
        assert edit["href"].startswith("#prov-") and edit["href"][1:] in found.ids
    assert "https://en.wikipedia.org/wiki/Marie_Curie" in found.links
    assert "<s>Marie Curie enjoyed painting.</s>" in page
    assert "<b>second verdict</b> (the quote showed no conflict): NOT_FOUND" in page
    assert "(propagated)" in page and "unverified (its check failed" in page
    assert "Pierre Curie was a physicist." in page  # the answer a reset replaced
    assert 'href="#fact-f2.1"' in page  # an event linked to its fact
    assert found.scripts == 1


def test_a_disputed_fact_shows_its_status_and_the_signals_behind_it():
    trace = fixture_trace()
    disputed = trace.fact("f1.0")
    disputed.status, disputed.correction = "disputed", None
    disputed.votes = {"cited": "CONTRADICTED", "second": "SUPPORTED"}
    page = render_trace(trace)
    assert 'class="fact status-disputed" data-node="f1.0"' in page
    assert "disputed: one signal alone said contradicted (kept)" in page
    assert "cited CONTRADICTED, second SUPPORTED" in page


def test_a_question_descriptor_left_unread_says_why():
    trace = fixture_trace()
    assert "<dd>Marie Curie</dd>" in render_trace(trace)
    trace.firewall.query_entity = ""  # `firewall.query_on_demand`: one entity, no call
    trace.firewall.same_entity = True
    said = ("not read: the answer&#39;s and the evidence&#39;s descriptors named one entity",
            "not read: the answer's and the evidence's descriptors named one entity")
    assert any(s in render_trace(trace) for s in said)
    trace.firewall.same_entity = None  # its read failed: nothing is claimed
    assert not any(s in render_trace(trace) for s in said)


def test_the_view_flags_degenerate_sentences_of_the_answer():
    trace = fixture_trace()
    assert 'class="degenerate"' not in render_trace(trace)
    trace.answer = ("The fourth division of Poland is the fourth division of Poland. Marie "
                    "Curie was fluent in Polish. Marie Curie was fluent in French. Marie Curie "
                    "was fluent in German.")
    page = render_trace(trace)
    assert 'class="degenerate"' in page
    assert "&ldquo;The fourth division of Poland is the fourth division of Poland.&rdquo; " \
        "(a tautology" in page
    assert "&ldquo;Marie Curie was fluent in German.&rdquo; (one of a run" in page
    assert "&ldquo;Marie Curie was fluent in Polish.&rdquo;" not in page  # a run's first is fine


def test_a_hostile_trace_is_escaped_and_never_linked():
    hostile = fixture_trace(passage_text='<script>alert("pwned")</script><img src=x onerror=1>',
                            source='javascript:alert("x")')
    hostile.question = "</title><script>alert(2)</script>"
    page = render_trace(hostile)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    found = parse(page)
    assert found.scripts == 1  # only the page's own
    assert not any(href and href.startswith("javascript:") for href in found.links)
    assert "default-src 'none'" in page  # and the page may fetch nothing


def test_serc_view_writes_a_page_and_refuses_bad_input(tmp_path, capsys):
    trace_path = tmp_path / "trace.json"
    trace_path.write_text(fixture_trace().to_json(), encoding="utf-8")
    out = tmp_path / "view.html"
    assert main(["view", str(trace_path), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    (tmp_path / "bad.json").write_text('{"facts": 3}', encoding="utf-8")
    assert main(["view", str(tmp_path / "bad.json"), "--out", str(out)]) == 2
    assert "is not a SERC trace" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing.json"), "--out", str(out)]) == 2
    for not_a_trace in ('{"a": 1}', "[1, 2]", '{}'):
        (tmp_path / "other.json").write_text(not_a_trace, encoding="utf-8")
        assert main(["view", str(tmp_path / "other.json"), "--out", str(out)]) == 2
        assert "is not a SERC trace" in capsys.readouterr().err


def test_a_forty_sentence_trace_stays_small():
    trace = fixture_trace()
    long = trace.model_copy(deep=True)
    long.sentences = [Sentence(index=i, text=f"Sentence {i} says a thing about Curie.")
                      for i in range(40)]
    long.facts = [Fact(id=f"f{i}.{j}", text=f"Fact {j} of sentence {i}.", sentence=i,
                       check=f"c{i}", verdict="SUPPORTED", status="kept")
                  for i in range(40) for j in range(4)]
    long.checks = [Check(id=f"c{i}", facts=[f"f{i}.{j}" for j in range(4)], sentence=i,
                         passages=[Passage(text="x " * 400, source=f"doc{i}.txt")] * 3)
                   for i in range(40)]
    assert len(render_trace(long).encode("utf-8")) < 3 * 2**20


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not _chromium() and os.environ.get("SERC_REQUIRE_BROWSER") != "1",
                    reason="needs Debian's chromium (apt-get install chromium)")
def test_in_a_real_browser_following_an_edit_reveals_its_evidence(tmp_path):
    browser = _chromium()
    assert browser, "SERC_REQUIRE_BROWSER=1 but chromium is not installed"
    page = tmp_path / "view.html"
    page.write_text(render_trace(fixture_trace()), encoding="utf-8")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
             "--v=0", "--virtual-time-budget=3000"]

    def run(*args):
        return subprocess.run([*flags, *args], capture_output=True, text=True, timeout=120)

    shot = tmp_path / "view.png"
    assert run(f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()).returncode == 0
    assert shot.read_bytes()[:4] == b"\x89PNG"
    found = parse(render_trace(fixture_trace()))
    target = found.edits[0]["href"]  # follow the first edit's link
    result = run("--dump-dom", page.as_uri() + target)
    assert f'data-revealed="{target[1:]}"' in result.stdout
    assert "Marie Curie was born in Warsaw in 1867." in result.stdout
    assert "CONSOLE" not in result.stderr and "Uncaught" not in result.stderr
    broken = tmp_path / "broken.html"  # the console check does catch a script error
    broken.write_text("<script>throw new Error('boom')</script>", encoding="utf-8")
    assert "boom" in run("--dump-dom", broken.as_uri()).stderr


def test_html_report_renders_two_result_files_with_a_view_per_item(tmp_path):
    import json

    from serc_dspy.evaluation.report import write_html_report

    paths = []
    for method in ("initial", "serc"):
        trace = fixture_trace()
        trace.method = method
        record = {"id": "curie", "method": method, "dataset": "bio", "question": trace.question,
                  "answer": trace.answer, "initial_answer": DRAFT, "error": None,
                  "trace": trace.model_dump(mode="json"), "seconds": 1.0}
        failed = {**record, "id": "broken", "trace": None, "answer": None,
                  "error": "LM unreachable"}
        path = tmp_path / f"{method}.jsonl"
        path.write_text(json.dumps(record) + "\n" + json.dumps(failed) + "\n", encoding="utf-8")
        paths.append(str(path))
    report = write_html_report(paths, tmp_path / "out" / "report.html")
    page = report.read_text(encoding="utf-8")
    assert "<table>" in page and "Cost per question" in page
    found = parse(page)
    views = [h for h in found.links if h and h.endswith(".html")]
    assert len(views) == 2  # one per decoded item; the failed ones have no view
    for view in views:
        assert (report.parent / view).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "failed: LM unreachable" in page


def test_a_choice_check_shows_each_slots_options_choices_and_ruling():
    from serc_dspy.core.trace import Candidate, Slot

    trace = fixture_trace()
    fact = trace.fact("f0.0")
    fact.slots = [Slot(kind="name", text="Kraków", candidates=[
        Candidate(value="Kraków", origin="fact"),
        Candidate(value="Warsaw", passage=0, offset=12, context="born in Warsaw", read=True),
        Candidate(value="not stated", origin="none")],
        choices=["Warsaw", "Warsaw"], ruling="contradicted", chosen="Warsaw",
        confidence={"Kraków": 0.1, "Warsaw": 0.85, "not stated": 0.05}),
        Slot(kind="year", text="<b>1867</b>", choices=[None, "1867"], note="the orders disagree")]
    page = render_trace(trace)
    assert 'class="slot ruling-contradicted"' in page
    # each option with its probability, both orders averaged, where the backend gave one
    # the option the model also read as the answer (`choose.read_answer`) says so
    assert "Warsaw <small>(passage 1, offset 12; read as the answer; p = 0.85)</small>" in page
    assert "Kraków <small>(fact; p = 0.10)</small>" in page
    assert "Warsaw, Warsaw" in page and "contradicted &rarr; Warsaw" in page
    assert "<em>no reply</em>, 1867" in page and "&lt;b&gt;1867&lt;/b&gt;" in page


def test_bidirectional_controls_reach_the_page_as_their_codes_never_raw():
    trace = fixture_trace()
    trace.facts[0].text = "born in \u202eWarsaw"
    page = render_trace(trace)
    assert "\u202e" not in page and "&lt;U+202E&gt;Warsaw" in page
