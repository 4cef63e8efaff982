"""The language server end to end: a real LSP client (pytest-lsp) talking over stdio to
`python -m trainlint server` in a child process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from trainlint.config import load_settings
from trainlint.docs import doc_text, rule_url
from trainlint.rule import get_rule

ROOT = Path(__file__).resolve().parent.parent
BUGGY = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")
DEBOUNCE_MS = 50




def make_client() -> LanguageClient:
    """pytest-lsp's client, also recording every publishDiagnostics and capability registration."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]

    def publish(ls: LanguageClient, params: lsp.PublishDiagnosticsParams):
        ls.diagnostics[params.uri] = params.diagnostics
        ls.published.append(params)

    def register(ls: LanguageClient, params: lsp.RegistrationParams):
        ls.registrations.extend(params.registrations)

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
                                   lsp.CLIENT_REGISTER_CAPABILITY: register})
    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "trainlint", "server"], client_factory=make_client))
async def server(lsp_client: LanguageClient, tmp_path_factory):
    """One server for the module (it starts in ~2 s); each test works in its own directory."""
    root = tmp_path_factory.mktemp("workspace")
    caps = client_capabilities("visual-studio-code")  # VS Code 1.65; later releases also sync notebooks
    caps.notebook_document = lsp.NotebookDocumentClientCapabilities(
        synchronization=lsp.NotebookDocumentSyncClientCapabilities(dynamic_registration=True,
                                                                   execution_summary_support=True))
    result = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=caps,
        root_uri=from_fs_path(str(root)),
        workspace_folders=[lsp.WorkspaceFolder(uri=from_fs_path(str(root)), name="project")],
        initialization_options={"debounce": DEBOUNCE_MS},
    ))
    lsp_client.capabilities = result.capabilities  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest_asyncio.fixture(loop_scope="module")
async def client(server: LanguageClient, tmp_path: Path):
    server.workdir = tmp_path  # type: ignore[attr-defined]
    server.opened = []  # type: ignore[attr-defined]
    server.published.clear()
    yield server
    for uri in server.opened:  # leave the server with no document open
        server.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))


# ---------------------------------------------------------------------------------------------
# helpers


async def diagnostics_for(client: LanguageClient, uri: str, version: int | None = None, timeout: float = 30):
    """Wait for the next publishDiagnostics of ``uri`` (of ``version`` when given), from the ones the
    client records. (pytest-lsp's ``wait_for_notification`` keeps one waiter per method: a second
    waiter, or two notifications in a row, would lose one.)"""
    start = len(client.published)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for params in client.published[start:]:
            if params.uri == uri and (version is None or params.version == version):
                return params.diagnostics
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no diagnostics for {uri} (version {version})")
        await asyncio.sleep(0.005)


async def open_doc(client: LanguageClient, text: str, name: str = "train.py") -> tuple[str, list[lsp.Diagnostic]]:
    path = client.workdir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="surrogateescape")  # '\udcff' is the byte 0xff on disk
    uri = from_fs_path(str(path))
    waiter = asyncio.ensure_future(diagnostics_for(client, uri))
    await asyncio.sleep(0)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    client.opened.append(uri)
    return uri, await waiter


async def change(client: LanguageClient, uri: str, version: int, text: str,
                 range_: lsp.Range | None = None) -> list[lsp.Diagnostic]:
    waiter = asyncio.ensure_future(diagnostics_for(client, uri, version))
    await asyncio.sleep(0)
    event = (lsp.TextDocumentContentChangeWholeDocument(text=text) if range_ is None
             else lsp.TextDocumentContentChangePartial(range=range_, text=text))
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[event]))
    return await waiter


def where(text: str, needle: str, nth: int = 0) -> lsp.Range:
    """The LSP range (0-based, UTF-16) of the ``nth`` occurrence of ``needle``."""
    idx = -1
    for _ in range(nth + 1):
        idx = text.index(needle, idx + 1)
    line = text.count("\n", 0, idx)
    col = idx - (text.rfind("\n", 0, idx) + 1)
    prefix = text.splitlines()[line][:col]
    u16 = len(prefix.encode("utf-16-le")) // 2
    return lsp.Range(start=lsp.Position(line=line, character=u16),
                     end=lsp.Position(line=line, character=u16 + len(needle.encode("utf-16-le")) // 2))


def apply_text_edits(text: str, edits) -> str:
    """What an editor does with TextEdits (lines end at \\n, \\r\\n or \\r only; UTF-16 columns on
    BMP text are code points)."""
    import re

    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def off(p: lsp.Position) -> int:
        return starts[p.line] + p.character if p.line < len(lines) else len(text)

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:off(e.range.start)] + e.new_text + text[off(e.range.end):]
    return text


def by_code(diags, code: str) -> list[lsp.Diagnostic]:
    return [d for d in diags if d.code == code]


async def code_actions(client, uri, range_, only=None, diagnostics=()):
    return await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=range_,
        context=lsp.CodeActionContext(diagnostics=list(diagnostics), only=only)))


# ---------------------------------------------------------------------------------------------
# diagnostics


