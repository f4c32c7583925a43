"""The package's layers, read from its source: no import cycle, and no import up a layer.

Lowest first (docs/architecture.md says what each layer holds and why):

    core         trace, errors, text, layout, entities, io, version (core/): the words every
                 other layer speaks
    runtime      how LM calls run: steps, lm_calls, states, concurrency, throttle, cpu,
                 adapter (runtime/)
    rules        the rulebook (rules/) and the DSPy signatures (signatures/)
    backends     LM factories and engines (backends/)
    sources      evidence and its judges: retrieval/ and verifiers/
    programs     SERC and the baselines (programs/), and the package facade
    evaluation   datasets, metrics, runs, scores and reports (evaluation/), the trace view
    compiling    optimising SERC's stages against the metrics, and measuring them (compiling/)
    edges        configuration and commands: config, cli, commands/

A module may import its own layer or any layer below, never one above. Within a layer any
import is allowed as long as no modules import each other in a ring at module level.

A module's layer is that of the longest prefix in `LAYERS` naming it (a package's prefix covers
its submodules), so a new module lands in its package's layer; a new top-level module has no
layer until someone places it (`test_every_module_has_a_layer`).

Imports are read with `ast`, never run: `import a.b`, `from a import b` (the submodule `a.b`
when there is one, else `a`), relative imports resolved. Importing a submodule also runs its
parents' `__init__` (Python's doing, not an arrow anyone wrote): those implicit imports are not
counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "serc_dspy"
ROOT = "serc_dspy"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("serc_dspy.core",)),
    ("runtime", ("serc_dspy.runtime",)),
    ("rules", ("serc_dspy.rules", "serc_dspy.signatures")),
    ("backends", ("serc_dspy.backends",)),
    ("sources", ("serc_dspy.retrieval", "serc_dspy.verifiers")),
    # The package itself (`serc_dspy/__init__.py`) re-exports SERC: it sits with the programs.
    ("programs", ("serc_dspy.programs", ROOT)),
    # `serc_dspy.metrics` is the documented short path of evaluation/metrics/dspy_metrics.py;
    # view.py draws a trace as HTML for `serc view` and for `serc report`'s pages.
    ("evaluation", ("serc_dspy.evaluation", "serc_dspy.metrics", "serc_dspy.view")),
    ("compiling", ("serc_dspy.compiling",)),
    ("edges", ("serc_dspy.config", "serc_dspy.cli", "serc_dspy.commands")),
]

EXCEPTIONS: dict[tuple[str, str], str] = {}
"""(importer, imported) pairs allowed to point up a layer, each with why. None today: keep it
so, and move the code instead of adding one."""

LAZY: dict[tuple[str, str], str] = {
    ("serc_dspy.retrieval.factory", "serc_dspy.retrieval.tavily"):
        "the Tavily client is an optional dependency ([tavily]); it is imported only when a "
        "web search is asked for, so the package imports without it",
}
"""Imports of the package's own modules inside a function body, each with why it is not at
the top: only an optional dependency's wrapper. A function-level import is invisible to the
cycle check, so it must never be the way a ring is broken; the edge modules (config, cli,
commands/) import at the top like every other."""


# -- reading the source ------------------------------------------------------------------------
def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """`{dotted module name: file}` for every module of the package."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imports_of(name: str, source: str, is_package: bool,
               known: set[str]) -> list[tuple[str, bool, int]]:
    """`(imported module, at module level, line)` for every import of a package module in
    `source` (the module `name`). Module level means not inside a function: class bodies and
    `if` blocks run on import, so they count."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: list[tuple[str, bool, int]] = []

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        if node.level:
            base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module
                                                                   else []))
        else:
            base = node.module or ""
        return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names]

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in targets(child):
                    if target == ROOT or target.startswith(ROOT + "."):
                        found.append((target, not in_function, child.lineno))
            visit(child, in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    visit(ast.parse(source), False)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, list[tuple[str, bool, int]]]:
    files = module_files(package)
    known = set(files)
    return {name: [edge for edge in imports_of(name, path.read_text(encoding="utf-8"),
                                               path.name == "__init__.py", known)
                   if edge[0] != name]
            for name, path in files.items()}


# -- the checks, as functions (tested on a made-up graph below) ---------------------------------
def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (prefix length, layer index)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            covers = module == prefix or (prefix != ROOT and module.startswith(prefix + "."))
            if covers and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def upward_arrows(graph: dict[str, list[tuple[str, bool, int]]]) -> list[str]:
    arrows = []
    for module, edges in sorted(graph.items()):
        for target, _, line in edges:
            low, high = layer_of(module), layer_of(target)
            if low is None or high is None or high <= low or (module, target) in EXCEPTIONS:
                continue
            arrows.append(f"{module} (line {line}, layer {LAYERS[low][0]}) imports {target} "
                          f"(layer {LAYERS[high][0]})")
    return arrows


def cycles(graph: dict[str, list[tuple[str, bool, int]]]) -> list[list[str]]:
    """Rings of modules that import each other at module level (Tarjan's strongly connected
    components of more than one module)."""
    edges = {m: sorted({t for t, top, _ in out if top and t in graph}) for m, out in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    rings: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            ring = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                ring.append(member)
                if member == node:
                    break
            if len(ring) > 1:
                rings.append(sorted(ring))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return rings


def lazy_imports(graph: dict[str, list[tuple[str, bool, int]]]) -> set[tuple[str, str]]:
    return {(module, target) for module, edges in graph.items() for target, top, _ in edges
            if not top and layer_of(module) is not None}


# -- the package --------------------------------------------------------------------------------
def test_every_module_has_a_layer():
    unplaced = [m for m in module_files() if layer_of(m) is None]
    assert not unplaced, f"place these modules in a layer of LAYERS: {unplaced}"


def test_no_import_cycles_at_module_level():
    rings = cycles(import_graph())
    assert not rings, "modules that import each other at module level: " + "; ".join(
        " -> ".join(ring) for ring in rings)


def test_no_import_points_up_a_layer():
    arrows = upward_arrows(import_graph())
    assert not arrows, ("imports up a layer (move the code down, or the import up):\n  "
                        + "\n  ".join(arrows))


def test_function_level_imports_are_the_listed_few():
    found = lazy_imports(import_graph())
    unlisted = sorted(found - set(LAZY))
    stale = sorted(set(LAZY) - found)
    assert not unlisted, ("imports inside functions that LAZY does not list; import at the top, "
                          f"or list one with its reason: {unlisted}")
    assert not stale, f"LAZY lists imports that are gone: {stale}"


def test_the_exceptions_are_still_needed():
    graph = import_graph()
    present = {(m, t) for m, edges in graph.items() for t, _, _ in edges}
    assert set(EXCEPTIONS) <= present, "EXCEPTIONS lists imports that are gone"


# -- the checks catch what they are for -------------------------------------------------------
def test_an_upward_import_is_caught():
    source = "def f():\n    from serc_dspy.programs import SERC\n"
    known = {"serc_dspy.core.trace", "serc_dspy.programs"}
    graph = {"serc_dspy.core.trace": imports_of("serc_dspy.core.trace", source, False, known),
             "serc_dspy.programs": []}
    (arrow,) = upward_arrows(graph)
    assert "serc_dspy.core.trace (line 2, layer core) imports serc_dspy.programs" in arrow


def test_a_ring_is_caught_and_a_function_level_import_does_not_make_one():
    known = {"serc_dspy.a", "serc_dspy.b", "serc_dspy.c"}
    graph = {
        "serc_dspy.a": imports_of("serc_dspy.a", "from serc_dspy import b\n", False, known),
        "serc_dspy.b": imports_of("serc_dspy.b", "import serc_dspy.a\n", False, known),
        "serc_dspy.c": imports_of("serc_dspy.c", "def f():\n    import serc_dspy.a\n", False,
                                  known),
    }
    assert cycles(graph) == [["serc_dspy.a", "serc_dspy.b"]]
    assert graph["serc_dspy.c"] == [("serc_dspy.a", False, 2)]


def test_relative_imports_are_resolved():
    known = {"serc_dspy.rules", "serc_dspy.rules.base", "serc_dspy.rules.words"}
    edges = imports_of("serc_dspy.rules.words", "from . import base\nfrom .base import X\n",
                       False, known)
    assert edges == [("serc_dspy.rules.base", True, 1), ("serc_dspy.rules.base", True, 2)]
    edges = imports_of("serc_dspy.rules", "from .words import Y\n", True, known)
    assert edges == [("serc_dspy.rules.words", True, 1)]


def test_the_package_root_holds_few_loose_modules_and_no_module_is_long():
    """Folders are the layers: at most 8 modules loose at the root, none over 450 lines."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 8, f"modules loose at the package root: {loose}"
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 450}
    assert not long, f"modules over 450 lines: {long}"
