"""SERC's control flow under a scripted LM: each test pins one branch of the method."""

import dspy
import pytest
from scripted import CountingRetriever, entity, scripted_lm

from serc_dspy import SERC, InputError, LocalCorpus, Trace
from serc_dspy.programs.base import NO_INFO_ANSWER

DRAFT = (
    "Marie Curie was born in Kraków in 1867. "
    "She studied at the Sorbonne in Paris. "
    "She won the Nobel Prize in Chemistry in 1903 for her work on chemistry. "
    "She enjoyed painting landscapes."
)
S0, S1, S2, S3 = (
    "Marie Curie was born in Kraków in 1867.",
    "She studied at the Sorbonne in Paris.",
    "She won the Nobel Prize in Chemistry in 1903 for her work on chemistry.",
    "She enjoyed painting landscapes.",
)
FACTS = {
    S0: ["Marie Curie was born in Kraków.", "Marie Curie was born in 1867."],
    S1: ["Marie Curie studied at the Sorbonne in Paris."],
    S2: ["Marie Curie won the Nobel Prize in Chemistry in 1903.",
         "Marie Curie was honoured for work on chemistry."],
    S3: ["Marie Curie enjoyed painting landscapes."],
}
VERDICTS = {
    "Marie Curie was born in Kraków.": "CONTRADICTED",
    "Marie Curie won the Nobel Prize in Chemistry in 1903.": "CONTRADICTED",
    "Marie Curie enjoyed painting landscapes.": "NOT_FOUND",
}
FIXES = {
    "Marie Curie was born in Kraków.": "Marie Curie was born in Warsaw.",
    "Marie Curie won the Nobel Prize in Chemistry in 1903.":
        "Marie Curie won the Nobel Prize in Physics in 1903.",
}
PROPAGATED = {"Marie Curie was honoured for work on chemistry.":
              "Marie Curie was honoured for work on radiation physics."}


