"""Cited per-fact verdicts (verdicts="fact"): the quote cross-check and the swap-back fix."""

import dspy
import pytest
from scripted import scripted_lm
from test_serc import DRAFT, handlers

from serc_dspy import SERC, LocalCorpus
from serc_dspy.rules.hygiene import PRONOUN_CLASSES, split_clauses, subject_pronouns
from serc_dspy.rules.quotes import substituted_detail

QUOTE = "Marie Curie was born in Warsaw in 1867."
CORPUS = LocalCorpus.from_texts({"c.txt": QUOTE + " She studied at the Sorbonne in Paris."})


def decode(corpus=CORPUS, rules=None, **overrides):
    def cite(inputs):
        born = "born" in inputs["claim"]
        return {"quote": QUOTE if born else "", "verdict": "SUPPORTED"}

    lm, engine = scripted_lm(handlers(**{"QuoteAndJudge": cite, **overrides}))
    program = SERC(retriever=corpus, verdicts="fact", evidence="passages", queries="facts",
                   rules=rules)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace, engine


def test_a_quote_that_swaps_a_detail_overrules_a_supported_verdict():
    trace, _ = decode()
    born = trace.fact("f0.0")
    assert born.text == "Marie Curie was born in Kraków." and born.quote == QUOTE
    assert born.verdict == "CONTRADICTED" and born.status == "corrected"
    assert trace.fact("f0.1").verdict == "SUPPORTED"  # "born in 1867": the quote agrees
    ruling = trace.ruled("quote.overrule")[0]
    assert (ruling.before, ruling.after) == ("SUPPORTED", "CONTRADICTED")
    assert "warsaw where the claim says kraków" in ruling.detail


def test_a_fix_that_copies_the_quote_over_the_fact_is_replaced_by_the_swap():
    def copy_quote(inputs):
        return {"corrections": [{"original": f, "fixed": "Curie was a teacher's daughter."}
                                for f in inputs["erroneous_facts"]]}

    trace, _ = decode(CorrectFacts=copy_quote)
    assert trace.fact("f0.0").correction == "Marie Curie was born in Warsaw."
    assert "Kraków -> Warsaw" in trace.ruled("fix.swap_back")[0].detail


def test_a_fix_that_keeps_the_contradicted_detail_is_no_correction():
    def keep_krakow(inputs):
        return {"corrections": [{"original": f, "fixed": "Marie Curie was born in Kraków, "
                                 "Poland."} for f in inputs["erroneous_facts"]]}

    trace, engine = decode(CorrectFacts=keep_krakow)
    assert len(engine.of("CorrectFacts")) == 1  # no retry: fix.retry is off by default
    # Neither reply fixed anything; the quote's one swapped detail is the correction.
    assert trace.fact("f0.0").correction == "Marie Curie was born in Warsaw."
    assert trace.ruled("fix.keeps_contradicted")


def test_clauses_joined_by_and_a_pronoun_become_two_facts():
    she = PRONOUN_CLASSES["she"]
    assert split_clauses("Ada Ruiz moved to Lyon in 1905, and she taught chemistry there.",
                         "Ada Ruiz", she) == ["Ada Ruiz moved to Lyon in 1905.",
                                              "Ada Ruiz taught chemistry there."]
    assert split_clauses("Ada Ruiz was born in Lyon, and her father was a baker.",
                         "Ada Ruiz", she)[1] == "Ada Ruiz's father was a baker."
    assert split_clauses("Ada Ruiz sang and danced.", "Ada Ruiz", she) == [
        "Ada Ruiz sang and danced."]


