"""The editor set-ups of docs/editors.md, each checked: its syntax and the shape its editor reads, and,
for Neovim (which Debian packages: ./scripts/test installs it on CI), a real headless run per set-up the
installed release supports, which starts `trainlint server`, attaches it to a script and gets its
diagnostics."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from support import ROOT, STRICT, missing

DOC = ROOT / "docs" / "editors.md"
_FENCE_RE = re.compile(r"^```(?P<lang>\w+)\n(?P<body>.*?)^```$", re.M | re.S)

BUGGY = textwrap.dedent(
    """\
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, TrainingArguments

    raw = load_dataset("glue", "mnli")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    args = TrainingArguments("out", evaluation_strategy="epoch")
    """
)


def blocks(lang: str) -> list[str]:
    return [m.group("body") for m in _FENCE_RE.finditer(DOC.read_text(encoding="utf-8")) if m.group("lang") == lang]


def test_every_editor_has_a_checked_set_up():
    """Each code block of the document is one of the languages checked below."""
    langs = [m.group("lang") for m in _FENCE_RE.finditer(DOC.read_text(encoding="utf-8"))]
    assert set(langs) <= {"console", "json", "lua", "toml", "elisp"}
    assert langs.count("lua") >= 2 and "json" in langs and "toml" in langs and "elisp" in langs


# ---------------------------------------------------------------------------------------------
# VS Code: Generic LSP Client (v2), zsol.vscode-glspc 0.2.0, whose package.json declares these settings

GLSPC_SETTINGS = {
    "glspc.server.command": {"type": "string", "minLength": 1},
    "glspc.server.commandArguments": {"type": "array", "items": {"type": "string"}},
    "glspc.server.languageId": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    "glspc.server.environmentVariables": {"type": "object", "additionalProperties": {"type": "string"}},
    "glspc.server.initializationOptions": {"type": "object"},
    "glspc.trace.server": {"enum": ["off", "messages", "compact", "verbose"]},
}


def test_vscode_settings():
    """Two blocks: fix on save with trainlint's extension, then the settings of the generic client."""
    import jsonschema

    extension, generic = (json.loads(b) for b in blocks("json"))
    assert extension == {"editor.codeActionsOnSave": {"source.fixAll.trainlint": "explicit"},
                         "notebook.codeActionsOnSave": {"notebook.source.fixAll.trainlint": "explicit"}}
    # every key of the generic client's block is a setting that extension declares, with a value of its type
    jsonschema.validate(generic, {"type": "object", "additionalProperties": False, "properties": GLSPC_SETTINGS})
    assert [generic["glspc.server.command"], *generic["glspc.server.commandArguments"]] == ["trainlint", "server"]
    assert generic["glspc.server.languageId"] == ["python"]


# ---------------------------------------------------------------------------------------------
# Helix: languages.toml


def test_helix_languages_toml():
    (block,) = blocks("toml")
    config = tomllib.loads(block)
    server = config["language-server"]["trainlint"]
    assert server["command"] == "trainlint" and server["args"] == ["server"]
    assert set(server) <= {"command", "args", "config", "environment", "timeout", "required-root-patterns"}
    assert isinstance(server["config"], dict)  # Helix sends it as the initialization options
    (python,) = [lang for lang in config["language"] if lang["name"] == "python"]
    assert "trainlint" in python["language-servers"]


# ---------------------------------------------------------------------------------------------
# Emacs: read as the Lisp reader reads it (a small reader of the forms used), and the eglot contact


