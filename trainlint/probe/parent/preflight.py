"""Before the probe starts: does the interpreter it will use have the frameworks the script imports?

The script's import statements are read (nothing of it runs); the interpreter is asked, in a short
process of its own, whether it can find each module (``importlib.util.find_spec``: nothing is imported).
A framework it lacks is the environment's problem, never the script's: the probe does not run and the
report says what to install, with the command for that interpreter.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from trainlint.probe.child.requirements import DISTRIBUTIONS, NEEDS_TORCH, TENSORFLOW

#: Run in the probe's interpreter (any Python 3): which of the modules on argv it cannot find, and pip.
_FIND = r"""
import importlib.util, json, sys
sys.path.insert(0, sys.argv[1])
missing = []
for name in sys.argv[2:]:
    try:
        found = importlib.util.find_spec(name) is not None
    except Exception:
        found = True
    if not found:
        missing.append(name)
try:
    pip = importlib.util.find_spec("pip") is not None
except Exception:
    pip = False
print(json.dumps({"missing": missing, "pip": pip}))
"""


@dataclasses.dataclass(frozen=True)
class MissingFrameworks:
    python: str
    modules: list[str]  # top-level modules the interpreter cannot find
    lines: dict[str, int]  # where the script imports each (absent: needed by another framework)
    pip: bool  # the interpreter has pip
    needed_by: tuple[str, ...] = ()  # the frameworks of the script that need the ones it does not import

    def command(self) -> str:
        """The command that installs them for that interpreter."""
        dists = list(dict.fromkeys(DISTRIBUTIONS.get(m, m) for m in self.modules))
        if self.pip or not shutil.which("uv"):
            return shlex.join([self.python, "-m", "pip", "install", *dists])
        return shlex.join(["uv", "pip", "install", "--python", self.python, *dists])

    def text(self, script: Path) -> str:
        where = [f"{m} ({script.name}:{self.lines[m]})" if m in self.lines else
                 f"{m} (needed by {', '.join(self.needed_by) or 'the script'})" for m in self.modules]
        unknown = [m for m in self.modules if m not in DISTRIBUTIONS]
        return (f"the probe did not run: its interpreter {self.python} cannot import {', '.join(where)}; install "
                f"{'them' if len(self.modules) > 1 else 'it'} with `{self.command()}`"
                + (f" (the package name of {', '.join(unknown)} is a guess)" if unknown else "")
                + (f" ({self.python} has no pip: `{shlex.join([self.python, '-m', 'ensurepip'])}` first)"
                   if not self.pip and not shutil.which("uv") else "")
                + ", or give --python the interpreter of the training environment; the script itself is not at fault")


def interpreter(python: str | None) -> str:
    """The interpreter the probe runs the script with: ``--python``, else trainlint's own."""
    chosen = python or sys.executable
    return shutil.which(chosen) or chosen


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """The import is optional: inside ``try`` with an ImportError handler, or under ``if TYPE_CHECKING``."""
    child, up = node, parents.get(node)
    while up is not None:
        if isinstance(up, ast.Try) and child in up.body:
            for handler in up.handlers:
                names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                if handler.type is None or any(isinstance(n, ast.Name) and n.id in (
                        "ImportError", "ModuleNotFoundError", "Exception", "BaseException") for n in names):
                    return True
        if isinstance(up, ast.If) and "TYPE_CHECKING" in ast.unparse(up.test):
            return True
        child, up = up, parents.get(up)
    return False


def script_frameworks(source: str) -> dict[str, int]:
    """The known frameworks the script imports unconditionally, each with the line of its first import,
    and those they need (``torch`` for the frameworks built on it and for transformers' PyTorch classes,
    line 0)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: dict[str, int] = {}
    torch_side = False  # a PyTorch class of transformers is imported (Trainer, AutoModelFor..., BertModel)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "transformers":
            torch_side |= any(_torch_class(a.name) for a in node.names) and not _guarded(node, parents)
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".", 1)[0]
            if top in DISTRIBUTIONS and not _guarded(node, parents):
                found[top] = min(found.get(top, node.lineno), node.lineno)
    if (found.keys() & (NEEDS_TORCH - {"transformers"}) or torch_side) and not found.keys() & TENSORFLOW:
        found.setdefault("torch", 0)
    return found


def _torch_class(name: str) -> bool:
    """A name of transformers that needs PyTorch: the Trainer, a PyTorch model class (not TF*, Flax*)."""
    if name.startswith(("TF", "Flax")):
        return False
    return name in ("Trainer", "TrainingArguments", "Seq2SeqTrainer", "Seq2SeqTrainingArguments") or (
        name.startswith("AutoModel") or name.endswith(("Model", "LMHeadModel")) or "For" in name)


def _ask(python: str, directory: Path, names: list[str], env: dict[str, str]) -> dict[str, Any] | None:
    try:
        done = subprocess.run([python, "-c", _FIND, str(directory), *names], capture_output=True, text=True,
                              env=env, timeout=60, stdin=subprocess.DEVNULL)
        answer = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None
    return answer if isinstance(answer, dict) and isinstance(answer.get("missing"), list) else None


def missing_frameworks(script: Path, python: str, env: dict[str, str]) -> MissingFrameworks | None:
    """The frameworks of ``script`` that ``python`` cannot find; None when it has them all (or when the
    question cannot be asked: the probe then runs and says what happened)."""
    try:
        source = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    wanted = script_frameworks(source)
    if not wanted:
        return None
    answer = _ask(python, script.resolve().parent, sorted(wanted), env)
    if answer is None or not answer["missing"]:
        return None
    absent = {str(m) for m in answer["missing"]}
    modules = [m for m in sorted(wanted, key=lambda m: (wanted[m] or sys.maxsize, m)) if m in absent]
    return MissingFrameworks(python, modules, {m: wanted[m] for m in modules if wanted[m]}, bool(answer.get("pip")),
                             tuple(sorted(m for m in wanted if m in NEEDS_TORCH)))


def missing_at_run(script: Path, python: str, modules: list[str], line: int | None,
                   env: dict[str, str]) -> MissingFrameworks:
    """A framework the script (or a module of its project) imported while it ran, and the interpreter
    did not have."""
    answer = _ask(python, script.resolve().parent, [], env)
    return MissingFrameworks(python, modules, {m: line for m in modules if line}, bool(answer and answer.get("pip")))


def check_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the question is asked in: the user's, without trainlint's own settings."""
    env = dict(os.environ if base is None else base)
    for key in [k for k in env if k.startswith("TRAINLINT_") or k in ("PYTHONSTARTUP", "PYTHONINSPECT")]:
        env.pop(key)
    return env