@pytest.mark.asyncio(loop_scope="module")
async def test_diagnostics_on_open(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    assert sorted(d.code for d in diags) == ["TL101", "TL101", "TL201", "TL301", "TL601", "TL805"]
    for d in diags:
        assert d.source == "trainlint"
        assert d.code_description.href == rule_url(d.code)
        assert d.severity == lsp.DiagnosticSeverity.Error  # these rules are errors
    (tl805,) = by_code(diags, "TL805")
    assert tl805.range == where(BUGGY, "evaluation_strategy")  # exact, 0-based
    assert "eval_strategy" in tl805.message and tl805.message.startswith("`TrainingArguments(evaluation_strategy")
    (tl301,) = by_code(diags, "TL301")
    assert tl301.range == where(BUGGY, "AutoModelForSequenceClassification.from_pretrained")
    assert "hint: pass `num_labels=3`" in tl301.message


@pytest.mark.asyncio(loop_scope="module")
async def test_path_with_spaces_and_non_ascii(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY, "my project/entraînement.py")
    assert "%20" in uri
    assert sorted(d.code for d in diags) == ["TL101", "TL101", "TL201", "TL301", "TL601", "TL805"]


@pytest.mark.asyncio(loop_scope="module")
async def test_severity_information_and_warning(client: LanguageClient):
    text = ("import torch\nfrom transformers import AutoModelForSequenceClassification\n"
            "model = AutoModelForSequenceClassification.from_pretrained('bert-base-uncased', num_labels=2)\n"
            "optimizer = torch.optim.AdamW(model.parameters())\n")
    uri, diags = await open_doc(client, text)
    expected = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
                "info": lsp.DiagnosticSeverity.Information}
    assert diags, "TL502 expected"
    for d in diags:
        assert d.severity == expected[get_rule(d.code).severity.value]


@pytest.mark.asyncio(loop_scope="module")
async def test_utf16_columns(client: LanguageClient):
    text = ("from transformers import TrainingArguments\n"
            "args = TrainingArguments('😀 out', evaluation_strategy='epoch')\n")
    uri, diags = await open_doc(client, text)
    (d,) = by_code(diags, "TL805")
    assert d.range == where(text, "evaluation_strategy")
    assert d.range.start.character == text.splitlines()[1].index("evaluation") + 1  # the emoji is 2 units


