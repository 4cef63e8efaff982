"""Review-bot formats: SARIF (GitHub code scanning), rdjson (reviewdog), GitLab Code Quality, JUnit XML."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from support import ROOT, run_cli, validate_sarif
from trainlint.config import Settings
from trainlint.engine import lint_text
from trainlint.formats import Run, get_writer

#: findings with fixes (TL805 safe, TL301 unsafe) and without (TL101), one non-ASCII line, a duplicate
SOURCE = '''\
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

raw = load_dataset("glue", "mnli")
tok = AutoTokenizer.from_pretrained("bert-base-cased")
enc = raw.map(lambda b: tok(b["premise"], b["hypothesis"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
note = "données"; args = TrainingArguments("out", evaluation_strategy="epoch")
args2 = TrainingArguments("out", evaluation_strategy="epoch")
args3 = TrainingArguments("out", evaluation_strategy="epoch")
trainer = Trainer(model, args, train_dataset=raw["train"], processing_class=tok)
'''
SAME_LINE = 'args2 = TrainingArguments("out", evaluation_strategy="epoch")\n'


def _findings(source: str = SOURCE, filename: str = "train.py"):
    findings = lint_text(source, filename, Settings(select=["ALL"])).findings
    return findings, Run(files_checked=1, sources={filename: source})


def _render(fmt: str, source: str = SOURCE, filename: str = "train.py"):
    findings, run = _findings(source, filename)
    buf = io.StringIO()
    get_writer(fmt)(findings, buf, run)
    return findings, buf.getvalue()


def test_the_sample_has_findings_with_and_without_fixes():
    findings, _ = _findings()
    codes = [f.code for f in findings]
    assert {"TL805", "TL301", "TL101"} <= set(codes)
    assert any(f.fix is None for f in findings) and any(f.fix is not None for f in findings)
    assert codes.count("TL805") == 3


# ---------------------------------------------------------------------------------------------
# SARIF


def test_sarif_validates_with_and_without_fixes():
    findings, text = _render("sarif")
    log = json.loads(text)
    validate_sarif(log)
    results = log["runs"][0]["results"]
    assert len(results) == len(findings)
    with_fix = [r for r in results if "fixes" in r]
    assert with_fix and len(with_fix) < len(results)
    # an empty run validates too
    empty = io.StringIO()
    get_writer("sarif")([], empty, Run())
    validate_sarif(json.loads(empty.getvalue()))


def test_sarif_meets_github_code_scanning_requirements():
    findings, text = _render("sarif")
    run = json.loads(text)["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "trainlint" and driver["version"]
    rules = {r["id"]: r for r in driver["rules"]}
    for r in rules.values():
        assert r["shortDescription"]["text"] and r["help"]["text"] and r["helpUri"].startswith("https://")
        assert r["properties"]["problem.severity"] in ("error", "warning", "recommendation")
        assert r["properties"]["precision"] in ("very-high", "high", "medium", "low")
    assert rules["TL805"]["properties"]["fix"] == "safe"
    fingerprints = set()
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": "train.py", "uriBaseId": "%SRCROOT%"}
        assert loc["region"]["startLine"] >= 1
        fingerprints.add(res["partialFingerprints"]["trainlintFinding/v1"])
    assert len(fingerprints) == len(run["results"])  # unique, even for identical lines
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")


def test_sarif_fixes_carry_the_edits():
    findings, text = _render("sarif")
    results = json.loads(text)["runs"][0]["results"]
    for f, res in zip(findings, results):
        if f.fix is None:
            assert "fixes" not in res
            continue
        (fix,) = res["fixes"]
        assert f.fix.applicability.value in fix["description"]["text"]
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == "train.py"
        assert [(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"], r["insertedContent"]["text"])
                for r in change["replacements"]] == [(e.start.row, e.start.column, e.content) for e in f.fix.edits]


def test_sarif_fingerprints_survive_lines_added_above():
    _, before = _render("sarif")
    _, after = _render("sarif", "# a new comment\n" + SOURCE)
    fp = lambda text: sorted(r["partialFingerprints"]["trainlintFinding/v1"]  # noqa: E731
                             for r in json.loads(text)["runs"][0]["results"])
    assert fp(before) == fp(after)


# ---------------------------------------------------------------------------------------------
# rdjson (reviewdog)
#
# The checks below follow reviewdog's own definition of the format, proto/rdf/reviewdog.proto and
# proto/rdf/jsonschema/DiagnosticResult.jsonschema: DiagnosticResult{diagnostics[], source, severity};
# Diagnostic{message (string), location{path (string), range}, severity, source{name, url}, code{value,
# url}, suggestions[]{range, text}}; Range{start (required), end (optional, exclusive)};
# Position{line (1-based), column (1-based, UTF-8 bytes)}; Severity one of the enum names.

RD_SEVERITIES = {"UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO"}


def _check_position(p: dict) -> None:
    assert set(p) <= {"line", "column"}
    assert isinstance(p["line"], int) and p["line"] >= 1
    if "column" in p:
        assert isinstance(p["column"], int) and p["column"] >= 1


def _check_range(r: dict) -> None:
    assert set(r) <= {"start", "end"} and "start" in r  # start: "Required."
    _check_position(r["start"])
    if "end" in r:
        _check_position(r["end"])
        assert (r["end"]["line"], r["end"].get("column", 0)) >= (r["start"]["line"], r["start"].get("column", 0))


def _check_source(s: dict) -> None:
    assert isinstance(s["name"], str) and s["name"]
    assert isinstance(s.get("url", ""), str)


def check_rdjson(doc: dict) -> None:
    assert set(doc) <= {"diagnostics", "source", "severity"}
    _check_source(doc["source"])
    assert doc["severity"] in RD_SEVERITIES
    for d in doc["diagnostics"]:
        assert set(d) <= {"message", "location", "severity", "source", "code", "suggestions", "original_output"}
        assert isinstance(d["message"], str) and d["message"]
        assert isinstance(d["location"]["path"], str) and d["location"]["path"]
        if "range" in d["location"]:
            _check_range(d["location"]["range"])
        assert d["severity"] in RD_SEVERITIES
        _check_source(d["source"])
        assert isinstance(d["code"]["value"], str) and d["code"]["url"].startswith("https://")
        for s in d.get("suggestions", []):
            assert set(s) == {"range", "text"} and isinstance(s["text"], str)
            _check_range(s["range"])


def test_rdjson_matches_reviewdogs_format():
    findings, text = _render("rdjson")
    doc = json.loads(text)
    check_rdjson(doc)
    assert doc["source"]["name"] == "trainlint" and doc["severity"] == "ERROR"
    assert [d["code"]["value"] for d in doc["diagnostics"]] == [f.code for f in findings]


def _apply_line_suggestion(source: str, s: dict) -> str:
    lines = source.splitlines()
    a, b = s["range"]["start"]["line"], s["range"]["end"]["line"]
    assert "column" not in s["range"]["start"] and "column" not in s["range"]["end"]  # line-based
    return "\n".join(lines[: a - 1] + ([s["text"]] if s["text"] else []) + lines[b:]) + "\n"


def test_rdjson_suggestion_is_the_fix_and_columns_are_utf8_bytes():
    from trainlint.fixes import apply_fixes

    findings, text = _render("rdjson")
    diags = json.loads(text)["diagnostics"]
    for f, d in zip(findings, diags):
        if f.fix is None:
            assert "suggestions" not in d
            continue
        (s,) = d["suggestions"]  # reviewdog's GitHub reporter posts one suggestion per comment
        assert _apply_line_suggestion(SOURCE, s) == apply_fixes(SOURCE, [f], unsafe=True)[0]
    # the finding after "données" (é is 2 bytes in UTF-8): byte column = character column + 1
    lines = SOURCE.splitlines()
    f, d = next((f, d) for f, d in zip(findings, diags) if f.code == "TL805" and f.start.row == 8)
    assert lines[7][f.start.column - 1:].startswith("evaluation_strategy")
    assert d["location"]["range"]["start"] == {"line": 8, "column": f.start.column + 1}
    assert d["location"]["range"]["end"]["column"] == f.end.column + 1


def test_rdjson_fix_with_a_far_import_suggests_the_line_and_names_the_rest():
    source = ("import evaluate\nfrom transformers import Trainer\nmetric = evaluate.load('accuracy')\n\n\n\n"
              "def compute_metrics(p):\n    return metric.compute(predictions=p.predictions, references=p.label_ids)\n\n"
              "trainer = Trainer(model, compute_metrics=compute_metrics)\n")
    findings, text = _render("rdjson", source)
    (d,) = [d for d in json.loads(text)["diagnostics"] if d["code"]["value"] == "TL601"]
    (s,) = d["suggestions"]
    assert s["range"] == {"start": {"line": 8}, "end": {"line": 8}}
    assert s["text"] == "    return metric.compute(predictions=np.argmax(p.predictions, axis=-1), references=p.label_ids)"
    assert "the fix also adds `import numpy as np` at line 3" in d["message"]
    check_rdjson(json.loads(text))


def test_rdjson_empty_run():
    buf = io.StringIO()
    get_writer("rdjson")([], buf, Run())
    doc = json.loads(buf.getvalue())
    check_rdjson(doc)
    assert doc["diagnostics"] == []


# ---------------------------------------------------------------------------------------------
# GitLab Code Quality


def test_gitlab_code_quality_fields():
    findings, text = _render("gitlab")
    issues = json.loads(text)
    assert isinstance(issues, list) and len(issues) == len(findings)
    for f, issue in zip(findings, issues):
        assert issue["check_name"] == f.code
        assert issue["description"].startswith(f.code) and f.message in issue["description"]
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["location"]["path"] == "train.py"
        assert issue["location"]["lines"]["begin"] == f.start.row
        assert isinstance(issue["fingerprint"], str) and len(issue["fingerprint"]) >= 32
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    severities = {f.severity.value: i["severity"] for f, i in zip(findings, issues)}
    assert severities["error"] == "critical"


def test_gitlab_fingerprints_are_stable():
    _, a = _render("gitlab")
    _, b = _render("gitlab", "\n\n" + SOURCE)
    assert [i["fingerprint"] for i in json.loads(a)] == [i["fingerprint"] for i in json.loads(b)]


# ---------------------------------------------------------------------------------------------
# JUnit


def test_junit_one_testcase_and_failure_per_finding():
    findings, text = _render("junit")
    root = ET.fromstring(text)
    assert root.tag == "testsuites" and root.get("failures") == str(len(findings))
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(findings)
    for f, case in zip(findings, cases):
        (failure,) = case.findall("failure")
        assert case.get("classname") == "train.py" and case.get("file") == "train.py"
        assert case.get("line") == str(f.start.row)
        assert f.code in case.get("name")
        assert failure.get("message") == f"{f.code} {f.message}"
        assert f"train.py:{f.start.row}:{f.start.column}: {f.code}" in failure.text
    (suite,) = root.findall("testsuite")
    assert suite.get("tests") == suite.get("failures") == str(len(findings))


def test_junit_clean_run_is_one_passing_case():
    buf = io.StringIO()
    get_writer("junit")([], buf, Run(files_checked=1))
    root = ET.fromstring(buf.getvalue())
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == 1 and not cases[0].findall("failure") and root.get("failures") == "0"


# ---------------------------------------------------------------------------------------------
# Through the CLI, with a notebook in the run.


@pytest.mark.parametrize("fmt", ["sarif", "rdjson", "gitlab", "junit"])
def test_cli_formats_with_a_script_and_a_notebook(fmt, tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["from transformers import TrainingArguments\n",
                                'args = TrainingArguments("out", evaluation_strategy="epoch")']}],
          "metadata": {"kernelspec": {"name": "python3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    proc = run_cli("--output-format", fmt, "train.py", "nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    if fmt == "sarif":
        log = json.loads(proc.stdout)
        validate_sarif(log)
        nb_results = [r for r in log["runs"][0]["results"]
                      if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "nb.ipynb"]
        assert nb_results and nb_results[0]["properties"]["cell"] == 1
        assert nb_results[0]["message"]["text"].startswith("cell 1, line 2:")
        # code scanning wants a region: the file's first line (the message names cell and line)
        assert nb_results[0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    elif fmt == "rdjson":
        doc = json.loads(proc.stdout)
        check_rdjson(doc)
        nb_diag = [d for d in doc["diagnostics"] if d["location"]["path"] == "nb.ipynb"]
        assert nb_diag and "range" not in nb_diag[0]["location"] and "suggestions" not in nb_diag[0]
    elif fmt == "gitlab":
        issues = json.loads(proc.stdout)
        assert {i["location"]["path"] for i in issues} == {"train.py", "nb.ipynb"}
        assert len({i["fingerprint"] for i in issues}) == len(issues)
    else:
        root = ET.fromstring(proc.stdout)
        assert {s.get("name") for s in root.findall("testsuite")} == {"train.py", "nb.ipynb"}


def _github_annotations(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    """(level, properties, message) of each workflow command, unescaped as GitHub reads them."""
    def unescape(v: str) -> str:
        return v.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")

    out = []
    for line in stdout.splitlines():
        head, _, message = line[2:].partition("::")
        level, _, props = head.partition(" ")
        out.append((level, {k: unescape(v) for k, v in (p.split("=", 1) for p in props.split(","))}, unescape(message)))
    return out


NOTEBOOK_CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Fine-tuning\n", "on MNLI"]},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": ["from transformers import AutoModelForSequenceClassification, TrainingArguments\n",
                "from datasets import load_dataset\n",
                "raw = load_dataset(\"glue\", \"mnli\")\n",
                "model = AutoModelForSequenceClassification.from_pretrained(\"bert-base-cased\")\n"]},
    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
     "source": "# one string, not a list of lines\nargs = TrainingArguments(\"out\", evaluation_strategy=\"epoch\")\n"},
]


@pytest.mark.parametrize("layout", ["indent 1", "compact"])
def test_github_annotations_of_a_notebook_name_the_cell_and_the_files_line(layout, tmp_path):
    """The cell's row is no line of the .ipynb: the annotation names cell and row (title and message),
    and sits on the line of the notebook's JSON that holds that row, without a column."""
    nb = {"cells": NOTEBOOK_CELLS, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1) if layout == "indent 1" else json.dumps(nb, separators=(",", ":"))
    (tmp_path / "nb.ipynb").write_text(text)
    proc = run_cli("--output-format", "github", "nb.ipynb", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    annotations = {props["title"].split()[0]: (level, props, message)
                   for level, props, message in _github_annotations(proc.stdout)}
    assert set(annotations) == {"TL301", "TL805"}
    lines = text.splitlines()

    level, props, message = annotations["TL301"]
    assert level == "error" and props["file"] == "nb.ipynb"
    assert props["title"] == "TL301 missing-num-labels (cell 2, line 4)"
    assert message.startswith("TL301 cell 2, line 4: `AutoModelForSequenceClassification.from_pretrained`")
    assert "col" not in props and "endColumn" not in props
    if layout == "compact":
        assert props["line"] == props["endLine"] == "1" and len(lines) == 1
    else:  # the line of the file that holds row 4 of cell 2
        assert 'model = AutoModelForSequenceClassification.from_pretrained(\\"bert-base-cased\\")' in lines[int(props["line"]) - 1]

    level, props, message = annotations["TL805"]
    assert props["title"] == "TL805 evaluation-strategy-argument (cell 3, line 2)"
    assert message.startswith("TL805 cell 3, line 2: ")
    # a source written as one string: its rows all stand on the string's line
    assert "evaluation_strategy" in lines[int(props["line"]) - 1]


def test_notebook_source_row_lines():
    from trainlint.notebook import source_row_lines

    nb = {"cells": [{"cell_type": "markdown", "source": ["a\n", "b"]},
                    {"cell_type": "code", "source": ["x = 1\n", "y = 2\nz = 3\n", "w = 4"]},
                    {"cell_type": "code", "source": "p = 1\nq = 2"},
                    {"cell_type": "code", "source": []}]}
    text = json.dumps(nb, indent=2)
    rows = source_row_lines(text)
    lines = text.splitlines()
    assert [lines[n - 1].strip() for n in rows[2]] == ['"x = 1\\n",', '"y = 2\\nz = 3\\n",', '"y = 2\\nz = 3\\n",', '"w = 4"']
    assert len(rows[3]) == 2 and len(set(rows[3])) == 1 and '"p = 1' in lines[rows[3][0] - 1]
    assert len(rows[4]) == 1
    assert source_row_lines(json.dumps(nb)) == {1: [1, 1], 2: [1, 1, 1, 1], 3: [1, 1], 4: [1]}
    assert source_row_lines("not json") == {}


def test_format_names_are_registered():
    from trainlint.cli import FORMAT_NAMES
    from trainlint.formats import FORMATS

    assert {"rdjson", "gitlab", "junit", "sarif", "github"} <= set(FORMAT_NAMES) == set(FORMATS)


def test_ci_doc_workflow_is_ready():
    text = (ROOT / "docs" / "ci.md").read_text()
    assert "github/codeql-action/upload-sarif" in text and "security-events: write" in text
    assert "--output-format sarif" in text and "reviewdog -f=rdjson" in text
    assert "--output-format rdjson" in text and "--output-format gitlab" in text
