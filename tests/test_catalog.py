"""The rule catalog: every rule has its document `rules/<CODE>.md`, and every example in it behaves.

- each registered rule has a document titled `# CODE name` with the sections CONTRIBUTING.md lists
  (What it catches, Why it hurts, Example, Use instead, Probe; Fix when the rule has an autofix);
- each document names a registered rule;
- each ```python block of `## Example` (unless tagged `probe`) yields at least one finding of its code,
  with `select=[CODE]` and, for a default-on rule, with the default selection; each block of
  `## Use instead` yields none of it. Test ids are `CODE-example-N` / `CODE-use-instead-N`, so a failure
  names the document and the block (N counts the python blocks of the section from 0);
- the concise message of every finding of the Example blocks fits in 160 characters (LONG_MESSAGES
  names the rules still over it);
- `trainlint rule CODE` prints the document and `trainlint rules` lists every code.

Meta codes (TL0xx) are reported by the engine, not by a rule's check; their examples run the same way.
A block whose fence says `encoding=latin-1` (TL002) is written to a file in that encoding and linted as a
file. A meta document may show ```text blocks instead (TL003, a bug in trainlint, has no script that
triggers it): `test_internal_error_is_reported` checks that one instead. Probe-only codes show
```python probe blocks, which are not run here (the probe tests run them).
"""

from __future__ import annotations

import re
import textwrap
from functools import cache
from pathlib import Path

import pytest
from support import RELEASES, ROOT, run_cli

from trainlint.config import Settings
from trainlint.docs import Example, RuleDoc, parse_doc
from trainlint.engine import lint_file, lint_source
from trainlint.findings import Applicability
from trainlint.rule import all_rules

RULES_DIR = ROOT / "rules"
RULES = all_rules()
DOC_FILES = sorted(RULES_DIR.glob("TL*.md"))
REQUIRED = ("What it catches", "Why it hurts", "Example", "Use instead", "Probe")
_FENCE = re.compile(r"^```(\S*)", re.M)


@cache
def load(code: str) -> RuleDoc:
    path = RULES_DIR / f"{code}.md"
    return parse_doc(code, path.read_text(encoding="utf-8"))


def is_meta(code: str) -> bool:
    return code[2] == "0"


def is_static(code: str) -> bool:
    """The rule has a static check (visit methods or `finish`); probe-only rules have none."""
    rule = RULES[code]
    return hasattr(rule, "finish") or any(
        a.startswith("visit_") and a != "visit_methods" and callable(getattr(rule, a)) for a in dir(rule)
    )


def encoding(example: Example) -> str | None:
    m = re.search(r"\bencoding=(\S+)", example.info)
    return m.group(1) if m else None


def codes_found(code: str, example: Example, settings: Settings, tmp_path: Path) -> list[str]:
    if encoding(example):
        path = tmp_path / example.filename
        path.write_bytes(example.code.encode(encoding(example)))
        return [f.code for f in lint_file(path, settings).findings]
    return [f.code for f in lint_source(example.code, example.filename, settings)]


def selections(code: str) -> list[tuple[str, Settings]]:
    out = [(f"select=[{code}]", Settings(select=[code], target_versions=RELEASES))]
    if RULES[code].default:
        out.append(("default selection", Settings(target_versions=RELEASES)))
    return out


def example_cases(section: str) -> list:
    cases = []
    for code in RULES:
        path = RULES_DIR / f"{code}.md"
        if not path.is_file():
            continue
        blocks = load(code).examples(section)
        for i, ex in enumerate(blocks):
            case_id = f"{code}-{section.lower().replace(' ', '-')}-{i}"
            if ex.probe_only:
                continue  # run by test_probe_only_examples_are_valid_scripts below
            cases.append(pytest.param(code, ex, id=case_id))
    return cases


def probe_only_cases() -> list:
    return [pytest.param(code, ex, id=f"{code}-{section.lower().replace(' ', '-')}-{i}")
            for code in RULES if (RULES_DIR / f"{code}.md").is_file()
            for section in ("Example", "Use instead")
            for i, ex in enumerate(load(code).examples(section)) if ex.probe_only]


# ---------------------------------------------------------------------------------------------
# Documents and sections.


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_has_its_document(code):
    rule = RULES[code]
    path = RULES_DIR / f"{code}.md"
    assert path.is_file(), f"rules/{code}.md is missing"
    doc = load(code)
    assert doc.title == f"{code} {rule.name}", f"rules/{code}.md: the title must be `# {code} {rule.name}`"
    for section in REQUIRED:
        assert section in doc.sections, f"rules/{code}.md has no `## {section}`"
        assert doc.sections[section].strip(), f"rules/{code}.md: `## {section}` is empty"
    order = [s for s in doc.sections if s in REQUIRED]
    assert order == list(REQUIRED), f"rules/{code}.md: sections out of order: {order}"


