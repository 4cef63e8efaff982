"""Rule gates (``Rule.gate``): the engine skips a rule — and LibCST's parse when no rule is left —
for a file whose code lacks the words the rule needs. Gates only save time, never a finding:

- ``code_words`` sees identifiers of code, not of comments, docstrings or other strings;
- ``gate_open``: every group needs one word; ``*`` matches a prefix or suffix;
- every script of the repository's corpora (tests/data, examples/, each python block of every rule
  document) gives the same findings with the gates as without them (``Settings(gate=False)``);
  tests/test_robustness.py checks the same over the transformers source and the standard library;
- a file no gate opens is still syntax-checked (TL001 from CPython's parser);
- every script of tests/data/gate/ (one per tricky form a gate must let through) has findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from trainlint.config import Settings
from trainlint.docs import parse_doc
from trainlint.engine import code_words, lint_text
from trainlint.rule import Rule, all_rules

GATED = Settings(select=["ALL"])
UNGATED = Settings(select=["ALL"], gate=False)


def _corpus() -> list[tuple[str, str]]:
    out = []
    for path in sorted([*(ROOT / "tests" / "data").rglob("*.py"), *(ROOT / "examples").glob("*.py")]):
        out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    for doc in sorted((ROOT / "rules").glob("TL*.md")):
        parsed = parse_doc(doc.stem, doc.read_text(encoding="utf-8"))
        for section, blocks in (("example", parsed.bad), ("use-instead", parsed.good)):
            for i, block in enumerate(blocks):
                out.append((f"{doc.stem}-{section}-{i}", block.code))
    return out


CORPUS = _corpus()


def test_corpus_is_not_empty():
    assert len(CORPUS) > 150


@pytest.mark.parametrize("name,source", CORPUS, ids=[n for n, _ in CORPUS])
def test_gates_lose_no_finding(name, source):
    gated = lint_text(source, "script.py", GATED).findings
    ungated = lint_text(source, "script.py", UNGATED).findings
    assert gated == ungated


def test_code_words_skip_comments_and_strings():
    source = '''"""Fine-tune with Trainer and model.compile(optimizer="adam")."""
import torch  # the Trainer is not used here
x = 'Trainer' + "compile" + f"{1}"
s = """unterminated
'''
    words = code_words(source)
    assert {"import", "torch", "x", "s"} <= words
    assert not {"Trainer", "compile", "optimizer", "adam", "used", "unterminated"} & words


def test_code_words_see_the_code_inside_f_strings():
    words = code_words('print(f"{f1_score(y, trainer.predict(ds).label_ids)}")\nx = rf\'{net.forward(x)}\'\n')
    assert {"f1_score", "trainer", "predict", "label_ids", "net", "forward"} <= words
    # and the quote that closes an f-string does not open a string that would hide code
    assert {"after"} <= code_words('a = f"{b}" + after + "z"\n')


def test_a_finding_inside_an_f_string_survives_the_gate():
    source = ("from transformers import Trainer\nfrom sklearn.metrics import f1_score\n"
              "trainer = Trainer(model=None)\n"
              'print(f"{f1_score(y, trainer.predict(ds).label_ids)}")\n')
    ungated = lint_text(source, "t.py", UNGATED).findings
    assert "TL604" in [f.code for f in ungated]
    assert lint_text(source, "t.py", GATED).findings == ungated


def test_code_words_keep_attributes_and_keywords():
    words = code_words("args = TrainingArguments('out', evaluation_strategy='epoch')\nt.train()\n")
    assert {"args", "TrainingArguments", "evaluation_strategy", "t", "train"} <= words
    assert "epoch" not in words and "out" not in words


def test_code_words_escapes_do_not_end_strings():
    words = code_words('a = "x \\" Trainer"\nb = \'\'\'y \\\'\'\' fit\'\'\'\nc = d\n')
    assert "Trainer" not in words and "fit" not in words
    assert {"a", "b", "c", "d"} <= words


def test_gate_open_needs_every_group():
    class Demo(Rule):
        code = "TL999"
        name = "demo"
        gate = (("Trainer", "*Trainer"), ("train",))

    assert Demo.gate_open({"Trainer", "train"})
    assert Demo.gate_open({"Seq2SeqTrainer", "train"})  # suffix
    assert not Demo.gate_open({"Trainer"})
    assert not Demo.gate_open({"Trainers", "train"})  # whole words only


def test_gate_prefix_and_empty_gate():
    class Prefix(Rule):
        code = "TL998"
        name = "prefix"
        gate = (("TF*",),)

    class Always(Rule):
        code = "TL997"
        name = "always"

    assert Prefix.gate_open({"TFBertModel"})
    assert not Prefix.gate_open({"BertModel"})
    assert Always.gate_open(set())


def test_a_group_must_be_a_tuple_of_words():
    class Bad(Rule):
        code = "TL996"
        name = "bad"
        gate = ("Trainer",)  # a missing comma: a group of letters

    with pytest.raises(TypeError):
        Bad.gate_open({"Trainer"})


def test_every_rule_gate_is_well_formed():
    for code, rule in all_rules().items():
        for group in rule.gate:
            assert isinstance(group, tuple) and group, code
            for word in group:
                assert word.strip("*").isidentifier(), (code, word)
                assert word.count("*") <= 1, (code, word)


def test_closed_gates_still_report_syntax_errors():
    source = "import torch\ndef f(:\n    pass\n"
    result = lint_text(source, "broken.py", GATED)
    assert [f.code for f in result.findings] == ["TL001"]
    assert result.findings[0].start.row == 2
    assert result.syntax_checked and not result.parsed


def test_a_script_without_gate_words_is_not_parsed():
    result = lint_text("import torch\nx = torch.ones(3)\n", "t.py", Settings())
    assert result.findings == [] and result.syntax_checked and not result.parsed


def test_an_open_gate_parses():
    result = lint_text(Path(ROOT / "examples" / "mnli_trainer_buggy.py").read_text(), "t.py", Settings())
    assert result.parsed and result.findings


GATE_SCRIPTS = sorted((ROOT / "tests" / "data" / "gate").glob("*.py"))


@pytest.mark.parametrize("path", GATE_SCRIPTS, ids=[p.stem for p in GATE_SCRIPTS])
def test_each_gate_script_has_findings(path):
    """tests/data/gate/ holds one script per tricky form (an alias, a subclass...) that a gate must
    let through: each one reports something, so the gated-vs-ungated comparison is not vacuous."""
    found = lint_text(path.read_text(encoding="utf-8"), path.name, UNGATED).findings
    assert [f for f in found if not f.code.startswith("TL0")], path.name
