"""``trainlint probe --prefetch SCRIPT``: download what the probe of SCRIPT needs, before it runs offline.

The probe runs sandboxed with the network off (``HF_HUB_OFFLINE=1``), so a hub model or dataset the
script names must already be on the machine. This reads the script statically (the checkpoints of
``X.from_pretrained("...")``, the ``load_dataset("name", "config")`` calls) and, in a child process of
the training environment's interpreter (the parent never imports ``huggingface_hub`` or ``datasets``),
fetches exactly what the probe uses:

- a model repository into the normal Hugging Face hub cache: with ``--tiny-model`` its config and
  tokenizer files only (no weights: the probe builds a small random model of the same config),
  otherwise the weights too (one format: safetensors if the repository has them);
- a dataset: the first ``--probe-rows`` rows of each split through streaming, saved with
  ``save_to_disk`` under ``<HF_HOME>/trainlint/prefetch/datasets/<name>/<config>``. During the
  probe, a ``load_dataset(name, config)`` that finds nothing in the datasets cache is served this
  copy (see :func:`trainlint.probe.child.prefetched.load_prefetched`, called by the probe's ``datasets``
  hook).

Checkpoints and dataset names that are not string constants, and local paths, are skipped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from trainlint.probe.child.prefetched import dataset_dir

# Files a model repository holds that the probe never needs (other weight formats, exports).
_NEVER = ["*.msgpack", "*.onnx", "onnx/*", "*.ot", "*.gguf", "*.tflite", "*.mlmodel", "coreml/*", "*.mlpackage/*",
          "openvino/*", "*.xml", "*.ckpt", "*.pth", "*.pt"]
_WEIGHTS = ["*.safetensors", "*.bin", "*.h5", "*.safetensors.index.json", "*.bin.index.json", "*.h5.index.json"]

# load_dataset builders that read local files, not a hub dataset.
_PACKAGED = frozenset({"csv", "json", "parquet", "text", "arrow", "pandas", "sql", "generator", "imagefolder",
                       "audiofolder", "videofolder", "webdataset", "xml", "spark", "cache", "hdf5", "pdffolder"})


@dataclasses.dataclass
class Assets:
    models: list[str] = dataclasses.field(default_factory=list)  # hub repository ids, in source order
    tf_models: set[str] = dataclasses.field(default_factory=set)  # loaded by a TF* class (want .h5 weights)
    datasets: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)  # (name, config)


def _hub_id(value: object) -> bool:
    """A string that names a hub repository, not a local directory or file."""
    if not isinstance(value, str) or not value or value.count("/") > 1:
        return False
    if value.startswith((".", "/", "~")) or "\\" in value or os.path.exists(value):
        return False
    return all(part and all(c.isalnum() or c in "-_." for c in part) for part in value.split("/"))


def script_assets(source: str) -> Assets:
    """The hub models and datasets a script names (string constants only)."""
    import libcst as cst

    from trainlint.facts import FACT_TYPES, Facts, argument, walk

    module = cst.parse_module(source)
    index, where = walk(module, frozenset(FACT_TYPES))
    facts = Facts(module, index, where)
    out = Assets()
    for call in index.get("Call", ()):
        if not isinstance(call, cst.Call):
            continue
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained":
            name = facts.constant(argument(call, "pretrained_model_name_or_path", 0), call)
            if _hub_id(name) and name not in out.models:
                out.models.append(name)
            owner = func.value
            short = owner.attr.value if isinstance(owner, cst.Attribute) else owner.value if isinstance(owner, cst.Name) else ""
            if _hub_id(name) and short.startswith("TF"):
                out.tf_models.add(name)
        elif facts.callee(call) == "datasets.load_dataset":
            name = facts.constant(argument(call, "path", 0), call)
            config = facts.constant(argument(call, "name", 1), call)
            if _hub_id(name) and name not in _PACKAGED and argument(call, "data_files") is None and argument(call, "data_dir") is None:
                entry = (name, config if isinstance(config, str) else None)
                if entry not in out.datasets:
                    out.datasets.append(entry)
    return out


# The child: runs in the training environment, reads the plan as JSON on stdin, prints one JSON line
# per asset. It imports only huggingface_hub / datasets (never the script).
_CHILD = r'''
import fnmatch, json, os, sys
plan = json.load(sys.stdin)

def emit(**kw):
    print(json.dumps(kw), flush=True)

for repo in plan["models"]:
    try:
        from huggingface_hub import HfApi, snapshot_download
        files = [f.path for f in HfApi().list_repo_tree(repo, recursive=True) if hasattr(f, "size") and hasattr(f, "blob_id")]
        never = plan["never"] + (plan["weights"] if plan["tiny"] else [])
        wanted = [f for f in files if not any(fnmatch.fnmatch(f, p) for p in never)]
        if not plan["tiny"]:
            tf = repo in plan["tf_models"]
            order = ([".h5"] if tf else []) + [".safetensors", ".bin", ".h5"]
            fmt = next((e for e in order if any(f.endswith(e) for f in wanted)), None)
            wanted = [f for f in wanted
                      if not any(f.endswith(e) or f.endswith(e + ".index.json") for e in (".safetensors", ".bin", ".h5") if e != fmt)]
        path = snapshot_download(repo, allow_patterns=wanted or ["config.json"])
        got = sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)
        emit(kind="model", name=repo, ok=True, path=path, files=got)
    except Exception as exc:
        emit(kind="model", name=repo, ok=False, error=f"{type(exc).__name__}: {str(exc).strip()[:300]}")

for name, config, target in plan["datasets"]:
    try:
        import datasets
        streamed = datasets.load_dataset(name, config, streaming=True)
        if not isinstance(streamed, dict):
            streamed = {"train": streamed}
        splits = {}
        for split, ids in streamed.items():
            rows = list(ids.take(plan["rows"]))
            features = getattr(ids, "features", None)
            splits[split] = datasets.Dataset.from_list(rows, features=features) if features is not None else datasets.Dataset.from_list(rows)
        datasets.DatasetDict(splits).save_to_disk(target)
        emit(kind="dataset", name=name, config=config, ok=True, path=target, splits={k: len(v) for k, v in splits.items()})
    except Exception as exc:
        emit(kind="dataset", name=name, config=config, ok=False, error=f"{type(exc).__name__}: {str(exc).strip()[:300]}")
'''


def prefetch(script: Path, *, python: str | None = None, tiny_model: bool = False, rows: int = 256,
             env: dict[str, str] | None = None, echo: Callable[[str], object] = print,
             timeout: float = 3600.0) -> int:
    """Fetch what the probe of ``script`` needs; print each asset and where it went. 0 if all came."""
    assets = script_assets(Path(script).read_text(encoding="utf-8"))
    if not assets.models and not assets.datasets:
        echo(f"{script}: names no hub model or dataset (string constants): nothing to prefetch")
        return 0
    child_env = dict(os.environ if env is None else env)
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        child_env.pop(var, None)
    plan = {
        "models": assets.models, "tf_models": sorted(assets.tf_models), "tiny": tiny_model, "rows": rows,
        "never": _NEVER, "weights": _WEIGHTS,
        "datasets": [(n, c, dataset_dir(n, c, child_env)) for n, c in assets.datasets],
    }
    what = "config and tokenizer files" if tiny_model else "config, tokenizer and weights"
    echo(f"prefetching for {script}: {len(assets.models)} model(s) ({what}), "
         f"{len(assets.datasets)} dataset(s) (first {rows} rows of each split)")
    try:
        proc = subprocess.run([python or sys.executable, "-c", _CHILD], input=json.dumps(plan), text=True,
                              capture_output=True, env=child_env, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        echo(f"prefetch failed: {type(exc).__name__}: {exc}")
        return 1
    failed = 0
    seen = 0
    for line in proc.stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if not isinstance(r, dict) or "kind" not in r:
            continue
        seen += 1
        label = r["name"] if r["kind"] == "model" else f"{r['name']}" + (f" ({r['config']})" if r.get("config") else "")
        if r.get("ok"):
            detail = (", ".join(r.get("files", [])) if r["kind"] == "model"
                      else ", ".join(f"{k}: {n} rows" for k, n in r.get("splits", {}).items()))
            echo(f"  {r['kind']} {label}: {detail} -> {r['path']}")
        else:
            failed += 1
            echo(f"  {r['kind']} {label}: FAILED {r.get('error', '')}")
    expected = len(assets.models) + len(assets.datasets)
    if seen < expected:
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:300]
        echo(f"prefetch child stopped early (exit {proc.returncode}): {tail}")
        failed += expected - seen
    if not failed:
        echo("done: `trainlint probe" + (" --tiny-model" if tiny_model else "") + f" {script}` now finds them offline")
    return 1 if failed else 0