@pytest.mark.asyncio(loop_scope="module")
async def test_update_after_change_and_stale_runs_dropped(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    assert by_code(diags, "TL805")
    client.published.clear()
    # three quick edits: only the last version is linted and published (debounce, stale runs cancelled)
    r = where(BUGGY, "evaluation_strategy")
    fixed = BUGGY.replace("evaluation_strategy", "eval_strategy", 1)
    for version, text in ((2, BUGGY.replace("evaluation_strategy", "evaluation_strateg", 1)),
                          (3, BUGGY.replace("evaluation_strategy", "evaluation_strate", 1))):
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    diags = await change(client, uri, 4, "eval_strategy",
                         lsp.Range(start=r.start, end=lsp.Position(line=r.start.line, character=r.start.character + 17)))
    assert not by_code(diags, "TL805")
    assert sorted(d.code for d in diags) == ["TL101", "TL101", "TL201", "TL301", "TL601"]
    await asyncio.sleep(DEBOUNCE_MS / 1000 * 3)
    assert [p.version for p in client.published] == [4]
    # the server's text equals the client's: ranges after the edit are still exact
    assert by_code(diags, "TL301")[0].range == where(fixed, "AutoModelForSequenceClassification.from_pretrained")


@pytest.mark.asyncio(loop_scope="module")
async def test_many_edits_give_the_diagnostics_of_a_fresh_lint(client: LanguageClient):
    """The server re-parses only the statements an edit touched: after a series of edits (lines
    added above the findings, inside main(), at the end) the diagnostics are those of a fresh lint."""
    from trainlint.engine import lint_text

    uri, diags = await open_doc(client, BUGGY)
    text = BUGGY
    edits = [("def main():", "# a new comment line\n"),  # (insert before the line, text)
             ("    tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)", "    extra = 1\n"),
             ('"""Fine-tune a BERT-style model on MNLI with the Trainer', "import os\n"),
             ('if __name__ == "__main__":', "def helper():\n    return 2\n\n\n"),
             ('        save_strategy="epoch",', "        logging_steps=10,\n")]
    version = 1
    for anchor, insert in edits:
        version += 1
        row = text.split("\n").index(anchor) if not anchor.startswith('"""') else 0
        offset = sum(len(x) + 1 for x in text.split("\n")[:row])
        text = text[:offset] + insert + text[offset:]
        diags = await change(client, uri, version, insert,
                             lsp.Range(start=lsp.Position(line=row, character=0), end=lsp.Position(line=row, character=0)))
    path = client.workdir / "train.py"
    expected = lint_text(text, str(path), load_settings(None, start=path.parent)).findings
    assert [(d.code, d.range.start.line + 1, d.range.start.character + 1, d.range.end.line + 1, d.range.end.character + 1)
            for d in diags] == [(f.code, f.start.row, f.start.column, f.end.row, f.end.column) for f in expected]
    assert len(expected) == 6


@pytest.mark.asyncio(loop_scope="module")
async def test_diagnostics_on_save(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    waiter = asyncio.ensure_future(diagnostics_for(client, uri))
    await asyncio.sleep(0)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    again = await waiter
    assert sorted(d.code for d in again) == sorted(d.code for d in diags)


@pytest.mark.asyncio(loop_scope="module")
async def test_cleared_on_close(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    assert diags
    waiter = asyncio.ensure_future(diagnostics_for(client, uri))
    await asyncio.sleep(0)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert list(await waiter) == []
    assert list(client.diagnostics[uri]) == []


# ---------------------------------------------------------------------------------------------
# code actions


@pytest.mark.asyncio(loop_scope="module")
async def test_apply_fix_action(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    (tl805,) = by_code(diags, "TL805")
    actions = await code_actions(client, uri, tl805.range, diagnostics=[tl805])
    fixes = [a for a in actions if a.title.startswith("Fix TL805")]
    assert len(fixes) == 1
    fix = fixes[0]
    assert fix.title.endswith("(safe fix)") and fix.is_preferred and fix.kind == lsp.CodeActionKind.QuickFix
    assert fix.diagnostics[0].code == "TL805"
    new = apply_text_edits(BUGGY, fix.edit.changes[uri])
    assert new == BUGGY.replace("evaluation_strategy=", "eval_strategy=", 1)
    diags = await change(client, uri, 2, new)
    assert not by_code(diags, "TL805") and len(diags) == 5


@pytest.mark.asyncio(loop_scope="module")
async def test_unsafe_fix_is_marked(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    (tl601,) = by_code(diags, "TL601")
    actions = await code_actions(client, uri, tl601.range, only=[lsp.CodeActionKind.QuickFix])
    titles = [a.title for a in actions]
    assert any(t.startswith("Fix TL601") and t.endswith("(unsafe fix)") for t in titles), titles
    assert all(a.kind == lsp.CodeActionKind.QuickFix for a in actions)


@pytest.mark.asyncio(loop_scope="module")
async def test_noqa_action(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    (tl805,) = by_code(diags, "TL805")
    actions = await code_actions(client, uri, tl805.range)
    (noqa,) = [a for a in actions if "noqa" in a.title]
    assert noqa.title == "Disable TL805 for this line (# noqa: TL805)"
    new = apply_text_edits(BUGGY, noqa.edit.changes[uri])
    line = new.splitlines()[tl805.range.start.line]
    assert line == '        evaluation_strategy="epoch",  # bug: gone since transformers 4.51  # noqa: TL805'
    diags = await change(client, uri, 2, new)
    assert not by_code(diags, "TL805") and len(diags) == 5


@pytest.mark.asyncio(loop_scope="module")
async def test_noqa_action_extends_an_existing_noqa(client: LanguageClient):
    text = BUGGY.replace('evaluation_strategy="epoch",  # bug: gone since transformers 4.51',
                         'evaluation_strategy="epoch",  # noqa: E501')
    uri, diags = await open_doc(client, text)
    (tl805,) = by_code(diags, "TL805")
    actions = await code_actions(client, uri, tl805.range)
    (noqa,) = [a for a in actions if "noqa" in a.title]
    new = apply_text_edits(text, noqa.edit.changes[uri])
    assert new.splitlines()[tl805.range.start.line] == '        evaluation_strategy="epoch",  # noqa: E501, TL805'
    diags = await change(client, uri, 2, new)
    assert not by_code(diags, "TL805")


@pytest.mark.asyncio(loop_scope="module")
async def test_fix_all_safe_fixes(client: LanguageClient):
    from trainlint.fixes import fix_text

    uri, diags = await open_doc(client, BUGGY)
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
    actions = await code_actions(client, uri, whole, only=["source.fixAll"])
    assert [a.kind for a in actions] == ["source.fixAll.trainlint"]
    new = apply_text_edits(BUGGY, actions[0].edit.changes[uri])
    path = client.workdir / "train.py"
    assert new == fix_text(BUGGY, str(path), load_settings(None, start=path.parent))  # the CLI's --fix
    assert "eval_strategy=" in new and "evaluation_strategy" not in new
    diags = await change(client, uri, 2, new)
    assert not by_code(diags, "TL805")
    assert {d.code for d in diags} >= {"TL301", "TL601", "TL201"}  # unsafe fixes are not applied
    # a file without safe fixes: the action is offered but edits nothing
    uri2, _ = await open_doc(client, "import torch\nx = torch.zeros(2)\n", "clean.py")
    (action,) = await code_actions(client, uri2, whole, only=[FIX_ALL := "source.fixAll.trainlint"])
    assert action.kind == FIX_ALL and list(action.edit.changes[uri2]) == []


#: two safe fixes of several edits each that meet at one point: both add an import after the last one
TWO_FIXES = (
    "# /// script\n"
    '# dependencies = ["datasets", "evaluate", "torch", "transformers"]\n'
    "# ///\n"
    "import datasets\n"
    "import transformers\n"
    "\n"
    'metric = datasets.load_metric("accuracy")\n'
    "opt = transformers.AdamW(params, lr=1e-3)\n"
)


@pytest.mark.asyncio(loop_scope="module")
async def test_fix_all_applies_each_fix_whole(client: LanguageClient):
    """The editor's "fix all" applies a fix of several edits whole or not at all, as `--fix` does: the
    fix that meets another waits for the next request instead of losing its import."""
    from trainlint import lint_source
    from trainlint.fixes import apply_fixes

    uri, diags = await open_doc(client, TWO_FIXES)
    assert {d.code for d in diags} == {"TL801", "TL802"}
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
    (action,) = await code_actions(client, uri, whole, only=["source.fixAll"])
    new = apply_text_edits(TWO_FIXES, action.edit.changes[uri])
    path = client.workdir / "train.py"
    findings = lint_source(TWO_FIXES, str(path), load_settings(None, start=path.parent))
    assert new == apply_fixes(TWO_FIXES, findings)[0]  # the one edit-application path
    assert "import evaluate\n" in new and "evaluate.load(" in new  # TL801's fix, whole
    assert "torch" not in new.split("# ///", 2)[-1] and "transformers.AdamW(params, lr=1e-3)" in new  # TL802 waits
    diags = await change(client, uri, 2, new)
    assert [d.code for d in diags] == ["TL802"]
    (action,) = await code_actions(client, uri, whole, only=["source.fixAll"])
    new = apply_text_edits(new, action.edit.changes[uri])
    assert "import torch\n" in new and "torch.optim.AdamW(params, lr=1e-3, eps=1e-6, weight_decay=0.0)" in new
    compile(new, "train.py", "exec")
    assert list(await change(client, uri, 3, new)) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_quick_fix_applies_the_whole_fix(client: LanguageClient):
    """A quick fix is the finding's fix through the same path: every edit of it, the import included."""
    uri, diags = await open_doc(client, TWO_FIXES)
    (tl802,) = by_code(diags, "TL802")
    actions = await code_actions(client, uri, tl802.range, only=[lsp.CodeActionKind.QuickFix])
    (fix,) = [a for a in actions if a.title.startswith("Fix TL802")]
    new = apply_text_edits(TWO_FIXES, fix.edit.changes[uri])
    assert "import torch\n" in new and "torch.optim.AdamW(params, lr=1e-3, eps=1e-6, weight_decay=0.0)" in new
    assert "datasets.load_metric(" in new  # the other fix is not applied
    diags = await change(client, uri, 2, new)
    assert [d.code for d in diags] == ["TL801"]


@pytest.mark.asyncio(loop_scope="module")
async def test_fix_all_with_form_feed_and_crlf(client: LanguageClient):
    """A form feed (\\x0c) is not a line break for LSP, `\\r\\n` is one: the edit lands on the right line."""
    text = ("import torch\r\n# section one\x0c\r\nfrom transformers import TrainingArguments\r\n"
            "args = TrainingArguments('out', evaluation_strategy='epoch')\r\nx = 1\r\n")
    uri, diags = await open_doc(client, text)
    assert [d.range.start.line for d in diags] == [3]
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
    (action,) = await code_actions(client, uri, whole, only=["source.fixAll"])
    assert apply_text_edits(text, action.edit.changes[uri]) == text.replace("evaluation_strategy", "eval_strategy")


# ---------------------------------------------------------------------------------------------
# hover


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_shows_the_rule_document(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    for code in ("TL805", "TL301"):
        (d,) = by_code(diags, code)
        hover = await client.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=d.range.start))
        assert hover.contents.kind == lsp.MarkupKind.Markdown
        body = doc_text(code) or get_rule(code).summary()
        assert body.strip() in hover.contents.value
        assert hover.contents.value.startswith(f"# {code} {get_rule(code).name}")
        assert f"]({rule_url(code)})" in hover.contents.value
    nothing = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=0)))
    assert nothing is None


# ---------------------------------------------------------------------------------------------
# broken documents


@pytest.mark.asyncio(loop_scope="module")
async def test_syntax_error_mid_edit_keeps_answering(client: LanguageClient):
    uri, diags = await open_doc(client, BUGGY)
    broken = BUGGY.replace("    args = TrainingArguments(\n", "    args = TrainingArguments(((\n", 1)
    diags = await change(client, uri, 2, broken)
    assert [d.code for d in diags] == ["TL001"]
    assert diags[0].source == "trainlint" and diags[0].code_description.href == rule_url("TL001")
    # still answering requests on the broken text
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=diags[0].range.start))
    assert hover is not None and "TL001" in hover.contents.value
    actions = await code_actions(client, uri, diags[0].range)
    assert not any("noqa" in a.title for a in actions)  # a syntax error cannot be silenced
    # and back to normal once the edit is complete
    diags = await change(client, uri, 3, BUGGY)
    assert len(diags) == 6


