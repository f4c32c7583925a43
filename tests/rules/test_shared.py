"""`rules.shared`: what two named things have in common, read from their opening sentences."""

from serc_dspy.rules.shared import kinds_of, plural, shared_kinds, shared_question, shared_slot
from serc_dspy.rules.slots import EvidenceSentence

EVIDENCE = [  # HaluEval extra tuning item 338's knowledge, cut at its sentences
    EvidenceSentence("Charles Hutchison (December 3, 1879 - May 30, 1949) was an American film "
                     "actor, director and screenwriter.", 0, 0),
    EvidenceSentence("Reginald C. Barker (April 2, 1886 - February 23, 1945) was a pioneer film "
                     "director.", 0, 100),
]
QUESTION = "Charles Hutchison and Reginald Barker, have which mutual occupation?"


def test_a_shared_question_names_its_two_things():
    assert shared_question(QUESTION) == ("Charles Hutchison", "Reginald Barker")
    assert shared_question("What profession does Nicholas Ray and Elia Kazan have in "
                           "common?") == ("Nicholas Ray", "Elia Kazan")
    assert shared_question("What sport did Jack Sock and Raffaella Reggi play?") == \
        ("Jack Sock", "Raffaella Reggi")
    assert shared_question("Garth Jennings and Lee Cheol-ha shared what occupation?") == \
        ("Garth Jennings", "Lee Cheol-ha")
    # a yes/no question is `rules.yesno`'s; a question that asks for no shared value is none
    assert shared_question("Are Pam Veasey and Jon Jost both American?") is None
    assert shared_question("Who directed Jaws and Duel?") is None
    # a question that asks for a thing of the two, not a kind they both are
    assert shared_question("What film did Tom Hanks and Meg Ryan both star in?") is None
    assert shared_question("Barbara Jordan and Mark Knowles are both what?") == \
        ("Barbara Jordan", "Mark Knowles")


def test_the_kinds_are_each_item_of_the_opening_sentences_predicate():
    assert kinds_of("Charles Hutchison", EVIDENCE) == [["film", "actor"], ["director"],
                                                        ["screenwriter"]]
    assert kinds_of("Reginald Barker", EVIDENCE) == [["pioneer", "film", "director"]]
    assert kinds_of("Elia Kazan", EVIDENCE) == []  # no sentence of its own
    # the kind both give, by its last word, in the words both share ("director" alone is
    # one side's bare kind: the other's last two words)
    assert shared_kinds("Charles Hutchison", "Reginald Barker", EVIDENCE) == ["film director"]
    # a genus is what its members are, after "of" ("genus" is no answer to "what type of
    # vegetation?"); extra tuning items 183 and 371
    genera = [EvidenceSentence("Fothergilla is a genus of two or three species of flowering "
                               "plants in the family Hamamelidaceae.", 0, 0),
              EvidenceSentence("Rhodochiton is a monotypic genus of flowering plants within "
                               "the family Plantaginaceae.", 0, 90)]
    assert kinds_of("Fothergilla", genera) == [["flowering", "plants"]]
    assert shared_kinds("Fothergilla", "Rhodochiton", genera) == ["flowering plants"]
    leaves = shared_slot("What type of vegetation does Fothergilla and Rhodochiton have in "
                         "common?", "Both have leaves.", genera)
    assert leaves.chosen == "Fothergilla and Rhodochiton are both flowering plants."
    members = [EvidenceSentence("Ringo Starr is a member of the Beatles.", 0, 0),
               EvidenceSentence("Paul McCartney is a member of the Beatles.", 0, 50)]
    assert shared_kinds("Ringo Starr", "Paul McCartney", members) == []  # "member" is no kind
    # kinds are matched by their last word whole, a plural aside: a singer-songwriter is no
    # singer, and "singers" is "singer"
    singers = [EvidenceSentence("Lee Hong-gi is a singer-songwriter.", 0, 0),
               EvidenceSentence("Dee Snider is a singer.", 0, 40),
               EvidenceSentence("Bono is one of the singers of U2.", 0, 70)]
    assert shared_kinds("Lee Hong-gi", "Dee Snider", singers) == []
    assert shared_kinds("Dee Snider", "Bono", singers) == ["singer"]


def test_an_answer_stating_a_shared_kind_is_supported_another_is_corrected():
    wrong = shared_slot(QUESTION, "Both actors were also writers.", EVIDENCE)
    assert wrong.ruling == "contradicted"
    assert wrong.chosen == "Charles Hutchison and Reginald Barker are both film directors."
    bare = shared_slot(QUESTION, "writer", EVIDENCE)
    assert bare.ruling == "contradicted" and bare.chosen == "film director"
    for right in ("film director", "Both were directors."):
        assert shared_slot(QUESTION, right, EVIDENCE).ruling == "supported"
    # an answer whose words each opening states is never replaced ("magazine" for two
    # magazines that one opening calls a publication)
    magazines = [EvidenceSentence("Sojourners magazine is a monthly publication.", 0, 0),
                 EvidenceSentence("KO Magazine was a boxing magazine and publication.", 0, 50)]
    assert shared_slot("Sojourners and KO Magazine share what format?", "magazine",
                       magazines).ruling == "supported"
    assert shared_slot("Who directed Jaws and Duel?", "Steven Spielberg", EVIDENCE) is None


def test_a_kinds_plural():
    assert [plural(k) for k in ("film director", "actress", "lead singer", "deputy",
                                "flowering plants")] == \
        ["film directors", "actresses", "lead singers", "deputies", "flowering plants"]
