"""Drive a real VS Code (code-server in Chromium, through Playwright) with the trainlint extension
installed, and print what it showed as one JSON object on stdout.

Run by tests/test_vscode_e2e.py with the interpreter of the end-to-end environment (Playwright lives
there, not in the test environment):

    python vscode_driver.py CONFIG.json

CONFIG: {"code_server": [argv...], "node_bin": dir, "chromium": path, "vsix": path, "python": the
interpreter trainlint runs with, "workspace": dir, "state": dir (user data and extensions),
"artifacts": dir, "script": name, "notebook": name, "probe_script": name}

Each step records what the Problems panel said; failures are recorded too (``"error"``), so the test
can say which step did not happen.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

PROBLEM_ROW = ".markers-panel .monaco-list-row"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status < 500:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"code-server did not answer at {url}")
        time.sleep(0.5)


def problems(page: Page) -> list[str]:
    """The rows of the Problems panel, as their accessible labels (message, source, code, position)."""
    return page.locator(PROBLEM_ROW).evaluate_all(
        "rows => rows.map(r => (r.getAttribute('aria-label') || '') + ' || ' + r.innerText)")


def wait_problems(page: Page, predicate, timeout: float) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        rows = problems(page)
        if predicate(rows):
            return rows
        if time.monotonic() > deadline:
            raise TimeoutError(f"the Problems panel never showed what was expected; it showed {rows}")
        time.sleep(0.2)


def escape(page: Page) -> None:
    """Close whatever widget has the focus (a menu, a quick input)."""
    for _ in range(3):
        page.keyboard.press("Escape")
        time.sleep(0.1)


def command(page: Page, name: str) -> None:
    """Run a command from the command palette."""
    escape(page)
    page.keyboard.press("F1")
    box = page.locator(".quick-input-widget input")
    box.wait_for(state="visible", timeout=20_000)
    box.fill(">" + name)
    page.locator(".quick-input-widget .monaco-list-row").first.wait_for(timeout=20_000)
    time.sleep(0.3)
    page.keyboard.press("Enter")


def open_file(page: Page, name: str) -> None:
    escape(page)
    page.keyboard.press("Control+P")
    box = page.locator(".quick-input-widget input")
    box.wait_for(state="visible", timeout=20_000)
    box.fill(name)
    page.locator(".quick-input-widget .monaco-list-row", has_text=name).first.wait_for(timeout=20_000)
    time.sleep(0.3)
    page.keyboard.press("Enter")


def go_to(page: Page, path: Path, needle: str) -> None:
    """Put the cursor of the active editor inside the first occurrence of ``needle`` in the file."""
    lines = path.read_text().splitlines()
    line = next(i for i, s in enumerate(lines, 1) if needle in s)
    col = lines[line - 1].index(needle) + 2
    page.locator(".editor-instance .monaco-editor .view-lines").first.click()
    page.keyboard.press("Control+G")
    page.locator(".quick-input-widget input").fill(f":{line}:{col}")
    time.sleep(0.3)
    page.keyboard.press("Enter")
    time.sleep(0.5)


def show_problems(page: Page) -> None:
    if not page.locator(".markers-panel").is_visible():
        command(page, "View: Focus Problems (Errors, Warnings, Infos)")
    page.locator(".markers-panel").wait_for(state="visible", timeout=20_000)


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    result: dict = {"steps": {}, "timings": {}}
    workspace = Path(config["workspace"])
    state = Path(config["state"])
    artifacts = Path(config["artifacts"])
    artifacts.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PATH": config["node_bin"] + os.pathsep + os.environ.get("PATH", "")}
    user_data, extensions = state / "user-data", state / "extensions"
    (user_data / "User").mkdir(parents=True, exist_ok=True)
    (user_data / "User" / "settings.json").write_text(json.dumps({
        "security.workspace.trust.enabled": False,
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "chat.disableAIFeatures": True,
        "workbench.enableExperiments": False,
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "telemetry.telemetryLevel": "off",
        "editor.quickSuggestions": {"other": False, "comments": False, "strings": False},
        "files.autoSave": "off",
        "trainlint.interpreter": config["python"],
        "trainlint.args": ["--probe-timeout", "300"],
    }, indent=2))
    base = [*config["code_server"], "--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    install = subprocess.run([*base, "--install-extension", config["vsix"]], env=env, capture_output=True,
                             text=True, timeout=300)
    result["install"] = (install.stdout + install.stderr)[-2000:]
    if install.returncode != 0:
        result["error"] = f"installing the extension failed ({install.returncode})"
        print(json.dumps(result))
        return
    port = free_port()
    log = open(artifacts / "code-server.log", "w")
    server = subprocess.Popen([*base, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry",
                               "--disable-update-check", "--disable-workspace-trust", str(workspace)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workspace)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", 120)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=config["chromium"], headless=True,
                                         args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/?folder={workspace}", timeout=120_000)
            page.locator(".monaco-workbench").wait_for(timeout=120_000)
            page.locator(".explorer-folders-view, .explorer-viewlet").first.wait_for(timeout=120_000)
            time.sleep(2)
            run_steps(page, config, result, workspace, artifacts)
            browser.close()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        result["error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    print(json.dumps(result))


def step(result: dict, name: str):
    """A context manager recording a step's failure without stopping the next steps."""
    class Step:
        def __enter__(self):
            return self

        def __exit__(self, kind, exc, tb):
            if exc is not None:
                result["steps"][name] = {"error": f"{kind.__name__}: {exc}"}
                return True
            return False
    return Step()


