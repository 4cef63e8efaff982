"""The stage checks of the PyTorch probe, run in-process on real tiny Trainers with a recording
harness (no child process: one torch import for the whole module). Covers the codes the end-to-end
tests do not: TL207, TL305, TL308, TL405, TL406, TL407, TL504, TL506, TL602, TL603, TL606, TL607."""

from __future__ import annotations

import pytest

from support import need_modules, recording_harness
from trainlint.probe import protocol
from trainlint.probe.child.harness import Harness

pytestmark = pytest.mark.probe

need_modules("torch", "transformers", "datasets")


def findings(h: Harness) -> list[tuple[str, str, str]]:
    return [(e.code, e.message, e.evidence) for e in h.events if isinstance(e, protocol.Finding)]


def codes(h: Harness) -> list[str]:
    return [c for c, _, _ in findings(h)]


def evidence(h: Harness, code: str) -> str:
    return next(e for c, _, e in findings(h) if c == code)


def checked(h: Harness) -> set[str]:
    return {c for e in h.events if isinstance(e, protocol.Checked) for c in e.codes}


def notes(h: Harness) -> list[str]:
    return [e.text for e in h.events if isinstance(e, protocol.Note)]


def details(h: Harness) -> list[str]:
    return [e.text for e in h.events if isinstance(e, protocol.Detail)]


@pytest.fixture(scope="module")
def torch_stack():
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    return torch


def bert(num_labels=3, **kw):
    from transformers import BertConfig, BertForSequenceClassification

    import torch

    torch.manual_seed(0)
    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                        vocab_size=60, max_position_embeddings=32, num_labels=num_labels, **kw)
    return BertForSequenceClassification(config)


def dataset(n=16, labels=None, extra=None):
    from datasets import Dataset

    labels = labels if labels is not None else [i % 3 for i in range(n)]
    data = {"input_ids": [[2] + [5 + (i + j) % 40 for j in range(8)] + [3] for i in range(n)], "label": labels}
    data.update(extra or {})
    return Dataset.from_dict(data)


def trainer(tmp_path, model=None, train=None, eval_ds=None, **kw):
    from transformers import Trainer, TrainingArguments

    args_kw = {k: kw.pop(k) for k in list(kw) if k in ("remove_unused_columns", "metric_for_best_model", "learning_rate")}
    args = TrainingArguments(str(tmp_path / "out"), report_to="none", per_device_train_batch_size=4,
                             per_device_eval_batch_size=4, use_cpu=True, **args_kw)
    return Trainer(model if model is not None else bert(), args, train_dataset=train if train is not None else dataset(),
                   eval_dataset=eval_ds, **kw)


def run(tr, static_codes=(), overfit=0, tiny_model=False) -> Harness:
    from trainlint.probe.child.frameworks.hf_trainer import probe_trainer

    h = recording_harness(static_codes=static_codes, overfit=overfit, tiny_model=tiny_model)
    probe_trainer(h, tr, "train", 10)
    return h


def test_healthy_trainer_is_clear(torch_stack, tmp_path):
    def compute_metrics(p):
        return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}

    h = run(trainer(tmp_path, eval_ds=dataset(8), compute_metrics=compute_metrics))
    assert findings(h) == []
    assert {"TL101", "TL106", "TL301", "TL201", "TL207", "TL305", "TL308", "TL405", "TL406", "TL407", "TL504",
            "TL506", "TL601", "TL602", "TL607", "TL606"} <= checked(h)


def test_batch_key_not_in_forward(torch_stack, tmp_path):
    h = run(trainer(tmp_path, train=dataset(extra={"idx": list(range(16))}), remove_unused_columns=False))
    assert "TL207" in codes(h) and "'idx'" in evidence(h, "TL207")


def test_all_parameters_frozen(torch_stack, tmp_path):
    model = bert()
    model.requires_grad_(False)
    h = run(trainer(tmp_path, model=model))
    assert codes(h) == ["TL305"] and "0 of" in evidence(h, "TL305")


def test_parameter_without_gradient_and_non_finite_loss(torch_stack, tmp_path):
    import torch
    from torch import nn

    class Unused(nn.Module):
        def __init__(self, nan=False):
            super().__init__()
            self.emb = nn.Embedding(60, 8)
            self.head = nn.Linear(8, 3)
            self.unused = nn.Linear(8, 8)
            self.nan = nan

        def forward(self, input_ids, labels=None):
            logits = self.head(self.emb(input_ids).mean(1))
            if self.nan:
                logits = logits / torch.zeros(())
            return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}

    h = run(trainer(tmp_path, model=Unused()))
    assert codes(h) == ["TL308"] and "unused.weight" in evidence(h, "TL308")
    h = run(trainer(tmp_path, model=Unused(nan=True)))
    assert "TL406" in codes(h) and "non-finite per-sample loss at batch indices" in evidence(h, "TL406")


