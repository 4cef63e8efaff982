"""The probe at first sight on real training scripts it had never seen (tests/probe/fresh/manifest.toml).

    python benchmarks/probe_fresh.py materialise --mirrors DIR
    python benchmarks/probe_fresh.py real [--only ID] [--python PY]
    python benchmarks/probe_fresh.py probe [--only ID[/CASE]] [--python PY]

``materialise`` reads each pinned file (and its siblings) out of a bare clone of its repository
(``DIR/owner+name`` or ``DIR/owner+name/repo``, e.g. what ``git clone --bare`` made), lays out the
script's working directory in the gitignored ``benchmarks/.probe-real/fresh/<id>/`` with the tiny
assets of tests/probe/fresh/assets.py linked under the names the script asks for, and applies the
manifest's ports. ``real`` runs each script for real, a few steps, with the manifest's ``real``
changes, to know it works. ``probe`` runs ``trainlint --probe`` once per case (the script as
materialised, then each injected bug), one after the other, and prints expected against got: the
outcome, each finding with its probe status, code and line, and whether the case is right. Prints
numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "probe" / "fresh" / "manifest.toml"
WORK = ROOT / "benchmarks" / ".probe-real" / "fresh"
ASSETS = WORK / "assets"


def load() -> list[dict]:
    return tomllib.loads(MANIFEST.read_text(encoding="utf-8"))["script"]


def substitute(text: str, pairs, where: str) -> str:
    for old, new in pairs:
        if text.count(old) != 1:
            raise SystemExit(f"{where}: {old!r} occurs {text.count(old)} times")
        text = text.replace(old, new)
    return text


def bare(mirrors: Path, repo: str) -> Path:
    base = mirrors / repo.replace("/", "+")
    return base / "repo" if (base / "repo").is_dir() else base


def script_path(s: dict) -> Path:
    return WORK / s["id"] / Path(s["path"]).name


def materialise(mirrors: Path, python: str) -> None:
    subprocess.run([python, str(ROOT / "tests" / "probe" / "fresh" / "assets.py"), str(ASSETS)], check=True,
                   capture_output=True)
    for s in load():
        git = bare(mirrors, s["repo"])
        base = str(Path(s["path"]).parent)
        work = WORK / s["id"]
        work.mkdir(parents=True, exist_ok=True)
        for path in [s["path"], *s.get("siblings", [])]:
            data = subprocess.run(["git", "--git-dir", str(git), "show", f"{s['commit']}:{path}"], check=True,
                                  capture_output=True).stdout
            rel = os.path.relpath(path, base) if base != "." else path
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        text = script_path(s).read_text(encoding="utf-8")
        (work / "as_fetched.py.txt").write_text(text, encoding="utf-8")
        script_path(s).write_text(substitute(text, s.get("port", []), s["id"]), encoding="utf-8")
        for name, asset in s.get("link", {}).items():
            link = work / name
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(ASSETS / asset)
        print(f"{s['id']:6} {s['repo']}@{s['commit'][:10]}:{s['path']}")


def case_text(s: dict, case: dict, real: bool = False) -> str:
    text = (WORK / s["id"] / "as_fetched.py.txt").read_text(encoding="utf-8")
    ports = [p for i, p in enumerate(s.get("port", [])) if i not in case.get("unport", [])]
    text = substitute(text, ports, s["id"])
    text = substitute(text, case.get("replace", []), f"{s['id']}/{case['name']}")
    if real:
        text = substitute(text, s.get("real", {}).get("replace", []), f"{s['id']}/real")
    return text


def args_of(s: dict, case: dict, real: bool = False) -> list[str]:
    args = [a.replace("{assets}", str(ASSETS)) for a in s.get("args", [])] + case.get("args", [])
    return args + (s.get("real", {}).get("args", []) if real else [])


def write_case(s: dict, case: dict, real: bool = False) -> Path:
    """The case's script beside the original (same directory: its siblings and data resolve)."""
    suffix = case["name"].replace("-", "_") + ("__real" if real else "")
    path = script_path(s).with_name(f"{script_path(s).stem}__{suffix}.py")
    path.write_text(case_text(s, case, real), encoding="utf-8")
    return path


def selected(s: dict, case: dict, only: str | None, default_correct: bool) -> bool:
    """``--only ID`` (the script: its correct case when ``default_correct``, else every case) or
    ``--only ID/CASE``; no ``--only``: every script."""
    if only == f"{s['id']}/{case['name']}":
        return True
    if only not in (None, s["id"]):
        return False
    return case["name"] == "correct" or not default_correct


