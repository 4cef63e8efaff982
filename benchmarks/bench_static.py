"""Benchmark of the static linter. Prints numbers; asserts nothing.

    python benchmarks/bench_static.py [--full] [--subset N] [--jobs N] [--quick]

Corpus: the source of ``transformers==5.23.0`` (downloaded with ``pip download --no-deps`` into
``benchmarks/.corpus/`` and unpacked the first time; gitignored) plus ``examples/``.

Side by side, each in a fresh process, on the same machine:

- trainlint (default rules): cold ``--no-cache`` with ``-j1`` and with ``-j`` all cores; then a
  warm run on unchanged files from the cache;
- the floor: parsing alone, nothing else. trainlint parses a training script with LibCST when some
  rule's gate opens (``FileResult.parsed``) and only syntax-checks it with CPython's parser
  otherwise (``FileResult.syntax_checked``); the floor does exactly that to the same files
  ("both parsers"), and is also shown for the LibCST-parsed files alone; serial and split over the
  same number of processes;
- TorchFix 0.7 (``torchfix``, its default rules and jobs) and Fixit 2 (``fixit lint``, its default
  rules), installed into ``benchmarks/.venv-bench`` (created here; torch pinned by
  ``benchmarks/constraints-bench.txt`` so pip never pulls CUDA wheels). Both take minutes on the
  whole corpus (TorchFix ~590 s), so unless ``--full`` they run on a fixed random subset
  (``--subset`` files, seed 0) and the full-corpus time is extrapolated by bytes — the output says
  so — and trainlint is also measured on that very subset for a direct ratio;
- single-script latency: cold ``trainlint examples/mnli_trainer_buggy.py`` (median of 10),
  ``python -X importtime -c "import trainlint.cli"``, and the re-lint of a 500-line script as the
  language server does it (``benchmarks/server_bench.py`` measures the LSP round trip too).

Wall time depends on what else the machine runs; CPU time (user+sys of the process tree) much less:
both are printed, with the load average. Peak memory is the largest process's max RSS (wait4).

Targets: ≥ 20× faster than TorchFix; faster than Fixit; ≤ 1.5× the LibCST parse floor;
warm ≤ 10 % of cold; cold single script < 0.3 s; re-lint < 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
CORPUS = BENCH / ".corpus"
CORPUS_SRC = CORPUS / "src"
WHEEL = "transformers-5.23.0-py3-none-any.whl"
VENV = BENCH / ".venv-bench"
CONSTRAINTS = BENCH / "constraints-bench.txt"
PY = sys.executable


# ---------------------------------------------------------------------------------------------
# Set-up


def ensure_corpus() -> None:
    if (CORPUS_SRC / "transformers" / "__init__.py").exists():
        return
    CORPUS.mkdir(parents=True, exist_ok=True)
    if not (CORPUS / WHEEL).exists():
        print("downloading transformers==5.23.0 ...", flush=True)
        subprocess.run([PY, "-m", "pip", "download", "--no-deps", "transformers==5.23.0", "-d", str(CORPUS)],
                       check=True)
    with zipfile.ZipFile(CORPUS / WHEEL) as zf:
        zf.extractall(CORPUS_SRC)
    # a project-root marker: Fixit's file walker (trailrunner) would otherwise apply the
    # repository's .gitignore, which lists benchmarks/.corpus/, and lint nothing
    (CORPUS_SRC / "pyproject.toml").touch()


def ensure_venv() -> Path | None:
    """benchmarks/.venv-bench with torchfix 0.7.0 and fixit 2; None if it cannot be built."""
    bindir = VENV / "bin"
    if (bindir / "torchfix").exists() and (bindir / "fixit").exists():
        return bindir
    print("creating benchmarks/.venv-bench (torchfix 0.7.0, fixit) ...", flush=True)
    subprocess.run([PY, "-m", "venv", str(VENV)], check=True)
    pip = [str(bindir / "python"), "-m", "pip"]
    spec = ["torchfix==0.7.0", "fixit>=2,<3", "-c", str(CONSTRAINTS)]
    dry = subprocess.run([*pip, "install", "--dry-run", *spec], capture_output=True, text=True)
    would = next((line for line in dry.stdout.splitlines() if line.startswith("Would install")), "")
    if dry.returncode != 0 or "nvidia" in would.lower():
        print(f"not installing (dry run: {would or dry.stderr.strip()[-300:]})")
        return None
    subprocess.run([*pip, "install", "-q", *spec], check=True)
    return bindir


def corpus_files() -> list[Path]:
    files = sorted(CORPUS_SRC.rglob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
    return files


def mb(files) -> float:
    return sum(f.stat().st_size for f in files) / 1e6


# ---------------------------------------------------------------------------------------------
# Measuring one process


class Sample:
    def __init__(self, wall: float, cpu: float, rss_mb: float, rc: int, out: str, err: str) -> None:
        self.wall, self.cpu, self.rss_mb, self.rc, self.out, self.err = wall, cpu, rss_mb, rc, out, err


def measure(cmd: list[str], cwd: Path = ROOT, env: dict | None = None, input_files: Path | None = None) -> Sample:
    """Run ``cmd``; wall time, CPU of the process tree (reaped children included), peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env={**os.environ, **(env or {})})
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Sample(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, p.returncode,
                      out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def trainlint_cmd(*args: str) -> list[str]:
    return [PY, "-m", "trainlint", "check", *args]


HELPER_PARSED = r"""
import json, sys
from trainlint.config import Settings
from trainlint.engine import lint_paths
out, jobs, cache, *paths = sys.argv[1:]
res = lint_paths(paths, Settings(), jobs=int(jobs), cache_dir=cache)
json.dump({"parsed": [r.filename for r in res if r.parsed],
           "checked": [r.filename for r in res if r.syntax_checked], "files": len(res),
           "findings": sum(len(r.findings) for r in res),
           "tl003": sum(1 for r in res for f in r.findings if f.code == "TL003")}, open(out, "w"))
"""

HELPER_FLOOR = r"""
import sys, json
from concurrent.futures import ProcessPoolExecutor
import libcst as cst

def parse(paths):
    for p in paths:
        with open(p, "rb") as fh:
            text = fh.read().decode("utf-8-sig")
        if p in CHECKED:  # syntax-checked only: CPython's parser, as trainlint does
            try:
                compile(text, p, "exec", flags=0x400, dont_inherit=True)
            except SyntaxError:
                pass
        else:
            cst.parse_module(text)
    return len(paths)

listing, jobs, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
info = json.load(open(listing))
CHECKED = set(info["checked"]) if which == "both" else set()
paths = info["parsed"] + sorted(CHECKED)
if jobs == 1:
    parse(paths)
else:
    import os
    paths.sort(key=lambda p: -os.path.getsize(p))
    chunks = [paths[i::jobs * 8] for i in range(jobs * 8)]
    with ProcessPoolExecutor(jobs) as ex:
        sum(ex.map(parse, chunks))
"""


# ---------------------------------------------------------------------------------------------
# Single-script latency


def script_latency(repeat: int = 10) -> dict:
    """Cold runs as a user's ``pip install .`` has them: with trainlint's bytecode compiled (pip
    compiles at install; an editable install under PYTHONDONTWRITEBYTECODE=1 never writes it and
    pays ~70 ms per run to compile trainlint's modules again)."""
    target = "examples/mnli_trainer_buggy.py"
    import compileall

    import trainlint

    compileall.compile_dir(str(Path(trainlint.__file__).parent), quiet=1)
    cold = [measure(trainlint_cmd(target, "--no-cache", "-q")) for _ in range(repeat)]
    imp = subprocess.run([PY, "-X", "importtime", "-c", "import trainlint.cli"], capture_output=True, text=True,
                         cwd=ROOT)
    total_us = 0
    for line in imp.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == "trainlint.cli":
            total_us = int(parts[1])
    startup = [measure([PY, "-c", "pass"]) for _ in range(5)]
    return {
        "cold_median": statistics.median(s.wall for s in cold),
        "cold_cpu_median": statistics.median(s.cpu for s in cold),
        "python_startup": statistics.median(s.wall for s in startup),
        "import_trainlint_cli_ms": total_us / 1000,
    }


def relint_latency(lines: int = 500, repeat: int = 30) -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(BENCH))
    from trainlint.config import Settings
    from trainlint.engine import lint_text
    from trainlint.incremental import IncrementalParser

    text = five_hundred_lines(lines)
    parser = IncrementalParser()  # what the language server does: only edited statements re-parsed

    def once(t: str) -> None:
        lint_text(t, "train.py", Settings(), parse=parser.parse)
    how = "lint_text with the server's incremental parser, in process (benchmarks/server_bench.py: LSP round trip)"
    once(text)  # warm: imports, rule registry
    times = []
    src_lines = text.splitlines(keepends=True)
    for i in range(repeat):
        # an edit: one line of the script changes each time
        edited = list(src_lines)
        k = (i * 37) % len(edited)
        edited[k] = edited[k].rstrip("\n") + f"  # edit {i}\n"
        t0 = time.perf_counter()
        once("".join(edited))
        times.append(time.perf_counter() - t0)
    return {"lines": len(src_lines), "median_ms": statistics.median(times) * 1000,
            "p90_ms": sorted(times)[int(0.9 * len(times))] * 1000, "how": how}


