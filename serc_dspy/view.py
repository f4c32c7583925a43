"""One self-contained HTML page for one decoding: the answer diffed against the draft, every
edit linked to its provenance, the Tanner graph, the firewall, cost and events.

The page has inline CSS and JS and fetches nothing, so it works offline and can be attached to
a paper or an issue. Every piece of trace text is HTML-escaped (passages are untrusted web
text) and only http(s) sources become links. Without JS everything is still there: each edit
is a link to its provenance section, which CSS `:target` reveals; JS adds highlighting of a
node's edges, `n` / `p` keys to move between edits, and opens a provenance block on click.
Colours come from the Okabe-Ito palette (distinguishable with common colour-vision
deficiencies) and every status is also written as text.

    from serc_dspy.view import render_trace
    Path("view.html").write_text(render_trace(trace))
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from serc_dspy.text import degenerate_sentences, split_sentences
from serc_dspy.trace import Check, Fact, Trace

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


def esc(value: object) -> str:
    """HTML-escaped text, each bidirectional control shown as its code (`<U+202E>`)."""
    text = html.escape("" if value is None else str(value), quote=True)
    return _BIDI.sub(lambda m: f"&lt;U+{ord(m.group(0)):04X}&gt;", text)


def source_link(source: str) -> str:
    """A passage source: a link when it is an http(s) URL, plain escaped text otherwise."""
    if _URL.match(source or ""):
        return f'<a href="{esc(source)}" rel="noopener noreferrer">{esc(source)}</a>'
    return f"<code>{esc(source)}</code>" if source else "<em>no source</em>"


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


# -- sections -------------------------------------------------------------------------------------
def _diff_html(pieces: Sequence[tuple[str, str, Edit | None]]) -> str:
    out = []
    for _, text, edit in pieces:
        if edit is None:
            out.append(esc(text))
            continue
        ids = " ".join(f.id for f in edit.facts)
        removed = f"<del>{esc(edit.removed)}</del>" if edit.removed else ""
        added = f"<ins>{esc(edit.added)}</ins>" if edit.added else ""
        out.append(f'<a class="edit" id="{edit.anchor}" href="#{edit.target}" '
                   f'data-facts="{esc(ids)}" title="edit {edit.number}: see its provenance">'
                   f"{removed}{added}</a>")
    return "".join(out)


def _check_html(check: Check | None) -> str:
    if check is None:
        return "<p><em>No check node.</em></p>"
    passages = "".join(
        f'<li class="passage" data-node="{esc(check.id)}-p{n}">{source_link(p.source)}'
        f"<blockquote>{esc(p.text)}</blockquote></li>"
        for n, p in enumerate(check.passages, 1))
    error = f'<p class="error">check failed: {esc(check.error)}</p>' if check.error else ""
    evidence = ("the passages below, verbatim" if check.evidence.startswith("<passage")
                else esc(check.evidence))  # evidence="passages" mode: no summary to show
    return (f'<div class="check" data-node="{esc(check.id)}"><h4>check node {esc(check.id)}</h4>'
            f"{error}<p><b>query</b>: {esc(check.query)}</p>"
            f"<p><b>evidence</b> ({esc(check.evidence_source)}): {evidence}</p>"
            f"<ol class='passages'>{passages or '<li><em>no passages</em></li>'}</ol></div>")


def _slots_html(fact: Fact) -> str:
    """`verdicts="choose"`: each slot, its options (where each was found), the choice in each
    option order, and the ruling."""
    if not fact.slots:
        return ""
    rows = []
    for slot in fact.slots:
        options = "; ".join(
            esc(c.value) + (f" <small>(passage {c.passage + 1}, offset {c.offset})</small>"
                            if c.passage is not None else f" <small>({esc(c.origin)})</small>")
            for c in slot.candidates)
        choices = ", ".join(esc(c) if c is not None else "<em>no reply</em>"
                            for c in slot.choices) or "<em>not asked</em>"
        rows.append(f'<tr class="slot ruling-{esc(slot.ruling)}"><td>{esc(slot.kind)}</td>'
                    f"<td>{esc(slot.text)}</td><td>{options}</td><td>{choices}</td>"
                    f"<td>{esc(slot.ruling)}"
                    + (f" &rarr; {esc(slot.chosen)}" if slot.chosen else "")
                    + (f"<br><small>{esc(slot.note)}</small>" if slot.note else "")
                    + "</td></tr>")
    return ("<table class='slots'><caption>slots: the choice among the evidence's values, "
            "asked in two option orders</caption><thead><tr><th>kind</th><th>value</th>"
            "<th>options</th><th>chosen (each order)</th><th>ruling</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _fact_html(trace: Trace, fact: Fact) -> str:
    checks = {c.id: c for c in trace.checks}
    corrections = [c for c in trace.corrections if c.fact == fact.id]
    fixes = "".join(
        f"<li>{esc(c.original)} &rarr; {esc(c.fixed)}"
        f"{' <b>(propagated)</b>' if c.propagated else ''}</li>" for c in corrections)
    quote = f"<p><b>quote</b>: <q>{esc(fact.quote)}</q></p>" if fact.quote else ""
    if fact.second_verdict:
        quote += (f"<p><b>second verdict</b> (the quote showed no conflict): "
                  f"{esc(fact.second_verdict)}</p>")
    if fact.votes:
        quote += ("<p><b>signals</b> (two must say CONTRADICTED before it changes): "
                  + ", ".join(f"{esc(k)} {esc(v)}" for k, v in fact.votes.items()) + "</p>")
    quote += _slots_html(fact)
    text = (f"<s>{esc(fact.text)}</s>" if fact.status == "pruned" else esc(fact.text))
    return (f'<div class="fact status-{esc(fact.status)}" data-node="{esc(fact.id)}">'
            f"<h4>fact {esc(fact.id)}: {text}</h4>"
            f"<p><b>verdict</b>: {esc(fact.verdict or 'none')}"
            + (f" (the verifier said {esc(fact.lm_verdict)})"
               if fact.lm_verdict and fact.lm_verdict != fact.verdict else "")
            + " &middot; <b>status</b>: "
            f"{esc(STATUS_TEXT.get(fact.status, fact.status))}</p>{quote}"
            f"{f'<ul class=fixes>{fixes}</ul>' if fixes else ''}"
            f"{_check_html(checks.get(fact.check or ''))}</div>")


def _rulings_html(trace: Trace, nodes: set[str]) -> str:
    """The rulings on these nodes (facts, sentences, the answer): which named rule changed
    what (see `serc_dspy.rules`)."""
    rows = []
    for r in trace.rulings:
        if r.node not in nodes:
            continue
        change = (f": <del>{esc(r.before)}</del> &rarr; <ins>{esc(r.after)}</ins>"
                  if r.before is not None or r.after is not None else "")
        detail = f" <span class=detail>({esc(r.detail)})</span>" if r.detail else ""
        rows.append(f'<li class="ruling" data-rule="{esc(r.rule)}"><code>{esc(r.rule)}</code> '
                    f"on {esc(r.node)}{change}{detail}</li>")
    return f"<p><b>rulings</b></p><ul class=rulings>{''.join(rows)}</ul>" if rows else ""


def _provenance_html(trace: Trace, edits: Sequence[Edit]) -> str:
    blocks = []
    for edit in edits:
        facts = "".join(_fact_html(trace, f) for f in edit.facts) or \
            "<p><em>No fact of the trace is tied to this edit (a rewrite or the polish "\
            "step changed the wording).</em></p>"
        nodes = {f.id for f in edit.facts} | {f"s{f.sentence}" for f in edit.facts} | {"answer"}
        blocks.append(
            f'<section class="prov" id="{edit.target}" aria-label="provenance of edit '
            f'{edit.number}"><h3>Edit {edit.number}: <del>{esc(edit.removed) or "&nbsp;"}</del>'
            f" &rarr; <ins>{esc(edit.added) or '&nbsp;'}</ins></h3>"
            f"{_rulings_html(trace, nodes)}{facts}"
            f'<p><a href="#{edit.anchor}">back to the answer</a></p></section>')
    return "".join(blocks)


def _facts_table(trace: Trace) -> str:
    rows = []
    for f in trace.facts:
        text = f"<s>{esc(f.text)}</s>" if f.status == "pruned" else esc(f.text)
        reason = {"pruned": "NOT_FOUND: no evidence states it", "unverified":
                  "kept: its check failed"}.get(f.status, "")
        rows.append(f'<tr class="status-{esc(f.status)}" id="fact-{esc(f.id)}"><td>'
                    f"{esc(f.id)}</td><td>{esc(f.sentence)}</td><td>{text}</td><td>"
                    f"{esc(f.verdict or '')}</td><td>{esc(STATUS_TEXT.get(f.status, f.status))}"
                    f"{f' ({esc(reason)})' if reason else ''}</td><td>"
                    f"{esc(f.correction or '')}</td></tr>")
    return ("<table><thead><tr><th>fact</th><th>sentence</th><th>text</th><th>verdict</th>"
            "<th>status</th><th>correction</th></tr></thead><tbody>" + "".join(rows) +
            "</tbody></table>")


def _graph_svg(trace: Trace) -> str:
    """Sentences, facts, checks and passages in four columns, edges between them."""
    row_h, width = 26, 980
    xs = {"sentence": 10, "fact": 250, "check": 520, "passage": 740}
    checks = trace.checks
    passages = [(c.id, n, p) for c in checks for n, p in enumerate(c.passages, 1)]
    columns = {"sentence": [(f"s{s.index}", f"S{s.index}: {s.text}") for s in trace.sentences],
               "fact": [(f.id, f"{f.id} [{f.status}] {f.text}") for f in trace.facts],
               "check": [(c.id, f"{c.id}: {c.query}") for c in checks],
               "passage": [(f"{cid}-p{n}", f"{p.source or 'passage'}") for cid, n, p in passages]}
    rows = max([len(v) for v in columns.values()] + [1])
    height = rows * row_h + 20
    pos = {}
    nodes, edges = [], []
    status = {f.id: f.status for f in trace.facts}
    for column, items in columns.items():
        for i, (node, label) in enumerate(items):
            x, y = xs[column], 10 + i * row_h
            pos[node] = (x, y)
            cls = f"node {column}" + (f" status-{status[node]}" if node in status else "")
            nodes.append(f'<g class="{esc(cls)}" data-node="{esc(node)}" tabindex="0">'
                         f'<rect x="{x}" y="{y}" width="220" height="20" rx="4"/>'
                         f'<text x="{x + 6}" y="{y + 14}">{esc(label[:34])}</text>'
                         f"<title>{esc(label)}</title></g>")

    def edge(a: str, b: str) -> None:
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            edges.append(f'<line class="edge" data-a="{esc(a)}" data-b="{esc(b)}" '
                         f'x1="{x1 + 220}" y1="{y1 + 10}" x2="{x2}" y2="{y2 + 10}"/>')

    for f in trace.facts:
        edge(f"s{f.sentence}", f.id)
        if f.check:
            edge(f.id, f.check)
    for cid, n, _ in passages:
        edge(cid, f"{cid}-p{n}")
    return (f'<svg class="graph" viewBox="0 0 {width} {height}" width="100%" role="img" '
            f'aria-label="Tanner graph: sentences, facts, check nodes, passages">'
            f'{"".join(edges)}{"".join(nodes)}</svg>')


def _firewall_html(trace: Trace) -> str:
    fw = trace.firewall
    if not fw.enabled:
        return "<p>The entity firewall was off for this run.</p>"
    replaced = ""
    if fw.reset and fw.replaced_answer:
        replaced = (f"<p><b>answer replaced by the reset</b>:</p><blockquote>"
                    f"{esc(fw.replaced_answer)}</blockquote>")
    return (f"<dl><dt>query entity</dt><dd>{esc(fw.query_entity)}</dd><dt>answer entity</dt>"
            f"<dd>{esc(fw.answer_entity)}</dd><dt>evidence entity</dt>"
            f"<dd>{esc(fw.evidence_entity)}</dd><dt>same entity</dt>"
            f"<dd>{esc(fw.same_entity)}</dd><dt>analysis</dt><dd>{esc(fw.analysis)}</dd>"
            f"<dt>decision</dt><dd>{esc(fw.decision)}</dd><dt>reset</dt>"
            f"<dd>{'yes: the answer was regenerated from the evidence' if fw.reset else 'no'}"
            f"</dd></dl>{replaced}"
            f"{f'<p class=error>{esc(fw.error)}</p>' if fw.error else ''}")


def _cost_html(trace: Trace) -> str:
    def table(title: str, items) -> str:
        rows = "".join(f"<tr><td>{esc(name)}</td><td>{u.calls}</td><td>{u.failed}</td>"
                       f"<td>{u.cached}</td><td>{u.prompt_tokens}</td>"
                       f"<td>{u.completion_tokens}</td></tr>" for name, u in items)
        return (f"<table><caption>{esc(title)}</caption><thead><tr><th>name</th><th>calls</th>"
                "<th>failed</th><th>cached</th><th>prompt tokens</th><th>completion tokens</th>"
                f"</tr></thead><tbody>{rows}</tbody></table>")

    total = trace.usage.total
    return (f"<p>{total.calls} LM calls, {total.prompt_tokens} prompt + "
            f"{total.completion_tokens} completion tokens.</p>"
            + table("per step", trace.usage.steps.items())
            + table("per model", trace.usage.models.items()))


def _events_html(trace: Trace) -> str:
    items = []
    for n, event in enumerate(trace.events, 1):
        message = esc(event.message)
        for ref in set(_FACT_REF.findall(event.message)):
            message = message.replace(esc(ref), f'<a href="#fact-{esc(ref)}">{esc(ref)}</a>', 1)
        items.append(f'<li class="event {esc(event.kind)}" id="event-{n}"><b>{esc(event.kind)}'
                     f"</b> in <code>{esc(event.phase)}</code>: {message}</li>")
    return f"<ol class='events'>{''.join(items)}</ol>" if items else "<p>No events.</p>"


_CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#111}
h1{font-size:1.4em} h2{border-bottom:1px solid #ccc;margin-top:1.6em}
.answer{background:#fafafa;border:1px solid #ddd;padding:1em;white-space:pre-wrap}
.degenerate{background:#fff0b3;color:#5c4400;font-weight:bold}
del{background:#f4d4c2;color:#7a2c00;text-decoration:line-through}
ins{background:#cde5f5;color:#003c63;text-decoration:underline}
a.edit{text-decoration:none;border-bottom:2px dotted #555;outline-offset:2px}
a.edit:focus,a.edit.hl{outline:3px solid #e69f00}
.prov{display:none;border:2px solid #0072b2;padding:.5em 1em;margin:1em 0}
.prov:target,.prov.open{display:block}
.fact{border-left:6px solid #999;padding-left:.6em;margin:.6em 0}
.status-kept{border-color:#009e73}.status-corrected{border-color:#0072b2}
.status-pruned{border-color:#d55e00}.status-unverified{border-color:#cc79a7}
.status-uncorrected{border-color:#e69f00}.status-disputed{border-color:#f0e442}
blockquote{margin:.3em 0 .3em 1em;color:#333;font-size:.92em;max-height:10em;overflow:auto}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}td,th{border:1px solid #ccc;
padding:2px 6px;vertical-align:top;text-align:left}
.graph{border:1px solid #ddd;background:#fff}.graph rect{fill:#f0f0f0;stroke:#666}
.graph .fact.status-kept rect{fill:#c7eadf}.graph .fact.status-corrected rect{fill:#c6def0}
.graph .fact.status-pruned rect{fill:#f6d3bd}.graph .fact.status-unverified rect{fill:#f0d6e6}
.graph .fact.status-uncorrected rect{fill:#fbe4b5}.graph text{font-size:11px}
.graph .edge{stroke:#bbb;stroke-width:1}.graph .edge.hl{stroke:#e69f00;stroke-width:3}
.graph .node.hl rect{stroke:#e69f00;stroke-width:3}
.event.error{color:#a33}.error{color:#a33}.legend span{margin-right:1em}
"""

