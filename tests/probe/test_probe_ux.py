"""What a user meets around the probe: a framework missing from the probe's interpreter is a status
with the command that installs it (never a finding), the progress line on a terminal (and nothing in a
pipe or with --quiet), and Ctrl-C / SIGINT: "interrupted", exit 130, the child gone, never reported as
its crash. Fast: no framework is imported."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from trainlint.findings import Finding, Position, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, run_probe
from trainlint.probe.parent.preflight import script_frameworks

SRC = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> str:
    """A fresh environment with nothing installed (as after `python -m venv`), without pip."""
    root = tmp_path_factory.mktemp("bare-env")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    return str(root / "bin" / "python")


def test_the_frameworks_of_a_script_are_read_from_its_imports():
    source = (
        "import os\nimport torch.nn as nn\nfrom datasets import load_dataset\n"
        "from transformers import Trainer\nfrom . import local\n"
        "try:\n    import wandb\nexcept ImportError:\n    wandb = None\n"
        "def f():\n    import peft\n"
    )
    # optional imports (try/except ImportError) do not count; imports inside functions do
    assert script_frameworks(source) == {"torch": 2, "datasets": 3, "transformers": 4, "peft": 11}
    # transformers' Trainer runs on torch even when the script never imports it
    assert script_frameworks("from transformers import Trainer\n") == {"transformers": 1, "torch": 0}
    assert script_frameworks("import tensorflow as tf\nfrom transformers import TFAutoModel\n") == {
        "tensorflow": 1, "transformers": 2}
    # transformers' TensorFlow classes and its framework-neutral names need no torch
    assert script_frameworks("from transformers import AutoTokenizer, TFAutoModelForSequenceClassification\n") == {
        "transformers": 1}
    assert script_frameworks("from peft import LoraConfig\n") == {"peft": 1, "torch": 0}


def _static(code: str, line: int) -> Finding:
    return Finding(code, "static", f"static {code}", Severity.ERROR, "train.py", Position(line, 1), Position(line, 2))


def test_a_missing_framework_is_a_status_with_the_install_command(tmp_path, bare_python):
    script = tmp_path / "train.py"
    script.write_text("import json\nimport datasets\nfrom transformers import Trainer\n"
                      "raise SystemExit('the script must not run')\n", encoding="utf-8")
    report = run_probe(script, [_static("TL201", 3)], ProbeOptions(python=bare_python, timeout=60))
    assert report.outcome == "framework-missing"
    assert [f.code for f in report.findings] == ["TL201"]  # no finding of the probe's own
    assert report.findings[0].probe.status is ProbeStatus.NOT_REACHED
    note = report.notes[0]
    assert "datasets (train.py:2), transformers (train.py:3), torch (needed by transformers)" in note
    assert (f"`{bare_python} -m pip install datasets transformers torch`" in note
            or f"`uv pip install --python {bare_python} datasets transformers torch`" in note)
    assert "isolated" not in " ".join(report.notes)  # the sandbox never started


def test_a_framework_missing_while_the_script_runs_is_the_same_status(tmp_path, bare_python):
    (tmp_path / "helpers.py").write_text("import datasets\n", encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text("import sys\nimport helpers\n", encoding="utf-8")
    report = run_probe(script, [], ProbeOptions(python=bare_python, timeout=60))
    assert report.outcome == "framework-missing", report.notes
    assert report.findings == []  # not TL707 against the script
    assert any("cannot import datasets (train.py:2)" in n and "install datasets`" in n for n in report.notes)


def test_the_cli_says_what_to_install(tmp_path, bare_python):
    script = tmp_path / "train.py"
    script.write_text("import torch\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "trainlint", "--probe", "--python", bare_python, "--no-cache",
                           str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "install torch`" in done.stdout + done.stderr
    assert "the probe did not run (framework-missing" in done.stdout + done.stderr
    assert "TL707" not in done.stdout


# ---------------------------------------------------------------- progress and interruption

SLOW = "import os, time\nopen(os.environ['PROBE_MARK'], 'w').write(str(os.getpid()))\ntime.sleep({seconds})\n"


def _env(tmp_path: Path) -> dict[str, str]:
    # no sandbox: the script writes its pid where the test reads it
    return {**os.environ, "TRAINLINT_PROBE_SANDBOX": "none", "TRAINLINT_NO_CACHE": "1",
            "PROBE_MARK": str(tmp_path / "pid"), "TERM": "xterm"}


def _run_in_pty(argv: list[str], env: dict[str, str], until: float,
                send: tuple[bytes, bytes] | None = None) -> tuple[int, str]:
    """Run ``argv`` with a terminal as stdin/stdout/stderr; when ``send[0]`` appears, type ``send[1]``."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the CLI
        try:
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    out = bytearray()
    sent = False
    deadline = time.monotonic() + until
    status = None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            out += data
        if send is not None and not sent and send[0] in out:
            os.write(fd, send[1])
            sent = True
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            while True:  # what is left in the terminal
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    break
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    break
                if not data:
                    break
                out += data
            break
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail(f"the CLI did not end: {out.decode(errors='replace')[-2000:]}")
    os.close(fd)
    assert status is not None
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", errors="replace")


def _gone(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    for _ in range(300):  # the sandbox's cleanup may take seconds on a loaded machine
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_progress_on_a_terminal_then_erased(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SLOW.format(seconds=1.5), encoding="utf-8")
    code, out = _run_in_pty([sys.executable, "-m", "trainlint", "--probe", str(script)], _env(tmp_path), 120)
    assert code == 1, out  # the script never trains: not all clear
    assert "probe train.py: script running" in out
    assert "\r\x1b[K" in out  # the line is erased before the report
    assert out.index("script running") < out.index("probe wall time")
    quiet_code, quiet = _run_in_pty([sys.executable, "-m", "trainlint", "--probe", "--quiet", str(script)],
                                    _env(tmp_path), 120)
    assert quiet_code == 1 and "script running" not in quiet and "\r" not in quiet.replace("\r\n", "")


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SLOW.format(seconds=0.5), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "trainlint", "--probe", str(script)], capture_output=True,
                          text=True, env=_env(tmp_path), timeout=120)
    assert done.returncode == 1
    assert "script running" not in done.stderr and "\r" not in done.stderr


def test_ctrl_c_on_a_terminal_interrupts(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SLOW.format(seconds=60), encoding="utf-8")
    code, out = _run_in_pty([sys.executable, "-m", "trainlint", "--probe", str(script)], _env(tmp_path), 60,
                            send=(b"script running", b"\x03"))
    assert code == 130, out
    assert "trainlint: interrupted" in out
    assert "Aborted" not in out and "died" not in out and "crashed" not in out
    assert _gone(tmp_path / "pid")


def test_sigint_to_trainlint_alone_is_an_interruption_not_a_crash(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SLOW.format(seconds=60), encoding="utf-8")
    mark = tmp_path / "pid"
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", "--probe", str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    try:
        for _ in range(600):
            if mark.exists() and mark.read_text():
                break
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)  # trainlint only, not its process group
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, out + err
    assert "trainlint: interrupted" in err
    assert "died" not in out + err and "crashed" not in out + err
    assert _gone(mark)
