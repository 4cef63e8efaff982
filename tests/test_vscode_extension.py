"""The VS Code extension's manifest and source agree with trainlint: its settings are the
configuration's keys (and the server accepts them), its commands are registered, the language
server it starts is `trainlint server`. The extension running in a real VS Code: test_vscode_e2e.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

from trainlint.config import KNOWN_KEYS
from trainlint.findings import Severity

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "editors" / "vscode"
MANIFEST = json.loads((EXT / "package.json").read_text(encoding="utf-8"))
SOURCE = (EXT / "src" / "extension.ts").read_text(encoding="utf-8")


def test_settings_mirror_the_configuration():
    props = MANIFEST["contributes"]["configuration"]["properties"]
    assert props["trainlint.failOn"]["enum"] == [s.value for s in Severity]
    assert props["trainlint.failOn"]["default"] == "warning"
    # the keys the extension sends the server are [tool.trainlint] keys
    sent = set(re.findall(r'table\["([\w-]+)"\]', SOURCE))
    assert sent == {"select", "ignore", "fail-on"} and sent <= KNOWN_KEYS
    for key in ("trainlint.interpreter", "trainlint.select", "trainlint.ignore", "trainlint.args"):
        assert key in props


def test_commands_are_declared_and_registered():
    declared = {c["command"] for c in MANIFEST["contributes"]["commands"]}
    registered = set(re.findall(r'registerCommand\("([\w.]+)"', SOURCE))
    assert declared == registered == {"trainlint.fixAll", "trainlint.showRule", "trainlint.probeFile", "trainlint.restart"}


def test_it_starts_the_language_server_and_probes_with_the_cli():
    assert '["-m", "trainlint", "server"]' in SOURCE
    assert '"--probe", "--output-format", "json"' in SOURCE
    # the code action kinds it asks for are the server's
    from trainlint.server import FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND

    assert f'"{FIX_ALL_KIND}"' in SOURCE and f'"{NOTEBOOK_FIX_ALL_KIND}"' in SOURCE


def test_the_package_is_reproducible():
    lock = json.loads((EXT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["dependencies"] == MANIFEST["dependencies"]
    ignored = (EXT / ".gitignore").read_text(encoding="utf-8").split()
    assert {"node_modules/", "*.vsix"} <= set(ignored)
    assert "vsce package" in (ROOT / "scripts" / "build-vscode").read_text(encoding="utf-8")
