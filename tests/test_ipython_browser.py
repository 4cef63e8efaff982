"""The IPython extension in a real front end: JupyterLab in headless Chromium (Playwright driving Debian's
Chromium). A notebook with ``%load_ext trainlint`` and a buggy cell is run cell by cell in the browser;
the findings must be rendered as HTML under that cell (the rule's code linked to its document). The
screenshot is kept with the test's files (``TRAINLINT_ARTIFACTS``: a directory to copy it to)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support import missing, need_modules

pytestmark = pytest.mark.slow

need_modules("jupyterlab", "playwright", "ipykernel", "torch")

CELLS = [
    "%load_ext trainlint",
    "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 3)\nloss_fn = nn.CrossEntropyLoss()\nx = torch.randn(8, 4)",
    "out = torch.softmax(model(x), dim=-1)\nloss = loss_fn(out, torch.zeros(8, dtype=torch.long))",
    "print('done')",
]


def chromium() -> str:
    path = os.environ.get("TRAINLINT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        missing("needs Chromium (Debian: apt-get install chromium; or TRAINLINT_CHROMIUM=/path/to/chrome)")
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path):
    root = tmp_path / "lab"
    root.mkdir()
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
                    for c in CELLS],
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    (root / "buggy.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    port, token = free_port(), "trainlint-test"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "w"))  # noqa: SIM115
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-3000:])
        yield f"{url}/lab/tree/buggy.ipynb?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_findings_render_under_the_cell_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    shot = tmp_path / "jupyterlab-trainlint.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(lab, timeout=120_000)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            try:
                # the kernel started and idle (the status bar), then Run > Run All Cells
                page.wait_for_selector("text=Python 3 (ipykernel) | Idle", timeout=240_000)
                page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
                page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
                page.wait_for_selector(".trainlint-findings", timeout=240_000)
            except Exception:
                page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
                raise
            cells = page.locator(".jp-Notebook .jp-CodeCell")
            page.wait_for_function("document.querySelectorAll('.jp-Notebook .jp-CodeCell')[3]"
                                   "?.querySelector('.jp-OutputArea-output')?.innerText.includes('done')",
                                   timeout=120_000)
            buggy = cells.nth(2)
            findings = buggy.locator(".jp-OutputArea .trainlint-findings")
            assert findings.count() == 1
            link = findings.locator("a", has_text="TL403")
            assert link.get_attribute("href") == "https://github.com/trainlint/trainlint/blob/main/rules/TL403.md"
            assert "log-softmax" in findings.inner_text() and "line 1" in findings.inner_text()
            # the other cells have no findings under them
            for k in (0, 1, 3):
                assert cells.nth(k).locator(".trainlint-findings").count() == 0
            buggy.scroll_into_view_if_needed()
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    keep = os.environ.get("TRAINLINT_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
