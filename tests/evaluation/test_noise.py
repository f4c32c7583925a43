"""The planted-error benchmark: injection, each scoring rule, and the command end to end."""

from __future__ import annotations

import json
import re

import pytest
from scripted import entity, scripted_lm

from serc_dspy.cli import main
from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_jsonl
from serc_dspy.core.trace import Fact, Passage, Trace
from serc_dspy.evaluation.injection import (
    InjectedError,
    NoisyDraft,
    load_articles,
    make_draft,
    make_drafts,
    split_article,
)
from serc_dspy.evaluation.noise import (
    count,
    draft_units,
    score_decoding,
    summarize_noise,
    unit_outcome,
)

JANE = (
    "Jane Doe (12 March 1901 – 4 May 1970) was a French composer and teacher. She composed "
    "works for John Smith in Paris. She taught 40 pupils at the conservatory.\n\n"
    "== Life ==\nJane Doe was born on 12 March 1901 in Paris. She was a composer from an early "
    "age and composed songs. Her friend John Smith played them; Smith admired her. She died in "
    "1970. She taught 40 pupils.\n\n== Legacy ==\nA teacher remembered in Paris."
)
OMAR = (
    "Omar Khan (born 1950) was a Pakistani painter. He painted murals in Lahore for Ahmed Ali. "
    "He worked with 12 assistants in Lahore.\n\n"
    "== Career ==\nOmar Khan was born in 1950. The painter painted murals in Lahore. Ahmed Ali "
    "paid for them, and Ali kept them. He had 12 assistants."
)
ARTICLES = {"Jane Doe": JANE, "Omar Khan": {"resolved_title": "Omar Khan", "extract": OMAR}}


def test_lead_and_body_are_split_at_the_first_heading():
    lead, body = split_article(JANE)
    assert lead.endswith("at the conservatory.")
    assert body.startswith("== Life ==")


@pytest.mark.parametrize("k", [1, 2, 4])
def test_injection_is_deterministic_and_every_span_is_in_the_draft(k):
    articles = load_articles(ARTICLES)
    first = make_drafts(articles, bios=2, errors=k, seed=7)
    again = make_drafts(articles, bios=2, errors=k, seed=7)
    assert [d.model_dump() for d in first] == [d.model_dump() for d in again]
    for draft in first:
        lead, body = split_article(articles[draft.title])
        assert len(draft.errors) == k
        for error in draft.errors:
            assert draft.draft[error.start:error.end] == error.injected
            assert error.injected in draft.sentences[error.sentence]
            assert count(body, error.original)  # the evidence can fix it
            assert not count(articles[draft.title], error.injected)  # never true anywhere
        assert draft.clean == " ".join(lead.split(". ")[:3]) or draft.clean.startswith(lead[:20])


def test_seeds_change_the_injection():
    articles = load_articles(ARTICLES)
    drafts = {seed: [d.draft for d in make_drafts(articles, bios=2, errors=2, seed=seed)]
              for seed in range(6)}
    assert len({tuple(v) for v in drafts.values()}) > 1


def test_an_offset_holds_out_the_first_articles_and_keeps_the_drafts_it_keeps():
    articles = load_articles(ARTICLES)
    everything = make_drafts(articles, bios=len(articles), errors=0)
    held_out = make_drafts(articles, bios=1, errors=0, offset=1)
    assert held_out[0].title != list(articles)[0]
    assert held_out[0].model_dump() == everything[1].model_dump()


def test_every_kind_can_be_planted_including_a_dependent_pair():
    articles = load_articles(ARTICLES)
    others = {"places": ["Warsaw", "Kyoto"], "people": ["Mary Major", "Paul Minor"]}
    kinds = set()
    for seed in range(40):
        draft = make_draft("Jane Doe", articles["Jane Doe"], 2, seed=seed, **others)
        kinds |= {e.kind for e in draft.errors}
        pairs = [e for e in draft.errors if e.kind == "dependent"]
        if pairs:
            assert len(pairs) == 2 and pairs[0].group == pairs[1].group
            assert {e.original for e in pairs} in ({"composer", "composed"},
                                                   {"teacher", "taught"})
    assert kinds == {"year", "number", "place", "person", "role", "dependent"}


