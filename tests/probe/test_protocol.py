"""The probe protocol (``trainlint.probe.protocol``): every event survives the channel's encoding, a
malformed line cannot break the parent, the sandbox init's first line has the fields of its event, and a
child that speaks another version of the protocol is stopped and reported as such. Fast: no framework."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trainlint.findings import Finding, Position, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, protocol
from trainlint.probe.child import sandbox_init
from trainlint.probe.parent.channel import Child
from trainlint.probe.parent.report import finish

EVENTS = [
    protocol.Hello("3.11.7", "CPython", protocol.PROTOCOL_VERSION),
    protocol.Versions({"torch": "2.13.0"}),
    protocol.Phase("batching"),
    protocol.Finding("TL106", "labels out of range", "2×400", 12, ("TL301",), "error"),
    protocol.Checked(("TL201", "TL207")),
    protocol.Incomplete("weights move", "no optimizer step observed", ("TL506",)),
    protocol.Note("a note"),
    protocol.Detail("line 1\nline 2"),
    protocol.End("reached-training", "stopped at trainer.train()", 30, 1.5),
    protocol.Sandbox("unshare", False, ("/mnt",), ("/tmp",), ("/root/.cache",)),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.TYPE)
def test_every_event_survives_the_channel(event):
    line = protocol.encode(event, key="k1")
    data = json.loads(line)
    assert data.pop("k") == "k1" and data["type"] == event.TYPE
    assert protocol.decode(data) == event


def test_the_event_types_are_the_protocol_documents_table():
    doc = (Path(protocol.__file__).parent / "PROTOCOL.md").read_text(encoding="utf-8")
    for kind in protocol.EVENT_TYPES:
        assert f"| `{kind}` |" in doc, f"PROTOCOL.md does not describe the `{kind}` event"


def test_a_malformed_event_decodes_to_defaults_never_an_error():
    got = protocol.decode({"type": "finding", "code": 7, "line": "x", "confirms": "TL301", "severity": None})
    assert got == protocol.Finding("7", "", "", None, (), None)
    assert protocol.decode({"type": "no-such-event"}) is None
    assert protocol.decode({"type": "hello"}) == protocol.Hello("?", "", 1)  # before versions were sent


def test_the_configuration_round_trips_and_ignores_unknown_keys():
    config = protocol.Config(script="/p/train.py", argv=["/p/train.py", "--x"], workdir="/w", overfit=3,
                             plugins=["a.b"], static_codes=["TL201"], key="secret")
    again = protocol.Config.from_json(config.to_json())
    assert again == config
    data = json.loads(config.to_json())
    data["from_a_newer_parent"] = 1
    assert protocol.Config.from_json(json.dumps(data)) == config


def test_the_sandbox_inits_first_line_has_the_fields_of_its_event(tmp_path):
    """The init cannot import the protocol module (``python -I -S``): its line must still decode."""
    read, write = os.pipe()
    spec = {"kind": "none", "events_fd": write, "parent_pid": os.getpid(), "argv": ["/bin/true"],
            "cwd": str(tmp_path), "work": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-I", "-S", sandbox_init.__file__, json.dumps(spec)], pass_fds=(write,),
                          timeout=30)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as f:
        data = json.loads(f.readline())
    assert proc.returncode == 0
    fields = {f.name for f in dataclasses.fields(protocol.Sandbox)}
    assert data["type"] == "sandbox" and set(data) - {"type"} <= fields, data
    assert protocol.decode(data) == protocol.Sandbox("none", pid_ns=False)


FOREIGN_CHILD = textwrap.dedent("""
    import json, os, sys, time
    cfg, events, _ = (int(x) for x in sys.argv[1].split(","))
    key = json.loads(os.read(cfg, 1 << 16))["key"]
    out = os.fdopen(events, "w", buffering=1)
    out.write(json.dumps({"type": "hello", "python": "3.11", "k": key}) + "\\n")  # no version: an old child
    out.write(json.dumps({"type": "finding", "code": "TL201", "message": "m", "k": key}) + "\\n")
    time.sleep(60)
""")


def test_a_child_of_another_protocol_version_is_stopped_and_not_believed(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("a = 1\n", encoding="utf-8")
    config = protocol.Config(script=str(script), argv=[str(script)], workdir=str(tmp_path))
    started = time.monotonic()
    child = Child(lambda fds: [sys.executable, "-c", FOREIGN_CHILD, ",".join(map(str, fds))], dict(os.environ),
                  config, "none")
    got = child.collect(30)
    assert time.monotonic() - started < 20  # stopped at its first line, not at the deadline
    assert got.foreign_protocol == 1
    static = Finding("TL201", "static", "static TL201", Severity.ERROR, str(script), Position(1, 1), Position(1, 2))
    report = finish(script, script, [static], ProbeOptions(), got, "not isolated: test", False, started)
    assert report.outcome == "protocol-mismatch" and not report.complete
    assert [f.probe.status for f in report.findings] == [ProbeStatus.NOT_REACHED]  # its finding is not used
    assert any(f"version 1 of the probe protocol, this trainlint version {protocol.PROTOCOL_VERSION}" in n
               for n in report.notes), report.notes