@pytest.mark.parametrize("code", sorted(RULES))
def test_examples_are_present(code):
    doc = load(code)
    if is_meta(code) or not is_static(code):
        # meta codes may show ```text blocks (what no script can show); probe-only codes ```python probe
        assert _FENCE.search(doc.sections["Example"]), f"rules/{code}.md: `## Example` shows nothing"
        return
    assert [e for e in doc.bad if not e.probe_only], f"rules/{code}.md: no ```python block in `## Example`"
    assert doc.good, f"rules/{code}.md: no ```python block in `## Use instead`"


@pytest.mark.parametrize("code", sorted(RULES))
def test_probe_and_fix_sections_match_the_rule(code):
    rule = RULES[code]
    doc = load(code)
    probe = doc.sections["Probe"].strip()
    if rule.probe:
        assert not probe.startswith("Static only"), f"rules/{code}.md: the rule has a probe ({rule.probe!r})"
    else:
        assert probe.startswith("Static only"), f"rules/{code}.md: no probe: `## Probe` must say `Static only.`"
    if rule.fix is not None:
        assert "Fix" in doc.sections, f"rules/{code}.md: the rule has a {rule.fix.value} autofix: add `## Fix`"
        text = doc.sections["Fix"].lower()
        if rule.fix is Applicability.UNSAFE:
            assert "unsafe" in text, f"rules/{code}.md: `## Fix` must say the fix is unsafe"
        else:
            assert re.search(r"(?<!un)safe", text), f"rules/{code}.md: `## Fix` must say the fix is safe"


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_every_document_names_a_registered_rule(path):
    code = path.stem
    assert code in RULES, f"rules/{path.name} documents no registered rule"
    title = parse_doc(code, path.read_text(encoding="utf-8")).title
    assert title.split()[0] == code, f"rules/{path.name}: the title names {title.split()[0]}, not {code}"


# ---------------------------------------------------------------------------------------------
# Every example runs.


@pytest.mark.parametrize("code,example", example_cases("Example"))
def test_example_triggers_its_rule(code, example, tmp_path):
    if not is_meta(code):
        compile(example.code, example.filename, "exec")  # an example that does not parse proves nothing
    for label, settings in selections(code):
        found = codes_found(code, example, settings, tmp_path)
        assert code in found, (
            f"rules/{code}.md, `## Example` block at line {example.line} of the section: no {code} with the "
            f"{label} (found {found})\n{example.code}"
        )


@pytest.mark.parametrize("code,example", example_cases("Use instead"))
def test_use_instead_does_not_trigger_its_rule(code, example, tmp_path):
    compile(example.code, example.filename, "exec")  # vacuous if it did not parse
    for label, settings in selections(code):
        found = codes_found(code, example, settings, tmp_path)
        assert code not in found, (
            f"rules/{code}.md, `## Use instead` block at line {example.line} of the section: {code} with the "
            f"{label}\n{example.code}"
        )


#: The rules whose concise message still carries its explanation past 160 characters (it belongs in the
#: hint, the ``full`` format and the rule's document). A rule leaves this set when its messages are
#: shortened; no rule joins it.
LONG_MESSAGES = frozenset({"TL802", "TL803", "TL804", "TL805", "TL807", "TL808", "TL809"})
MESSAGE_LIMIT = 160


@pytest.mark.parametrize("code", sorted(c for c in RULES if (RULES_DIR / f"{c}.md").is_file() and is_static(c)))
def test_concise_messages_are_short(code, tmp_path):
    """The concise line of every finding of every `## Example` block fits in 160 characters (the
    probe-only rules' messages are checked by the probe tests)."""
    lengths = []
    for example in load(code).examples("Example"):
        if example.probe_only:
            continue
        settings = Settings(select=[code], target_versions=RELEASES)
        path = tmp_path / example.filename
        path.write_bytes(example.code.encode(encoding(example) or "utf-8"))
        lengths += [(len(f.message), f.message) for f in lint_file(path, settings).findings if f.code == code]
    assert lengths, f"{code}: no finding in its examples"
    longest = max(lengths)
    if code in LONG_MESSAGES:
        assert longest[0] > MESSAGE_LIMIT, f"{code}'s messages are short now: take it out of LONG_MESSAGES"
    else:
        assert longest[0] <= MESSAGE_LIMIT, f"{code}: a concise message of {longest[0]} characters: {longest[1]}"


def premise_cases() -> list:
    return [pytest.param(code, ex, id=f"{code}-premise-{ex.premise}-{i}")
            for code in RULES if (RULES_DIR / f"{code}.md").is_file()
            for i, ex in enumerate(load(code).examples("Premises"))]


@pytest.mark.parametrize("code", sorted(c for c in RULES if RULES[c].default and is_static(c) and not is_meta(c)))
def test_every_default_rule_states_its_premises(code):
    """A rule on by default reports only on premises established from the source: its document lists them
    (the engine's TL00x codes and the probe-only rules have none to state)."""
    assert "Premises" in load(code).sections, f"rules/{code}.md: a default rule without a `## Premises` section"


@pytest.mark.parametrize("code", sorted(c for c in RULES if (RULES_DIR / f"{c}.md").is_file()
                                        and "Premises" in load(c).sections))