def handlers(**overrides):
    def correct(inputs):
        out = [{"original": f, "fixed": FIXES[f]} for f in inputs["erroneous_facts"] if f in FIXES]
        out += [{"original": f, "fixed": PROPAGATED[f]} for f in inputs["related_facts"]
                if f in PROPAGATED]
        return {"corrections": out}

    base = {
        "AnswerQuestion": lambda i: {"answer": DRAFT},
        "GroundedAnswer": lambda i: {"answer": "Marie Curie was a physicist and chemist born "
                                     "in Warsaw who won two Nobel Prizes."},
        "QueryEntity": lambda i: entity("Marie Curie"),
        "AnswerEntity": lambda i: entity("Marie Curie", "physicist"),
        "EvidenceEntity": lambda i: entity("Marie Curie", "physicist and chemist"),
        "SameEntity": lambda i: {"analysis": "Same name and profession.", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": FACTS.get(i["sentence"], [i["sentence"]])},
        "VerificationQuery": lambda i: {"query": "Marie Curie biography " + i["facts"][0]},
        "EvidenceSummary": lambda i: {"evidence": "Summary: " + i["passages"][:300]},
        "ParametricEvidence": lambda i: {"evidence": "From memory: " + i["query"]},
        "JudgeFacts": lambda i: {"verdicts": [VERDICTS.get(c, "SUPPORTED") for c in i["claims"]]},
        "JudgeFact": lambda i: {"verdict": VERDICTS.get(i["claim"], "SUPPORTED")},
        "QuoteAndJudge": lambda i: {"quote": "", "verdict": VERDICTS.get(i["claim"],
                                                                         "SUPPORTED")},
        "ChooseValue": lambda i: {"choice": "A"},  # position-biased: the orders disagree
        "ChooseSentence": lambda i: {"sentence": 0, "stance": "not stated"},
        "ReadAnswer": lambda i: {"answer": "not stated"},
        "CorrectFacts": correct,
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
    }
    base.update(overrides)
    return base


def in_flight_counter(seconds: float):
    """`(state, wrap)`: `wrap(handler)` holds each call `seconds` and counts how many are in
    flight at once (`state["peak"]`): concurrency measured, not timed."""
    import threading
    import time

    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def wrap(handler):
        def wrapped(inputs):
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(seconds)
            with lock:
                state["now"] -= 1
            return handler(inputs)
        return wrapped

    return state, wrap


def run(program_kwargs=None, question="Tell me a bio of Marie Curie.", draft=None, **overrides):
    lm, engine = scripted_lm(handlers(**overrides))
    retriever = (program_kwargs or {}).pop("retriever", CountingRetriever())
    program = SERC(retriever=retriever, **(program_kwargs or {}))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        prediction = program(question=question, draft=draft)
    return prediction, engine, retriever


def test_contradicted_fact_is_corrected_and_dependent_fact_follows():
    prediction, engine, _ = run()
    trace = prediction.trace
    born = trace.fact("f0.0")
    assert born.verdict == "CONTRADICTED" and born.status == "corrected"
    assert born.correction == "Marie Curie was born in Warsaw."
    dependent = next(f for f in trace.facts if f.text.startswith("Marie Curie was honoured"))
    assert dependent.verdict == "SUPPORTED"
    assert dependent.status == "corrected"
    assert dependent.correction == "Marie Curie was honoured for work on radiation physics."
    assert any(c.propagated and c.fact == dependent.id for c in trace.corrections)
    assert "Warsaw" in prediction.answer and "Kraków" not in prediction.answer
    assert "radiation physics" in prediction.answer
    assert "Physics in 1903" in prediction.answer
    assert trace.errors == []


def test_not_found_fact_is_pruned_and_its_sentence_dropped():
    prediction, _, _ = run()
    painting = next(f for f in prediction.trace.facts if "painting" in f.text)
    assert painting.verdict == "NOT_FOUND" and painting.status == "pruned"
    assert painting.correction is None
    assert "painting" not in prediction.answer
    assert prediction.trace.sentences[3].rewritten == ""


def test_unchanged_sentences_come_back_verbatim():
    prediction, _, _ = run()
    trace = prediction.trace
    assert trace.sentences[1].kept_verbatim and trace.sentences[1].rewritten is None
    assert S1 in prediction.answer
    assert not trace.sentences[0].kept_verbatim


def test_rewrite_never_sees_the_original_sentence():
    _, engine, _ = run()
    rewrites = engine.of("RewriteSentence")
    assert rewrites, "changed sentences must be rewritten"
    for call in rewrites:
        for sentence in (S0, S1, S2, S3):
            assert sentence not in call["user"]
    # The rewrite of sentence 2 sees sentence 0-1's accepted facts as its history.
    third = next(c for c in rewrites if "Physics" in " ".join(c["inputs"]["facts"]))
    assert "Marie Curie was born in Warsaw." in third["inputs"]["earlier_facts"]
    assert "Marie Curie was born in Kraków." not in third["inputs"]["earlier_facts"]


def test_polish_runs_at_temperature_point_one_and_initial_answer_is_kept():
    prediction, engine, _ = run()
    polish = engine.of("PolishAnswer")
    assert len(polish) == 1 and polish[0]["temperature"] == pytest.approx(0.1)
    assert all(c["temperature"] == 0.0 for c in engine.calls if c["signature"] != "PolishAnswer")
    assert prediction.initial_answer == DRAFT


def test_firewall_mismatch_triggers_hard_reset():
    # the paper's reset (`firewall.asked_subject`, on, passes an answer about the asked entity)
    prediction, engine, _ = run({"rules": {"firewall.asked_subject": False}},
                                SameEntity=lambda i: {"analysis": "Different era.",
                                                      "same": "NO"},
                                EvidenceEntity=lambda i: entity("Ève Curie", "writer"))
    firewall = prediction.trace.firewall
    assert firewall.same_entity is False and firewall.reset
    assert firewall.query_entity == "Marie Curie"
    assert firewall.evidence_entity == "Ève Curie (writer)"
    assert prediction.trace.subject == firewall.evidence_entity
    assert len(engine.of("GroundedAnswer")) == 1
    assert prediction.trace.received.startswith("Marie Curie was a physicist and chemist")
    assert prediction.initial_answer == DRAFT


def test_firewall_match_does_not_reset_and_disabled_firewall_makes_no_entity_calls():
    prediction, engine, _ = run()
    assert prediction.trace.firewall.same_entity is True and not prediction.trace.firewall.reset
    assert engine.of("GroundedAnswer") == []
    prediction, engine, _ = run({"firewall": False})
    assert not prediction.trace.firewall.enabled
    assert not any(c["signature"].endswith("Entity") for c in engine.calls)


def test_refusal_triggers_rag_first_cold_start():
    refusal = "I'm sorry, but I don't have information about that person."
    prediction, engine, retriever = run(AnswerQuestion=lambda i: {"answer": refusal})
    assert prediction.trace.cold_start
    assert len(engine.of("GroundedAnswer")) == 1
    assert retriever.queries[0] == "Tell me a bio of Marie Curie."
    assert prediction.trace.received.startswith("Marie Curie was a physicist")
    assert prediction.initial_answer == refusal


def test_refusal_without_any_context_answers_no_info():
    empty = LocalCorpus.from_texts({"other.txt": "Bananas are yellow fruit grown in the tropics."})
    prediction, engine, _ = run({"retriever": CountingRetriever(empty)},
                                AnswerQuestion=lambda i: {"answer": "I cannot answer that."})
    assert prediction.trace.status == "no_info"
    assert prediction.answer == NO_INFO_ANSWER
    assert engine.of("AtomicFacts") == []


def test_check_nodes_never_exceed_max_facts_per_check():
    words = ["indeed", "truly", "surely", "plainly", "clearly", "really", "certainly"]
    prediction, _, _ = run({"max_facts_per_check": 3}, AtomicFacts=lambda i: {
        "facts": [f"{i['sentence'].rstrip('.')} {word}." for word in words]})
    sizes = [len(c.facts) for c in prediction.trace.checks]
    assert max(sizes) <= 3
    assert len(prediction.trace.checks) == 4 * 3  # 4 sentences x (3 + 3 + 1)
    assert sum(sizes) == len(prediction.trace.facts) == 4 * 7


def test_atomic_density_gives_one_check_per_fact():
    prediction, engine, _ = run({"density": "atomic"})
    trace = prediction.trace
    assert len(trace.checks) == len(trace.facts) == 6
    assert all(len(c.facts) == 1 for c in trace.checks)
    assert len(engine.of("VerificationQuery")) == 6


def test_sentence_density_groups_facts_of_a_sentence_into_one_check():
    prediction, engine, _ = run()
    trace = prediction.trace
    assert len(trace.checks) == 4
    assert trace.checks[0].facts == ["f0.0", "f0.1"]
    assert len(engine.of("VerificationQuery")) == 4
    assert all(c.query and c.evidence and c.passages for c in trace.checks[:3])


def test_without_retrieval_the_retriever_is_never_called():
    retriever = CountingRetriever()
    prediction, engine, _ = run({"use_retrieval": False, "retriever": retriever})
    assert retriever.queries == []
    assert engine.of("EvidenceSummary") == []
    assert len(engine.of("ParametricEvidence")) == len(prediction.trace.checks)
    assert all(c.evidence_source == "parametric" and not c.passages
               for c in prediction.trace.checks)


def test_raising_retriever_keeps_facts_unverified_in_the_answer():
    retriever = CountingRetriever(fail=True)
    prediction, engine, _ = run({"retriever": retriever})
    trace = prediction.trace
    assert trace.facts and all(f.status == "unverified" and f.verdict is None
                               for f in trace.facts)
    assert all(c.error and "search backend is down" in c.error for c in trace.checks)
    assert engine.of("JudgeFacts") == [] and engine.of("CorrectFacts") == []
    assert prediction.answer == DRAFT
    assert any("search backend is down" in e.message for e in trace.errors)


def test_wrong_number_of_group_verdicts_falls_back_to_one_call_per_fact():
    prediction, engine, _ = run(JudgeFacts=lambda i: {"verdicts": ["SUPPORTED"]})
    # Two two-fact checks got a one-item reply: their 4 facts are redone one by one; the two
    # single-fact checks are judged by the single-claim signature directly.
    assert len(engine.of("JudgeFacts")) == 2
    # 4 redone + 2 single-fact checks, + 2 second verdicts for the two contradicted facts
    assert len(engine.of("JudgeFact")) == 4 + 2 + 2
    assert prediction.trace.fact("f0.0").verdict == "CONTRADICTED"


def test_unmatched_correction_is_logged_not_guessed():
    prediction, _, _ = run(CorrectFacts=lambda i: {
        "corrections": [{"original": "Something entirely unrelated.", "fixed": "Nope."}]})
    trace = prediction.trace
    assert trace.fact("f0.0").status == "uncorrected"
    assert trace.fact("f0.0").correction is None
    assert any(c.fact is None for c in trace.corrections)
    assert "Kraków" in prediction.answer


def test_correction_failure_keeps_the_facts():
    def broken(inputs):
        raise RuntimeError("model crashed")

    prediction, _, _ = run(CorrectFacts=broken)
    assert prediction.trace.fact("f0.0").status == "uncorrected"
    assert "Kraków" in prediction.answer


def test_a_short_rewrite_makes_the_corrections_in_the_draft_sentence_instead():
    prediction, _, _ = run(RewriteSentence=lambda i: {"sentence": "Ok."})
    trace = prediction.trace
    # "born in Kraków in 1867": the fix is placed in the draft's own words, 1867 kept
    assert trace.sentences[0].rewritten == "Marie Curie was born in Warsaw in 1867."
    assert "Ok." not in prediction.answer and "Kraków" not in prediction.answer
    assert trace.ruled("rewrite.too_short", "s0") and trace.ruled("rewrite.in_place", "s0")


def test_short_reconstruction_falls_back_to_the_received_answer():
    prediction, engine, _ = run({"rules": {"agree.not_found": False}},
                                JudgeFacts=lambda i: {"verdicts": ["NOT_FOUND"] * len(i["claims"])},
                                JudgeFact=lambda i: {"verdict": "NOT_FOUND"})
    assert prediction.answer == DRAFT
    assert engine.of("PolishAnswer") == []
    assert prediction.trace.status == "fallback"  # R unchanged is not a correction


def test_draft_skips_generation():
    draft = "Marie Curie was born in Kraków in 1867. She studied at the Sorbonne in Paris."
    prediction, engine, _ = run(draft=draft)
    assert engine.of("AnswerQuestion") == []
    assert prediction.initial_answer == draft and prediction.trace.draft_given


def test_usage_is_recorded_per_step_and_in_total():
    prediction, engine, _ = run()
    usage = prediction.trace.usage
    assert usage.total.calls == len(engine.calls)
    assert usage.steps["verification_query"].calls == 4
    assert usage.total.prompt_tokens > 0
    assert sum(s.calls for s in usage.steps.values()) == usage.total.calls
    assert set(usage.models) == {"local/scripted"}


def test_trace_round_trips_through_json():
    prediction, _, _ = run()
    text = prediction.trace.to_json()
    assert Trace.from_json(text) == prediction.trace
    assert prediction.trace.syndrome.contradicted == 2
    assert prediction.trace.syndrome.pruned == 1


def test_schema_is_requested_for_every_call():
    _, engine, _ = run()
    assert engine.calls
    for call in engine.calls:
        assert call["schema"]["type"] == "json_schema"


@pytest.mark.parametrize("question", ["", "   ", None, 3])
def test_bad_questions_are_rejected_with_a_clear_error(question):
    lm, _ = scripted_lm(handlers())
    with dspy.context(lm=lm), pytest.raises(InputError, match="question"):
        SERC(retriever=CountingRetriever())(question=question)


def test_missing_retriever_says_what_to_pass():
    with pytest.raises(InputError, match="SERC needs a retriever"):
        SERC()(question="Who was Marie Curie?")


def test_bad_options_are_rejected():
    with pytest.raises(InputError, match="density"):
        SERC(density="dense")
    with pytest.raises(InputError, match="max_facts_per_check"):
        SERC(max_facts_per_check=0)
    with pytest.raises(InputError, match=r"unknown key\(s\) \['verifyy'\].*fact_checker"):
        SERC(lms={"verifyy": scripted_lm(handlers())[0]})


def test_per_stage_lm_is_used_for_that_stage_only():
    main_lm, main = scripted_lm(handlers())
    verify_lm, verify = scripted_lm(handlers(), name="verifier")
    program = SERC(retriever=CountingRetriever(), lms={"verify": verify_lm})
    with dspy.context(lm=main_lm, adapter=dspy.JSONAdapter()):
        prediction = program(question="Tell me a bio of Marie Curie.")
    verify_sigs = {c["signature"] for c in verify.calls}
    assert verify_sigs == {"VerificationQuery", "EvidenceSummary", "JudgeFacts", "JudgeFact"}
    assert not verify_sigs & {c["signature"] for c in main.calls}
    models = prediction.trace.usage.models
    assert models["local/verifier"].calls == len(verify.calls)
    assert models["local/scripted"].calls == len(main.calls)


def test_a_predictor_name_in_lms_overrides_its_stage_for_that_predictor_only():
    main_lm, main = scripted_lm(handlers())
    verify_lm, verify = scripted_lm(handlers(), name="verifier")
    judge_lm, judge = scripted_lm(handlers(), name="judge")
    program = SERC(retriever=CountingRetriever(),
                   lms={"verify": verify_lm, "single_verifier": judge_lm})
    with dspy.context(lm=main_lm, adapter=dspy.JSONAdapter()):
        program(question="Tell me a bio of Marie Curie.")
    assert {c["signature"] for c in judge.calls} == {"JudgeFact"}
    assert "JudgeFact" not in {c["signature"] for c in verify.calls}
    assert "JudgeFacts" in {c["signature"] for c in verify.calls}


def test_runaway_rewrite_falls_back_to_the_corrections_in_place():
    looping = "The verified facts are the only source of truth. " * 20
    prediction, _, _ = run(RewriteSentence=lambda i: {"sentence": looping})
    trace = prediction.trace
    assert trace.sentences[0].rewritten == "Marie Curie was born in Warsaw in 1867."
    assert "source of truth" not in prediction.answer
    assert "Kraków" not in prediction.answer
    assert trace.ruled("rewrite.runaway", "s0")


def test_runaway_polish_returns_the_reconstructed_draft():
    prediction, _, _ = run(PolishAnswer=lambda i: {"answer": i["draft"] + " more" * 400})
    assert prediction.answer == prediction.trace.reconstructed
    assert prediction.trace.ruled("polish.runaway")


def test_an_outer_usage_tracker_neither_hides_nor_loses_the_calls():
    lm, engine = scripted_lm(handlers())
    program = SERC(retriever=CountingRetriever())
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), track_usage=True):
        with dspy.track_usage() as outer:
            prediction = program(question="Tell me a bio of Marie Curie.", draft=DRAFT)
    usage = prediction.trace.usage
    assert usage.total.calls == len(engine.calls) > 0 and usage.total.failed == 0
    assert len(outer.usage_data["local/scripted"]) == len(engine.calls)  # rolled up outside
    assert usage.total.prompt_tokens == outer.get_total_tokens()["local/scripted"][
        "prompt_tokens"]


