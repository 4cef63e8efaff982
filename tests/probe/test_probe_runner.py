"""The probe runner without a framework: child-side import hygiene, the matching of probe events to
static findings, and a foreign interpreter (``--python``) without trainlint installed. Fast: no
torch import, so not marked ``probe``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.findings import Finding, Position, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, protocol, run_probe
from trainlint.probe.parent.report import build_report

SRC = Path(__file__).resolve().parents[2]

CHILD_MODULES = [
    *(".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
      for p in sorted((SRC / "trainlint" / "probe" / "child").rglob("*.py")) if p.name != "__main__.py"),
    *(f"trainlint.stages.{p.parent.name}.{p.stem}" for p in sorted((SRC / "trainlint" / "stages").glob("s*/probe*.py"))),
]


def test_child_side_imports_only_the_standard_library():
    code = (
        "import sys, importlib\n"
        f"for m in {CHILD_MODULES!r}: importlib.import_module(m)\n"
        "bad = [m for m in ('libcst', 'click', 'torch', 'transformers', 'datasets', 'numpy', 'trainlint.engine',"
        " 'trainlint.rule', 'trainlint.findings') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(SRC)}, timeout=60)


def _static(code: str, line: int) -> Finding:
    return Finding(code, "static", f"static {code}", Severity.ERROR, "train.py", Position(line, 1), Position(line, 2))


def test_events_become_probe_outcomes(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("a = 1\nb = 2\nc = 3\n", encoding="utf-8")
    statics = [_static("TL301", 1), _static("TL201", 2), _static("TL601", 3), _static("TL101", 1), _static("TL101", 3)]
    events = [
        {"type": "finding", "code": "TL106", "message": "labels out of range", "evidence": "2×400", "line": 3,
         "confirms": ["TL301"]},
        {"type": "checked", "codes": ["TL201"]},
        {"type": "finding", "code": "TL101", "message": "raw eval", "evidence": "eval columns", "line": 3},
        {"type": "finding", "code": "TL207", "message": "extra key", "evidence": "idx", "line": 2},
        {"type": "note", "text": "hello"},
        {"type": "end", "outcome": "reached-training", "text": "stopped at train()"},
    ]
    report = build_report(script, statics, [protocol.decode(e) for e in events], "reached-training", isolated=False)
    status = [(f.code, f.start.row, f.probe.status, f.probe.evidence) for f in report.findings]
    assert status[0] == ("TL301", 1, ProbeStatus.CONFIRMED, "2×400")  # confirmed through TL106
    assert status[1][2] is ProbeStatus.NOT_REPRODUCED
    assert status[2][2] is ProbeStatus.NOT_REACHED and status[2][3] == "stopped at train()"
    # Two static TL101: the probe observation attaches to the one on its line.
    assert status[3][2] is ProbeStatus.NOT_REACHED and status[4][2] is ProbeStatus.CONFIRMED
    # Probe-only: TL207 appended at its line; TL106 was used by TL301, not repeated.
    extra = report.findings[5:]
    assert [(f.code, f.start.row, f.probe.status) for f in extra] == [("TL207", 2, ProbeStatus.CONFIRMED)]
    assert extra[0].name == "batch-keys-not-in-forward"
    assert report.notes == ["hello"]


@pytest.mark.skipif(not shutil.which("python3"), reason="no system python3")
def test_foreign_interpreter_without_trainlint(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)  # the child finds trainlint through the probe's shim only
    python = shutil.which("python3")
    probe = subprocess.run([python, "-c", "import trainlint"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the system python3 has trainlint installed")
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text("import sys\nprint('args', sys.argv)\nraise SystemExit(0 if sys.argv[1:] == ['--x', '1'] else 5)\n")
    report = run_probe(script, [], ProbeOptions(python=python, timeout=30, script_args=("--x", "1"), verbose=True))
    assert report.outcome == "exited", report.notes
    assert any("sys.exit(0)" in n for n in report.notes), report.notes
    assert any("args" in d and "'--x', '1'" in d for d in report.details), report.details


@pytest.mark.parametrize(
    "exc, code",
    [
        (TypeError("Trainer.__init__() got an unexpected keyword argument 'tokenizer'"), "TL804"),
        (TypeError("TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'"), "TL805"),
        (ImportError("cannot import name 'load_metric' from 'datasets'"), "TL801"),
        (ImportError("cannot import name 'AdamW' from 'transformers'"), "TL802"),
        (IndexError("Target 2 is out of bounds."), "TL106"),
        (ValueError("something else"), None),
        (ConnectionError("Couldn't reach 'glue' on the Hub (OfflineModeIsEnabled)"), None),  # no loader frame
    ],
)
def test_known_exceptions_map_to_their_codes(exc, code):
    from trainlint.probe.child.harness import Harness
    from trainlint.probe.child.points import ScriptError
    from trainlint.stages.s8_compat.probe import classify_exception

    h = Harness(protocol.Config(script="train.py", argv=["train.py"], workdir="/w"), sink=lambda e: None)
    got = classify_exception(h, ScriptError(exc, None))
    assert (got[0] if got else None) == code


def test_incomplete_check_is_a_note_and_never_all_clear(tmp_path):
    from trainlint.formats import Run
    from trainlint.formats.concise import summary

    script = tmp_path / "train.py"
    script.write_text("a = 1\n", encoding="utf-8")
    events = [
        {"type": "incomplete", "check": "weights move", "reason": "no optimizer step observed", "codes": ["TL506"]},
        {"type": "end", "outcome": "reached-training", "text": "stopped at train()"},
    ]
    report = build_report(script, [], [protocol.decode(e) for e in events], "reached-training", isolated=True)
    assert report.incomplete == ["weights move: no optimizer step observed"]
    assert not report.complete
    assert "probe check could not complete: weights move: no optimizer step observed" in report.notes
    run = Run(files_checked=1, probed=True, probe_incomplete="1 probe check could not complete")
    assert "All checks passed" not in summary([], run)
    assert summary([], Run(files_checked=1, probed=True)) == "All checks passed!"