def five_hundred_lines(n: int) -> str:
    try:
        from server_bench import script  # the language-server benchmark's 500-line script

        return script(n)
    except Exception:
        base = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")
        out = [base]
        i = 0
        while sum(s.count("\n") for s in out) < n:
            out.append(f"\n\ndef step_{i}(model, batch, optimizer):\n    loss = model(**batch).loss\n"
                       f"    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n    return loss.item()\n")
            i += 1
        return "".join(out)


# ---------------------------------------------------------------------------------------------


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def row(name: str, s: Sample, nfiles: int, nmb: float, note: str = "") -> str:
    return (f"{name:<44} {s.wall:>8.2f} {s.cpu:>8.2f} {nfiles / s.wall:>8.1f} {nmb / s.wall:>7.2f} "
            f"{s.rss_mb:>8.0f}  {note}")


HEADER = f"{'run':<44} {'wall s':>8} {'cpu s':>8} {'files/s':>8} {'MB/s':>7} {'peak MB':>8}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="TorchFix and Fixit on the whole corpus (~10+ minutes)")
    ap.add_argument("--subset", type=int, default=300, help="files for TorchFix/Fixit without --full")
    ap.add_argument("--jobs", type=int, default=0, help="the parallel runs' jobs (0: all cores)")
    ap.add_argument("--quick", action="store_true", help="skip TorchFix and Fixit")
    ap.add_argument("--skip-serial", action="store_true", help="skip the -j1 full-corpus run")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT))
    from trainlint.parallel import default_jobs

    jobs = args.jobs or default_jobs()
    ensure_corpus()
    files = corpus_files()
    nfiles, nmb = len(files), mb(files)
    # explicit file names: a directory walk honours .gitignore, which lists benchmarks/.corpus/
    paths = [str(f) for f in files]
    print(f"corpus: transformers 5.23.0 + examples: {nfiles} files, {nmb:.1f} MB; {jobs} jobs "
          f"({os.cpu_count()} CPUs); load average {load()}")
    print(HEADER)
    results: dict[str, Sample] = {}
    work = Path(tempfile.mkdtemp(prefix="trainlint-bench-"))

    if not args.skip_serial:
        results["tl_j1"] = s = measure(trainlint_cmd(*paths, "--no-cache", "-j1", "-q"))
        print(row("trainlint cold -j1 --no-cache", s, nfiles, nmb, f"exit {s.rc}"), flush=True)
    results["tl_jn"] = s = measure(trainlint_cmd(*paths, "--no-cache", f"-j{jobs}", "-q"))
    print(row(f"trainlint cold -j{jobs} --no-cache", s, nfiles, nmb, f"exit {s.rc}"), flush=True)

    listing, cache = work / "parsed.json", work / "cache"
    results["tl_fill"] = s = measure([PY, "-c", HELPER_PARSED, str(listing), str(jobs), str(cache), *paths])
    info = json.loads(listing.read_text())
    print(row(f"trainlint cold -j{jobs}, writing the cache (API)", s, nfiles, nmb,
              f"{len(info['parsed'])} parsed, {info['findings']} findings, {info['tl003']} TL003"), flush=True)
    results["tl_warm"] = s = measure(trainlint_cmd(*paths, "--cache-dir", str(cache), f"-j{jobs}", "-q"))
    print(row(f"trainlint warm -j{jobs} (all cached)", s, nfiles, nmb, f"exit {s.rc}"), flush=True)

    # The floor: what parsing alone costs. trainlint parses a training script with LibCST when a
    # rule's gate opens and only syntax-checks it with CPython's parser otherwise; files that
    # mention no ML framework are not parsed at all. "both" is that work with nothing else.
    parsed_files = [Path(p) for p in info["parsed"]]
    checked_files = [Path(p) for p in info["checked"]]
    pmb, cmb = mb(parsed_files), mb(checked_files)
    for which, label in (("libcst", "LibCST-parsed files"), ("both", "+ CPython compile of syntax-checked")):
        for n in ((jobs,) if args.skip_serial else (1, jobs)):
            results[f"floor_{which}_{n}"] = s = measure([PY, "-c", HELPER_FLOOR, str(listing), str(n), which])
            k = len(parsed_files) + (len(checked_files) if which == "both" else 0)
            kmb = pmb + (cmb if which == "both" else 0)
            print(row(f"floor: {label}, {n} proc", s, k, kmb, f"{k} files, {kmb:.1f} MB"), flush=True)

    sub_files: list[Path] = files
    extrapolate = 1.0
    if True:  # the subset run of trainlint is measured with --quick too
        bindir = None if args.quick else ensure_venv()
        if not args.full:
            sub_files = sorted(random.Random(0).sample(files, min(args.subset, len(files))))
        smb = mb(sub_files)
        extrapolate = nmb / smb
        sub_list = [str(f) for f in sub_files]
        label = "full corpus" if args.full else f"subset {len(sub_files)} files {smb:.1f} MB, seed 0"
        results["tl_sub"] = s = measure(trainlint_cmd(*sub_list, "--no-cache", f"-j{jobs}", "-q"))
        print(row(f"trainlint cold -j{jobs} [{label}]", s, len(sub_files), smb), flush=True)
        if bindir is not None:
            results["torchfix"] = s = measure([str(bindir / "torchfix"), "-j", str(jobs), *sub_list])
            print(row(f"TorchFix 0.7 -j{jobs} [{label}]", s, len(sub_files), smb, f"exit {s.rc}"), flush=True)
            results["fixit"] = s = measure([str(bindir / "fixit"), "lint", *sub_list])
            print(row(f"Fixit 2 lint [{label}]", s, len(sub_files), smb, f"exit {s.rc}"), flush=True)

    print(f"load average after: {load()}")
    print()
    lat = script_latency()
    rel = relint_latency()

    # -------------------------------------------------------------------------------------
    print("ratios (wall; cpu in brackets)")

    def ratio(a: str, b: str) -> str:
        if a not in results or b not in results:
            return "n/a"
        ra, rb = results[a], results[b]
        return f"{ra.wall / rb.wall:.2f}× [{ra.cpu / max(rb.cpu, 1e-9):.2f}×]"

    print(f"  trainlint parses {len(parsed_files)} files ({pmb:.1f} MB) with LibCST and syntax-checks "
          f"{len(checked_files)} ({cmb:.1f} MB) with CPython; {nfiles - len(parsed_files) - len(checked_files)} "
          f"mention no ML framework")
    if "tl_j1" in results:
        print(f"  trainlint -j1 / floor (both parsers) 1 proc      {ratio('tl_j1', 'floor_both_1')}   (target ≤ 1.5×)")
        print(f"  trainlint -j1 / floor (LibCST files only) 1 proc {ratio('tl_j1', 'floor_libcst_1')}")
    if f"floor_both_{jobs}" in results:
        print(f"  trainlint -j{jobs} / floor (both parsers) {jobs} procs     {ratio('tl_jn', f'floor_both_{jobs}')}   (target ≤ 1.5×)")
        print(f"  trainlint -j{jobs} / floor (LibCST files only) {jobs} procs {ratio('tl_jn', f'floor_libcst_{jobs}')}")
    w, c = results["tl_warm"], results["tl_jn"]
    print(f"  warm / cold (-j{jobs})                    {100 * w.wall / c.wall:.1f} %   (target ≤ 10 %)")
    if "tl_j1" in results:
        print(f"  -j1 / -j{jobs} (speed-up of the pool)        {ratio('tl_j1', 'tl_jn')}")
    if "torchfix" in results:
        tf, fx, sub = results["torchfix"], results["fixit"], results["tl_sub"]
        how = "" if args.full else f" (subset; × {extrapolate:.1f} by bytes for the full corpus)"
        print(f"  TorchFix / trainlint, same files        {tf.wall / sub.wall:.1f}× [{tf.cpu / sub.cpu:.1f}×]   (target ≥ 20×)")
        print(f"  Fixit / trainlint, same files           {fx.wall / sub.wall:.1f}× [{fx.cpu / sub.cpu:.1f}×]   (target > 1×)")
        print(f"  TorchFix full corpus{' (extrapolated)' if not args.full else ''}: {tf.wall * extrapolate:.0f} s wall{how}; "
              f"vs trainlint full -j{jobs}: {tf.wall * extrapolate / c.wall:.1f}×")
        print(f"  Fixit full corpus{' (extrapolated)' if not args.full else ''}:    {fx.wall * extrapolate:.0f} s wall; "
              f"vs trainlint full -j{jobs}: {fx.wall * extrapolate / c.wall:.1f}×")
    print()
    print("single script")
    print(f"  cold `trainlint examples/mnli_trainer_buggy.py --no-cache`: median {lat['cold_median'] * 1000:.0f} ms "
          f"wall, {lat['cold_cpu_median'] * 1000:.0f} ms cpu (python -c pass: {lat['python_startup'] * 1000:.0f} ms)  "
          f"(target < 300 ms)")
    print(f"  import trainlint.cli (-X importtime, cumulative): {lat['import_trainlint_cli_ms']:.0f} ms")
    print(f"  re-lint of a {rel['lines']}-line script after a one-line edit: median {rel['median_ms']:.1f} ms, "
          f"p90 {rel['p90_ms']:.1f} ms — {rel['how']}  (target < 50 ms)")


if __name__ == "__main__":
    main()