def test_cache_hits_are_counted_as_cached_calls():
    lm, engine = scripted_lm(handlers())
    cached_lm = lm.copy(cache=True)
    program = SERC(retriever=CountingRetriever())
    with dspy.context(lm=cached_lm, adapter=dspy.JSONAdapter()):
        dspy.configure_cache(enable_memory_cache=True)
        try:
            program(question="Tell me a bio of Marie Curie.", draft=DRAFT)
            again = program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace.usage
        finally:
            dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    assert again.total.cached == again.total.calls > 0 and again.total.prompt_tokens == 0


def test_a_stage_lm_that_is_not_an_lm_is_refused():
    with pytest.raises(InputError, match="not a DSPy LM"):
        SERC(retriever=CountingRetriever(), lms={"verify": "openai/gpt-4o-mini"})


def test_a_prediction_prints_short():
    prediction, _, _ = run()
    text = repr(prediction)
    assert len(text) < 1200 and "Trace(method='serc', status='decoded'" in text
    assert text.count("Usage(calls=") == 1 and "StepUsage" not in text  # one line, once


def test_callbacks_see_the_module_call():
    from dspy.utils.callback import BaseCallback

    seen = []

    class Record(BaseCallback):
        def on_module_start(self, call_id, instance, inputs):
            seen.append(type(instance).__name__)

    lm, _ = scripted_lm(handlers())
    program = SERC(retriever=CountingRetriever(), callbacks=[Record()])
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        program(question="Tell me a bio of Marie Curie.", draft=DRAFT)
    assert seen and seen[0] == "SERC"


