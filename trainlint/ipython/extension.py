"""``%load_ext trainlint``: lint each cell before it runs, and the ``%trainlint`` line magic.

- ``pre_run_cell``: the cell about to run is linted with every cell run before it, in the order they
  ran (:class:`~trainlint.ipython.cells.SessionLinter`); its findings are displayed under it.
- When errors stop cells (``%trainlint errors stop``), an AST transformer rejects the cell
  (:class:`CellStopped`, an ``InputRejected``: IPython's way of not running a cell) after the findings
  are shown; by default the cell runs anyway.
- ``%trainlint``: the findings of the whole session; ``%trainlint off`` / ``on``;
  ``%trainlint errors stop|run``; ``%trainlint probe ...``: the live probe (:mod:`trainlint.ipython.live`).
"""

from __future__ import annotations

import ast
import shlex
from typing import Any

from IPython.core.error import InputRejected, UsageError

from trainlint.ipython.cells import SessionLinter, stops
from trainlint.ipython.render import findings_bundle, probe_bundle

USAGE = """%trainlint                     the findings of the cells run so far (in the order they ran)
%trainlint on | off            lint each cell before it runs (on after %load_ext trainlint)
%trainlint errors stop | run   whether an error finding stops its cell (default: run)
%trainlint probe trainer [--overfit N]
                               the probe's checks on a live Trainer (by name; `trainer`: the one Trainer)
%trainlint probe model --data ds [--overfit N]
                               ... on a compiled Keras model and the dataset given to fit()
%trainlint probe model --loader dl --optimizer opt --loss fn [--overfit N]
                               ... on a PyTorch model, its DataLoader, optimizer and loss function"""


class CellStopped(InputRejected):
    """The cell was not run: trainlint found an error in it (``%trainlint errors stop``)."""

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of a traceback
        return [f"CellStopped: {self}"]


class _StopRejected(ast.NodeTransformer):
    def __init__(self, ext: TrainlintExtension) -> None:
        self.ext = ext

    def visit_Module(self, node: ast.Module) -> ast.Module:  # noqa: N802  # ast.NodeTransformer's name
        reason, self.ext.stop_reason = self.ext.stop_reason, None
        if reason:
            raise CellStopped(reason)
        return node


class TrainlintExtension:
    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.enabled = True
        self.stop_on_error = False
        self.stop_reason: str | None = None
        self.linter = SessionLinter()
        if self.linter.config_error:
            print(f"trainlint: {self.linter.config_error}: the cells are linted with the default settings")
        self._transformer = _StopRejected(self)
        # the cells run before the extension was loaded: the objects they built exist in the kernel
        hist = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or []
        for n, source in enumerate(hist[1:], 1):
            self.linter.add(source, f"In [{n}]")

    # ------------------------------------------------------------ wiring

    def register(self) -> None:
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        if self._transformer not in self.shell.ast_transformers:
            self.shell.ast_transformers.append(self._transformer)
        self.shell.register_magic_function(self.magic, "line", "trainlint")

    def unregister(self) -> None:
        try:
            self.shell.events.unregister("pre_run_cell", self.pre_run_cell)
        except ValueError:
            pass
        if self._transformer in self.shell.ast_transformers:
            self.shell.ast_transformers.remove(self._transformer)

    def display(self, bundle: dict[str, str]) -> None:
        from IPython.display import display

        display(bundle, raw=True)

    # ------------------------------------------------------------ each cell

    def pre_run_cell(self, info: Any) -> None:
        source = getattr(info, "raw_cell", "") or ""
        self.stop_reason = None
        if getattr(info, "silent", False):
            return
        if not self.enabled or _is_trainlint_magic(source):
            self.linter.add(source, self._label(info))
            return
        found = self.linter.lint_next(source, self._label(info))
        if not found:
            return
        stop = self.stop_on_error and stops(found)
        footer = "trainlint: this cell was not run (%trainlint errors run: run it anyway)" if stop else ""
        n = len(found)
        self.display(findings_bundle(found, f"trainlint: {n} finding{'s' if n != 1 else ''} in this cell",
                                     footer=footer))
        if stop:
            codes = ", ".join(dict.fromkeys(f.code for f in found if f.severity.value == "error"))
            self.stop_reason = f"trainlint found an error in this cell ({codes}); %trainlint errors run runs it anyway"

    def _label(self, info: Any) -> str:
        # IPython counts a cell that is stored in the history before its pre_run_cell event
        n = self.shell.execution_count - (1 if getattr(info, "store_history", False) else 0)
        return f"In [{n}]"

    # ------------------------------------------------------------ %trainlint

    def magic(self, line: str) -> Any:
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%trainlint: {exc}\n{USAGE}") from None
        if not args:
            return self.show_session()
        head, rest = args[0], args[1:]
        if head in ("on", "off") and not rest:
            self.enabled = head == "on"
            print(f"trainlint: cells are {'linted before they run' if self.enabled else 'no longer linted'}")
            return None
        if head == "errors" and rest in (["stop"], ["run"]):
            self.stop_on_error = rest == ["stop"]
            print("trainlint: a cell with an error finding is " + ("not run" if self.stop_on_error else "run anyway"))
            return None
        if head == "probe":
            return self.probe(rest)
        if head in ("help", "-h", "--help"):
            print(USAGE)
            return None
        raise UsageError(f"%trainlint: unknown arguments {line!r}\n{USAGE}")

    def show_session(self) -> None:
        cells = [c for c in self.linter.cells if not _is_trainlint_magic(c.source)]
        result = self.linter.lint(cells)
        if not result.findings:
            print(f"trainlint: {len(cells)} cell{'s' if len(cells) != 1 else ''} linted, all checks passed")
            return
        n = len(result.findings)
        self.display(findings_bundle(result.findings, f"trainlint: {n} finding{'s' if n != 1 else ''} in the "
                                     f"{len(cells)} cells run so far", label=result.label))

    def probe(self, args: list[str]) -> Any:
        from trainlint.ipython.live import LiveProbeError, parse_probe_args, run_live_probe

        try:
            request = parse_probe_args(args)
        except LiveProbeError as exc:
            raise UsageError(f"%trainlint probe: {exc}\n{USAGE}") from None
        cells = [c for c in self.linter.cells if not _is_trainlint_magic(c.source)]
        session = self.linter.lint(cells)
        try:
            report = run_live_probe(request, self.shell.user_ns, session.findings)
        except LiveProbeError as exc:
            raise UsageError(f"%trainlint probe: {exc}") from None
        self.display(probe_bundle(report, f"trainlint probe: {request.describe()}", label=session.label))
        return None


def _is_trainlint_magic(source: str) -> bool:
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith(("%trainlint", "%load_ext trainlint", "%reload_ext trainlint"))
                               for line in lines)


_EXTENSIONS: dict[int, TrainlintExtension] = {}


def load(shell: Any) -> TrainlintExtension:
    ext = _EXTENSIONS.get(id(shell))
    if ext is None:
        ext = _EXTENSIONS[id(shell)] = TrainlintExtension(shell)
        ext.register()
    return ext


def unload(shell: Any) -> None:
    ext = _EXTENSIONS.pop(id(shell), None)
    if ext is not None:
        ext.unregister()
