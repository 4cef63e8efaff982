"""Re-lint latency of the language server on a 500-line training script. Prints numbers; asserts nothing.

    /work/devenv/bin/python benchmarks/server_bench.py [--edits N]

- ``engine``: ``lint_text`` in process on the script (what one re-lint costs);
- ``lsp``: a real client over stdio (pytest-lsp) sends ``didChange`` (one character of one line)
  and waits for the ``publishDiagnostics`` of that version; with the debounce set to 0, and with the
  default 150 ms (what a user sees after the last keystroke).

Target: re-lint < 50 ms after the debounce.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

LOOP_BLOCK = '''

def train_epoch_{i}(model, loader, optimizer, scheduler, device="cuda"):
    """One epoch of a hand-written PyTorch loop (variant {i})."""
    model.train()
    total = 0.0
    for step, batch in enumerate(loader):
        batch = {{k: v.to(device) for k, v in batch.items()}}
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        total += loss.item()
        if step % 100 == 0:
            print(f"epoch {i} step {{step}} loss {{loss.item():.4f}}")
    return total / max(len(loader), 1)


def evaluate_{i}(model, loader, device="cuda"):
    model.eval()
    correct = 0
    seen = 0
    with torch.no_grad():
        for batch in loader:
            batch = {{k: v.to(device) for k, v in batch.items()}}
            logits = model(**batch).logits
            predictions = logits.argmax(dim=-1)
            correct += (predictions == batch["labels"]).sum().item()
            seen += len(predictions)
    return correct / max(seen, 1)
'''


def script(lines: int = 500) -> str:
    base = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")
    head, tail = base.split('\n\nif __name__ == "__main__":', 1)
    text = "import torch\n" + head
    i = 0
    while text.count("\n") + LOOP_BLOCK.count("\n") < lines - 3:
        text += LOOP_BLOCK.format(i=i)
        i += 1
    text += '\n\nif __name__ == "__main__":' + tail
    while text.count("\n") < lines:
        text += "# padding\n"
    return text


def bench_engine(text: str, repeat: int = 30, incremental: bool = False) -> tuple[list[float], list[float]]:
    """(wall times, CPU times of this thread): on a busy machine the CPU time is the cost.
    ``incremental``: with the server's incremental parser (only the edited statement re-parsed)."""
    from trainlint.config import Settings
    from trainlint.engine import lint_text
    from trainlint.incremental import IncrementalParser

    parse = IncrementalParser().parse if incremental else None
    lint_text(text, "train.py", Settings(), parse=parse)  # warm up (imports, rule registry)
    wall, cpu = [], []
    for k in range(repeat):
        edited = text.replace("learning_rate=2e-5", f"learning_rate={2 + k % 7}e-5", 1)
        t0, c0 = time.perf_counter(), time.thread_time()
        lint_text(edited, "train.py", Settings(), parse=parse)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    return wall, cpu


async def bench_lsp(text: str, edits: int, debounce_ms: int) -> list[float]:
    from lsprotocol import types as lsp
    from pygls.uris import from_fs_path
    from pytest_lsp import ClientServerConfig, client_capabilities

    tmp = Path(tempfile.mkdtemp())
    path = tmp / "train.py"
    path.write_text(text, encoding="utf-8")
    uri = from_fs_path(str(path))
    client = await ClientServerConfig(server_command=[sys.executable, "-m", "trainlint", "server"]).start()
    client.feature(lsp.CLIENT_REGISTER_CAPABILITY)(lambda ls, params: None)  # the config watcher
    await client.initialize_session(lsp.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=from_fs_path(str(tmp)),
        initialization_options={"debounce": debounce_ms}))

    async def wait(version):
        while True:
            p = await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            if p.uri == uri and p.version == version:
                return p

    waiter = asyncio.ensure_future(wait(1))
    await asyncio.sleep(0)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await waiter
    line = text.splitlines().index("        learning_rate=2e-5,")
    out = []
    for k in range(edits):
        version = k + 2
        waiter = asyncio.ensure_future(wait(version))
        await asyncio.sleep(0)
        t0 = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=line, character=22), end=lsp.Position(line=line, character=23)),
                text=str(2 + k % 7))]))
        await waiter
        out.append(time.perf_counter() - t0)
    await client.shutdown_session()
    await client.stop()
    return out


def show(name: str, xs: list[float]) -> None:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(len(xs) * 0.95))]
    print(f"{name:<36} median {statistics.median(xs) * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   (n={len(xs)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edits", type=int, default=30)
    args = ap.parse_args()
    text = script(500)
    print(f"script: {text.count(chr(10))} lines, {len(text)} characters")
    import os

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs")
    wall, cpu = bench_engine(text)
    show("engine lint_text, wall", wall)
    show("engine lint_text, CPU", cpu)
    wall, cpu = bench_engine(text, incremental=True)
    show("engine + incremental parse, wall", wall)
    show("engine + incremental parse, CPU", cpu)
    show("lsp didChange→publish, debounce 0", asyncio.run(bench_lsp(text, args.edits, 0)))
    show("lsp didChange→publish, debounce 150", asyncio.run(bench_lsp(text, max(args.edits // 3, 5), 150)))


if __name__ == "__main__":
    main()