def has_codes(rows: list[str], codes: list[str]) -> bool:
    text = "\n".join(rows)
    return all(code in text for code in codes)


def run_steps(page: Page, config: dict, result: dict, workspace: Path, artifacts: Path) -> None:
    script, notebook, probe_script = config["script"], config["notebook"], config["probe_script"]
    show_problems(page)

    with step(result, "script"):
        t0 = time.monotonic()
        open_file(page, script)
        rows = wait_problems(page, lambda r: has_codes(r, ["TL101", "TL201", "TL301", "TL601", "TL805"]), 120)
        result["timings"]["first_diagnostics_s"] = round(time.monotonic() - t0, 2)
        time.sleep(1)
        rows = problems(page)
        links = page.locator(".markers-panel .monaco-list-row a").evaluate_all(
            "els => els.map(e => [e.textContent, e.getAttribute('href') || e.title || ''])")
        page.screenshot(path=str(artifacts / "problems-script.png"))
        result["steps"]["script"] = {"rows": rows, "links": links}

    with step(result, "quick_fix"):
        go_to(page, workspace / script, "evaluation_strategy")
        page.keyboard.press("Control+.")
        item = page.locator(".action-widget .monaco-list-row", has_text="Fix TL805")
        item.first.wait_for(timeout=30_000)
        titles = page.locator(".action-widget .monaco-list-row").all_inner_texts()
        t0 = time.monotonic()
        item.first.click()
        wait_problems(page, lambda r: r and not has_codes(r, ["TL805"]) and has_codes(r, ["TL301"]), 60)
        result["timings"]["diagnostics_after_edit_s"] = round(time.monotonic() - t0, 2)
        page.keyboard.press("Control+S")
        deadline = time.monotonic() + 30
        while "eval_strategy=" not in (workspace / script).read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        result["steps"]["quick_fix"] = {"titles": titles, "saved": (workspace / script).read_text()}

    with step(result, "rule_document"):
        # on TL301's problem: the command opens the rule's document (a markdown preview)
        go_to(page, workspace / script, "AutoModelForSequenceClassification.from_pretrained(CHECKPOINT)")
        command(page, "trainlint: Show the rule document")
        shown = ""
        page.locator(".tabs-container .tab", has_text="Preview TL301.md").first.wait_for(timeout=60_000)
        deadline = time.monotonic() + 20
        while not shown and time.monotonic() < deadline:
            for frame in page.frames:  # the preview is a webview: a frame of its own
                if frame == page.main_frame:
                    continue
                try:
                    body = frame.locator("body").inner_text(timeout=1000)
                except Exception:  # noqa: BLE001 - a frame that went away
                    continue
                if "TL301 missing-num-labels" in body and "What it catches" in body:
                    shown = body
            time.sleep(0.5)
        tabs = page.locator(".tabs-container .tab").all_inner_texts()
        page.screenshot(path=str(artifacts / "rule-document.png"))
        result["steps"]["rule_document"] = {"text": shown[:2000], "tabs": tabs}

    with step(result, "notebook"):
        command(page, "View: Close All Editors")
        time.sleep(1)
        t0 = time.monotonic()
        open_file(page, notebook)
        page.locator(".notebook-editor, .notebookOverlay").first.wait_for(timeout=60_000)
        rows = wait_problems(page, lambda r: has_codes(r, ["TL301", "TL805", "TL601"]), 120)
        result["timings"]["notebook_first_diagnostics_s"] = round(time.monotonic() - t0, 2)
        time.sleep(1)
        page.screenshot(path=str(artifacts / "problems-notebook-editor.png"))
        command(page, "View: Toggle Maximized Panel")  # every row of the panel rendered
        time.sleep(1)
        page.screenshot(path=str(artifacts / "problems-notebook.png"))
        result["steps"]["notebook"] = {"rows": problems(page)}
        command(page, "View: Toggle Maximized Panel")

    with step(result, "probe"):
        command(page, "View: Close All Editors")
        time.sleep(1)
        open_file(page, probe_script)
        page.locator(".editor-instance .monaco-editor .view-lines").first.wait_for(timeout=30_000)
        time.sleep(1)
        t0 = time.monotonic()
        command(page, "trainlint: Probe this file")
        status = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "probing" not in status:
            status = page.locator(".statusbar").inner_text()
            time.sleep(0.2)
        rows = wait_problems(page, lambda r: "\n".join(r).count("[confirmed]") >= 2, 420)
        result["timings"]["probe_s"] = round(time.monotonic() - t0, 2)
        page.screenshot(path=str(artifacts / "problems-probe.png"))
        result["steps"]["probe"] = {"rows": rows, "status_bar": status}


    with step(result, "not_installed"):
        # an interpreter without trainlint (in the workspace's settings): the extension restarts and says
        # how to install it
        (workspace / ".vscode").mkdir(exist_ok=True)
        (workspace / ".vscode" / "settings.json").write_text(json.dumps({"trainlint.interpreter": config["bare_python"]}))
        toast = page.locator(".notifications-toasts .notification-toast", has_text="not installed")
        toast.first.wait_for(timeout=90_000)
        page.screenshot(path=str(artifacts / "not-installed.png"))
        result["steps"]["not_installed"] = {"text": toast.first.inner_text()}


if __name__ == "__main__":
    main()