@pytest.mark.parametrize("text,message", [
    ("import torch\nx = 1\x00\n", "NUL character on line 2"),
    ("import torch\ns = '\udcff'\n", "lone surrogate on line 2"),
    ("import torch\n" + "x = 1\n" * 400_000, "too large for the language server"),
    ("import torch\nx = " + "(" * 5000 + ")" * 5000 + "\n", "too many nested parentheses"),
    ("import torch\nx = " + "[" * 300 + "]" * 300 + "\n", "too many nested parentheses"),
])
@pytest.mark.asyncio(loop_scope="module")
async def test_odd_documents_give_one_meta_diagnostic(client: LanguageClient, text: str, message: str):
    uri, diags = await open_doc(client, text)
    assert len(diags) == 1 and diags[0].code in ("TL001", "TL002", "TL003")
    assert message in diags[0].message
    # the server is alive and lints the next document
    uri2, diags2 = await open_doc(client, BUGGY, "other.py")
    assert len(diags2) == 6


@pytest.mark.asyncio(loop_scope="module")
async def test_non_python_documents_are_ignored(client: LanguageClient):
    path = client.workdir / "notes.md"
    uri = from_fs_path(str(path))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=BUGGY)))
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=28, character=10)))
    assert hover is None and uri not in client.diagnostics


@pytest.mark.asyncio(loop_scope="module")
async def test_notebook_cells_tolerate_magics(client: LanguageClient):
    """VS Code sends each notebook cell as a document (`vscode-notebook-cell:` URI): `%%time`,
    `!pip` lines are not Python, and must not be reported as syntax errors."""
    cell = ("%%time\n"
            "from transformers import TrainingArguments\n"
            "!pip install transformers\n"
            "args = TrainingArguments('out', evaluation_strategy='epoch')\n")
    uri = "vscode-notebook-cell:" + str(client.workdir / "course.ipynb") + "#W2sZmlsZQ%3D%3D"
    waiter = asyncio.ensure_future(diagnostics_for(client, uri))
    await asyncio.sleep(0)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=cell)))
    client.opened.append(uri)
    diags = await waiter
    assert [(d.code, d.range) for d in diags] == [("TL805", where(cell, "evaluation_strategy"))]
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
    (action,) = await code_actions(client, uri, whole, only=["source.fixAll.trainlint"])
    assert apply_text_edits(cell, action.edit.changes[uri]) == cell.replace("evaluation_strategy", "eval_strategy")
    # the notebook's own configuration applies to its cells
    (client.workdir / "pyproject.toml").write_text(
        '[tool.trainlint]\nper-file-ignores = {"course.ipynb" = ["TL805"]}\n', encoding="utf-8")
    diags = await change(client, uri, 2, cell + "\n")
    assert list(diags) == []


# ---------------------------------------------------------------------------------------------
# notebook documents (LSP 3.17): the cells linted together, as `trainlint notebook.ipynb`

