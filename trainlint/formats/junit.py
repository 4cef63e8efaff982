"""JUnit XML for CI test reports (Jenkins, GitLab ``reports: junit``, Azure, CircleCI): one
``<testsuite>`` per file with findings, one ``<testcase>`` with one ``<failure>`` per finding
(``file`` and ``line`` attributes point at it). A clean run is one passing test case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from trainlint.findings import Finding
from trainlint.formats import Run
from trainlint.formats.concise import location


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    root = ET.Element("testsuites", name="trainlint", tests=str(max(len(findings), 1)),
                      failures=str(len(findings)), errors="0")
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.filename, []).append(f)
    if not findings:
        suite = ET.SubElement(root, "testsuite", name="trainlint", tests="1", failures="0", errors="0", skipped="0")
        ET.SubElement(suite, "testcase", name="trainlint", classname="trainlint")
    for filename, items in by_file.items():
        suite = ET.SubElement(root, "testsuite", name=filename, tests=str(len(items)), failures=str(len(items)),
                              errors="0", skipped="0")
        for f in items:
            where = f"cell {f.cell}:" if f.cell is not None else ""
            case = ET.SubElement(suite, "testcase", name=f"{f.code} {f.name} ({where}{f.start.row}:{f.start.column})",
                                 classname=filename, file=filename, line=str(f.start.row))
            failure = ET.SubElement(case, "failure", message=f"{f.code} {f.message}", type=f.severity.value)
            text = f"{location(f)}: {f.code} {f.message}"
            if f.hint:
                text += f"\nfix: {f.hint}"
            failure.text = text + f"\ndocs: {f.url}"
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