def test_acall_gives_the_sync_trace():
    import asyncio

    lm, engine = scripted_lm(handlers())
    program = SERC(retriever=CountingRetriever())

    async def decode():
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return await program.acall(question="Tell me a bio of Marie Curie.", draft=DRAFT)

    async_trace = asyncio.run(decode()).trace
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        sync_trace = program(question="Tell me a bio of Marie Curie.", draft=DRAFT).trace
    assert [f.model_dump() for f in async_trace.facts] == [f.model_dump() for f in sync_trace.facts]
    assert async_trace.answer == sync_trace.answer and async_trace.usage.total.calls > 0


def test_acall_fans_check_nodes_out_and_never_blocks_the_event_loop():
    import asyncio

    state, slow = in_flight_counter(0.05)
    base = handlers()
    lm, _ = scripted_lm({**base, "QuoteAndJudge": slow(base["QuoteAndJudge"]),
                         "JudgeFacts": slow(base["JudgeFacts"]),
                         "JudgeFact": slow(base["JudgeFact"])})
    program = SERC(retriever=CountingRetriever(), max_workers=4)
    ticks = []

    async def heartbeat():
        while True:
            ticks.append(1)
            await asyncio.sleep(0.01)

    async def decode():
        beat = asyncio.create_task(heartbeat())
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            result = await program.acall(question="Tell me a bio of Marie Curie.", draft=DRAFT)
        beat.cancel()
        return result

    result = asyncio.run(decode())
    assert result.trace.status == "decoded"
    assert state["peak"] >= 2  # check nodes judged concurrently
    assert len(ticks) >= 3  # the loop kept running while SERC decoded