def test_float_labels_are_multi_label(torch_stack, tmp_path):
    h = run(trainer(tmp_path, train=dataset(labels=[float(i % 3) for i in range(16)])))
    assert codes(h) == ["TL405"] and "BCEWithLogitsLoss" in findings(h)[0][1]


def test_integer_classes_on_regression_head_confirm_tl304(torch_stack, tmp_path):
    h = run(trainer(tmp_path, model=bert(num_labels=1)))
    assert "TL405" in codes(h) and "regression" in findings(h)[0][1]


def test_initial_loss_far_above_ln_num_labels(torch_stack, tmp_path):
    import torch

    def summed(outputs, labels, num_items_in_batch=None):
        return torch.nn.functional.cross_entropy(outputs["logits"], labels) * 50

    h = run(trainer(tmp_path, compute_loss_func=summed))
    assert "TL407" in codes(h) and "ln(3)" in findings(h)[0][1]


def test_optimizer_on_replaced_model_and_zero_learning_rate(torch_stack, tmp_path):
    import torch

    stale = bert()
    h = run(trainer(tmp_path, model=bert(), optimizers=(torch.optim.AdamW(stale.parameters(), lr=5e-5), None)))
    assert codes(h) == ["TL504"] and "overlap 0" in evidence(h, "TL504")
    model = bert()
    h = run(trainer(tmp_path, model=model, optimizers=(torch.optim.SGD(model.parameters(), lr=0.0), None)))
    assert codes(h) == ["TL506"] and "lr=0" in findings(h)[0][1]


def test_default_learning_rate_of_a_user_optimizer_confirms_tl502(torch_stack, tmp_path):
    import torch

    model = bert()
    h = run(trainer(tmp_path, model=model, optimizers=(torch.optim.AdamW(model.parameters()), None)),
            static_codes=("TL502",))
    assert codes(h) == ["TL502"] and "0.001" in evidence(h, "TL502")


@pytest.mark.parametrize(
    "kind, code",
    [("returns-none", "TL602"), ("preprocess-none", "TL603"), ("raises", "TL607"), ("best-metric", "TL606")],
)
def test_evaluation_failures(torch_stack, tmp_path, kind, code):
    def compute_metrics(p):
        if kind == "returns-none":
            return None
        if kind == "raises":
            return {"f1": p.label_ids["not a dict"]}
        return {"accuracy": 1.0}

    kw = {"compute_metrics": compute_metrics}
    if kind == "preprocess-none":
        kw["preprocess_logits_for_metrics"] = lambda logits, labels: None
    if kind == "best-metric":
        kw["metric_for_best_model"] = "f1"
    h = run(trainer(tmp_path, eval_ds=dataset(8), **kw))
    assert codes(h) == [code], findings(h)


def test_overfit_classifies_the_curve(torch_stack, tmp_path):
    h = run(trainer(tmp_path, learning_rate=5e-3), overfit=25)
    assert any("--overfit 25" in n for n in notes(h))
    assert any("step 1" in d for d in details(h))  # the plot
    assert "TL706" in checked(h) or "TL706" in codes(h)


def test_raw_text_with_a_tokenizing_collator_is_not_raw(torch_stack, tmp_path):
    import torch
    from datasets import Dataset

    raw = Dataset.from_dict({"text": [f"sentence {i}" for i in range(16)], "label": [i % 3 for i in range(16)]})

    def collate(rows):  # tokenizes on the fly, as some scripts do
        ids = torch.tensor([[2] + [5 + len(r["text"]) % 40] * 6 + [3] for r in rows])
        return {"input_ids": ids, "labels": torch.tensor([r["label"] for r in rows])}

    h = run(trainer(tmp_path, train=raw, data_collator=collate, remove_unused_columns=False))
    assert "TL101" not in codes(h) and "TL101" in checked(h), findings(h)

    def passthrough(rows):
        return {"labels": torch.tensor([r["label"] for r in rows])}

    h = run(trainer(tmp_path, train=raw, data_collator=passthrough, remove_unused_columns=False))
    assert codes(h) == ["TL101"] and "batch keys ['labels']" in evidence(h, "TL101")


