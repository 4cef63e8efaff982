"""The command line: a thin click shell over the library API.

    trainlint [check] PATH... [options]       lint files and directories (static, never runs code)
    trainlint --probe SCRIPT [-- ARGS...]      also run the script up to training and confirm findings
    trainlint probe --prefetch SCRIPT          download the hub assets the probe of SCRIPT needs, then exit
    trainlint rule CODE                        print a rule's document
    trainlint rules                            list the catalog
    trainlint server                           language server over stdio

Exit codes: 0 no findings at or above `fail-on` (default: warning), 1 such findings, 2 usage/config
error or internal failure.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

import click

from trainlint import __version__
from trainlint.findings import Severity

FORMAT_NAMES = ["concise", "full", "json", "github", "sarif", "rdjson", "gitlab", "junit"]


class DefaultGroup(click.Group):
    """``trainlint PATH`` means ``trainlint check PATH`` (like ``ruff``'s old default)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "probe":  # `trainlint probe X` is `trainlint check --probe X`
            args = ["check", "--probe", *args[1:]]
        elif not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """After the commands: the lint options, which belong to ``check`` (the default command)."""
        check = self.commands.get("check")
        if check is not None:
            sub = click.Context(check, info_name="check", parent=ctx)
            records = [r for p in check.get_params(sub)
                       if isinstance(p, click.Option) and not getattr(p, "is_eager", False) and (r := p.get_help_record(sub)) is not None]
            with formatter.section("Lint options (`trainlint [check] PATH... [OPTIONS]`, also in `trainlint check --help`)"):
                formatter.write_dl(records)
        super().format_epilog(ctx, formatter)


class ConfigProblem(click.ClickException):
    """A configuration error (a pyproject.toml, --config, a selector): the message names the file and
    key or the option, exit code 2, and no `Usage:` banner (the command line was not the problem)."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"trainlint: {self.format_message()}", err=True)


def _split_codes(values: tuple[str, ...]) -> list[str]:
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainlint")
def main() -> None:
    """trainlint: find the bugs of a training script before the run.

    `trainlint PATH...` is `trainlint check PATH...`; `trainlint probe SCRIPT [-- ARGS]` is
    `trainlint check --probe SCRIPT [-- ARGS]`.
    """


@main.command(context_settings={"ignore_unknown_options": False}, short_help="Lint files and directories (the default command).")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (TL3, TL301, ALL); replaces the default set.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--output-format", type=click.Choice(FORMAT_NAMES), default="concise", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--fail-on", type=click.Choice([s.value for s in Severity]), default=None,
              help="The least severe finding that fails the run (exit 1); findings below it are shown only. [default: warning, or `fail-on` in the config]")
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), help="Config file (a pyproject.toml with [tool.trainlint]).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary or notes.")
@click.option("-v", "--verbose", is_flag=True, help="Tracebacks of internal errors; probe details.")
@click.option("--stdin-filename", help="The name of the file read from stdin (with PATH `-`).")
@click.option("--force-exclude", is_flag=True, help="Apply `exclude` to files named on the command line too (pre-commit).")
@click.option("--probe", "probe", is_flag=True, help="Run the script in a sandboxed child process up to training and confirm each finding on one real batch.")
@click.option("--python", "python", help="Interpreter of the training environment for --probe.")
@click.option("--probe-timeout", type=float, default=600.0, show_default=True, help="Seconds before the probe is killed.")
@click.option("--probe-rows", type=int, default=256, show_default=True, help="Rows kept from each load_dataset() during the probe.")
@click.option("--tiny-model", is_flag=True, help="Probe with small random models of the same architecture and config.")
@click.option("--overfit", type=int, default=0, help="Probe: train N steps on one batch and classify the loss curve.")
@click.option("--probe-memory", type=click.IntRange(min=0), default=0, help="Probe: address-space limit of each process of the script, in MB (0: none).")
@click.option("--probe-processes", type=click.IntRange(min=1), default=512, show_default=True, help="Probe: processes the script may run at once (in a sandbox).")
@click.option("--prefetch", is_flag=True, help="With `probe SCRIPT`: download what the probe needs (config and tokenizer with --tiny-model, else the weights too; the first --probe-rows rows of each dataset split) and exit; run nothing of the script.")
@click.option("--launcher", default=None, help="Probe: how the script is launched for real (torchrun, torch.distributed.launch, accelerate, deepspeed, mp.spawn, python; a command line such as 'torchrun --nproc_per_node=8' is recognised): probed as rank 0 of a world of size 1 (docs/gpu-probes.md).")
@click.option("--fix", "fix", is_flag=True, help="Apply the safe fixes (with --unsafe-fixes the unsafe ones too) and report what remains; with `-`, print the fixed source.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, also apply the fixes that change behaviour; alone, show them as available.")
@click.option("--diff", "diff", is_flag=True, help="Print a unified diff of the fixes and write nothing; exit 1 if there would be changes.")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=0, help="Worker processes (default 0: all cores; 1: serial). The output is the same for any value.")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), envvar="TRAINLINT_CACHE_DIR", help="Where results of unchanged files are kept [default: .trainlint_cache in the project root].")
@click.option("--no-cache", is_flag=True, envvar="TRAINLINT_NO_CACHE", help="Lint every file again; read and write no cache.")
def check(paths, select, ignore, extend_select, output_format, exit_zero, fail_on, statistics, config_file, quiet, verbose,
          stdin_filename, force_exclude, probe, python, probe_timeout, probe_rows, tiny_model, overfit,
          fix=False, unsafe_fixes=False, diff=False, jobs=0, cache_dir=None, no_cache=False, launcher=None,
          probe_memory=0, probe_processes=512, prefetch=False) -> None:
    """Lint PATH... (files and directories; `-` reads stdin)."""
    if prefetch:  # `trainlint probe --prefetch SCRIPT`: fetch the hub assets the probe needs, lint nothing
        from trainlint.probe.parent.prefetch import prefetch as run_prefetch

        scripts = [p for p in paths if str(p) != "-"]
        if len(scripts) != 1 or not scripts[0].is_file():
            raise click.UsageError("--prefetch takes one script: `trainlint probe --prefetch SCRIPT`")
        sys.exit(run_prefetch(scripts[0], python=python, tiny_model=tiny_model, rows=probe_rows, echo=click.echo))
    from trainlint.config import ConfigError, check_selectors, load_settings

    script_args: tuple[str, ...] = ()
    if probe and "--" in sys.argv:
        # click drops the `--`; everything after it belongs to the script
        rest = sys.argv[sys.argv.index("--") + 1:]
        script_args = tuple(rest)
        paths = paths[: len(paths) - len(rest)] if len(rest) < len(paths) else paths
    try:
        first = next((p for p in paths if str(p) != "-"), None)
        start = (first if first is not None and first.is_dir() else (first.parent if first else Path.cwd()))
        settings = load_settings(config_file, start=start if start.exists() else Path.cwd())
        for option, values in (("--select", select), ("--ignore", ignore), ("--extend-select", extend_select)):
            check_selectors(_split_codes(values), option)
        if select:  # an explicit selection on the command line replaces the file's selection
            settings.select = _split_codes(select)
            settings.ignore, settings.extend_select = [], []
        settings.ignore += _split_codes(ignore)
        settings.extend_select += _split_codes(extend_select)
        if fail_on is not None:
            from trainlint.config import parse_fail_on

            settings.fail_on = parse_fail_on(fail_on)
        settings._codes = None
        settings.codes()
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    if probe and (fix or diff):
        raise click.UsageError("--probe cannot be combined with --fix/--diff: fix first, then probe")
    try:
        code = _run(paths, settings, output_format, exit_zero, statistics, quiet, verbose, stdin_filename,
                    force_exclude, probe, python, probe_timeout, probe_rows, tiny_model, overfit, script_args,
                    fixing=_Fixing(fix, unsafe_fixes, diff), jobs=jobs, cache=_cache(settings, cache_dir, no_cache))
    except click.ClickException:
        raise
    except KeyboardInterrupt:  # Ctrl-C: the probe's processes are gone already (see signals_kill_children)
        click.echo("\ntrainlint: interrupted", err=True)
        code = 130
    except BrokenPipeError:  # `trainlint . | head`: the reader went away, not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except Exception as exc:  # never a raw traceback without --verbose
        if verbose:
            raise
        click.echo(f"trainlint: internal error: {type(exc).__name__}: {exc} (run with --verbose for the traceback)", err=True)
        code = 2
    sys.exit(code)


def _run(paths, settings, output_format, exit_zero, statistics, quiet, verbose, stdin_filename, force_exclude,
         probe, python, probe_timeout, probe_rows, tiny_model, overfit, script_args, fixing=None, jobs=1,
         cache=None) -> int:
    from trainlint.engine import FileResult
    from trainlint.files import discover
    from trainlint.formats import Run, get_writer
    from trainlint.parallel import lint_bytes, lint_files

    if not paths:
        raise click.UsageError("no paths given: try `trainlint .` or `trainlint train.py`")
    results: list[FileResult] = []
    usage_error = False
    file_paths = [p for p in paths if str(p) != "-"]
    if len(file_paths) != len(paths):
        name = stdin_filename or "-"
        data = sys.stdin.buffer.read()
        results.append(lint_bytes(data, name, settings))  # as the file `name` holding these bytes is linted
        if fixing is not None and fixing.active:
            results[-1] = fixing.stdin(data, results[-1], settings)
    files = []
    for f in discover(file_paths, settings, force_exclude=force_exclude):
        if f.error == "no such file or directory":
            click.echo(f"trainlint: {f.display}: no such file or directory", err=True)
            usage_error = True
            continue
        files.append(f)
    # cached results first, then the rest in worker processes; the same output for any --jobs
    for f, res in zip(files, lint_files(files, settings, jobs, cache)):
        results.append(res)
        if fixing is not None and fixing.active and f.error is None:
            results[-1] = fixing.file(f.path, f.display, results[-1], settings)

    run = Run(files_checked=len(results), verbose=verbose, fail_on=settings.fail_on,
              not_analysed=sum(1 for r in results if not r.training))
    findings = [fd for r in results for fd in r.findings]
    probe_failed = False
    if probe:
        findings, probe_failed = _probe(file_paths, findings, run, python, probe_timeout, probe_rows, tiny_model,
                                        overfit, verbose, script_args)
    if not quiet:
        for r in results:
            if r.note:
                click.echo(f"trainlint: {r.filename}: {r.note}", err=True)
    out: TextIO = sys.stdout
    if fixing is not None:
        run.fixed, run.unsafe_fixes = fixing.count, fixing.unsafe
        if fixing.diff:
            return fixing.report_diff(out, results, quiet)
        if fixing.stdin_source is not None:  # `trainlint --fix -`: the fixed source on stdout, findings on stderr
            if isinstance(fixing.stdin_source, bytes):  # not text trainlint can read: given back unchanged
                out.flush()
                sys.stdout.buffer.write(fixing.stdin_source)
            else:
                out.write(fixing.stdin_source)
            out.flush()
            out = sys.stderr
    if statistics:
        _statistics(findings, out)
    else:
        writer = get_writer(output_format)
        if quiet and output_format in ("concise", "full"):
            from trainlint.formats.concise import location

            for finding in findings:
                out.write(f"{location(finding)}: {finding.code} [{finding.severity.value}] {finding.message}\n")
        else:
            writer(findings, out, run)
    out.flush()
    if usage_error or any(r.internal_error for r in results) or (fixing is not None and fixing.errors):
        return 2
    if exit_zero:
        return 0
    from trainlint.findings import fails_run

    # Findings below `fail-on` are shown but do not fail the run; after a probe, a confirmed finding
    # fails and a not-reproduced one does not by itself. A probe that did not reach training (timeout,
    # crash, exit, error, missing asset) never passes.
    return 1 if probe_failed or any(fails_run(f, settings.fail_on) for f in findings) else 0


class _Fixing:
    """`--fix` / `--unsafe-fixes` / `--diff`: fix each file after linting it (see trainlint.fixes)."""

    def __init__(self, fix: bool, unsafe: bool, diff: bool) -> None:
        self.fix, self.unsafe, self.diff = fix, unsafe, diff
        self.count = 0  # findings fixed (or that would be, with --diff)
        self.diffs: list[str] = []
        self.stdin_source: str | bytes | None = None
        self.errors = False

    @property
    def active(self) -> bool:
        return self.fix or self.diff

    def _fixable(self, result) -> bool:
        from trainlint.fixes import applicable

        return any(applicable(f.fix, self.unsafe) for f in result.findings)

    def stdin(self, data: bytes, result, settings):
        from trainlint.core import decode_source
        from trainlint.fixes import fix_notebook, fix_source, to_unified_diff

        text, _ = decode_source(data)
        if text is None or not self._fixable(result):
            self.stdin_source = (data if text is None else text) if self.fix else None
            return result
        if result.filename.endswith(".ipynb"):
            fixed = fix_notebook(text, result.filename, settings, self.unsafe)
        else:
            fixed = fix_source(text, result.filename, settings, self.unsafe, list(result.findings))
        self._note(result.filename, fixed)
        self.count += len(fixed.fixed)
        if self.diff:
            self.diffs.append(to_unified_diff(text, fixed.source, result.filename))
        else:
            self.stdin_source = fixed.source
        result.findings = fixed.remaining
        return result

    def file(self, path, display, result, settings):
        from trainlint.fixes import fix_file

        if not result.parsed or not self._fixable(result):
            return result
        try:
            ff = fix_file(path, settings, self.unsafe, write=not self.diff, display=display,
                          findings=None if path.suffix == ".ipynb" else list(result.findings))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            click.echo(f"trainlint: {display}: cannot fix: {exc}", err=True)
            self.errors = True
            return result
        self._note(display, ff.result)
        self.count += len(ff.result.fixed)
        if self.diff:
            if ff.diff:
                self.diffs.append(ff.diff)
        else:
            result.findings = ff.result.remaining
        return result

    def _note(self, name, fixed) -> None:
        if fixed.error:
            click.echo(f"trainlint: {name}: {fixed.error}", err=True)
            self.errors = True

    def report_diff(self, out, results, quiet: bool) -> int:
        for d in self.diffs:
            out.write(d)
        out.flush()
        if not quiet:
            n = self.count
            click.echo(f"Would fix {n} finding{'s' if n != 1 else ''}." if n else "No fixes available.", err=True)
        if self.errors or any(r.internal_error for r in results):
            return 2
        return 1 if self.diffs else 0


def _cache(settings, cache_dir, no_cache):
    """The result cache of this run: ``--cache-dir``, else ``.trainlint_cache`` in the project root
    (where the config file is, else the nearest pyproject.toml/.git above the working directory, else
    the user's cache directory); None with ``--no-cache``."""
    if no_cache:
        return None
    from trainlint.cache import Cache, default_directory

    return Cache(cache_dir or settings.cache_dir or default_directory(settings.project_root), settings)


def _statistics(findings, out) -> None:
    from trainlint.rule import all_rules

    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    rules = all_rules()
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        fixable = sum(1 for f in findings if f.code == code and f.fix and f.fix.applicability.value == "safe")
        out.write(f"{n:>5}\t{code}\t{'[*] ' if fixable else ''}{rules[code].name}\n")


def _probe(file_paths, findings, run, python, timeout, rows, tiny_model, overfit, verbose, script_args):
    from trainlint.probe import ProbeOptions, run_probe

    scripts = [p for p in file_paths if p.is_file()]
    if len(scripts) != 1:
        raise click.UsageError("--probe takes exactly one script: `trainlint --probe train.py [-- script args]`")
    script = scripts[0]
    from trainlint.probe.child.frameworks.cuda_on_cpu import launcher_name

    asked = click.get_current_context().params.get("launcher")
    launcher = launcher_name(asked) if asked else ""
    if launcher is None:
        raise click.UsageError(f"--launcher {asked!r}: not a launcher the probe knows (torchrun, "
                               "torch.distributed.launch, accelerate, deepspeed, mp.spawn, python)")
    params = click.get_current_context().params
    # where the run is, on a terminal only (never in a pipe, a log or with --quiet)
    progress = not params.get("quiet") and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
    options = ProbeOptions(python=python, timeout=timeout, rows=rows, tiny_model=tiny_model, overfit=overfit,
                           verbose=verbose, script_args=script_args, launcher=launcher, progress=progress,
                           memory_mb=params.get("probe_memory") or 0, max_processes=params.get("probe_processes") or 512)
    report = run_probe(script, findings, options)
    run.probed = True
    run.probe_notes = list(report.notes)
    run.probe_details = list(report.details)
    if report.outcome == "asset-missing":
        run.probe_incomplete = "the probe did not reach training (asset-missing: see the probe notes for how to fetch it)"
    elif report.outcome == "framework-missing":
        run.probe_incomplete = "the probe did not run (framework-missing: see the probe notes for what to install)"
    elif report.outcome == "script-error":
        # The error may be in the training loop itself (a hand-written loop's first batch): the probe ran
        # up to it, not "before training"; the checks after it did not run.
        run.probe_incomplete = "the probe stopped at the script's error (script-error): the checks after it did not run"
    elif report.outcome != "reached-training":
        run.probe_incomplete = f"the probe did not reach training ({report.outcome or 'no result'})"
    elif report.incomplete:
        n = len(report.incomplete)
        run.probe_incomplete = f"{n} probe check{'s' if n != 1 else ''} could not complete (see the probe notes)"
    # a check that could not complete is no all clear: the run fails (unless --exit-zero)
    return report.findings, report.outcome != "reached-training" or bool(report.incomplete)


@main.command("rule", short_help="Show the document of one rule, by code or name.")
@click.argument("code_or_name", metavar="CODE|NAME")
@click.option("--no-pager", is_flag=True, help="Print the document instead of showing it in a pager.")
def rule_cmd(code_or_name: str, no_pager: bool) -> None:
    """Show the document of a rule, given by code (TL301) or name (missing-num-labels), rendered for
    the terminal. On a terminal it is shown in the pager ($PAGER, else `less`), with colours (not
    with NO_COLOR set); otherwise it is printed as plain text."""
    import difflib
    import os
    import shutil

    from trainlint.docs import doc_text, rule_url
    from trainlint.mdterm import render
    from trainlint.rule import all_rules, find_rule

    rule = find_rule(code_or_name)
    if rule is None:
        names = [r.name for r in all_rules().values()]
        close = difflib.get_close_matches(code_or_name.lower().replace("_", "-"), names, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise click.UsageError(f"unknown rule {code_or_name!r}{hint}: `trainlint rules` lists the codes and names")
    tty = sys.stdout.isatty()
    color = tty and not os.environ.get("NO_COLOR")
    width = min(shutil.get_terminal_size((100, 24)).columns, 100) if tty else 100
    bold, reset = ("\x1b[1m", "\x1b[0m") if color else ("", "")
    text = doc_text(rule.code)
    body = rule.summary() if text is None else (text.split("\n", 1)[1] if text.startswith("# ") else text)
    document = (
        f"{bold}{rule.code} {rule.name}{reset}\n"
        f"stage: {rule.stage().value} ({rule.stage().label}) · severity: {rule.severity.value} · "
        f"default: {'on' if rule.default else 'off'}\n"
        f"static: {'yes' if rule.has_static_check() else 'no'} · probe: {'yes' if rule.probe else 'no'} · "
        f"autofix: {rule.fix.value if rule.fix else 'none'}\n"
        f"{rule_url(rule.code)}\n\n" + render(body, width, color)
    )
    if tty and not no_pager:
        _page(document, color)
    else:
        sys.stdout.write(document)


def _page(text: str, color: bool) -> None:
    """Show ``text`` in the user's pager ($PAGER, else `less`; `less` gets LESS=FRX when LESS is unset:
    it quits at once when the text fits the screen, and shows colours). Without one, print it."""
    import os
    import re
    import shlex
    import subprocess

    command = shlex.split(os.environ.get("PAGER", "")) or ["less"]
    env = dict(os.environ)
    if Path(command[0]).name == "less":
        env.setdefault("LESS", "FRX")
        if "r" not in env["LESS"].lower():
            color = False
    if not color:
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    try:
        pager = subprocess.Popen(command, stdin=subprocess.PIPE, env=env)
    except OSError:  # no such pager: print the text
        sys.stdout.write(text)
        return
    try:
        pager.communicate(text.encode(sys.stdout.encoding or "utf-8", errors="replace"))
    except (BrokenPipeError, KeyboardInterrupt):  # the user left the pager early
        pass
    pager.wait()


@main.command("rules", short_help="List the rule catalog.")
@click.option("--output-format", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--all", "show_all", is_flag=True, help="Include the meta codes (TL0xx).")
def rules_cmd(output_format: str, show_all: bool) -> None:
    """List the rule catalog: code, name, stage, severity, default, probe."""
    import json

    from trainlint.rule import all_rules

    rows = [r for r in all_rules().values() if show_all or r.stage().value != 0]
    if output_format == "json":
        click.echo(json.dumps([{
            "code": r.code, "name": r.name, "stage": r.stage().label, "severity": r.severity.value,
            "default": r.default, "static": r.has_static_check(), "probe": bool(r.probe),
            "fix": r.fix.value if r.fix else None, "summary": r.summary(),
        } for r in rows], indent=2))
        return
    click.echo(f"{'code':<6}  {'name':<36}  {'stage':<17}  {'severity':<8}  {'default':<7}  {'static':<6}  {'probe':<5}  fix")
    for r in rows:
        click.echo(f"{r.code:<6}  {r.name:<36}  {r.stage().label:<17}  {r.severity.value:<8}  "
                   f"{'on' if r.default else 'off':<7}  {'yes' if r.has_static_check() else 'no':<6}  "
                   f"{'yes' if r.probe else 'no':<5}  {r.fix.value if r.fix else '-'}")


@main.command("server", short_help="Language server over stdio (LSP).")
def server_cmd() -> None:
    """Language server over stdio (LSP): diagnostics, fixes, noqa and rule docs in the editor.

    Needs the `server` extra (pygls, lsprotocol; in a clone: pip install '.[server]'). Static only: never
    runs a probe."""
    from trainlint.server_main import start

    start()


if __name__ == "__main__":  # pragma: no cover
    main()