_JS = """
(function(){
  var edits=[].slice.call(document.querySelectorAll('a.edit'));
  function openTarget(){
    document.querySelectorAll('.prov.open').forEach(function(p){p.classList.remove('open');});
    var id=decodeURIComponent(location.hash.slice(1)); if(!id) return;
    var el=document.getElementById(id);
    if(el&&el.classList.contains('prov')){el.classList.add('open');
      document.body.setAttribute('data-revealed',id);}
  }
  window.addEventListener('hashchange',openTarget); openTarget();
  function mark(node,on){
    document.querySelectorAll('.edge').forEach(function(e){
      if(e.getAttribute('data-a')===node||e.getAttribute('data-b')===node)
        e.classList.toggle('hl',on);});
    edits.forEach(function(a){
      if((' '+a.getAttribute('data-facts')+' ').indexOf(' '+node+' ')>=0)
        a.classList.toggle('hl',on);});
  }
  document.querySelectorAll('.graph .node').forEach(function(g){
    var n=g.getAttribute('data-node'); g.classList.toggle('hl',false);
    ['mouseenter','focus'].forEach(function(ev){g.addEventListener(ev,function(){
      g.classList.add('hl');mark(n,true);});});
    ['mouseleave','blur'].forEach(function(ev){g.addEventListener(ev,function(){
      g.classList.remove('hl');mark(n,false);});});
  });
  document.addEventListener('keydown',function(e){
    if(e.target&&/input|textarea/i.test(e.target.tagName)) return;
    if(e.key!=='n'&&e.key!=='p') return;
    var i=edits.indexOf(document.activeElement);
    i=e.key==='n'?Math.min(edits.length-1,i+1):Math.max(0,i-1);
    if(edits[i]) edits[i].focus();
  });
})();
"""


