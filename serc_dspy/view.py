"""One self-contained HTML page for one decoding: the answer diffed against the draft, every
edit linked to its provenance, the Tanner graph, the firewall, cost and events.

The page has inline CSS and JS and fetches nothing, so it works offline and can be attached to
a paper or an issue. The markup is Jinja2 templates (`serc_dspy/templates/`) with autoescape:
every piece of trace text is HTML-escaped (passages are untrusted web text), its bidirectional
controls are shown as their codes, and only http(s) sources become links. Without JS
everything is still there: each edit is a link to its provenance section, which CSS `:target`
reveals; JS adds highlighting of a node's edges, `n` / `p` keys to move between edits, and
opens a provenance block on click. Colours come from the Okabe-Ito palette (distinguishable
with common colour-vision deficiencies) and every status is also written as text.

    from serc_dspy.view import render_trace
    Path("view.html").write_text(render_trace(trace))
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass, field
from functools import cache

import jinja2
from markupsafe import Markup

from serc_dspy.core.text import degenerate_sentences, split_sentences
from serc_dspy.core.trace import Fact, Trace

_DEGENERATE = {"tautology": "a tautology: it says the same thing on both sides",
               "repeated": "repeats an earlier sentence word for word",
               "restated": "one of a run of sentences that each restate the subject"}

_URL = re.compile(r"^https?://[^\s\"'<>]+$")
_FACT_REF = re.compile(r"\bfacts? (f[\d.]+)")
STATUS_TEXT = {"kept": "kept", "corrected": "corrected", "pruned": "pruned",
               "unverified": "unverified (its check failed; kept verbatim)",
               "uncorrected": "contradicted, no usable fix (kept)", "pending": "pending",
               "disputed": "disputed: one signal alone said contradicted (kept)"}


_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
"""Bidirectional controls: raw, a U+202E in a passage would reorder the page around it."""


def esc(value: object) -> Markup:
    """HTML-escaped text, each bidirectional control shown as its code (`<U+202E>`); the
    template engine's `finalize`, so it runs on every value a template prints. A template's
    own markup (a macro's output) passes unchanged."""
    if isinstance(value, Markup):
        return value
    text = html.escape("" if value is None else str(value), quote=True)
    return Markup(_BIDI.sub(lambda m: f"&lt;U+{ord(m.group(0)):04X}&gt;", text))


# -- the diff -------------------------------------------------------------------------------------
@dataclass
class Edit:
    """One changed span of the answer: what the draft had, what the answer has, and the facts
    of the draft's sentence it belongs to."""

    number: int
    removed: str
    added: str
    sentences: list[int]
    facts: list[Fact] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"edit-{self.number}"

    @property
    def target(self) -> str:
        return f"prov-{self.number}"

    @property
    def nodes(self) -> set[str]:
        """The nodes whose rulings explain this edit: its facts, their sentences, the answer."""
        return ({f.id for f in self.facts} | {f"s{f.sentence}" for f in self.facts}
                | {"answer"})


def _tokens(text: str) -> list[str]:
    return re.findall(r"\S+|\s+", text or "")


def _sentences_in(trace: Trace, start: int, end: int, received: str) -> list[int]:
    """The draft sentences a span [start, end) of the received answer touches."""
    spans, cursor = [], 0
    for sentence in trace.sentences:
        at = received.find(sentence.text, cursor) if sentence.text else -1
        if at < 0:
            continue
        spans.append((sentence.index, at, at + len(sentence.text)))
        cursor = at + 1
    touched = [i for i, s, e in spans if s < max(end, start + 1) and start < e]
    if not touched and spans:  # an insertion between sentences: the one before it
        before = [i for i, s, _ in spans if s <= start]
        touched = before[-1:] or [spans[0][0]]
    return touched


def _edit_facts(trace: Trace, sentences: list[int], removed: str, added: str) -> list[Fact]:
    """The facts an edit came from: the changed facts of its sentences (those whose words
    overlap the edit first), else every fact of those sentences."""
    if not sentences:
        return []
    own = [f for f in trace.facts if f.sentence in sentences]
    changed = [f for f in own if f.status != "kept"]
    words = {w.lower().strip(".,;:()") for w in (removed + " " + added).split()} - {""}

    def overlap(fact: Fact) -> int:
        text = f"{fact.text} {fact.correction or ''}".lower()
        return sum(1 for w in words if w in text)

    ranked = sorted(changed or own, key=overlap, reverse=True)
    best = [f for f in ranked if overlap(f) > 0]
    return best or ranked


def diff_edits(trace: Trace) -> tuple[list[tuple[str, str, Edit | None]], list[Edit]]:
    """Word-level diff of the received answer against the final answer.

    Returns the pieces in order, `(kind, text, edit)` with kind "same" or "edit", and the edits.
    """
    received = trace.received or trace.initial_answer
    before, after = _tokens(received), _tokens(trace.answer)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    pieces: list[tuple[str, str, Edit | None]] = []
    edits: list[Edit] = []
    offset = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = "".join(before[i1:i2]), "".join(after[j1:j2])
        if op == "equal" or not (old.strip() or new.strip()):  # whitespace is no edit
            pieces.append(("same", new, None))
        else:
            sentences = _sentences_in(trace, offset, offset + len(old), received)
            edit = Edit(len(edits) + 1, old, new, sentences,
                        _edit_facts(trace, sentences, old, new))
            edits.append(edit)
            pieces.append(("edit", new, edit))
        offset += len(old)
    return pieces, edits


# -- what the template is given ------------------------------------------------------------------
def status_text(fact: Fact) -> str:
    """A fact's status in words; an unverified fact says whether its check failed or the
    evidence did not settle it."""
    if fact.status == "unverified" and fact.verdict is not None:
        return "unverified (the evidence did not settle it; kept verbatim)"
    return STATUS_TEXT.get(fact.status, fact.status)


def _graph(trace: Trace) -> dict:
    """The Tanner graph's layout: sentences, facts, checks and passages in four columns, and
    the edges between them, as coordinates for the template's SVG."""
    row_h, width = 26, 980
    xs = {"sentence": 10, "fact": 250, "check": 520, "passage": 740}
    passages = [(c.id, n, p) for c in trace.checks for n, p in enumerate(c.passages, 1)]
    columns = {"sentence": [(f"s{s.index}", f"S{s.index}: {s.text}") for s in trace.sentences],
               "fact": [(f.id, f"{f.id} [{f.status}] {f.text}") for f in trace.facts],
               "check": [(c.id, f"{c.id}: {c.query}") for c in trace.checks],
               "passage": [(f"{cid}-p{n}", f"{p.source or 'passage'}")
                           for cid, n, p in passages]}
    status = {f.id: f.status for f in trace.facts}
    pos, nodes = {}, []
    for column, items in columns.items():
        for i, (node, label) in enumerate(items):
            x, y = xs[column], 10 + i * row_h
            pos[node] = (x, y)
            cls = f"node {column}" + (f" status-{status[node]}" if node in status else "")
            nodes.append({"node": node, "label": label, "cls": cls, "x": x, "y": y})
    pairs = [pair for f in trace.facts
             for pair in [(f"s{f.sentence}", f.id)] + ([(f.id, f.check)] if f.check else [])]
    pairs += [(cid, f"{cid}-p{n}") for cid, n, _ in passages]
    edges = [{"a": a, "b": b, "x1": pos[a][0] + 220, "y1": pos[a][1] + 10, "x2": pos[b][0],
              "y2": pos[b][1] + 10} for a, b in pairs if a in pos and b in pos]
    rows = max([len(v) for v in columns.values()] + [1])
    return {"width": width, "height": rows * row_h + 20, "nodes": nodes, "edges": edges}


def _event_parts(message: str) -> list[tuple[str, str | None]]:
    """An event's message as text pieces, the first mention of each fact id ("facts f2.1")
    marked to become a link to its row."""
    parts, cursor, linked = [], 0, set()
    for match in _FACT_REF.finditer(message):
        ref = match.group(1)
        if ref in linked:
            continue
        linked.add(ref)
        parts.append((message[cursor:match.start(1)], ref))
        cursor = match.end(1)
    parts.append((message[cursor:], None))
    return parts


_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""No network at all: the page cannot fetch anything, whatever a passage contains."""


@cache
def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("serc_dspy", "templates"), autoescape=True,
        finalize=esc, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    environment.tests["http_url"] = lambda source: bool(_URL.match(source or ""))
    return environment.get_template("view.html.j2")


def render_trace(trace: Trace, *, title: str | None = None) -> str:
    """The whole page for one trace (see module docs)."""
    pieces, edits = diff_edits(trace)
    unverified = [f for f in trace.facts if f.status == "unverified"]
    unsettled = [(facts, why) for facts, why in (
        ([f for f in unverified if f.verdict is None], "their check failed"),
        ([f for f in unverified if f.verdict is not None], "the evidence did not settle them"))
        if facts]
    sentences = split_sentences(trace.answer or "")
    degenerate = [(sentences[i], _DEGENERATE[kind])
                  for i, kind in degenerate_sentences(trace.answer or "").items()]
    corrections: dict[str, list] = {}
    for correction in trace.corrections:
        corrections.setdefault(correction.fact, []).append(correction)
    return _template().render(
        trace=trace, heading=title or f"SERC decoding: {trace.question}", csp=Markup(_CSP),
        pieces=[(text, edit) for _, text, edit in pieces], edits=edits,
        pruned=[f for f in trace.facts if f.status == "pruned"], unverified=unsettled,
        degenerate=degenerate, graph=_graph(trace), status_text=status_text,
        checks={c.id: c for c in trace.checks}, corrections=corrections,
        events=[(event, _event_parts(event.message)) for event in trace.events])
