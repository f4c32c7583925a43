"""`compiling.choice_devset`: the `choose` stage's labelled slot choices."""

from serc_dspy.compiling.choice_devset import choice_items, load_choice_examples
from serc_dspy.compiling.compile import STAGES, stage_program
from serc_dspy.evaluation.metrics.dspy_metrics import choice_metric

ARTICLES = {
    "Ada Brook": "Ada Brook (born 1901) was an English chemist. She moved to Leeds in 1925, "
                 "and in 1931 she took the chair of chemistry at Leeds. She died in 1977.",
    "Bo Lind": "Bo Lind (born 1950) is a Swedish sailor. He sailed for Sweden in 1972, and in "
               "1976 he won a bronze medal. He retired in 1980.",
}


def _value(example, letter):
    line = next(x for x in example.options.splitlines() if x.startswith(f"{letter})"))
    return line.split(") ", 1)[1].split(" (the evidence")[0]


def test_each_slot_with_a_rival_gives_an_own_and_a_planted_example_labelled_by_the_article():
    items, counts = choice_items(ARTICLES)
    assert counts["articles"] == 2 and counts["examples"] == len(items) > 0
    assert {i.label for i in items} == {"own", "planted"}
    for item in items:
        example = item.example
        chosen = _value(example, example.choice)
        assert "___" in example.claim and chosen not in example.claim
        assert chosen in ARTICLES[item.group]          # the article's own value, always
        first = _value(example, "A")
        # own: the draft's value (listed first) is the article's; planted: a rival stands there
        assert (first == chosen) == (item.label == "own")
        assert example.options.splitlines()[-1].endswith("not stated")


def test_the_choose_stage_compiles_the_value_chooser_and_scores_the_exact_option():
    split = load_choice_examples(ARTICLES, train=2, dev=2, dev_share=0.5)
    assert split.counts["examples"] >= 4
    assert STAGES["choose"].predictor == "value_chooser"
    assert stage_program("choose").predictor_name == "value_chooser"
    example = (split.train or split.dev)[0]
    assert choice_metric(example, {"choice": example.choice})
    assert not choice_metric(example, {"choice": "F" if example.choice != "F" else "E"})


def test_the_train_examples_come_shortest_first_and_alternate_first_and_other_options():
    split = load_choice_examples(ARTICLES, train=20, dev=0, dev_share=0.01)
    sizes = [len(e.evidence) + len(e.claim) + len(e.options) for e in split.train]
    firsts = [e.choice == "A" for e in split.train]
    pairs = min(firsts.count(True), firsts.count(False))
    assert firsts[:2 * pairs] == [True, False] * pairs
    assert sizes[0:2 * pairs:2] == sorted(sizes[0:2 * pairs:2])