def test_tiny_model_from_a_large_config_without_weights(torch_stack, tmp_path):
    """--tiny-model: a 7B-sized config (no weights in the directory at all) becomes a small random model
    that keeps the vocabulary, the labels and the pad token."""
    from transformers import AutoModelForSequenceClassification, LlamaConfig, modeling_utils

    from trainlint.probe.child.frameworks.hf_trainer import install_tiny_model

    LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
                num_key_value_heads=8, vocab_size=32000, pad_token_id=0).save_pretrained(tmp_path / "llama")
    h = recording_harness()
    original = modeling_utils.PreTrainedModel.__dict__["from_pretrained"]
    try:
        install_tiny_model(h, modeling_utils)
        model = AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "llama"), num_labels=5)
    finally:
        modeling_utils.PreTrainedModel.from_pretrained = original
    c = model.config
    assert type(model).__name__ == "LlamaForSequenceClassification"
    assert (c.num_labels, c.vocab_size, c.pad_token_id) == (5, 32000, 0)
    assert c.num_hidden_layers == 2 and c.hidden_size == 64
    assert sum(p.numel() for p in model.parameters()) < 5_000_000
    assert any("--tiny-model" in n for n in notes(h))
    import torch

    out = model(input_ids=torch.tensor([[1, 5, 9, 0]]), labels=torch.tensor([3]))
    assert out.logits.shape == (1, 5) and torch.isfinite(out.loss)


def test_label_range_reads_the_head_not_a_reassigned_config(torch_stack, tmp_path):
    """id2label reassigned after a 2-output head was built: config.num_labels says 3, the head has 2
    outputs. The evidence names the head and the mismatch instead of contradicting itself."""
    model = bert(num_labels=2)
    model.config.id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    assert model.config.num_labels == 3 and model.classifier.out_features == 2
    h = run(trainer(tmp_path, model=model))
    assert codes(h)[:1] == ["TL106"], findings(h)
    message, evidence = findings(h)[0][1], findings(h)[0][2]
    assert "outside [0, 2)" in message and "num_labels = 3" in message and "`classifier` has 2 outputs" in message
    assert "2.0×" in evidence or "2×" in evidence


def _pretrained(tmp_path):
    from transformers import AutoModelForSequenceClassification

    bert().save_pretrained(tmp_path / "ckpt")
    return AutoModelForSequenceClassification.from_pretrained(str(tmp_path / "ckpt"))


def test_observed_rate_on_a_pretrained_model_is_tl503_without_a_static_finding(torch_stack, tmp_path):
    h = run(trainer(tmp_path, model=_pretrained(tmp_path), learning_rate=1e-3))
    assert codes(h) == ["TL503"], findings(h)
    assert "0.001" in findings(h)[0][1] and "from_pretrained" in evidence(h, "TL503")
    # The same rate on a model trained from scratch (from_config) is fine.
    h = run(trainer(tmp_path, model=bert(), learning_rate=1e-3))
    assert "TL503" not in codes(h) and "TL503" in checked(h)


def test_step_and_overfit_run_at_the_base_rate_not_the_warmup_value(torch_stack, tmp_path):
    """A warmup scheduler gives lr 0 now: the probe's step and --overfit use the optimizer's base rate
    (and say so) instead of confirming TL506/TL706 on a correct script."""
    import torch

    model = bert()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, step / 100))
    assert optimizer.param_groups[0]["lr"] == 0.0
    h = run(trainer(tmp_path, model=model, optimizers=(optimizer, warmup)), overfit=25)
    assert "TL506" not in codes(h) and "TL506" in checked(h), findings(h)
    assert "TL706" not in codes(h), findings(h)
    assert any("base rate lr=0.005" in n and "--overfit 25" in n for n in notes(h)), notes(h)


def test_a_plateau_on_a_random_tiny_model_is_a_note_not_tl706(torch_stack):
    import torch

    from trainlint.stages.s7_loop.probe import report_overfit

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=1e-4)
    flat = [1.0986] * 10
    h = recording_harness(tiny_model=True)
    report_overfit(h, flat, optimizer, "--overfit 10: one batch", 3)
    assert codes(h) == [] and any("random --tiny-model" in n and "plateaus" in n for n in notes(h)), notes(h)
    h = recording_harness()
    report_overfit(h, flat, optimizer, "--overfit 10: one batch", 3)
    assert codes(h) == ["TL706"] and "lr=0.0001" in findings(h)[0][1]


def test_a_batch_without_labels_names_the_batch_keys(torch_stack, tmp_path):
    from datasets import Dataset

    no_labels = Dataset.from_dict({"input_ids": [[2, 5 + i, 6, 3] for i in range(16)]})
    h = run(trainer(tmp_path, train=no_labels))
    assert codes(h) == ["TL707"], findings(h)
    assert "no labels" in findings(h)[0][1] and "'input_ids'" in findings(h)[0][1]


def test_a_failing_optimizer_step_is_a_finding_not_all_clear(torch_stack, tmp_path):
    import torch

    class Broken(torch.optim.SGD):
        def step(self, closure=None):
            raise RuntimeError("sparse gradients are not supported")

    model = bert()
    h = run(trainer(tmp_path, model=model, optimizers=(Broken(model.parameters(), lr=0.1), None)))
    assert codes(h) == ["TL707"], findings(h)
    assert "optimizer.step() fails" in findings(h)[0][1] and "sparse gradients" in findings(h)[0][1]