_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""No network at all: the page cannot fetch anything, whatever a passage contains."""


def render_trace(trace: Trace, *, title: str | None = None) -> str:
    """The whole page for one trace (see module docs)."""
    pieces, edits = diff_edits(trace)
    status = esc(trace.status) + (f": {esc(trace.failure)}" if trace.failure else "")
    pruned = [f for f in trace.facts if f.status == "pruned"]
    unverified = [f for f in trace.facts if f.status == "unverified"]
    notes = []
    if pruned:
        notes.append("Pruned (no evidence states them): " + "; ".join(
            f'<s>{esc(f.text)}</s> (<a href="#fact-{esc(f.id)}">{esc(f.id)}</a>)'
            for f in pruned))
    failed = [f for f in unverified if f.verdict is None]
    unsettled = [f for f in unverified if f.verdict is not None]
    for facts, why in ((failed, "their check failed"),
                       (unsettled, "the evidence did not settle them")):
        if facts:
            notes.append(f"Unverified, kept verbatim because {why}: " + "; ".join(
                f'{esc(f.text)} (<a href="#fact-{esc(f.id)}">{esc(f.id)}</a>)'
                for f in facts))
    degenerate = degenerate_sentences(trace.answer or "")
    if degenerate:
        sentences = split_sentences(trace.answer or "")
        notes.append(
            '<span class="degenerate">Degenerate sentences in the answer</span>: ' + "; ".join(
                f"&ldquo;{esc(sentences[i])}&rdquo; ({esc(_DEGENERATE[kind])})"
                for i, kind in degenerate.items()))
    received = ""
    if trace.firewall.reset:
        received = ("<p>The firewall reset this answer; the draft it replaced is in the "
                    "firewall section.</p>")
    heading = esc(title or f"SERC decoding: {trace.question}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<title>{heading}</title><style>{_CSS}</style></head>
<body>
<h1>{heading}</h1>
<p><b>method</b> {esc(trace.method)} &middot; <b>status</b> {status} &middot;
{len(trace.sentences)} sentences, {len(trace.facts)} facts, {len(trace.checks)} check nodes,
{len(edits)} edits &middot; {esc(trace.syndrome.summary())}</p>
<p class="legend">Keys: <kbd>n</kbd> / <kbd>p</kbd> next / previous edit (Tab works too).
<span><del>removed</del></span><span><ins>added</ins></span></p>
<h2 id="answer">The answer, against the draft</h2>{received}
<div class="answer" id="diff">{_diff_html(pieces)}</div>
{"".join(f"<p>{n}</p>" for n in notes)}
<h2 id="provenance">Provenance of each edit</h2>
<p>Follow an edit to open its provenance: the facts it came from, their verdicts, the
corrections, the check node's query, evidence and passages.</p>
{_provenance_html(trace, edits) or "<p>No edits: the answer is the draft.</p>"}
<h2 id="graph">The Tanner graph</h2>
<p>Columns: sentences, facts (variable nodes, coloured and labelled by status), check nodes,
passages. Focus or hover a node to highlight its edges and its edits.</p>
{_graph_svg(trace)}
<h2 id="facts">Facts</h2>{_facts_table(trace)}
<h2 id="firewall">The entity firewall</h2>{_firewall_html(trace)}
<h2 id="cost">Cost</h2>{_cost_html(trace)}
<h2 id="rulings">Rulings</h2>{_rulings_html(trace, {r.node for r in trace.rulings})
                                  or "<p>No rule fired.</p>"}
<h2 id="events">Events</h2>{_events_html(trace)}
<script>{_JS}</script>
</body></html>
"""