@pytest.mark.parametrize("name, fact, answer", [
    # the pronoun is another person: another gender than the subject's
    ("Marie Curie", "Marie Curie met Pierre Curie in 1894, and he proposed to her",
     "Marie Curie was a physicist. She was born in Warsaw. Her husband was Pierre."),
    # the pronoun is a thing the subject made
    ("Marie Curie", "Marie Curie founded the Radium Institute, and it became a leading "
     "laboratory", "Marie Curie was a physicist. She founded an institute."),
    # no pronoun tells who the subject is: nothing is guessed
    ("Ada Ruiz", "Ada Ruiz moved to Lyon in 1905, and she taught chemistry there.",
     "Ada Ruiz moved."),
])
def test_a_clause_whose_pronoun_is_not_the_subject_stays_whole(name, fact, answer):
    assert split_clauses(fact, name, subject_pronouns(answer)) == [fact]


def test_a_swap_pairs_a_year_with_a_year_not_with_the_day():
    swap = substituted_detail("Ada Ruiz died in 1944 of a fever.",
                              "Ada Ruiz died on 4 July 1934 in Lyon.", "Ada Ruiz",
                              same_event=False)
    assert (swap.old, swap.new) == ("1944", "1934")
    assert swap.apply("Ada Ruiz died in 1944 of a fever.") == "Ada Ruiz died in 1934 of a fever."
    assert substituted_detail("Ada Ruiz moved to Lyon in 1905.",
                              "In 1905 Ada Ruiz moved to Lyon and taught there.",
                              "Ada Ruiz") is None


def test_each_sentence_of_a_copied_passage_is_read_on_its_own():
    # The verifier copied a passage; its later sentences' names must not blur the first.
    passage = ("In 1903 she was awarded the Nobel Prize in Physics. She shared it with Pierre "
               "Curie and Henri Becquerel. The prize recognised their work on radiation.")
    swap = substituted_detail("Ada Ruiz won the Nobel Prize in Chemistry in 1903.", passage,
                              "Ada Ruiz", overrule=True)
    assert (swap.old, swap.new) == ("Chemistry", "Physics")


def test_overruling_a_verdict_needs_the_same_event_not_just_the_same_object():
    # "radium" is shared, but discovering it and isolating it are two events.
    quote = "Separating radium took years. In 1910 she succeeded in isolating radium as a metal."
    assert substituted_detail("Ada Ruiz discovered radium in 1898.", quote, "Ada Ruiz",
                              overrule=True) is None
    # The swapped name is the detail, not the event: "born" alone is the event here.
    assert substituted_detail("Ada Ruiz was born in Kraków.", "Ada Ruiz was born in Warsaw "
                              "in 1867.", "Ada Ruiz", overrule=True).new == "Warsaw"


def test_a_possessive_is_the_name_itself():
    quote = "Her birth name was Maria Salomea Skłodowska, and she was born in Warsaw."
    assert substituted_detail("Marie Curie's birth name was Maria Salomea Skłodowska.", quote,
                              "Marie Curie") is None