#: the example script as a notebook: the model of one cell reads the dataset of another (TL301 needs
#: both), the metric's fix adds an import to the imports cell (TL601), markdown and a `!pip` cell between
NOTEBOOK = [
    ("markdown", "# Fine-tune a BERT-style model on MNLI"),
    ("code", "!pip install transformers datasets evaluate"),
    ("code", "import evaluate\nfrom datasets import load_dataset\n"
             "from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments\n\n"
             'CHECKPOINT = "distilbert-base-uncased"'),
    ("code", 'raw_datasets = load_dataset("glue", "mnli")\ntokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)\n\n'
             "def tokenize(batch):\n"
             '    return tokenizer(batch["premise"], batch["hypothesis"], truncation=True)\n\n'
             "tokenized = raw_datasets.map(tokenize, batched=True)"),
    ("markdown", "The model, its training arguments and the metric."),
    ("code", "model = AutoModelForSequenceClassification.from_pretrained(CHECKPOINT)"),
    ("code", 'args = TrainingArguments(\n    "mnli-distilbert",\n    evaluation_strategy="epoch",\n'
             '    learning_rate=2e-5,\n)'),
    ("code", 'accuracy = evaluate.load("glue", "mnli")\n\n'
             "def compute_metrics(eval_pred):\n    logits, labels = eval_pred\n"
             "    return accuracy.compute(predictions=logits, references=labels)"),
    ("code", "trainer = Trainer(\n    model,\n    args,\n    train_dataset=raw_datasets[\"train\"],\n"
             '    eval_dataset=raw_datasets["validation_matched"],\n    compute_metrics=compute_metrics,\n)\n'
             "trainer.train()"),
]


def ipynb(cells) -> str:
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text,
                                  **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                 for kind, text in cells],
                       "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5})


def cell_item(nb_path: Path, i: int, kind: str, text: str, version: int = 1):
    """(the notebook cell, its text document) as VS Code sends them (markdown cells are not synced:
    the server's selector asks for the Python cells)."""
    uri = f"vscode-notebook-cell:{nb_path}#C{i}"
    cell = lsp.NotebookCell(kind=lsp.NotebookCellKind.Code if kind == "code" else lsp.NotebookCellKind.Markup,
                            document=uri)
    return cell, lsp.TextDocumentItem(uri=uri, language_id="python" if kind == "code" else "markdown",
                                      version=version, text=text)