def test_rewrite_prompts_stay_bounded_for_a_hundred_sentence_draft():
    sentences = [f"Marie Curie wrote paper number {i} in Paris." for i in range(100)]
    lm, engine = scripted_lm(handlers(
        AtomicFacts=lambda i: {"facts": [i["sentence"]]},
        JudgeFacts=lambda i: {"verdicts": ["CONTRADICTED"] * len(i["claims"])},
        JudgeFact=lambda i: {"verdict": "CONTRADICTED"},
        CorrectFacts=lambda i: {"corrections": [
            {"original": f, "fixed": f.replace("Paris", "Warsaw")} for f in i["erroneous_facts"]]},
    ))
    program = SERC(retriever=CountingRetriever(), firewall=False, max_sentences=100)
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        program(question="Tell me about Marie Curie's papers.", draft=" ".join(sentences))
    rewrites = engine.of("RewriteSentence")
    assert len(rewrites) == 100
    sizes = [len(call["inputs"]["earlier_facts"]) for call in rewrites]
    assert max(sizes) <= 2  # the two preceding sentences' facts, never all of them
    assert max(len(c["user"]) for c in rewrites) < 2 * min(len(c["user"]) for c in rewrites)


def test_a_sentence_is_checked_before_another_sentence_has_its_facts():
    """The dataflow schedule: sentence 0's check node runs while sentence 3's extraction is
    still waiting. A phase-by-phase schedule would only verify after every extraction, so the
    extraction below would wait in vain (and the check below would come after it)."""
    import threading

    checked = threading.Event()
    order = []

    def extract(inputs):
        if inputs["sentence"] == S3:
            order.append(("waits", checked.wait(timeout=10)))
        order.append(("facts", inputs["sentence"]))
        return {"facts": FACTS[inputs["sentence"]]}

    def query(inputs):
        if inputs["facts"][0] in FACTS[S0]:
            order.append(("check", S0))
            checked.set()
        return {"query": "Marie Curie biography " + inputs["facts"][0]}

    prediction, _, _ = run({"max_workers": 4}, draft=DRAFT, AtomicFacts=extract,
                           VerificationQuery=query)
    assert prediction.trace.status == "decoded"
    assert ("waits", True) in order  # S3's extraction saw S0's check start
    assert order.index(("check", S0)) < order.index(("facts", S3))
    assert [f.id for f in prediction.trace.facts] == sorted(
        (f.id for f in prediction.trace.facts),
        key=lambda i: tuple(int(p) for p in i[1:].split(".")))


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_in_flight_lm_calls_never_exceed_max_workers(limit):
    state, counted = in_flight_counter(0.02)
    prediction, _, _ = run({"max_workers": limit}, draft=DRAFT,
                           **{name: counted(h) for name, h in handlers().items()})
    assert prediction.trace.status == "decoded"
    assert state["peak"] == limit  # reached, never passed