def test_too_few_fixable_spans_is_a_clear_error():
    with pytest.raises(UserError, match="can carry 30 planted errors"):
        make_drafts(load_articles(ARTICLES), bios=2, errors=30)


# -- scoring rules on hand-built traces ----------------------------------------------------------
CLEAN = "Ann Lee was born in 1901 in Paris. She was a composer. She had 3 sons."
NOISY = "Ann Lee was born in 1905 in Rome. She was a painter. She had 3 sons."


def _draft() -> NoisyDraft:
    def err(i, kind, original, injected):
        start = NOISY.index(injected)
        return InjectedError(id=f"e{i}", kind=kind, sentence=0 if i < 3 else 1, start=start,
                             end=start + len(injected), original=original, injected=injected)

    return NoisyDraft(id="ann#k3", title="Ann Lee", question="Tell me a bio of Ann Lee.",
                      clean=CLEAN, draft=NOISY, sentences=NOISY.replace(". ", ".\n").split("\n"),
                      errors=[err(1, "year", "1901", "1905"), err(2, "place", "Paris", "Rome"),
                              err(3, "role", "composer", "painter")])


ARTICLE = "Ann Lee was born in 1901 in Paris. She was a composer. She had 3 sons."


def _trace(facts):
    return Trace(facts=[Fact(id=f"f{i}", text=t, sentence=s, verdict=v, status=st,
                             correction=c)
                        for i, (t, s, v, st, c) in enumerate(facts)])


def test_scoring_rules_count_detected_corrected_deleted_left():
    trace = _trace([
        ("Ann Lee was born in 1905.", 0, "CONTRADICTED", "corrected", "Ann Lee was born in 1901."),
        ("Ann Lee was born in Rome.", 0, "NOT_FOUND", "pruned", None),
        ("Ann Lee was a painter.", 1, "SUPPORTED", "kept", None),
        ("Ann Lee had 3 sons.", 2, "SUPPORTED", "kept", None),
    ])
    answer = "Ann Lee was born in 1901. She was a painter. She had 3 sons."
    score = score_decoding(_draft(), ARTICLE, answer, trace, "serc")
    outcomes = {e.original: (e.outcome, e.detected) for e in score.errors}
    assert outcomes == {"1901": ("corrected", True), "Paris": ("deleted", True),
                        "composer": ("left", False)}
    # units come from the draft's clauses, injected values left out: "painter" leaves nothing
    assert [(u.text, u.outcome) for u in score.units] == [
        ("Ann Lee was born in 1905 in Rome.", "preserved"), ("She had 3 sons.", "preserved")]
    summary = summarize_noise([score])
    assert (summary.injected, summary.corrected, summary.deleted, summary.left,
            summary.detected) == (3, 1, 1, 1, 2)
    assert summary.residual_error_rate == pytest.approx(1 / 3)


def test_units_do_not_depend_on_the_method_and_count_preserved_altered_pruned():
    draft = _draft().model_copy(update={"errors": []})
    answer = "Ann Lee was born in 1905 in Oslo. She had 3 sons. She won the Nobel Prize in 1950."
    with_facts = _trace([("Ann Lee won the Nobel Prize.", 2, "SUPPORTED", "kept", None)])
    score = score_decoding(draft, "An article about Ann Lee.", answer, with_facts, "serc")
    # the clause that lost "Rome" is altered, "painter" (which no fact carried) is pruned
    assert [(u.text, u.outcome) for u in score.units] == [
        ("Ann Lee was born in 1905 in Rome.", "altered"), ("She was a painter.", "pruned"),
        ("She had 3 sons.", "preserved")]
    assert score.units == score_decoding(draft, "An article about Ann Lee.", answer, None,
                                         "rarr").units  # the trace plays no part
    assert sorted(score.introduced) == ["1950", "Nobel Prize", "Oslo"]
    assert (score.clean_sentences, score.verbatim_sentences) == (3, 1)
    assert (score.draft_sentences, score.answer_sentences) == (3, 3)
    summary = summarize_noise([score, None])
    assert summary.false_alarm_rate == pytest.approx(1 / 3)
    assert summary.preservation == pytest.approx(1 / 3)
    assert summary.verbatim_share == pytest.approx(1 / 3)
    assert summary.failed == 1 and summary.bios == 1