def test_each_premise_has_a_silent_example(code):
    """`## Premises` lists what a finding asserts, numbered; each premise has at least one ```python
    premise=N block: the rule's example with that premise alone missing."""
    doc = load(code)
    premises = doc.premises
    assert premises, f"rules/{code}.md: `## Premises` lists no numbered premise"
    blocks = doc.examples("Premises")
    shown = {ex.premise for ex in blocks}
    assert None not in shown, f"rules/{code}.md: a block of `## Premises` names no premise (```python premise=N)"
    missing = [n for n in range(1, len(premises) + 1) if n not in shown]
    assert not missing, f"rules/{code}.md: no silent example for premise(s) {missing}"
    assert shown <= set(range(1, len(premises) + 1)), f"rules/{code}.md: a block names a premise that is not listed"


@pytest.mark.parametrize("code,example", premise_cases())
def test_rule_is_silent_when_a_premise_is_missing(code, example, tmp_path):
    compile(example.code, example.filename, "exec")  # vacuous if it did not parse
    for label, settings in selections(code):
        found = codes_found(code, example, settings, tmp_path)
        assert code not in found, (
            f"rules/{code}.md, `## Premises` block for premise {example.premise}: {code} with the {label} although "
            f"the premise is missing\n{example.code}"
        )


@pytest.mark.parametrize("code,example", probe_only_cases())
def test_probe_only_examples_are_valid_scripts(code, example, tmp_path):
    """Blocks tagged `python probe` show what only the run can see: they must be real scripts, and
    the static pass must get through them without an internal error."""
    compile(example.code, example.filename, "exec")
    found = codes_found(code, example, Settings(select=["ALL"]), tmp_path)
    assert "TL003" not in found and "TL001" not in found


def test_internal_error_is_reported(monkeypatch):
    """TL003 has no script that triggers it: make a rule raise and check what its document shows."""
    from trainlint.stages.s3_model.rules import MissingNumLabels

    def boom(self, node):
        raise KeyError("label")

    monkeypatch.setattr(MissingNumLabels, "visit_Call", boom)
    src = textwrap.dedent(
        """
        from transformers import AutoModelForSequenceClassification, TrainingArguments
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
        args = TrainingArguments("out", evaluation_strategy="epoch")
        """
    )
    found = lint_source(src, "train.py", Settings())
    internal = [f for f in found if f.code == "TL003"]
    assert len(internal) == 1 and internal[0].message.startswith("internal error in rule TL301: KeyError")
    assert "TL805" in [f.code for f in found], "the other rules' findings are kept"
    assert "internal error in rule TL301: KeyError" in load("TL003").sections["Example"]


# ---------------------------------------------------------------------------------------------
# The CLI prints the catalog.


def check_rule_output(code: str, returncode: int, stdout: str) -> None:
    """The whole document, rendered as plain text (stdout is no terminal here): each section heading on
    its own line, each code block's lines indented, and none of Markdown's markup."""
    assert returncode == 0, stdout
    rule = RULES[code]
    assert stdout.startswith(f"{code} {rule.name}\n")
    text = (RULES_DIR / f"{code}.md").read_text(encoding="utf-8")
    lines = stdout.splitlines()
    for heading in load(code).sections:
        assert heading.replace("`", "") in lines, f"`trainlint rule {code}` lacks the section {heading!r}"
    code_lines = set()
    for block in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        for line in block.group(1).splitlines():
            code_lines.add(("    " + line).rstrip())
            assert ("    " + line).rstrip() in lines, f"`trainlint rule {code}` lacks the code line {line!r}"
    assert "\x1b[" not in stdout
    prose = [line for line in lines if line not in code_lines]
    assert not [line for line in prose if "```" in line or re.search(r"\*\*\w[^*]*\*\*", line) or re.match(r"#{1,6} ", line)]
    assert not [line for line in prose if "`" in line], "inline code keeps its backticks"
    # paragraphs and lists are re-flowed to 100 columns (tables, whose columns are padded, are not)
    assert max(len(line) for line in prose if "  " not in line.strip()) <= 100


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_command_prints_the_document(code):
    # in-process (one subprocess per code is slow); `test_rule_command_in_a_subprocess` runs the real thing
    from click.testing import CliRunner

    from trainlint.cli import main

    result = CliRunner().invoke(main, ["rule", code.lower()])
    check_rule_output(code, result.exit_code, result.output)


@pytest.mark.parametrize("code", ["TL001", "TL501"])
def test_rule_command_in_a_subprocess(code):
    proc = run_cli("rule", code)
    check_rule_output(code, proc.returncode, proc.stdout)


def test_rules_command_lists_every_code():
    listed = run_cli("rules", "--all")
    assert listed.returncode == 0, listed.stderr
    codes = re.findall(r"^(TL\d{3})\s", listed.stdout, re.M)
    assert codes == sorted(RULES)
    default = re.findall(r"^(TL\d{3})\s", run_cli("rules").stdout, re.M)
    assert default == [c for c in sorted(RULES) if not is_meta(c)]
    for code, rule in RULES.items():
        line = next(x for x in listed.stdout.splitlines() if x.startswith(code))
        assert rule.name in line
