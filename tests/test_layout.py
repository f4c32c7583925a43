"""The draft's layout: prose is decoded in place, everything else comes back byte for byte."""

from serc_dspy.core.layout import Layout

DRAFT = """Marie Curie was a physicist. She was born in Warsaw.

Her prizes:
- Nobel Prize in Physics, 1903. It was shared.
- Nobel Prize in Chemistry, 1911.

```python
def f(x):
    return x
```

    an indented code line
## Heading
Last paragraph
wrapped over two lines. End.
"""


def test_unchanged_sentences_rebuild_the_draft_byte_for_byte():
    layout = Layout.parse(DRAFT)
    assert layout.rebuild(layout.sentences) == DRAFT
    assert not layout.flat and Layout.parse("One sentence. Two.").flat


def test_code_headings_and_list_markers_are_never_sentences():
    layout = Layout.parse(DRAFT)
    assert "def f(x):" not in " ".join(layout.sentences)
    assert not any("Heading" in s or "indented code" in s for s in layout.sentences)
    assert "Nobel Prize in Chemistry, 1911." in layout.sentences  # the item, not its marker


def test_a_changed_sentence_is_replaced_in_its_block_and_a_dropped_one_goes_alone():
    layout = Layout.parse(DRAFT)
    texts = list(layout.sentences)
    texts[1] = "She was born in Kraków."
    texts[layout.sentences.index("Nobel Prize in Physics, 1903.")] = ""
    rebuilt = layout.rebuild(texts)
    assert rebuilt.startswith("Marie Curie was a physicist. She was born in Kraków.\n\n")
    assert "- It was shared.\n- Nobel Prize in Chemistry, 1911.\n" in rebuilt
    assert "```python\ndef f(x):\n    return x\n```\n\n    an indented code line\n" in rebuilt
    assert rebuilt.endswith("Last paragraph\nwrapped over two lines. End.\n")  # untouched
