"""The cost of ``%trainlint probe trainer`` against one training step. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/ipython_probe_bench.py [--hidden 32] [--layers 2] [--repeat 5]

A tiny BERT classifier (``BertConfig`` of the given size, random weights, no hub) in a ``Trainer`` over an
in-memory dataset of 64 examples (16 more held out for evaluation) with a padding collator, batch size 8. Printed: the median time of one
training step as the Trainer does it (a batch from its dataloader, ``compute_loss``, backward, the
optimizer step) and of the live probe on that Trainer (every check, the objects restored), their
ratio, and the probe's time beyond two training steps; the median and the minimum (on a shared
machine the minimum is the less noisy of the two).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(hidden: int, layers: int, out: str):
    import torch
    from datasets import Dataset
    from transformers import BertConfig, BertForSequenceClassification, DataCollatorWithPadding, Trainer
    from transformers import PreTrainedTokenizerFast, TrainingArguments
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    words = ["[PAD]", "[UNK]"] + [f"w{i}" for i in range(60)]
    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]")
    texts = [" ".join(f"w{(i * 7 + j) % 60}" for j in range(5 + i % 9)) for i in range(80)]
    ds = Dataset.from_dict({"text": texts, "label": [i % 3 for i in range(80)]})
    ds = ds.map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])
    train, held_out = ds.select(range(64)), ds.select(range(64, 80))
    torch.manual_seed(0)
    config = BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=hidden * 2, vocab_size=len(words), max_position_embeddings=64,
                        num_labels=3, pad_token_id=0)
    model = BertForSequenceClassification(config)

    def compute_metrics(p):
        return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}

    args = TrainingArguments(out, per_device_train_batch_size=8, per_device_eval_batch_size=8, report_to="none",
                             use_cpu=True)
    return Trainer(model, args, train_dataset=train, eval_dataset=held_out, data_collator=DataCollatorWithPadding(tokenizer),
                   processing_class=tokenizer, compute_metrics=compute_metrics)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    import transformers

    transformers.logging.set_verbosity_error()
    from trainlint.ipython.live import ProbeRequest, run_live_probe

    with tempfile.TemporaryDirectory() as out:
        trainer = build(a.hidden, a.layers, out)
        model = trainer.model
        optimizer = trainer.create_optimizer()
        steps = []
        for _ in range(a.repeat * 2):
            t = time.perf_counter()
            batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))  # noqa: SLF001
            loss = trainer.compute_loss(model, batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            steps.append(time.perf_counter() - t)
        trainer.optimizer = None
        run_live_probe(ProbeRequest("trainer"), {"trainer": trainer}, [])  # warm: the checks' modules imported
        probes = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            report = run_live_probe(ProbeRequest("trainer"), {"trainer": trainer}, [])
            probes.append(time.perf_counter() - t)
    n = sum(p.numel() for p in model.parameters())
    print(f"model: BERT hidden {a.hidden}, {a.layers} layers, {n / 1e6:.2f}M parameters; batch 8")
    for what, pick in (("median", statistics.median), ("min", min)):
        step, probe = pick(steps), pick(probes)
        print(f"{what}: one training step (dataloader batch, compute_loss, backward, optimizer step) "
              f"{step * 1000:.1f} ms; %trainlint probe trainer {probe * 1000:.1f} ms ({probe / step:.1f}x one step; "
              f"beyond two steps: {(probe - 2 * step) * 1000:.0f} ms)")
    print(f"report: outcome {report.outcome}, {len(report.findings)} findings, complete={report.complete}")


if __name__ == "__main__":
    main()