async def published_for(client: LanguageClient, uris, since: int, timeout: float = 30) -> dict[str, list]:
    """The diagnostics published for each of ``uris`` after the ``since``-th publication (the last one each)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got = {p.uri: p.diagnostics for p in client.published[since:] if p.uri in uris}
        if len(got) == len(set(uris)):
            await asyncio.sleep(0.05)  # the rest of the same publication round
            return {p.uri: list(p.diagnostics) for p in client.published[since:] if p.uri in uris}
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no diagnostics for {set(uris) - got.keys()}")
        await asyncio.sleep(0.005)


async def open_notebook(client: LanguageClient, cells, name: str = "course.ipynb"):
    """Open ``cells`` as a notebook document (also written as a .ipynb next to it, for the CLI); returns
    (notebook uri, the code cells' uris in order, each code cell's diagnostics)."""
    path = client.workdir / name
    path.write_text(ipynb(cells), encoding="utf-8")
    pairs = [cell_item(path, i, kind, text) for i, (kind, text) in enumerate(cells, 1)]
    synced = [(c, d) for (c, d), (kind, _) in zip(pairs, cells) if kind == "code"]
    uri = from_fs_path(str(path))
    since = len(client.published)
    client.notebook_document_did_open(lsp.DidOpenNotebookDocumentParams(
        notebook_document=lsp.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1,
                                               cells=[c for c, _ in synced]),
        cell_text_documents=[d for _, d in synced]))
    client.opened_notebooks = getattr(client, "opened_notebooks", []) + [(uri, [d.uri for _, d in synced])]
    cell_uris = [d.uri for _, d in synced]
    return uri, cell_uris, await published_for(client, cell_uris, since)


def cli_findings(path: Path) -> list:
    """What `trainlint notebook.ipynb` reports (cell = index among all cells, rows within the cell)."""
    from trainlint.parallel import lint_file

    return lint_file(path, load_settings(None, start=path.parent), str(path)).findings


def as_lsp(f) -> tuple:
    return (f.code, (f.start.row - 1, f.start.column - 1, f.end.row - 1, f.end.column - 1))


def diag_key(d: lsp.Diagnostic) -> tuple:
    r = d.range
    return (d.code, (r.start.line, r.start.character, r.end.line, r.end.character))


@pytest.fixture
def close_notebooks(client: LanguageClient):
    yield
    for uri, cells in getattr(client, "opened_notebooks", []):
        client.notebook_document_did_close(lsp.DidCloseNotebookDocumentParams(
            notebook_document=lsp.NotebookDocumentIdentifier(uri=uri),
            cell_text_documents=[lsp.TextDocumentIdentifier(uri=c) for c in cells]))
    client.opened_notebooks = []


@pytest.mark.asyncio(loop_scope="module")
async def test_notebook_sync_is_offered(client: LanguageClient):
    sync = client.capabilities.notebook_document_sync
    assert [c.language for c in sync.notebook_selector[0].cells] == ["python"]


@pytest.mark.asyncio(loop_scope="module")
async def test_notebook_findings_are_the_clis_on_the_right_cells(client: LanguageClient, close_notebooks):
    nb_uri, cell_uris, diags = await open_notebook(client, NOTEBOOK)
    expected = cli_findings(client.workdir / "course.ipynb")
    assert sorted(f.code for f in expected) == ["TL101", "TL101", "TL201", "TL301", "TL601", "TL805"]
    code_cells = [i for i, (kind, _) in enumerate(NOTEBOOK, 1) if kind == "code"]
    for index, uri in zip(code_cells, cell_uris):
        assert sorted(map(diag_key, diags[uri])) == sorted(as_lsp(f) for f in expected if f.cell == index), index
    # TL301 reads the dataset of another cell: linted one by one, the model's cell has nothing
    model_cell = cell_uris[code_cells.index(6)]
    assert [d.code for d in diags[model_cell]] == ["TL301"]
    assert diags[model_cell][0].range == where(NOTEBOOK[5][1], "AutoModelForSequenceClassification.from_pretrained")
    assert diags[cell_uris[0]] == []  # `!pip install ...` is not a syntax error
    for d in diags[model_cell]:
        assert d.source == "trainlint" and d.code_description.href == rule_url("TL301")


@pytest.mark.asyncio(loop_scope="module")
async def test_notebook_code_actions_per_cell(client: LanguageClient, close_notebooks):
    nb_uri, cell_uris, diags = await open_notebook(client, NOTEBOOK)
    texts = {uri: text for uri, (kind, text) in zip(cell_uris, [c for c in NOTEBOOK if c[0] == "code"])}
    args_cell, metric_cell, first_cell = cell_uris[4], cell_uris[5], cell_uris[0]
    (tl805,) = by_code(diags[args_cell], "TL805")
    actions = await code_actions(client, args_cell, tl805.range, diagnostics=[tl805])
    fix = next(a for a in actions if a.title.startswith("Fix TL805"))
    assert fix.is_preferred and list(fix.edit.changes) == [args_cell]
    assert apply_text_edits(texts[args_cell], fix.edit.changes[args_cell]) == \
        texts[args_cell].replace("evaluation_strategy", "eval_strategy")
    noqa_action = next(a for a in actions if a.title.startswith("Disable TL805"))
    assert "# noqa: TL805" in apply_text_edits(texts[args_cell], noqa_action.edit.changes[args_cell])
    # TL601's fix edits the metric's cell and adds its import where `trainlint --fix` adds it: at the top of
    # the first code cell
    (tl601,) = by_code(diags[metric_cell], "TL601")
    actions = await code_actions(client, metric_cell, tl601.range, diagnostics=[tl601])
    fix = next(a for a in actions if a.title.startswith("Fix TL601"))
    assert sorted(fix.edit.changes) == sorted([metric_cell, first_cell])
    assert "predictions=np.argmax(logits, axis=-1)" in apply_text_edits(texts[metric_cell], fix.edit.changes[metric_cell])
    assert apply_text_edits(texts[first_cell], fix.edit.changes[first_cell]) == "import numpy as np\n" + texts[first_cell]
    # hover on a cell's finding: the rule document
    hover = await client.text_document_hover_async(lsp.HoverParams(
        text_document=lsp.TextDocumentIdentifier(uri=args_cell), position=tl805.range.start))
    assert doc_text("TL805").splitlines()[0] in hover.contents.value


@pytest.mark.asyncio(loop_scope="module")
async def test_notebook_fix_all_is_trainlint_fix(client: LanguageClient, close_notebooks):
    from trainlint.fixes import fix_file

    nb_uri, cell_uris, diags = await open_notebook(client, NOTEBOOK)
    texts = [text for kind, text in NOTEBOOK if kind == "code"]
    whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
    (action,) = await code_actions(client, cell_uris[0], whole, only=["notebook.source.fixAll"])
    assert action.kind == "notebook.source.fixAll.trainlint"
    fixed = [apply_text_edits(t, action.edit.changes.get(u, [])) for u, t in zip(cell_uris, texts)]
    path = client.workdir / "course.ipynb"
    by_cli = fix_file(path, load_settings(None, start=path.parent), write=False)
    assert fixed == [c["source"] for c in json.loads(by_cli.result.source)["cells"] if c["cell_type"] == "code"]
    assert fixed != texts
    # per cell (what `notebook.codeActionsOnSave` runs for `source.fixAll`): that cell's fixes only
    (action,) = await code_actions(client, cell_uris[4], whole, only=["source.fixAll.trainlint"])
    assert list(action.edit.changes) == [cell_uris[4]]
    (action,) = await code_actions(client, cell_uris[3], whole, only=["source.fixAll.trainlint"])
    assert not action.edit.changes  # TL301's fix is unsafe


@pytest.mark.asyncio(loop_scope="module")
async def test_notebook_edits_and_structure_changes(client: LanguageClient, close_notebooks):
    nb_uri, cell_uris, diags = await open_notebook(client, NOTEBOOK)
    args_cell, data_cell, model_cell = cell_uris[4], cell_uris[2], cell_uris[3]
    args_text = NOTEBOOK[6][1]
    # an edit in one cell: the notebook is linted again, that cell's finding is gone
    since = len(client.published)
    client.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
        notebook_document=lsp.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=2),
        change=lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(text_content=[
            lsp.NotebookDocumentCellContentChanges(
                document=lsp.VersionedTextDocumentIdentifier(uri=args_cell, version=2),
                changes=[lsp.TextDocumentContentChangePartial(range=where(args_text, "evaluation_strategy"),
                                                              text="eval_strategy")])]))))
    after = await published_for(client, cell_uris, since)
    assert after[args_cell] == [] and [d.code for d in after[model_cell]] == ["TL301"]
    # the dataset's cell deleted: its diagnostics are cleared, and the Trainer's cell is linted without it
    since = len(client.published)
    client.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
        notebook_document=lsp.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=3),
        change=lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(
            structure=lsp.NotebookDocumentCellChangeStructure(
                array=lsp.NotebookCellArrayChange(start=2, delete_count=1),
                did_close=[lsp.TextDocumentIdentifier(uri=data_cell)])))))
    trainer_cell = cell_uris[6]
    after = await published_for(client, [data_cell, trainer_cell], since)
    assert after[data_cell] == [] and not by_code(after[trainer_cell], "TL101")  # no `tokenized` any more
    # a new cell inserted before the model: it is linted with the others
    path = client.workdir / "course.ipynb"
    new_cell, new_doc = cell_item(path, 99, "code", 'from transformers import TrainingArguments\n'
                                  'more = TrainingArguments("x", evaluation_strategy="steps")')
    since = len(client.published)
    client.notebook_document_did_change(lsp.DidChangeNotebookDocumentParams(
        notebook_document=lsp.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=4),
        change=lsp.NotebookDocumentChangeEvent(cells=lsp.NotebookDocumentCellChanges(
            structure=lsp.NotebookDocumentCellChangeStructure(
                array=lsp.NotebookCellArrayChange(start=2, delete_count=0, cells=[new_cell]),
                did_open=[new_doc])))))
    after = await published_for(client, [new_doc.uri], since)
    assert [d.code for d in after[new_doc.uri]] == ["TL805"]
    client.opened_notebooks = [(nb_uri, [u for u in cell_uris if u != data_cell] + [new_doc.uri])]
    # closed: every cell's diagnostics are cleared
    since = len(client.published)
    open_cells = client.opened_notebooks[0][1]
    client.notebook_document_did_close(lsp.DidCloseNotebookDocumentParams(
        notebook_document=lsp.NotebookDocumentIdentifier(uri=nb_uri),
        cell_text_documents=[lsp.TextDocumentIdentifier(uri=c) for c in open_cells]))
    client.opened_notebooks = []
    after = await published_for(client, open_cells, since)
    assert all(d == [] for d in after.values())


# ---------------------------------------------------------------------------------------------
# configuration


@pytest.mark.asyncio(loop_scope="module")
async def test_config_change_is_picked_up(client: LanguageClient):
    pyproject = client.workdir / "pyproject.toml"
    pyproject.write_text('[tool.trainlint]\nignore = ["TL805"]\n', encoding="utf-8")
    uri, diags = await open_doc(client, BUGGY)
    assert not by_code(diags, "TL805") and len(diags) == 5
    # the server asked the client to watch pyproject.toml files
    assert any(r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in client.registrations)
    pyproject.write_text('[tool.trainlint]\nignore = ["TL1"]\n', encoding="utf-8")
    waiter = asyncio.ensure_future(diagnostics_for(client, uri))
    await asyncio.sleep(0)
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent(uri=from_fs_path(str(pyproject)), type=lsp.FileChangeType.Changed)]))
    diags = await waiter
    assert sorted(d.code for d in diags) == ["TL201", "TL301", "TL601", "TL805"]


@pytest.mark.asyncio(loop_scope="module")
async def test_config_change_without_watcher_is_picked_up_on_next_lint(client: LanguageClient):
    pyproject = client.workdir / "pyproject.toml"
    pyproject.write_text('[tool.trainlint]\nselect = ["TL8"]\n', encoding="utf-8")
    uri, diags = await open_doc(client, BUGGY)
    assert [d.code for d in diags] == ["TL805"]
    pyproject.write_text('[tool.trainlint]\nselect = ["TL3"]\n', encoding="utf-8")
    os.utime(pyproject, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))  # a distinct mtime
    diags = await change(client, uri, 2, BUGGY + "\n")
    assert [d.code for d in diags] == ["TL301"]


@pytest.mark.asyncio(loop_scope="module")
async def test_broken_config_falls_back_to_defaults_with_a_message(client: LanguageClient):
    (client.workdir / "pyproject.toml").write_text('[tool.trainlint]\nselekt = ["TL8"]\n', encoding="utf-8")
    uri, diags = await open_doc(client, BUGGY)
    assert len(diags) == 6
    await asyncio.sleep(0.1)
    assert any("selekt" in m.message and m.type == lsp.MessageType.Warning for m in client.messages)


def test_malformed_pyproject_is_a_warning_naming_the_file(tmp_path: Path):
    """A broken pyproject.toml is not skipped in the editor either: the default rules, and a warning
    naming the file and the TOML error."""
    from trainlint.server import Linter

    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL805"\n', encoding="utf-8")
    messages: list[str] = []
    settings = Linter().settings_for(tmp_path / "train.py", None, messages)
    assert settings.ignore == []
    assert len(messages) == 1 and f"{tmp_path / 'pyproject.toml'}: invalid TOML" in messages[0]


# ---------------------------------------------------------------------------------------------
# the command


def test_server_command_without_pygls_explains(tmp_path: Path):
    fake = tmp_path / "pygls"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('no pygls here', name='pygls')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "trainlint", "server"], input="", capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    # an install that works without a release on a package index: into this very interpreter, with the
    # server extra's own requirements
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["server"]
    reqs = " ".join(f"'{r}'" for r in extra)
    assert f"`{sys.executable} -m pip install {reqs}`" in proc.stderr
    assert "pip install '.[server]'" in proc.stderr and "trainlint[server]" not in proc.stderr


def test_server_command_is_in_help():
    proc = subprocess.run([sys.executable, "-m", "trainlint", "server", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "Language server over stdio" in proc.stdout


def test_deep_nesting_is_a_syntax_error_not_a_crash(tmp_path: Path):
    """LibCST's native parser overflows the C stack on thousands of nested brackets (a segfault of
    the CLI and of the server): the engine refuses nesting CPython itself refuses (> 200)."""
    p = tmp_path / "deep.py"
    p.write_text("import torch\nx = " + "(" * 5000 + ")" * 5000 + "\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "trainlint", str(p)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"{p}:2:205: TL001 [error] cannot parse: SyntaxError: too many nested parentheses" in proc.stdout
    # brackets inside a string do not count
    p.write_text("import torch\nx = '" + "(" * 300 + "'\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "trainlint", str(p)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout


def test_server_never_imports_probes_frameworks_or_user_code(tmp_path: Path):
    """Linting in the server is static: no probe module, no torch/transformers, no user module."""
    (tmp_path / "user_module.py").write_text("raise SystemExit('user code ran')\n", encoding="utf-8")
    code = f"""