def run_real(python: str, keras_python: str, only: str | None) -> None:
    """Each script's correct case for a few steps, to know it works; ``--only ID/CASE``: what an
    injected bug does in a real run."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "",
           "WANDB_DISABLED": "true"}
    for s in load():
        for case in s["case"]:
            if not selected(s, case, only, default_correct=True):
                continue
            path = write_case(s, case, real=True)
            shutil.rmtree(path.parent / "out", ignore_errors=True)  # a checkpoint there would be resumed
            start = time.perf_counter()
            proc = subprocess.run([keras_python if s.get("keras") else python, path.name, *args_of(s, case, real=True)],
                                  cwd=path.parent, env=env, capture_output=True, text=True, timeout=900)
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
            print(f"{s['id']}/{case['name']}: exit {proc.returncode} in {time.perf_counter() - start:.0f} s")
            for line in tail:
                print(f"       | {line[:200]}")


def line_of(text: str, marker: str) -> int | None:
    return next((i for i, line in enumerate(text.splitlines(), 1) if marker in line), None)


FINDING = re.compile(r"^(?P<file>[^\s:]+):(?P<row>\d+):(?P<col>\d+): (?P<code>TL\d{3}) \[(?P<status>[^\]]+)\] (?P<msg>.*)$")


def parse(output: str) -> dict:
    """What ``trainlint --probe`` printed (the concise format): findings with status and line, whether it
    said all clear, and the probe's own lines (its notes and, when it stopped early, why)."""
    findings = [m.groupdict() for m in map(FINDING.match, output.splitlines()) if m]
    return {"findings": findings, "all_clear": "All checks passed!" in output,
            "stopped": [line.strip() for line in output.splitlines()
                        if any(words in line for words in ("the probe stopped", "did not reach training", "could not complete",
                                                            "not all checks ran", "the probe did not run"))]}


def judge(got: dict, case: dict, text: str) -> tuple[bool, str]:
    confirmed = [f for f in got["findings"] if f["status"] == "confirmed"]
    expect = case["expect"]
    if expect == "clear":
        ok = not confirmed and not got["stopped"]
        return ok, ("all clear" if got["all_clear"] else "nothing confirmed") if ok else "not clear"
    codes = [expect] if isinstance(expect, str) else expect
    hits = [f for f in confirmed if f["code"] in codes]
    if not hits:
        return False, "not confirmed"
    at = line_of(text, case["at"]) if case.get("at") else None
    placed = any(int(f["row"]) == at for f in hits)
    return True, "confirmed" + ("" if at is None else (" at its line" if placed else f" (line {hits[0]['row']}, "
                                                                                        f"expected {at})"))


def run_probes(python: str | None, keras_python: str, only: str | None, out: Path | None,
               extra: list[str] = ()) -> None:
    rows = []
    for s in load():
        for case in s["case"]:
            key = f"{s['id']}/{case['name']}"
            if not selected(s, case, only, default_correct=False):
                continue
            path = write_case(s, case)
            text = path.read_text(encoding="utf-8")
            py = keras_python if s.get("keras") else python
            cmd = [sys.executable, "-m", "trainlint", "--probe", "--no-cache", *(["--python", py] if py else []),
                   *extra, path.name, "--", *args_of(s, case)]
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=path.parent, capture_output=True, text=True, timeout=900,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            elapsed = time.perf_counter() - start
            got = parse(proc.stdout)
            ok, how = judge(got, case, text)
            found = [f"{f['code']} [{f['status']}] @{f['row']}" for f in got["findings"]]
            row = {"case": key, "shape": s["shape"], "expect": case["expect"], "right": ok, "how": how,
                   "exit": proc.returncode, "findings": got["findings"], "stopped": got["stopped"],
                   "seconds": round(elapsed, 1), "stdout": proc.stdout[-6000:], "stderr": proc.stderr[-2000:]}
            rows.append(row)
            print(f"{key:45} expect {str(case['expect']):18} {'RIGHT' if ok else 'WRONG'} ({how}); exit "
                  f"{proc.returncode}; {', '.join(found) or '-'}; {elapsed:.0f} s", flush=True)
            if out:
                with out.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row) + "\n")
    right = sum(r["right"] for r in rows)
    print(f"{right}/{len(rows)} cases right")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["materialise", "real", "probe"])
    ap.add_argument("--mirrors", type=Path)
    ap.add_argument("--python", default=None, help="the training environment's interpreter")
    ap.add_argument("--keras-python", default=str(ROOT / ".venv-tf" / "bin" / "python"),
                    help="the TensorFlow environment's interpreter (scripts marked keras)")
    ap.add_argument("--only")
    ap.add_argument("--out", type=Path, help="append one JSON line per probed case")
    ap.add_argument("--trainlint-option", action="append", default=[], dest="extra",
                    help="probe: an option for trainlint (e.g. --trainlint-option=--probe-rows=1000); repeatable")
    ns = ap.parse_args()
    if ns.command == "materialise":
        if not ns.mirrors:
            ap.error("materialise needs --mirrors")
        materialise(ns.mirrors, ns.python or sys.executable)
    elif ns.command == "real":
        run_real(ns.python or sys.executable, ns.keras_python, ns.only)
    else:
        run_probes(ns.python, ns.keras_python, ns.only, ns.out, ns.extra)


if __name__ == "__main__":
    main()
