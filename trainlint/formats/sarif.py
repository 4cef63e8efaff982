"""SARIF 2.1.0 (GitHub code scanning): rule metadata with help text, results with fingerprints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from trainlint import __version__
from trainlint.docs import load_doc, rule_url
from trainlint.findings import Finding
from trainlint.formats import Run
from trainlint.formats.fingerprint import fingerprints
from trainlint.rule import all_rules

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _rule_descriptor(code: str) -> dict:
    rule = all_rules()[code]
    doc = load_doc(code)
    help_md = ""
    if doc is not None:
        help_md = "\n\n".join(f"## {k}\n{v.strip()}" for k, v in doc.sections.items() if k in ("What it catches", "Why it hurts", "Use instead"))
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": rule.summary()},
        "helpUri": rule_url(code),
        "help": {"text": help_md or rule.summary(), "markdown": help_md or rule.summary()},
        "defaultConfiguration": {"level": _LEVEL[rule.severity.value], "enabled": rule.default},
        "properties": {
            "tags": [rule.stage().label],
            "probe": bool(rule.probe),
            # GitHub code scanning: how sure the rule is, and how it ranks the alert
            "precision": "very-high" if rule.severity.value == "error" else "high",
            "problem.severity": {"error": "error", "warning": "warning", "info": "recommendation"}[rule.severity.value],
            **({"fix": rule.fix.value} if rule.fix else {}),
        },
    }


def _uri(filename: str) -> str:
    p = Path(filename)
    return p.as_posix() if not p.is_absolute() else p.as_uri()


def _artifact(filename: str) -> dict:
    uri = _uri(filename)
    return {"uri": uri} if ":" in uri else {"uri": uri, "uriBaseId": "%SRCROOT%"}


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    codes = sorted({f.code for f in findings})
    index = {c: i for i, c in enumerate(codes)}
    results = []
    for f, fingerprint in zip(findings, fingerprints(findings, run)):
        if f.cell is not None:  # a notebook: rows are within a cell; the result points at the file's top
            results.append({
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": _LEVEL[f.severity.value],
                "message": {"text": f"cell {f.cell}, line {f.start.row}: {f.message}" + (f" Fix: {f.hint}" if f.hint else "")},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact(f.filename),
                                                    "region": {"startLine": 1}}}],
                "partialFingerprints": {"trainlintFinding/v1": fingerprint},
                "properties": {"cell": f.cell, "cellLine": f.start.row, "cellColumn": f.start.column},
            })
            continue
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL[f.severity.value],
            "message": {"text": f.message + (f" Fix: {f.hint}" if f.hint else "")},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _artifact(f.filename),
                    "region": {"startLine": f.start.row, "startColumn": f.start.column,
                               "endLine": f.end.row, "endColumn": f.end.column},
                }
            }],
            "partialFingerprints": {"trainlintFinding/v1": fingerprint},
        }
        if f.probe is not None:
            result["properties"] = {"probe": f.probe.to_json()}
        if f.fix is not None:
            result["fixes"] = [{
                "description": {"text": f"{f.fix.message} ({f.fix.applicability.value} fix)"},
                "artifactChanges": [{
                    "artifactLocation": _artifact(f.filename),
                    "replacements": [{
                        "deletedRegion": {"startLine": e.start.row, "startColumn": e.start.column,
                                          "endLine": e.end.row, "endColumn": e.end.column},
                        "insertedContent": {"text": e.content},
                    } for e in f.fix.edits],
                }],
            }]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "trainlint",
                "version": __version__,
                "informationUri": "https://github.com/trainlint/trainlint",
                "rules": [_rule_descriptor(c) for c in codes],
            }},
            "results": results,
            # trainlint counts columns in characters (code points), not SARIF's default UTF-16 units
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
        }],
    }
    json.dump(log, out, indent=2)
    out.write("\n")