import sys
sys.path.insert(0, {str(tmp_path)!r})
from trainlint.server_lsp import create_server
server = create_server()
text = open({str(ROOT / 'examples' / 'mnli_trainer_buggy.py')!r}).read() + "\\nimport user_module\\n"
findings = server._lint_text(text, "train.py", None)
assert len(findings) == 6, findings
bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'datasets', 'tensorflow',
             'keras', 'user_module') or m.startswith('trainlint.probe'))
assert not bad, bad
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ---------------------------------------------------------------------------------------------
# requests a client gets wrong, cancellation, and a code action per keystroke


async def raw_request(client: LanguageClient, method: str, params, msg_id: str | None = None):
    """Send a request exactly as given (pytest-lsp's typed methods cannot send invalid params)."""
    import uuid
    from concurrent.futures import Future

    msg_id = msg_id or f"raw-{uuid.uuid4()}"
    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(future), 30)


@pytest.mark.parametrize("method,params,where", [
    ("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}}, "$.params.position"),
    ("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": "3:4"}, "$.params.position"),
    ("textDocument/hover", None, "$.params"),
    ("textDocument/codeAction", {"textDocument": {"uri": "file:///x.py"}, "context": {"diagnostics": []}},
     "$.params.range"),
    ("textDocument/codeAction", {"textDocument": {"uri": "file:///x.py"}, "context": {"diagnostics": []},
                                 "range": {"start": {"line": "a", "character": 0}, "end": {"line": 0, "character": 0}}},
     "$.params.range.start.line"),
])
@pytest.mark.asyncio(loop_scope="module")
async def test_invalid_params_get_an_invalid_params_error(client: LanguageClient, method, params, where):
    from pygls.exceptions import JsonRpcInvalidParams

    shown = len(client.messages)
    with pytest.raises(JsonRpcInvalidParams) as err:
        await raw_request(client, method, params)
    assert err.value.code == -32602 and method in err.value.message and where in err.value.message
    # the server is answering, and showed no popup for the client's mistake
    uri, diags = await open_doc(client, BUGGY)
    assert len(diags) == 6
    assert len(client.messages) == shown