def test_a_contradiction_citing_the_claim_itself_is_not_found():
    # The Nobel fact is not in the corpus; the verifier echoes it back as its "quote".
    nobel = "Marie Curie won the Nobel Prize in Chemistry in 1903."

    def echo(inputs):
        if inputs["claim"] == nobel:
            return {"quote": nobel, "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    trace, engine = decode(QuoteAndJudge=echo)
    fact = next(f for f in trace.facts if f.text == nobel)
    assert fact.verdict == "NOT_FOUND" and fact.status == "pruned"
    assert fact.correction is None
    echoes = [(r.before, r.after) for r in trace.ruled("quote.echo")]
    assert echoes == [("CONTRADICTED", "NOT_FOUND")]


WORK = "Marie Curie was honoured for work on chemistry."
SECOND_VOTE = {"quote.second_vote": True}  # off by default since its ablation
RADIOACTIVITY = "She was honoured for her work on radioactivity."
WORK_CORPUS = LocalCorpus.from_texts({"c.txt": f"{QUOTE} {RADIOACTIVITY}"})


def test_a_contradiction_whose_quote_supports_the_claim_gets_a_second_verdict():
    # The quote is really in the corpus (no echo) and states the claim: no conflicting detail.
    def cite(inputs):
        if "Sorbonne" in inputs["claim"]:
            return {"quote": "She studied at the Sorbonne in Paris.", "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    trace, engine = decode(QuoteAndJudge=cite, rules=SECOND_VOTE)
    fact = next(f for f in trace.facts if "Sorbonne" in f.text)
    assert fact.second_verdict == "SUPPORTED"
    assert fact.verdict == "SUPPORTED" and fact.status == "kept"
    assert [c["inputs"]["claim"] for c in engine.of("JudgeFact")] == [fact.text]
    assert not any(fact.text in c["inputs"]["erroneous_facts"]
                   for c in engine.of("CorrectFacts"))
    assert "Sorbonne" in trace.answer
    assert trace.ruled("quote.second_vote")


def test_an_unwitnessed_contradiction_is_pruned_never_rewritten():
    # Cited verdict and second vote agree on CONTRADICTED, but the quote (about the birth)
    # shows nothing that conflicts with the Sorbonne: the fact is pruned, not "corrected".
    sorbonne = "Marie Curie studied at the Sorbonne in Paris."

    def cite(inputs):
        if inputs["claim"] == sorbonne:
            return {"quote": QUOTE, "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    def judge(inputs):
        return {"verdict": "CONTRADICTED" if inputs["claim"] == sorbonne else "SUPPORTED"}

    trace, engine = decode(QuoteAndJudge=cite, JudgeFact=judge,
                           rules={**SECOND_VOTE, "agree.not_found": False})
    fact = next(f for f in trace.facts if f.text == sorbonne)
    assert (fact.verdict, fact.second_verdict, fact.status) == ("NOT_FOUND", "CONTRADICTED",
                                                                "pruned")
    assert fact.correction is None and not engine.of("CorrectFacts")
    assert "Sorbonne" not in trace.answer
    # With agree.not_found (the default) the passages name the Sorbonne: it stays, unverified.
    trace, _ = decode(QuoteAndJudge=cite, JudgeFact=judge, rules=SECOND_VOTE)
    fact = next(f for f in trace.facts if f.text == sorbonne)
    assert fact.status == "unverified" and trace.ruled("agree.not_found", fact.id)


def test_a_failed_second_verdict_keeps_the_fact_unverified():
    def cite(inputs):
        verdict = "CONTRADICTED" if "Sorbonne" in inputs["claim"] else "SUPPORTED"
        return {"quote": "", "verdict": verdict}

    def outage(inputs):
        raise ConnectionError("the LM went away")

    trace, _ = decode(QuoteAndJudge=cite, JudgeFact=outage, rules=SECOND_VOTE)
    fact = next(f for f in trace.facts if "Sorbonne" in f.text)
    assert fact.status == "unverified" and fact.verdict is None
    assert "Sorbonne" in trace.answer  # an outage never deletes a user's fact
    assert any("second opinion" in e.message and e.kind == "error" for e in trace.events)


def test_a_quote_that_swaps_one_word_witnesses_the_contradiction():
    def cite(inputs):
        if inputs["claim"] == WORK:
            return {"quote": RADIOACTIVITY, "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    def fix(inputs):
        return {"corrections": [{"original": WORK, "fixed": "Marie Curie was honoured for "
                                 "work on radioactivity."}]}

    def second(inputs):
        return {"verdict": "CONTRADICTED" if inputs["claim"] == WORK else "SUPPORTED"}

    trace, engine = decode(WORK_CORPUS, QuoteAndJudge=cite, CorrectFacts=fix, JudgeFact=second)
    fact = next(f for f in trace.facts if f.text == WORK)
    assert fact.witness is not None  # the witness is one signal; the second verdict agrees
    assert fact.votes == {"cited": "CONTRADICTED", "second": "CONTRADICTED"}
    assert fact.verdict == "CONTRADICTED" and len(engine.of("JudgeFact")) == 1
    assert fact.correction == "Marie Curie was honoured for work on radioactivity."


def test_what_witnesses_a_contradiction():
    from serc_dspy.rules.quotes import contradiction_witness

    subject = "Ada Ruiz"
    swap = contradiction_witness("Ada Ruiz was a child painter in films.",
                                 "Ada Ruiz was a child actor in films.", subject)
    assert swap.contradicted == ("painter",) and swap.kept_by("She was a painter as a child.")
    assert not swap.kept_by("Ada Ruiz was a child actor in films.")
    assert contradiction_witness("Ada Ruiz died in 1944.", "Ada Ruiz died in 1934.", subject)
    # The quote states the claim, or is about another event: no witness.
    assert contradiction_witness("Ada Ruiz died in 1944.", "Ada Ruiz died in 1944 in Lyon.",
                                 subject) is None
    assert contradiction_witness("Ada Ruiz was born on April 8, 1944.",
                                 "She died in hospice care on April 7, 2025, in Lyon.",
                                 subject) is None
    # Another event on the same day: the date's words do not make it the same event.
    assert contradiction_witness("Ada Ruiz was born on 26 October 1949.",
                                 "She retired as the court's chief judge on 26 October 2011.",
                                 subject) is None
    # A quote sharing only part of the event still witnesses one year swapped for one year,
    # but not a year with two candidates, nor a name among many new ones.
    swap = contradiction_witness("Ada Ruiz died in 1944 of a fever caught on a voyage.",
                                 "Ada Ruiz died on 4 July 1934 at a clinic in Lyon.", subject)
    assert (swap.old, swap.new) == ("1944", "1934")
    assert contradiction_witness("Ada Ruiz starred in Warner musicals in the 1930s.",
                                 "Her nephew, a Warner child star of the 1960s, died in 2025.",
                                 subject) is None
    assert contradiction_witness("Ada Ruiz appeared in Masti (2004).",
                                 "In 2004 she appeared in the video Pardesiya from D.J. Hot "
                                 "Remix Vol 3.", subject) is None
    # Only whole month names are date words: "novelist" and "mayor" (which begin like "nov"
    # and "may") still say what happened, so their swap is witnessed.
    assert contradiction_witness("Ada Ruiz was a celebrated novelist in Lyon.",
                                 "Ada Ruiz was a celebrated painter in Lyon.",
                                 subject).contradicted == ("novelist",)
    assert contradiction_witness("Ada Ruiz served as mayor of Lyon.",
                                 "Ada Ruiz served as judge of Lyon.",
                                 subject).contradicted == ("mayor",)
    # The word that opens a quote's second sentence is no name: "Following" never replaces
    # "Maria" (split 4's "Taika Following Cohen", before quotes were read sentence by sentence).
    assert contradiction_witness(
        "Ada Maria Ruiz is known professionally as Ada Lyon.",
        "She used her mother's surname, Ruiz, for her films, and her father's, Lyon, for her "
        "paintings. Following her first short film, she kept using Lyon professionally.",
        "Ada Lyon") is None
    # A month is no name: Warsaw alone replaces Kraków, so the swap can be undone.
    swap = contradiction_witness("Ada Ruiz was born in Kraków.",
                                 "Ada Ruiz was born on 7 November 1867 in Warsaw.", subject)
    assert (swap.old, swap.new) == ("Kraków", "Warsaw")
    # Two words replaced is a paraphrase, not a swap; too short a claim proves nothing.
    assert contradiction_witness("Ada Ruiz borrowed the surname from her aunt.",
                                 "Ada Ruiz took the surname from her uncle.", subject) is None
    assert contradiction_witness("Ada Ruiz is a businessman.", "Ada Ruiz is a singer.",
                                 subject) is None


def test_a_fix_that_only_rewords_its_fact_is_no_correction():
    def reword(inputs):  # "on" -> "about": the same content words, so the same fact
        return {"corrections": [{"original": f, "fixed": f.replace(" on ", " about ")}
                                for f in inputs["erroneous_facts"]]}

    def contradict_work(inputs):
        if inputs["claim"] == WORK:
            return {"quote": RADIOACTIVITY, "verdict": "CONTRADICTED"}
        return {"quote": "", "verdict": "SUPPORTED"}

    def second(inputs):
        return {"verdict": "CONTRADICTED" if inputs["claim"] == WORK else "SUPPORTED"}

    trace, engine = decode(WORK_CORPUS, QuoteAndJudge=contradict_work, CorrectFacts=reword,
                           JudgeFact=second)
    fact = next(f for f in trace.facts if f.text == WORK)
    assert fact.status == "uncorrected" and fact.correction is None
    assert len(engine.of("CorrectFacts")) == 1  # no retry: fix.retry is off by default
    assert "work on chemistry" in trace.answer
    assert trace.ruled("fix.rewords") or trace.ruled("fix.restates")


def test_rewording_and_real_fixes_are_told_apart():
    from serc_dspy.rules.fixes import rewords

    assert rewords("Ada Ruiz was born in 1923.", "Ada Ruiz was born on 1923.", "Ada Ruiz")
    assert rewords("He was also the candidate in 1988.", "He was the candidate in 1988.", "")
    assert not rewords("Ada Ruiz won 96 titles.", "Ada Ruiz won 95 titles.", "Ada Ruiz")
    assert not rewords("Ada Ruiz won a Grammy.", "Ada Ruiz didn't win a Grammy.", "Ada Ruiz")
    assert not rewords("Ada Ruiz was a philosopher.", "Ada Ruiz was a musician.", "Ada Ruiz")


def test_holding_a_cited_verdict_to_its_quote():
    from serc_dspy.rules.quotes import hold_to_quote

    evidence = "Ada Ruiz was born in Warsaw in 1867. She died in Lyon in 1934."
    subject = "Ada Ruiz"
    # A quote from the evidence that swaps a detail overrules SUPPORTED, and keeps the swap.
    held = hold_to_quote("SUPPORTED", "Ada Ruiz was born in Kraków in 1867.",
                         "Ada Ruiz was born in Warsaw in 1867.", evidence, subject)
    assert held.verdict == "CONTRADICTED" and (held.witness.old, held.witness.new) == (
        "Kraków", "Warsaw") and "CONTRADICTED" in held.note
    # A witnessed contradiction keeps its witness; an unwitnessed one needs a second vote.
    held = hold_to_quote("CONTRADICTED", "Ada Ruiz died in 1944.", "She died in Lyon in 1934.",
                         evidence, subject)
    assert (held.witness.old, held.witness.new, held.unwitnessed) == ("1944", "1934", False)
    held = hold_to_quote("CONTRADICTED", "Ada Ruiz was a chemist.",
                         "Ada Ruiz was born in Warsaw in 1867.", evidence, subject)
    assert held.verdict == "CONTRADICTED" and held.unwitnessed and held.note is None
    # An echoed claim absent from the evidence proves nothing: NOT_FOUND, never corrected.
    held = hold_to_quote("CONTRADICTED", "Ada Ruiz was a chemist.", "Ada Ruiz was a chemist.",
                         evidence, subject)
    assert held.verdict == "NOT_FOUND" and held.witness is None
    # Any other quote the evidence lacks, or none, leaves the verdict as it was.
    assert hold_to_quote("SUPPORTED", "Ada Ruiz taught in Paris.", None, evidence,
                         subject) == hold_to_quote("SUPPORTED", "x", None, "", "")
    absent = hold_to_quote("SUPPORTED", "Ada Ruiz taught in Paris.",
                           "Ada Ruiz taught in Paris.", evidence, subject)
    assert (absent.verdict, absent.rule) == ("SUPPORTED", "quote.absent")  # set aside, said


def test_the_name_a_claim_opens_with_stands_in_for_its_subject():
    from serc_dspy.rules.quotes import opening_name

    assert opening_name("Marie Curie's first prize came in 1903.") == "Marie Curie"
    assert opening_name("The Eiffel Tower stands in Paris.") == "The Eiffel Tower"
    assert opening_name("she won in 1903.") == ""