def read_sexps(text: str) -> list:
    """The forms of an Emacs Lisp text: lists, strings, symbols, numbers; quote forms as ('quote', x);
    dotted pairs keep their '.'. Raises ValueError on unbalanced brackets or an unterminated string."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|;[^\n]*|[()\']|#\'|[^\s()\'";]+|"', text)
    pos = 0

    def form():
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError("unexpected end of text")
        tok = tokens[pos]
        pos += 1
        if tok in ("'", "#'"):
            return ("quote", form())
        if tok == "(":
            items = []
            while True:
                if pos >= len(tokens):
                    raise ValueError("unclosed (")
                if tokens[pos] == ")":
                    pos += 1
                    return items
                items.append(form())
        if tok == ")":
            raise ValueError("unexpected )")
        if tok.startswith('"'):
            if len(tok) < 2 or not tok.endswith('"'):
                raise ValueError("unterminated string")
            return json.loads(tok)
        return int(tok) if re.fullmatch(r"-?\d+", tok) else ("symbol", tok)

    tokens = [t for t in tokens if not t.startswith(";")]
    out = []
    while pos < len(tokens):
        out.append(form())
    return out


def test_emacs_eglot_and_lsp_mode_forms():
    eglot, lsp_mode = blocks("elisp")
    forms = read_sexps(eglot)
    # (with-eval-after-load 'eglot (add-to-list 'eglot-server-programs '(MODES . CONTACT)))
    after, feature, add = forms[0]
    assert after == ("symbol", "with-eval-after-load") and feature == ("quote", ("symbol", "eglot"))
    assert add[:2] == [("symbol", "add-to-list"), ("quote", ("symbol", "eglot-server-programs"))]
    modes, dot, contact = add[2][1]
    assert dot == ("symbol", ".") and ("symbol", "python-mode") in modes
    # CONTACT: (PROGRAM ARGS... :initializationOptions PLIST), eglot-server-programs' documented form
    assert contact[:2] == ["trainlint", "server"]
    assert contact[2] == ("symbol", ":initializationOptions") and contact[3] == [("symbol", ":debounce"), 150]
    hooks = [f for f in forms[1:] if f[0] == ("symbol", "add-hook")]
    assert {h[1][1][1] for h in hooks} == {"python-mode-hook", "python-ts-mode-hook"}
    assert all(h[2] == ("quote", ("symbol", "eglot-ensure")) for h in hooks)
    (register,) = read_sexps(lsp_mode)
    assert register[0] == ("symbol", "with-eval-after-load")
    assert ["trainlint", "server"] in _walk(register)


def _walk(form):
    yield form
    if isinstance(form, (list, tuple)):
        for x in form:
            yield from _walk(x)


def test_the_lisp_reader_refuses_broken_forms():
    with pytest.raises(ValueError):
        read_sexps("(add-to-list 'x '(a . (\"b\"))")
    with pytest.raises(ValueError):
        read_sexps('(setq x "open)')


# ---------------------------------------------------------------------------------------------
# Neovim


def _nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"NVIM v(\d+)\.(\d+)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def lua_blocks() -> list[tuple[tuple[int, int], str]]:
    """((major, minor) it needs, code) of each Lua block; its first line says the release."""
    out = []
    for body in blocks("lua"):
        m = re.match(r"-- Neovim (\d+)\.(\d+) or later\n", body)
        assert m, f"a Lua block of docs/editors.md does not open with `-- Neovim X.Y or later`:\n{body}"
        out.append(((int(m.group(1)), int(m.group(2))), body))
    return out


def test_neovim_set_ups_cover_debian_and_current_releases():
    needs = [v for v, _ in lua_blocks()]
    assert (0, 7) in needs, "a set-up for Neovim 0.7 (Debian 12's 0.7.2)"
    assert any(v >= (0, 10) for v in needs), "a set-up for Neovim 0.10 and later"
    for _, code in lua_blocks():
        assert 'cmd = { "trainlint", "server" }' in code


def _nvim() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        if STRICT and os.environ.get("CI") == "true":
            missing("nvim is not installed (./scripts/test installs Debian's neovim on CI)")
        pytest.skip("nvim is not installed (Debian: apt-get install neovim; ./scripts/test does it on CI)")
    return nvim


def _env(tmp_path: Path) -> dict[str, str]:
    """Neovim without the user's configuration or state, and `trainlint` on PATH as this interpreter's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    wrapper = bin_dir / "trainlint"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m trainlint "$@"\n')
    wrapper.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(tmp_path / var.lower())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return env


def test_every_lua_block_is_valid_lua(tmp_path):
    nvim = _nvim()
    for i, (_, code) in enumerate(lua_blocks()):
        src = tmp_path / f"block{i}.lua"
        src.write_text(code)
        check = f'local f, err = loadfile("{src}"); if not f then io.stderr:write(err) vim.cmd("cquit 1") end'
        proc = subprocess.run([nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"lua {check}", "-c", "qa!"],
                              capture_output=True, text=True, timeout=60, env=_env(tmp_path))
        assert proc.returncode == 0, f"block {i} of docs/editors.md is not valid Lua: {proc.stderr}"


#: appended to the documented set-up: wait for a client on the opened script, then for its diagnostics;
#: write both and quit
HARNESS = """
vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients
    local function attached()
      local names = {}
      for _, c in pairs(get_clients()) do
        if c.attached_buffers[vim.api.nvim_get_current_buf()] then table.insert(names, c.name) end
      end
      return names
    end
    if vim.wait(30000, function() return #attached() > 0 end, 100) then
      vim.wait(%(timeout)d, function() return #vim.diagnostic.get(0) >= 2 end, 100)
    end
    local out = { clients = attached(), diagnostics = {} }
    for _, d in ipairs(vim.diagnostic.get(0)) do
      local lsp = d.user_data and d.user_data.lsp or {}
      table.insert(out.diagnostics, { code = lsp.code or d.code, source = d.source, lnum = d.lnum, message = d.message })
    end
    vim.fn.writefile({ vim.fn.json_encode(out) }, "%(out)s")
    vim.cmd("qa!")
  end,
})
"""


@pytest.mark.parametrize("index", range(len(blocks("lua"))))
def test_neovim_attaches_the_server_and_shows_its_diagnostics(index, tmp_path):
    nvim = _nvim()
    needs, code = lua_blocks()[index]
    have = _nvim_version(nvim)
    if have < needs:
        pytest.skip(f"this set-up needs Neovim {needs[0]}.{needs[1]}; nvim here is {have[0]}.{have[1]} "
                    "(its Lua syntax is checked by test_every_lua_block_is_valid_lua)")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL1"]\n')
    (project / "train.py").write_text(BUGGY)
    out = tmp_path / "diagnostics.json"
    init = tmp_path / "init.lua"
    init.write_text(code + HARNESS % {"timeout": 90_000, "out": out})
    proc = subprocess.run([nvim, "--headless", "-i", "NONE", "-u", str(init), "train.py"], cwd=project,
                          capture_output=True, text=True, timeout=150, env=_env(tmp_path))
    assert out.exists(), f"nvim wrote no diagnostics: {proc.stdout}\n{proc.stderr}"
    seen = json.loads(out.read_text())
    assert seen["clients"] == ["trainlint"], f"no trainlint client attached to the script: {proc.stderr}"
    diagnostics = seen["diagnostics"]
    assert sorted((d["code"], d["lnum"]) for d in diagnostics) == [("TL301", 4), ("TL805", 5)], diagnostics
    assert {d["source"] for d in diagnostics} == {"trainlint"}