def test_a_planted_name_with_a_small_word_inside_is_in_no_unit():
    """wikipedia_dev.json, Kim Burrell, K = 2: a planted "Rio de Janeiro" was read as the
    details "Rio" and "Janeiro", so its correction counted as a false alarm."""
    sentences = ["Kim Burrell is a gospel singer from Houston, Rio de Janeiro."]
    units = draft_units(sentences, ["Rio de Janeiro"])
    assert not {"Rio", "Janeiro"} & {d for u in units for d in u.details}
    fixed = "Kim Burrell is a gospel singer from Houston, Texas."
    assert [unit_outcome(u, fixed) for u in units] == ["preserved"] * len(units)


def test_an_answer_returned_unchanged_altered_and_pruned_nothing():
    draft = _draft().model_copy(update={"errors": []})
    trace = _trace([  # every fact pruned, and the decoder fell back to the received answer
        ("Ann Lee was born in 1905.", 0, "NOT_FOUND", "pruned", None),
        ("Ann Lee had 3 sons.", 2, "NOT_FOUND", "pruned", None),
    ]).model_copy(update={"received": NOISY, "status": "fallback"})
    score = score_decoding(draft, ARTICLE, NOISY, trace, "serc")
    assert [u.outcome for u in score.units] == ["preserved"] * 3
    assert score.verbatim_sentences == 3 and not score.degenerate
    pruned = score_decoding(draft, ARTICLE, "Ann Lee had 3 sons.", trace, "serc")
    assert [u.outcome for u in pruned.units] == ["pruned", "pruned", "preserved"]


def test_degenerate_sentences_and_length_are_counted_per_answer():
    draft = _draft().model_copy(update={"errors": []})
    answer = ("Ann Lee was born in 1905. Ann Lee was born in Rome. Ann Lee was a painter. "
              "Ann Lee had 3 sons. The fourth son of Ann Lee is the fourth son of Ann Lee. "
              "Ann Lee had 3 sons.")
    score = score_decoding(draft, ARTICLE, answer, None, "serc")
    assert score.degenerate == {1: "restated", 2: "restated", 3: "restated", 4: "tautology",
                                5: "repeated"}
    assert (score.answer_sentences, score.draft_sentences) == (6, 3)
    summary = summarize_noise([score])
    assert summary.degenerate_per_bio == 5 and summary.length_ratio == 2.0
    assert summary.verbatim_share == 0.0


def test_an_unchanged_draft_scores_as_preserved_even_with_a_range():
    # "70-71": `details` once took "71" out of the range, which `count` never finds, so the
    # untouched draft (the `initial` method) scored a false alarm.
    from serc_dspy.evaluation.noise import details

    assert details("Ann Lee (1905 - 1976, aged 70-71) was a 15th-century fan of 1960s jazz.") \
        == ["Ann Lee", "1905", "1976", "1960s"]
    lived = "She lived 70-71 years."
    draft = _draft().model_copy(update={"errors": [], "draft": f"{NOISY} {lived}",
                                        "sentences": [*_draft().sentences, lived]})
    score = score_decoding(draft, ARTICLE, draft.draft, Trace(method="initial"), "initial")
    assert {u.outcome for u in score.units} == {"preserved"}


def test_a_method_without_facts_is_scored_from_the_text():
    answer = "Ann Lee was born in 1901 in Paris. She was a composer."
    score = score_decoding(_draft(), ARTICLE, answer, Trace(method="rarr"), "rarr")
    assert {e.outcome for e in score.errors} == {"corrected"}
    assert all(e.detected and e.detected_by == "text" for e in score.errors)
    assert [(u.text, u.outcome) for u in score.units] == [
        ("Ann Lee was born in 1905 in Rome.", "preserved"), ("She had 3 sons.", "pruned")]


