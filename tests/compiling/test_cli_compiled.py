"""`serc ask/correct --compiled PATH_OR_NAME` (skipped until cli.py has the option)."""

import contextlib
import io

import pytest
from compiling_helpers import demo_lm
from conftest import EXAMPLES

from serc_dspy.cli import build_parser, main
from serc_dspy.compiling import save_compiled
from serc_dspy.compiling.compile import stage_program


def _cli_has_compiled() -> bool:
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            build_parser().parse_args(["ask", "q", "--compiled", "x"])
    except SystemExit:
        return False
    return True


pytestmark = pytest.mark.skipif(not _cli_has_compiled(),
                                reason="cli.py has no --compiled option yet")


def _handlers():
    draft = "Marie Curie was born in Kraków in 1867. She studied physics at the Sorbonne."
    return {
        "AnswerQuestion": lambda i: {"answer": draft},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        "VerificationQuery": lambda i: {"query": "Marie Curie birthplace"},
        "EvidenceSummary": lambda i: {"evidence": "Marie Curie was born in Warsaw."},
        # without demos the scripted verifier accepts everything; with demos it follows them
        "JudgeFact": lambda i: {"verdict": i["_demos"][0][1]["verdict"] if i["_demos"]
                                else "SUPPORTED"},
        "CorrectFacts": lambda i: {"corrections": [
            {"original": f, "fixed": f.replace("Kraków", "Warsaw")}
            for f in i["erroneous_facts"]]},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
    }


@pytest.fixture
def engine(monkeypatch):
    lm, engine = demo_lm(_handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    return engine


@pytest.fixture
def state(tmp_path):
    program = stage_program("verify")
    program.predictor.demos = [{"evidence": "Born in Warsaw.", "claim": "Born in Kraków.",
                                "verdict": "CONTRADICTED"}]
    return save_compiled(program, tmp_path / "verify.json")


ASK = ["ask", "Tell me a bio of Marie Curie.", "--corpus", str(EXAMPLES / "corpus"),
       "--no-firewall", "--quiet", "--verdicts", "check"]


def test_ask_with_compiled_state_uses_its_demos(engine, state, capsys):
    assert main(ASK) == 0
    assert "Kraków" in capsys.readouterr().out  # uncompiled: the claim is accepted
    assert main(ASK + ["--compiled", str(state)]) == 0
    assert "Warsaw" in capsys.readouterr().out
    assert max(engine.demos_seen) == 1


@pytest.mark.parametrize("extra, message", [
    (["--compiled", "state.pkl"], "pickle files are refused"),
    (["--compiled", "no_such_state"], "compiled state not found"),
    (["--compiled", "x.json", "--method", "cove"], "SERC methods only"),
])
def test_compiled_errors_are_one_line_user_errors(engine, capsys, extra, message):
    assert main(ASK + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