def test_a_serial_stage_sends_its_calls_one_at_a_time_while_other_stages_overlap():
    facts, counted_facts = in_flight_counter(0.05)
    every, counted = in_flight_counter(0.05)
    wrapped = {name: counted(h) for name, h in handlers().items()}
    wrapped["AtomicFacts"] = counted(counted_facts(handlers()["AtomicFacts"]))
    prediction, engine, _ = run({"max_workers": 4, "serial_stages": ["decompose"]},
                                draft=DRAFT, **wrapped)
    assert prediction.trace.status == "decoded"
    assert len(engine.of("AtomicFacts")) >= 3 and facts["peak"] == 1
    assert every["peak"] >= 2  # other stages' calls run beside a waiting decomposition
    state, counted = in_flight_counter(0.05)
    run({"max_workers": 4}, draft=DRAFT, AtomicFacts=counted(handlers()["AtomicFacts"]))
    assert state["peak"] >= 2  # without it, sentences are decomposed together


def test_serial_stages_must_name_stages():
    with pytest.raises(InputError, match="unknown stage"):
        SERC(retriever=CountingRetriever(), serial_stages=["decompse"])


def test_a_sync_call_from_inside_a_running_event_loop_works():
    """A notebook cell calls `serc(...)` while its own loop runs: no asyncio.run needed."""
    import asyncio

    lm, _ = scripted_lm(handlers())
    program = SERC(retriever=CountingRetriever())

    async def cell():
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return program(question="Tell me a bio of Marie Curie.", draft=DRAFT)

    prediction = asyncio.run(cell())
    assert prediction.trace.status == "decoded" and "Warsaw" in prediction.answer


def test_dspy_asyncify_runs_the_sync_twin_on_the_callers_loop():
    import asyncio

    lm, _ = scripted_lm(handlers())
    program = dspy.asyncify(SERC(retriever=CountingRetriever()))

    async def decode():
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            return await program(question="Tell me a bio of Marie Curie.", draft=DRAFT)

    prediction = asyncio.run(decode())
    assert prediction.trace.status == "decoded" and "Warsaw" in prediction.answer