# -- the commands end to end with a scripted LM --------------------------------------------------
def _noise_handlers(drafts_by_question):
    """A decoder that knows the planted errors: it contradicts and fixes exactly those."""
    def errors_in(text):
        if any(text in d.clean for d in drafts_by_question.values()):
            return []  # a true sentence (the drafts of every K are known at once)
        own = [d for d in drafts_by_question.values() if text in d.draft] or \
            list(drafts_by_question.values())  # a sentence's own draft, else any
        return [e for d in own for e in d.errors
                if re.search(rf"\b{re.escape(e.injected)}\b", text)]

    def fix(text):
        for e in errors_in(text):
            text = re.sub(rf"\b{re.escape(e.injected)}\b", e.original, text)
        return text

    def judge(i):
        bad = errors_in(i["claim"])
        return {"quote": "", "verdict": "CONTRADICTED" if bad else "SUPPORTED"}

    def subject(i):
        return entity(i["question"].removeprefix("Tell me a bio of ").rstrip("."))

    return {
        "QueryEntity": subject, "AnswerEntity": lambda i: entity(""),
        "EvidenceEntity": lambda i: entity(""),
        "SameEntity": lambda i: {"analysis": "", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        "VerificationQuery": lambda i: {"query": i["facts"][0]},
        "EvidenceSummary": lambda i: {"evidence": i["passages"][:500]},
        "QuoteAndJudge": judge,
        "JudgeFacts": lambda i: {"verdicts": [judge({"claim": c})["verdict"]
                                              for c in i["claims"]]},
        "JudgeFact": lambda i: {"verdict": judge(i)["verdict"]},
        "CorrectFacts": lambda i: {"corrections": [{"original": f, "fixed": fix(f)}
                                                   for f in i["erroneous_facts"]]},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
    }


def test_bench_noise_runs_end_to_end_and_writes_the_table_and_the_waterfall(
        tmp_path, monkeypatch, capsys):
    articles_path = tmp_path / "articles.json"
    articles_path.write_text(json.dumps(ARTICLES), encoding="utf-8")
    drafts = {d.question: d for k in (0, 2)
              for d in make_drafts(load_articles(ARTICLES), bios=2, errors=k)}
    lm, engine = scripted_lm(_noise_handlers(drafts))
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "noise"
    argv = ["bench", "noise", "--articles", str(articles_path), "--bios", "2", "--errors", "0",
            "2", "--method", "initial", "--method", "serc", "--lm", "openai=http://x/v1|m",
            "--out", str(out), "--quiet", "--json"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    serc, initial = summary["methods"]["serc"], summary["methods"]["initial"]
    assert initial["residual_error_rate"] == 1.0 and initial["false_alarm_rate"] == 0.0
    assert serc["residual_error_rate"] == 0.0 and serc["correction_rate"] == 1.0
    assert serc["false_alarm_rate"] == 0.0 and serc["calls_per_bio"] > 0
    assert set(summary["methods"]["serc"]) >= {
        "residual_error_rate", "correction_rate", "deletion_rate", "false_alarm_rate",
        "introduced_per_bio", "preservation", "calls_per_bio", "tokens_per_bio"}
    assert (out / "waterfall.png").read_bytes()[:4] == b"\x89PNG"
    assert "| 2 | serc | 0 | 2 | 0 | 4 | 0.000 [0.00, 0.00] |" in (out / "noise.md").read_text()
    assert serc["residual_error_rate_ci"] == [0.0, 0.0]
    assert all(f"{name}_ci" in serc for name in ("false_alarm_rate", "preservation",
                                                   "verbatim_share", "degenerate_per_bio"))
    meta = json.loads((out / "serc-k2.meta.json").read_text())
    assert meta["command"].startswith("serc bench noise") or "bench noise" in meta["command"]
    assert "commit" in meta and meta["seed"] == 0
    calls = len(engine.calls)
    assert main(argv) == 0  # resumed: nothing runs again
    assert len(engine.calls) == calls
    capsys.readouterr()
    assert main(["report", *map(str, sorted(out.glob("*.jsonl"))), "--out", str(out)]) == 0
    report = capsys.readouterr().out
    assert "### Planted errors" in report
    assert "| serc | noise-k2 | 2 | 4 | 0.0% |" in report


def test_halueval_matching_is_by_whole_words_and_ignores_plurals_and_hyphens():
    from serc_dspy.evaluation.halueval_score import halueval_outcome

    assert halueval_outcome("Katniss is 16 years old.", "16-year-old", "teenage")["fixed"]
    assert not halueval_outcome("The whole band split.", "Hole", "Nirvana")["right"]
    assert not halueval_outcome("It was Hole.", "The Wolfhounds", "Hole")["gone"]
    assert not halueval_outcome("", "", "Hole")["right"]
    # a name with its nickname quoted inside it (HaluEval extra item 165, qa_dev 44 and 60)
    right = 'H. Bruce "Lucky" Humberstone'
    for said in ("H. Bruce Humberstone was born first.", "Lucky Humberstone was born first.",
                 'H. Bruce "Lucky" Humberstone'):
        assert halueval_outcome(said, right, "Neil LaBute")["fixed"]
    assert not halueval_outcome("Bruce Humberstone was born first.", right, "X")["right"]
    # a person's title is no part of what must be stated (multi-turn tuning draft 46)
    assert halueval_outcome("Francis Nethersole was born first.", "Sir Francis Nethersole",
                            "Elizabeth Stuart")["fixed"]
    assert not halueval_outcome("Burns did it.", "Mr. Burns", "Smithers")["right"]
    # a lower-case article is no part of the name (multi-turn tuning draft 120); a capital one
    # is part of a title ("The Wolfhounds", above)
    assert halueval_outcome("He was known as Desert Fox.", "the Desert Fox", "Black Panther")[
        "fixed"]
    assert not halueval_outcome("Producers of it.", "The Producers", "Cats")["right"]
    # a place given with its state is stated by the place alone (multi-turn tuning item 188);
    # a list of places is no place with its state
    assert halueval_outcome("The band formed in Albuquerque.", "Albuquerque, New Mexico",
                            "The band formed in New York.")["fixed"]
    assert not halueval_outcome("It was in Sweden.", "Sweden, Finland, and Norway", "X")["right"]


def test_halueval_knowledge_is_split_where_its_paragraphs_were_glued():
    from serc_dspy.core.text import split_sentences
    from serc_dspy.evaluation.benchmarks import unglued

    glued = ("Arthur's Magazine (1844-1846) was a periodical of the 19th century.First for "
             "Women is a magazine published in the U.S. since 1989.")
    assert split_sentences(unglued(glued))[1] == "First for Women is a magazine published " \
                                                   "in the U.S. since 1989."
    assert unglued("He ran the U.S.Army in 3.5 years.") == "He ran the U.S.Army in 3.5 years."


def test_glued_sentences_are_cut_at_an_initial_an_acronym_or_a_quote():
    # HaluEval tuning items 165, 116, 19 and qa_dev 4: a comparison by birth years found
    # no sentence of its own for "H. Bruce Humberstone", glued to the other option's
    from serc_dspy.core.text import glued_pieces
    from serc_dspy.rules.slots import about_subject

    assert glued_pieces('He was an actor.H. Bruce "Lucky" Humberstone was born in 1901.') == [
        "He was an actor.", 'H. Bruce "Lucky" Humberstone was born in 1901.']
    assert glued_pieces("It cites Nano Letters.ACS Nano is a journal.")[1] == \
        "ACS Nano is a journal."
    # a straight quote after the stop opens the next sentence, unless one is open before it
    assert glued_pieces('It came out in 2017."New Rules" is a song.')[1] == \
        '"New Rules" is a song.'
    assert glued_pieces('He starred in "Catch Me If You Can."Old School is a film.')[0] == \
        'He starred in "Catch Me If You Can."'
    assert glued_pieces("from the seventh position.Sébastien Buemi drove.")[1] == \
        "Sébastien Buemi drove."
    for whole in ("He got his Ph.D. at Yale.", "He ran the U.S.Army in 3.5 years.",
                  'It is owned by "Time Inc." It was started in 1922.'):
        assert glued_pieces(whole) == [whole]
    # after an acronym, a numeral or a letter, an article's opening (a name, then its
    # parenthesis, copula or comma) starts the next passage (HaluEval extra tuning items 37,
    # 48, 176, 208, 246); an initial before a name with no such opening stays whole
    assert glued_pieces("for Trapeze, the Mk.Ross Shor Lynch (born 1995) is a singer.")[1] == \
        "Ross Shor Lynch (born 1995) is a singer."
    assert glued_pieces("Prime Minister of the UK.Robert Anthony Eden, 1st Earl of Avon, "
                        "was a politician.")[1].startswith("Robert Anthony Eden, 1st Earl")
    assert glued_pieces("the affiliate WRIW-CD.Sinclair Broadcast Group is an American "
                        "company.")[1] == "Sinclair Broadcast Group is an American company."
    assert glued_pieces("in World War II.John Kennedy Toole ( ; 1937-1969) was a novelist.")[1] \
        .startswith("John Kennedy Toole")
    assert glued_pieces("Schoolboy Q and Styles P.Albert Johnson (November 2, 1974) was a "
                        "rapper.")[1].startswith("Albert Johnson")
    for whole in ("In a 2005 interview with Folha de S.Paulo, Ronaldo revealed it.",
                  "Its hosts were robbiekeegan T.Alexander Rich Nordin Joshua(K) and others.",
                  "He served in the U.S.Army Corps of Engineers (USACE) for years."):
        assert glued_pieces(whole) == [whole]
    passage = Passage(text="LaBute (born 1963) is an actor.H. Bruce Humberstone (1901) was too.")
    assert [s.text for s in about_subject([passage], "")] == [
        "LaBute (born 1963) is an actor.", "H. Bruce Humberstone (1901) was too."]


def test_bench_halueval_fixes_and_keeps_the_control_right(tmp_path, monkeypatch, capsys):
    rows = [{"knowledge": "The Eiffel Tower is in Paris, France.",
             "question": "Where is the Eiffel Tower?", "right_answer": "Paris",
             "hallucinated_answer": "The Eiffel Tower stands in the city of Rome in Italy."},
            {"knowledge": "Mount Fuji is in Japan.", "question": "Where is Mount Fuji?",
             "right_answer": "Japan", "hallucinated_answer": "Mount Fuji is in Chile."}]
    data = tmp_path / "qa.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    swaps = {"Rome": "Paris", "Chile": "Japan"}

    def judge(i):
        return {"quote": "", "verdict": "CONTRADICTED" if any(w in i["claim"] for w in swaps)
                else "SUPPORTED"}

    def fix(text):
        for wrong, right in swaps.items():
            text = text.replace(wrong, right)
        return text

    handlers = _noise_handlers({})
    handlers.update(QuoteAndJudge=judge, JudgeFact=judge,
                    JudgeFacts=lambda i: {"verdicts": [judge({"claim": c})["verdict"]
                                                       for c in i["claims"]]},
                    CorrectFacts=lambda i: {"corrections": [
        {"original": f, "fixed": fix(f)} for f in i["erroneous_facts"]]},
        QueryEntity=lambda i: entity(""),
        # Drafts under 50 characters take SERC's cold start: answer from the context alone.
        GroundedAnswer=lambda i: {"answer": "Paris" if "Eiffel" in i["question"] else "Japan"})
    lm, _ = scripted_lm(handlers)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    assert main(["bench", "halueval", "--data", str(data), "--limit", "2", "--out",
                 str(tmp_path / "h"), "--quiet", "--json", "--lm", "openai=http://x/v1|m"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["hallucinated"]["fix_rate"] == 1.0
    assert summary["hallucinated"]["fix_rate_ci"] == [1.0, 1.0]
    assert summary["control"]["break_rate"] == 0.0
    assert summary["control"]["break_rate_ci"] == [0.0, 0.0]
    assert summary["hallucinated"]["calls_per_item"] > 0
    # --ablate (as on the other benchmarks): the same items with the rule off, paired
    assert main(["bench", "halueval", "--data", str(data), "--limit", "2", "--out",
                 str(tmp_path / "h"), "--quiet", "--json", "--lm", "openai=http://x/v1|m",
                 "--ablate", "agree.contradiction"]) == 0
    ablated = json.loads(capsys.readouterr().out)["ablation"]["serc~agree.contradiction"]
    assert set(ablated) == {"fix_rate", "break_rate"}
    assert ablated["fix_rate"]["items"] == 2 and ablated["break_rate"]["items"] == 2
    assert (tmp_path / "h" / "serc~agree.contradiction-control.jsonl").is_file()


def test_a_bad_halueval_line_is_an_error_naming_it(tmp_path):
    from serc_dspy.evaluation.benchmarks import load_halueval

    row = {"knowledge": "K.", "question": "Q?", "right_answer": "R", "hallucinated_answer": "H"}
    data = tmp_path / "qa.jsonl"
    data.write_text(json.dumps(row) + "\n{not json\n" + json.dumps(row) + "\n",
                    encoding="utf-8")
    with pytest.raises(UserError, match=r"qa.jsonl, line 2: invalid JSON"):
        load_halueval(data)
    data.write_text(json.dumps(row) + "\n\n" + json.dumps(row) + "\n", encoding="utf-8")
    assert [r["id"] for r in load_halueval(data)] == ["halueval-1", "halueval-2"]


@pytest.mark.parametrize("argv, message", [
    (["noise", "--articles", "/nonexistent.json", "--method", "serc"], "articles file not found"),
    (["noise", "--articles", "ARTICLES", "--method", "nosuch"], "unknown method 'nosuch'"),
    (["noise", "--articles", "ARTICLES", "--method", "serc", "--errors", "40"],
     "can carry 40 planted errors"),
    (["noise", "--articles", "ARTICLES", "--method", "serc", "--ablate", "quote.second_vote"],
     "--ablate quote.second_vote: the rule is already off in this run"),
    (["noise", "--articles", "ARTICLES", "--method", "serc", "--ablate", "quote.echo",
      "--rule=-quote.echo"], "--ablate quote.echo: the rule is already off"),
    (["halueval", "--data", "/nonexistent.jsonl"], "HaluEval data file not found"),
    (["stages", "--data", "/nonexistent"], "data path not found"),
])
def test_bench_bad_input_is_one_clear_line(tmp_path, monkeypatch, capsys, argv, message):
    articles = tmp_path / "a.json"
    articles.write_text(json.dumps(ARTICLES), encoding="utf-8")
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: None)
    argv = [str(articles) if a == "ARTICLES" else a for a in argv]
    assert main(["bench", *argv, "--out", str(tmp_path / "o"), "--lm", "openai=http://x/v1|m"]
                if argv[0] != "stages" else ["bench", *argv]) == 2
    assert message in capsys.readouterr().err


# -- a whole SERC compiled on planted errors (`serc compile --stage serc`) ----------------------
def _compile_serc(tmp_path, monkeypatch, handlers):
    articles_path = tmp_path / "articles.json"
    articles_path.write_text(json.dumps(ARTICLES), encoding="utf-8")
    lm, engine = scripted_lm(handlers)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "serc.json"
    code = main(["compile", "--stage", "serc", "--optimizer", "bootstrap", "--train", "1",
                 "--dev", "1", "--demos", "1", "--errors", "2", "--data", str(articles_path),
                 "--out", str(out), "--lm", "openai=http://x/v1|m", "--quiet"])
    return code, out, engine


def test_compile_whole_serc_keeps_demos_of_decodings_that_fixed_their_errors(
        tmp_path, monkeypatch, capsys):
    from serc_dspy import SERC
    from serc_dspy.runtime.states import read_compiled

    drafts = {d.question: d for d in make_drafts(load_articles(ARTICLES), bios=2, errors=2)}
    code, out, _ = _compile_serc(tmp_path, monkeypatch, _noise_handlers(drafts))
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "stage serc (every predictor), optimizer bootstrap: 1 train / 1 dev bios" \
        in printed.out
    assert "dev before: 100.0%" in printed.out and "dev after:  100.0%" in printed.out
    document = read_compiled(out)
    # the bootstrapped decoding called these predictors, so each got its one demo
    assert {"checks.fact_extractor", "correction.corrector"} <= set(document["stages"])
    judged = {"checks.verifier", "checks.single_verifier", "checks.fact_checker"}
    assert judged & set(document["stages"])
    compiled = SERC(compiled=out)
    assert len(compiled.corrector.demos) == 1
    demo = compiled.corrector.demos[0]
    assert demo["erroneous_facts"] and demo["corrections"]  # a real trace of the train bio
    assert document["meta"]["stages"]["serc"]["before"]["n"] == 1


def test_compile_whole_serc_exits_non_zero_and_saves_nothing_when_every_call_fails(
        tmp_path, monkeypatch, capsys):
    def down(_inputs):
        raise ConnectionError("server unreachable")

    code, out, _ = _compile_serc(tmp_path, monkeypatch, {
        name: down for name in ("AnswerQuestion", "QueryEntity", "AnswerEntity",
                                "EvidenceEntity", "SameEntity", "AtomicFacts", "QuoteAndJudge",
                                "JudgeFacts", "JudgeFact", "CorrectFacts", "RewriteSentence",
                                "PolishAnswer", "VerificationQuery", "EvidenceSummary")})
    assert code != 0
    assert "every dev decoding failed" in capsys.readouterr().err
    assert not out.exists()


def test_bench_noise_pools_several_seeds_on_the_same_bios(tmp_path, monkeypatch, capsys):
    articles_path = tmp_path / "articles.json"
    articles_path.write_text(json.dumps(ARTICLES), encoding="utf-8")
    lm, _ = scripted_lm({})
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "seeds"
    assert main(["bench", "noise", "--articles", str(articles_path), "--bios", "2", "--errors",
                 "2", "--seeds", "0", "1", "--method", "initial", "--out", str(out), "--quiet",
                 "--json", "--lm", "openai=http://x/v1#m"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (out / "initial-k2.jsonl").is_file() and (out / "initial-k2-s1.jsonl").is_file()
    seed0 = json.loads((out / "drafts-k2.json").read_text())
    seed1 = json.loads((out / "drafts-k2-s1.json").read_text())
    assert [d["title"] for d in seed0] == [d["title"] for d in seed1]  # the same bios
    assert [d["errors"] for d in seed0] != [d["errors"] for d in seed1]  # other errors
    pooled = summary["by_errors"]["2"]["initial"]
    assert pooled["seeds"] == [0, 1] and pooled["bios"] == 4 and pooled["injected"] == 8
    assert summary["methods"]["initial"]["residual_error_rate_ci"] == [1.0, 1.0]
    assert "| 2 | initial | 0,1 | 4 |" in (out / "noise.md").read_text()


def test_ablating_a_rule_that_never_fired_decodes_nothing_again(tmp_path, monkeypatch, capsys):
    articles_path = tmp_path / "articles.json"
    articles_path.write_text(json.dumps(ARTICLES), encoding="utf-8")
    drafts = {d.question: d for d in make_drafts(load_articles(ARTICLES), bios=2, errors=2)}
    lm, engine = scripted_lm(_noise_handlers(drafts))
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "noise"
    argv = ["bench", "noise", "--articles", str(articles_path), "--bios", "2", "--errors", "2",
            "--method", "serc", "--lm", "openai=http://x/v1|m", "--out", str(out), "--quiet",
            "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    full = read_jsonl(out / "serc-k2.jsonl")
    assert not any(r["rule"] == "quote.echo" for f in full for r in f["trace"]["rulings"])
    calls = len(engine.calls)
    assert main([*argv, "--ablate", "quote.echo"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert len(engine.calls) == calls  # every answer carried over: no LM call
    off = read_jsonl(out / "serc~quote.echo-k2.jsonl")
    assert [r["answer"] for r in off] == [r["answer"] for r in full]
    assert {r["carried_from"] for r in off} == {"serc-k2.jsonl"}
    (row,) = summary["ablation"]
    assert row["rule"] == "quote.echo" and all(
        d["difference"] in (0, None) for d in row["differences"])