@pytest.mark.asyncio(loop_scope="module")
async def test_cancel_request(client: LanguageClient):
    """A code action asked before the document's first lint waits for it; $/cancelRequest ends it
    with RequestCancelled."""
    from pygls.exceptions import JsonRpcRequestCancelled

    text = BUGGY + "".join(f"\n\ndef helper_{k}(x):\n    return [x * i for i in range({k})]\n" for k in range(400))
    path = client.workdir / "long.py"
    uri = from_fs_path(str(path))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    client.opened.append(uri)
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    pending = asyncio.ensure_future(raw_request(client, "textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": whole, "context": {"diagnostics": []}}, msg_id="to-cancel"))
    await asyncio.sleep(0.01)
    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="to-cancel"))
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    # the next request is answered once the lint is there
    actions = await code_actions(client, uri, where(text, "evaluation_strategy"))
    assert any(a.title.startswith("Fix TL805") for a in actions)


@pytest.mark.asyncio(loop_scope="module")
async def test_code_action_per_keystroke(client: LanguageClient):
    """Typing with a code-action request per keystroke: every request is answered at once from the
    last lint (findings carried over to the text being typed), and the diagnostics of the final
    text follow."""
    uri, diags = await open_doc(client, BUGGY)
    anchor = "    tokenized = raw_datasets.map(tokenize, batched=True)\n"
    line = BUGGY[:BUGGY.index(anchor)].count("\n")
    text = BUGGY
    version = 1
    requests = []
    typed = "# a new comment line\n"
    for k, ch in enumerate(typed):  # typed above the TrainingArguments call: TL805 moves down a line
        version += 1
        text = text[:BUGGY.index(anchor) + k] + ch + text[BUGGY.index(anchor) + k:]
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=line, character=k), end=lsp.Position(line=line, character=k)),
                text=ch)]))
        requests.append((text, asyncio.ensure_future(code_actions(client, uri, where(text, "evaluation_strategy")))))
        await asyncio.sleep(0.01)  # the client sends the request, then the next keystroke
    answers = [(t, await asyncio.wait_for(r, 30)) for t, r in requests]
    for t, actions in answers:
        fixes = [a for a in actions if a.title.startswith("Fix TL805")]
        assert len(fixes) == 1, [a.title for a in actions]
        (fix,) = fixes
        assert apply_text_edits(t, fix.edit.changes[uri]) == t.replace("evaluation_strategy=", "eval_strategy=", 1)
    diags = await diagnostics_for(client, uri, version)
    assert sorted(d.code for d in diags) == ["TL101", "TL101", "TL201", "TL301", "TL601", "TL805"]
    assert by_code(diags, "TL805")[0].range == where(text, "evaluation_strategy")


@pytest.mark.asyncio(loop_scope="module")
async def test_findings_below_fail_on_are_hints(client: LanguageClient):
    """`fail-on = "error"`: a warning is shown as a hint (shown, not failing); errors stay errors."""
    text = (ROOT / "tests" / "data" / "buggy" / "keras_tf_keras_namespace.py").read_text(encoding="utf-8")
    uri, diags = await open_doc(client, text)
    assert {(d.code, d.severity) for d in diags} == {("TL501", lsp.DiagnosticSeverity.Warning),
                                                     ("TL402", lsp.DiagnosticSeverity.Error)}
    (client.workdir / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "error"\n', encoding="utf-8")
    diags = await change(client, uri, 2, text + "\n")
    assert {(d.code, d.severity) for d in diags} == {("TL501", lsp.DiagnosticSeverity.Hint),
                                                     ("TL402", lsp.DiagnosticSeverity.Error)}
