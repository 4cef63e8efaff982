"""`trainlint probe --prefetch SCRIPT` against a local stand-in of the hub endpoint (an HTTP server on
127.0.0.1 serving a tiny model repository the way huggingface_hub reads one: the revision info, the
tree listing, and files under /resolve/ with X-Repo-Commit, ETag and Content-Length), then the probe
itself, offline, finding what was fetched."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import shutil
import textwrap
import threading
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from support import need_modules, run_cli

from trainlint.probe.parent.prefetch import dataset_dir, script_assets

REPO = "tiny-org/tiny-bert"
DATASET = "tiny-org/reviews"
SHA = "0123456789abcdef0123456789abcdef01234567"


class Hub(http.server.ThreadingHTTPServer):
    """Serves ``repos``: {("models" | "datasets", "org/name"): {path: bytes}} at one commit."""

    daemon_threads = True

    def __init__(self, repos: dict[tuple[str, str], dict[str, bytes]]):
        self.repos = repos
        self.requests: list[str] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Hub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        self.send_response(status)
        for k, v in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, obj, head: bool) -> None:
        self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json", "X-Repo-Commit": SHA}, head)

    def _find(self, kind: str, rest: str) -> tuple[str, dict[str, bytes], str] | None:
        for (k, repo), files in self.server.repos.items():
            if k == kind and (rest == repo or rest.startswith(repo + "/")):
                return repo, files, rest[len(repo) + 1:]
        return None

    def _route(self, head: bool) -> None:
        path = unquote(urlparse(self.path).path)
        self.server.requests.append(f"{self.command} {path}")
        if path.startswith("/api/"):
            kind, _, rest = path[len("/api/"):].partition("/")
            found = self._find(kind, rest)
            if found is None:
                return self._send(404, b"", {"X-Error-Code": "RepoNotFound"}, head)
            repo, files, tail = found
            entry = [{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()} for p, b in files.items()]
            if tail.startswith("tree/"):
                sub = tail[len("tree/"):].partition("/")[2].strip("/")
                recursive = "recursive=true" in urlparse(self.path).query.lower()
                return self._json(_tree(entry, sub, recursive), head)
            if tail.startswith("paths-info/"):
                length = int(self.headers.get("Content-Length") or 0)
                form = self.rfile.read(length).decode()
                wanted = {unquote(v.replace("+", " ")) for k, _, v in (x.partition("=") for x in form.split("&")) if k == "paths"}
                return self._json([e for e in entry if e["path"] in wanted], head)
            info = {"id": repo, "sha": SHA, "private": False, "siblings": [{"rfilename": p} for p in files]}
            return self._json(info, head)
        kind = "datasets" if path.startswith("/datasets/") else "models"
        rest = path[len("/datasets/"):] if kind == "datasets" else path[1:]
        found = self._find(kind, rest)
        if found is None or not found[2].startswith("resolve/"):
            return self._send(404, b"", {"X-Error-Code": "RepoNotFound"}, head)
        name = found[2][len("resolve/"):].partition("/")[2]
        body = found[1].get(name)
        if body is None:
            return self._send(404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": SHA}, head)
        headers = {"X-Repo-Commit": SHA, "ETag": f'"{hashlib.sha1(body).hexdigest()}"', "Accept-Ranges": "bytes"}
        ranged = self.headers.get("Range", "")
        if ranged.startswith("bytes=") and not head:
            a, _, b = ranged[len("bytes="):].partition("-")
            lo = int(a) if a else max(0, len(body) - int(b))
            hi = min(int(b), len(body) - 1) if (a and b) else len(body) - 1
            headers["Content-Range"] = f"bytes {lo}-{hi}/{len(body)}"
            return self._send(206, body[lo:hi + 1], headers, head)
        self._send(200, body, headers, head)

    def do_GET(self):
        self._route(False)

    def do_HEAD(self):
        self._route(True)

    def do_POST(self):
        self._route(False)


def _tree(entries: list[dict], sub: str, recursive: bool) -> list[dict]:
    """The tree listing of folder ``sub``: its files and folders (all the way down when recursive)."""
    prefix = sub + "/" if sub else ""
    out: dict[str, dict] = {}
    for e in entries:
        if not e["path"].startswith(prefix):
            continue
        parts = e["path"][len(prefix):].split("/")
        for depth in range(1, len(parts)):
            if depth > 1 and not recursive:
                break
            folder = prefix + "/".join(parts[:depth])
            out.setdefault(folder, {"type": "directory", "path": folder, "oid": hashlib.sha1(folder.encode()).hexdigest()})
        if recursive or len(parts) == 1:
            out[e["path"]] = e
    return list(out.values())


SCRIPT = textwrap.dedent(f'''
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

    checkpoint = "{REPO}"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=2)
    raw = load_dataset("{DATASET}")
    data = raw.map(lambda b: tokenizer(b["text"], padding="max_length", max_length=16, truncation=True), batched=True)
    args = TrainingArguments("out", per_device_train_batch_size=4, max_steps=1, report_to=[])
    Trainer(model=model, args=args, train_dataset=data["train"]).train()
''')


def test_the_static_read_finds_hub_checkpoints_and_datasets_not_local_paths(tmp_path):
    source = textwrap.dedent('''
        import datasets
        from datasets import load_dataset
        from transformers import AutoTokenizer, TFAutoModel, AutoModel
        ckpt = "bert-base-uncased"
        tok = AutoTokenizer.from_pretrained(ckpt)
        model = AutoModel.from_pretrained(ckpt)
        tf_model = TFAutoModel.from_pretrained("org/tf-model")
        local = AutoModel.from_pretrained("./checkpoints/run1")
        unknown = AutoModel.from_pretrained(args.model)
        raw = load_dataset("glue", "mrpc")
        other = datasets.load_dataset("imdb", split="train")
        files = load_dataset("csv", data_files="x.csv")
    ''')
    assets = script_assets(source)
    assert assets.models == ["bert-base-uncased", "org/tf-model"]
    assert assets.tf_models == {"org/tf-model"}
    assert assets.datasets == [("glue", "mrpc"), ("imdb", None)]


def _parquet(n: int, start: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = io.BytesIO()
    words = ["good movie", "bad film", "fine plot", "dull act"]
    pq.write_table(pa.table({"text": [f"{words[i % 4]} {i}" for i in range(start, start + n)],
                             "label": [i % 2 for i in range(start, start + n)]}), out)
    return out.getvalue()


@pytest.fixture
def hub(tiny_torch):
    files = {p.name: p.read_bytes() for p in sorted((tiny_torch / "bert").iterdir()) if p.is_file()}
    assert "model.safetensors" in files and "config.json" in files
    files["pytorch_model.bin"] = b"a second weight format the probe never needs"
    files["flax_model.msgpack"] = b"an export the probe never needs"
    server = Hub({("models", REPO): files,
                  ("datasets", DATASET): {"data/train-00000-of-00001.parquet": _parquet(40, 0),
                                          "data/test-00000-of-00001.parquet": _parquet(12, 100)}})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _cached(home: Path) -> set[str]:
    snap = home / "hub" / f"models--{REPO.replace('/', '--')}" / "snapshots" / SHA
    return {p.name for p in snap.iterdir()} if snap.is_dir() else set()


@pytest.mark.probe
def test_prefetch_with_tiny_model_fetches_config_and_tokenizer_and_the_probe_then_runs_offline(tmp_path, hub):
    need_modules("torch", "transformers", "huggingface_hub", "datasets", "pyarrow")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    home = tmp_path / "hf"
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}

    # before: the offline probe cannot find the checkpoint, and says what to run
    before = run_cli("probe", "--tiny-model", "--probe-timeout", "120", str(script), env=env, timeout=200)
    assert "trainlint probe --prefetch train.py" in before.stdout + before.stderr, before.stdout + before.stderr

    proc = run_cli("probe", "--prefetch", "--tiny-model", "--probe-rows", "24", str(script), env=env, timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the first 24 rows of each split, streamed, saved where the probe's load_dataset hook finds them
    assert f"dataset {DATASET}: train: 24 rows, test: 12 rows" in proc.stdout, proc.stdout
    assert (Path(dataset_dir(DATASET, None, env)) / "dataset_dict.json").is_file()
    got = _cached(home)
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= got, (got, proc.stdout)
    assert not got & {"model.safetensors", "pytorch_model.bin", "flax_model.msgpack"}, got  # no weights
    assert f"model {REPO}: config.json" in proc.stdout and str(home) in proc.stdout, proc.stdout
    assert all("/resolve/" not in r or "safetensors" not in r for r in hub.requests), hub.requests

    # after: the probe (offline, sandboxed) builds the tiny model from the fetched config and trains
    hub.requests.clear()
    after = run_cli("probe", "--tiny-model", "--verbose", "--probe-timeout", "120", str(script), env=env, timeout=200)
    out = after.stdout + after.stderr
    assert "not in the local cache" not in out, out
    assert after.returncode == 0 and "stopped at trainer.train()" in out, out
    assert "served the rows saved by `trainlint probe --prefetch`" in out, out
    assert hub.requests == []  # the probe itself never went to the network


@pytest.mark.probe
def test_prefetch_without_tiny_model_fetches_one_weight_format(tmp_path, hub):
    need_modules("huggingface_hub")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT, encoding="utf-8")
    home = tmp_path / "hf"
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_DISABLE_XET": "1"}
    proc = run_cli("probe", "--prefetch", str(script), env=env, timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = _cached(home)
    assert {"config.json", "tokenizer.json", "model.safetensors"} <= got, got
    assert not got & {"pytorch_model.bin", "flax_model.msgpack"}, got


def test_prefetch_of_a_missing_repository_fails_and_says_so(tmp_path, hub):
    need_modules("huggingface_hub")
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace(REPO, "nobody/missing"), encoding="utf-8")
    env = {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_DISABLE_XET": "1"}
    proc = run_cli("probe", "--prefetch", str(script), env=env, timeout=200)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "model nobody/missing: FAILED" in proc.stdout, proc.stdout


def test_prefetch_of_a_script_without_hub_assets_fetches_nothing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("from transformers import AutoModel\nmodel = AutoModel.from_pretrained('./local')\n")
    proc = run_cli("probe", "--prefetch", str(script), env={"HF_HOME": str(tmp_path / "hf")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing to prefetch" in proc.stdout
    assert not (tmp_path / "hf").exists()


def test_the_prefetched_dataset_copy_lives_under_hf_home(tmp_path):
    env = {"HF_HOME": str(tmp_path / "hf")}
    assert dataset_dir("org/data", None, env) == str(tmp_path / "hf" / "trainlint" / "prefetch" / "datasets" / "org--data" / "default")
    shutil.rmtree(tmp_path / "hf", ignore_errors=True)
