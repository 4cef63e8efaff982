"""Catalog breadth, stages 5–8: tricky variants and correct code that must stay quiet.

The documents' examples are checked here too (for these codes), so the rules and `rules/<CODE>.md`
cannot drift apart even before the catalog-wide test runs them.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from support import RELEASES
from trainlint.config import Settings
from trainlint.docs import parse_doc
from trainlint.engine import lint_source
from trainlint.findings import Severity

ROOT = Path(__file__).resolve().parent.parent
CODES = ["TL502", "TL503", "TL504", "TL505", "TL602", "TL603", "TL604", "TL605", "TL606",
         "TL701", "TL702", "TL703", "TL704", "TL705", "TL807", "TL808", "TL809"]


def lint(source: str, select: str | None = None, **settings):
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[select or "ALL"], **settings))


def codes(source: str, select: str | None = None, **settings) -> list[str]:
    return [f.code for f in lint(source, select, **settings)]


@pytest.mark.parametrize("code", CODES)
def test_document_examples(code):
    doc = parse_doc(code, (ROOT / "rules" / f"{code}.md").read_text())
    assert doc.bad and doc.sections.get("Probe")
    for ex in doc.bad:
        assert code in [f.code for f in lint_source(ex.code, ex.filename, Settings(select=[code], target_versions=RELEASES))], ex.code
    for ex in doc.good:
        assert code not in [f.code for f in lint_source(ex.code, ex.filename, Settings(select=[code], target_versions=RELEASES))], ex.code


def test_the_rules_off_by_default():
    from trainlint.rule import all_rules

    rules = all_rules()
    assert {c for c in CODES if not rules[c].default} == {"TL504", "TL701", "TL702", "TL703", "TL705"}


# ---------------------------------------------------------------------------------------------
# TL502 / TL503


def test_tl502_through_to_device_and_named_parameters():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2).to("cuda")
    grouped = [{"params": [p for n, p in model.named_parameters() if "bias" not in n], "weight_decay": 0.01}]
    optimizer = torch.optim.AdamW(grouped)
    """
    assert codes(src, "TL502") == ["TL502"]


def test_tl502_quiet_with_lr_groups_scratch_models_and_peft():
    groups = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    optimizer = torch.optim.AdamW([{"params": model.base_model.parameters(), "lr": 1e-5},
                                   {"params": model.classifier.parameters(), "lr": 1e-4}])
    """
    scratch = """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained("gpt2"))
    optimizer = torch.optim.AdamW(model.parameters())
    """
    peft = """
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    optimizer = torch.optim.AdamW(model.parameters())
    """
    positional = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), 3e-5)
    """
    for src in (groups, scratch, peft, positional):
        assert codes(src, "TL502") == [], src


def test_tl503_keras_default_explicit_and_create_optimizer():
    tpl = """
    import tensorflow as tf
    from transformers import TFAutoModelForSequenceClassification, create_optimizer
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    model.compile(optimizer={opt})
    """
    assert codes(tpl.format(opt="tf.keras.optimizers.Adam()"), "TL503") == ["TL503"]
    assert codes(tpl.format(opt="tf.keras.optimizers.Adam(learning_rate=3e-3)"), "TL503") == ["TL503"]
    assert codes(tpl.format(opt="tf.keras.optimizers.Adam(learning_rate=3e-5)"), "TL503") == []
    assert codes(tpl.format(opt="tf.keras.optimizers.Adam(learning_rate=schedule)"), "TL503") == []
    assert codes(tpl.format(opt="create_optimizer(init_lr=1e-3, num_train_steps=100, num_warmup_steps=0)"),
                 "TL503") == ["TL503"]
    # `optimizer, schedule = create_optimizer(...)`: transformers returns (optimizer, lr_schedule)
    unpacked = tpl.replace("model.compile", "opt, schedule = create_optimizer(1e-3, 100, 0)\n    model.compile")
    assert codes(unpacked.format(opt="opt"), "TL503") == ["TL503"]
    assert codes(unpacked.format(opt="schedule"), "TL503") == []


def test_tl503_legacy_keras_lr_alias_is_the_rate():
    # the TF 2.x notebooks' form: `Adam(lr=...)` is the learning rate of the Keras 2 optimizers
    tpl = """
    import tensorflow as tf
    from transformers import TFAutoModelForSequenceClassification
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    model.compile(optimizer={opt}, loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    """
    assert codes(tpl.format(opt="tf.keras.optimizers.Adam(lr=3e-5)"), "TL503") == []
    assert codes(tpl.format(opt="tf.keras.optimizers.legacy.Adam(lr=2e-5, epsilon=1e-8)"), "TL503") == []
    [f] = lint(tpl.format(opt="tf.keras.optimizers.Adam(lr=1e-3)"), "TL503")
    assert "`tf.keras.optimizers.Adam(lr=...)` 1e-3" in f.message


def test_tl503_quiet_for_fine_rates_lora_and_scratch_training():
    ok = """
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    args = TrainingArguments("out", learning_rate=5e-5)
    Trainer(model=model, args=args)
    """
    lora = """
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
    model = get_peft_model(AutoModelForCausalLM.from_pretrained("gpt2"), LoraConfig(r=8))
    args = TrainingArguments("out", learning_rate=1e-3)
    Trainer(model=model, args=args)
    """
    scratch = """
    from transformers import AutoConfig, AutoModelForMaskedLM, Trainer, TrainingArguments
    model = AutoModelForMaskedLM.from_config(AutoConfig.from_pretrained("bert-base-cased"))
    args = TrainingArguments("out", learning_rate=1e-3)
    Trainer(model=model, args=args)
    """
    for src in (ok, lora, scratch):
        assert codes(src, "TL503") == [], src


def test_tl503_through_model_init():
    src = """
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
    def model_init():
        return AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    args = TrainingArguments("out", learning_rate=0.001)
    Trainer(model_init=model_init, args=args)
    """
    assert codes(src, "TL503") == ["TL503"]


# ---------------------------------------------------------------------------------------------
# TL504 / TL505


def test_tl504_trainer_optimizers_and_deepcopy():
    src = """
    import copy
    import torch
    from transformers import AutoModelForSequenceClassification, Trainer
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model = copy.deepcopy(model)
    trainer = Trainer(model=model, args=args, optimizers=(optimizer, None))
    """
    assert codes(src, "TL504") == ["TL504"]


def test_tl504_quiet_when_rebuilt_per_fold_or_reloaded_after_training():
    folds = """
    import torch
    from transformers import AutoModelForSequenceClassification
    for fold in range(5):
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
        for batch in loaders[fold]:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    """
    reload = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    for batch in loader:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained("best")
    model = AutoModelForSequenceClassification.from_pretrained("best")
    print(model(**test_batch).logits)
    """
    compiled = """
    import torch
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = torch.compile(model)
    for x, y in loader:
        loss_fn(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    """
    for src in (folds, reload, compiled):
        assert codes(src, "TL504") == [], src


def test_tl505_no_cuda_and_bf16_on_cpu():
    assert codes('from transformers import TrainingArguments\nTrainingArguments("o", no_cuda=True, fp16=True)\n',
                 "TL505") == ["TL505"]
    assert codes('from transformers import TrainingArguments\nTrainingArguments("o", use_cpu=True, bf16=True)\n',
                 "TL505") == []
    assert codes('from transformers import TrainingArguments\nTrainingArguments("o", use_cpu=False, fp16=True)\n',
                 "TL505") == []


# ---------------------------------------------------------------------------------------------
# TL602 / TL603 / TL604


def test_tl602_paths():
    def run(body):
        src = ("from transformers import Trainer\ndef compute_metrics(p):\n" + textwrap.indent(body, "    ")
               + "\nTrainer(model=model, args=args, compute_metrics=compute_metrics)\n")
        return [f.code for f in lint_source(src, "train.py", Settings(select=["TL602"]))]

    assert run("return {'a': 1}") == []
    assert run("if p is None:\n    raise ValueError('no predictions')\nreturn {'a': 1}") == []
    assert run("try:\n    return {'a': 1}\nexcept ValueError:\n    return {}") == []
    assert run("for x in p:\n    return {'a': x}") == ["TL602"]
    assert run("if p:\n    return {'a': 1}\nelse:\n    return None") == ["TL602"]
    assert run("while True:\n    return {'a': 1}") == []
    assert run("metrics = {'a': 1}\nprint(metrics)") == ["TL602"]
    assert run("if p:\n    return {'a': 1}\nsys.exit(1)") == []


def test_tl602_lambda_and_keras_callback():
    assert codes("""
    from transformers import Trainer
    Trainer(model=model, args=args, compute_metrics=lambda p: {"a": 1})
    """, "TL602") == []
    assert codes("""
    from transformers.keras_callbacks import KerasMetricCallback
    def metric_fn(eval_predictions):
        preds, labels = eval_predictions
        print((preds.argmax(-1) == labels).mean())
    cb = KerasMetricCallback(metric_fn=metric_fn, eval_dataset=val)
    """, "TL602") == ["TL602"]


def test_tl603_all_paths_return():
    src = """
    from transformers import Trainer
    def prep(logits, labels):
        if isinstance(logits, tuple):
            return logits[0].argmax(-1)
        else:
            return logits.argmax(-1)
    Trainer(model=model, args=args, preprocess_logits_for_metrics=prep)
    """
    assert codes(src, "TL603") == []


def test_tl604_quiet_on_correct_use():
    src = """
    import numpy as np
    from sklearn.metrics import accuracy_score, classification_report
    from transformers import Trainer
    trainer = Trainer(model=model, args=args)
    predictions, labels, metrics = trainer.predict(test_ds)
    preds = np.argmax(predictions, axis=-1)
    print(classification_report(labels, preds))
    out = trainer.predict(test_ds)
    y_true = out.label_ids
    y_pred = out.predictions.argmax(-1)
    print(accuracy_score(out.label_ids, y_pred))
    """
    assert codes(src, "TL604") == []


def test_tl604_sklearn_y_pred_and_argmax_method():
    src = """
    from sklearn.metrics import f1_score
    from transformers import Trainer
    trainer = Trainer(model=model, args=args)
    out = trainer.predict(test_ds)
    print(f1_score(test_labels, out[1], average="macro"))
    """
    assert codes(src, "TL604") == ["TL604"]


# ---------------------------------------------------------------------------------------------
# TL605 / TL606


@pytest.mark.parametrize("kwargs, expected", [
    ('eval_strategy="epoch", save_strategy="epoch"', []),
    ('eval_strategy="steps", save_strategy="steps"', []),  # both 500
    ('eval_strategy="steps", eval_steps=100, save_steps=1000', []),
    ('eval_strategy="steps", logging_steps=300', ["TL605"]),  # eval_steps falls back to logging_steps
    ('eval_strategy="epoch", save_strategy="best"', []),
    ('', ["TL605"]),  # eval "no" (default) vs save "steps" (default)
    ('evaluation_strategy="epoch", save_strategy="epoch"', []),
    ('eval_strategy=IntervalStrategy.EPOCH, save_strategy="epoch"', []),
    ('eval_strategy=IntervalStrategy.STEPS, save_strategy="epoch"', ["TL605"]),
    ('eval_strategy=strategy, save_strategy="epoch"', []),  # unknown: quiet
    ('eval_strategy="steps", eval_steps=0.1, save_steps=0.2', []),
    ('eval_strategy="steps", eval_steps=0.1, save_steps=500', ["TL605"]),
])
def test_tl605_strategies(kwargs, expected):
    sep = ", " if kwargs else ""
    src = f"from transformers import TrainingArguments, IntervalStrategy\n" \
          f"TrainingArguments('out', load_best_model_at_end=True{sep}{kwargs})\n"
    assert codes(src, "TL605") == expected


def test_tl605_needs_load_best():
    assert codes('from transformers import TrainingArguments\nTrainingArguments("o", eval_strategy="epoch")\n',
                 "TL605") == []


def test_tl606_keys_through_a_result_dict_and_evaluate():
    base = """
    import evaluate
    import numpy as np
    from transformers import Trainer, TrainingArguments
    accuracy = evaluate.load("accuracy")
    def compute_metrics(p):
        preds = np.argmax(p.predictions, -1)
        result = accuracy.compute(predictions=preds, references=p.label_ids)
        result["f1"] = 0.5
        return result
    args = TrainingArguments("out", metric_for_best_model="{metric}")
    Trainer(model=model, args=args, compute_metrics=compute_metrics)
    """
    assert codes(base.replace("{metric}", "accuracy"), "TL606") == []
    assert codes(base.replace("{metric}", "eval_f1"), "TL606") == []
    assert codes(base.replace("{metric}", "loss"), "TL606") == []
    assert codes(base.replace("{metric}", "precision"), "TL606") == ["TL606"]


def test_tl606_quiet_when_keys_unknown_or_several_eval_sets():
    unknown = """
    from transformers import Trainer, TrainingArguments
    def compute_metrics(p):
        return {k: round(v, 4) for k, v in metric.compute(predictions=p[0], references=p[1]).items()}
    args = TrainingArguments("out", metric_for_best_model="f1")
    Trainer(model=model, args=args, compute_metrics=compute_metrics)
    """
    several = """
    from transformers import Trainer, TrainingArguments
    def compute_metrics(p):
        return {"accuracy": 1.0}
    args = TrainingArguments("out", metric_for_best_model="matched_accuracy")
    Trainer(model=model, args=args, compute_metrics=compute_metrics,
            eval_dataset={"matched": a, "mismatched": b})
    """
    for src in (unknown, several):
        assert codes(src, "TL606") == [], src


# ---------------------------------------------------------------------------------------------
# Training loops: TL701–TL705

NO_TRAINER = """
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification, get_scheduler

accelerator = Accelerator(gradient_accumulation_steps=4)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
no_decay = ["bias", "LayerNorm.weight"]
groups = [
    {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
    {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
]
optimizer = torch.optim.AdamW(groups, lr=5e-5)
lr_scheduler = get_scheduler("linear", optimizer=optimizer, num_warmup_steps=0, num_training_steps=1000)
model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
)
for epoch in range(3):
    model.train()
    total_loss = 0
    for step, batch in enumerate(train_dataloader):
        with accelerator.accumulate(model):
            outputs = model(**batch)
            loss = outputs.loss
            total_loss += loss.detach().float()
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
    model.eval()
    for step, batch in enumerate(eval_dataloader):
        with torch.no_grad():
            outputs = model(**batch)
        predictions = outputs.logits.argmax(dim=-1)
"""


def test_accelerate_no_trainer_loop_is_clean():
    assert [c for c in codes(NO_TRAINER, "ALL") if c.startswith(("TL5", "TL6", "TL7", "TL8"))] == []


def test_tl701_amp_scaler_and_epoch_level_zero_grad():
    src = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    for epoch in range(3):
        optimizer.zero_grad()
        for batch in loader:
            with torch.autocast("cuda"):
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    """
    assert codes(src, "TL701") == ["TL701"]


def test_tl701_quiet_with_model_zero_grad_grad_none_and_lbfgs_closure():
    model_zero = """
    import torch
    for batch in loader:
        model.zero_grad()
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
    """
    grad_none = """
    import torch
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        for p in model.parameters():
            p.grad = None
    """
    lbfgs = """
    import torch
    optimizer = torch.optim.LBFGS(model.parameters())
    for x, y in loader:
        def closure():
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            return loss
        optimizer.step(closure)
    """
    deepspeed = """
    import torch
    for batch in loader:
        loss = model_engine(batch)
        model_engine.backward(loss)
        model_engine.step()
    """
    for src in (model_zero, grad_none, lbfgs, deepspeed):
        assert codes(src, "TL701") == [], src


def test_tl701_distributed_autograd_context_per_iteration():
    # in the shape of pytorch/examples distributed/rpc/rnn/main.py: the gradients live in the context,
    # a fresh one every iteration, and DistributedOptimizer.step(context_id) reads them from there
    src = """
    import torch.distributed.autograd as dist_autograd
    from torch.distributed.optim import DistributedOptimizer

    def run_trainer(model, loader, opt):
        for epoch in range(10):
            for data, target in loader:
                with dist_autograd.context() as context_id:
                    output = model(data)
                    loss = criterion(output, target)
                    dist_autograd.backward(context_id, [loss])
                    opt.step(context_id)
    """
    assert codes(src, "TL701") == []
    # one context around the whole loop: the gradients add up in it, step after step
    outside = """
    import torch.distributed.autograd as dist_autograd

    def run_trainer(model, loader, opt):
        with dist_autograd.context() as context_id:
            for data, target in loader:
                loss = criterion(model(data), target)
                dist_autograd.backward(context_id, [loss])
                opt.step(context_id)
    """
    assert codes(outside, "TL701") == ["TL701"]


def test_tl702_eval_in_epoch_loop_without_train():
    src = """
    import torch
    model.train()
    for epoch in range(3):
        for batch in train_loader:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            for batch in eval_loader:
                model(**batch)
    """
    assert codes(src, "TL702") == ["TL702"]


def test_tl702_quiet_for_separate_evaluate_function_and_inference_mode():
    src = """
    import torch

    @torch.no_grad()
    def evaluate(model, loader):
        model.eval()
        for batch in loader:
            model(**batch)

    def train(model, loader, optimizer):
        model.train()
        for batch in loader:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        with torch.inference_mode():
            for batch in val_loader:
                model(**batch)
    """
    assert codes(src, "TL702") == []


def test_tl702_backward_outside_no_grad_is_fine():
    src = """
    import torch
    loss = model(**batch).loss
    with torch.no_grad():
        loss.backward()
    """
    assert codes(src, "TL702") == []


def test_tl703_variants():
    scaled = """
    import torch
    for batch in loader:
        loss = model(**batch).loss / 4
        loss.backward()
        running += loss * 4
    """
    item = """
    import torch
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        running += loss.item()
    """
    eval_sum = """
    import torch
    with torch.no_grad():
        for batch in loader:
            loss = model(**batch).loss
            total += loss
    """
    assert codes(scaled, "TL703") == ["TL703"]
    assert codes(item, "TL703") == []
    assert codes(eval_sum, "TL703") == []


def test_tl704_quiet_for_per_epoch_scheduler_after_the_batch_loop_and_plateau():
    src = """
    import torch
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
    sched2 = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    for epoch in range(10):
        scheduler.step(val_loss)
        for batch in loader:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        sched2.step()
    """
    assert codes(src, "TL704") == []


def test_tl705_only_when_selected_and_not_inside_modules():
    src = """
    import torch
    out = model.forward(x)
    """
    assert [f.code for f in lint_source(textwrap.dedent(src), "train.py", Settings())] == []  # off by default
    assert codes(src, "TL705") == ["TL705"]
    assert codes("import torch\nclass M(torch.nn.Module):\n    def f(self, x):\n        return self.inner.forward(x)\n",
                 "TL705") == []


# ---------------------------------------------------------------------------------------------
# API compatibility: TL807–TL809


TF_SCRIPT = """
from transformers import TFAutoModelForSequenceClassification
model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
"""


def test_tl807_targets_and_pins():
    assert codes(TF_SCRIPT, "TL807", target_versions={"transformers": "5.0"}) == ["TL807"]
    assert codes(TF_SCRIPT, "TL807", target_versions={"transformers": "4.46"}) == []
    pinned = "# requirements: transformers==4.46.3, tensorflow<2.16\n" + TF_SCRIPT
    assert codes(pinned, "TL807", target_versions={"transformers": "5.0"}) == []
    notebook = '# pip install "transformers<5" tf-keras\n'
    assert codes(notebook + TF_SCRIPT, "TL807", target_versions={"transformers": "5.1"}) == []


def test_tl807_attribute_and_tf_module():
    src = "import transformers\nm = transformers.TFBertModel.from_pretrained('bert-base-cased')\n"
    assert codes(src, "TL807", target_versions={"transformers": "5.0"}) == ["TL807"]
    src = "from transformers.keras_callbacks import KerasMetricCallback\n"
    assert codes(src, "TL807", target_versions={"transformers": "5.0"}) == ["TL807"]
    src = "from transformers import TFTrainer\n"  # TL803's
    assert codes(src, "TL807", target_versions={"transformers": "5.0"}) == []


def test_tl808_keras_version_decides():
    src = """
    import tensorflow as tf
    from transformers import TFAutoModelForSequenceClassification
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    opt = tf.keras.optimizers.Adam(learning_rate=3e-5)
    model.compile(optimizer=opt)
    """
    assert codes(src, "TL808", target_versions={"keras": "3.6"}) == ["TL808"]
    assert codes(src, "TL808", target_versions={"keras": "2.15"}) == []
    legacy = 'import os\nos.environ["TF_USE_LEGACY_KERAS"] = "1"\n' + textwrap.dedent(src)
    assert codes(legacy, "TL808", target_versions={"keras": "3.6"}) == []
    tf_keras = textwrap.dedent(src).replace("tf.keras.optimizers.Adam", "tf_keras.optimizers.Adam").replace(
        "import tensorflow as tf", "import tf_keras")
    assert codes(tf_keras, "TL808", target_versions={"keras": "3.6"}) == []


def test_tl804_trl_trainers_and_their_versions():
    # huggingface/trl#6168: SFTTrainer(tokenizer=...) on a trl without the deprecated alias
    src = """
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer
    tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
    trainer = SFTTrainer(model=model, train_dataset=dataset, tokenizer=tokenizer, args=SFTConfig("out"))
    """
    [f] = lint(src, "TL804")
    assert f.severity == Severity.ERROR and "trl 0.16" in f.message and f.fix is not None
    # pinned to a trl that takes it (0.11), or to a transformers older than any trl with `processing_class`
    # supports (trl 0.12 needs transformers 4.46): valid there, silent
    for pin in ("trl==0.11.4", "transformers==4.45.2"):
        assert lint(f"# pip install {pin}\n" + textwrap.dedent(src), "TL804") == [], pin
    # still accepted with a deprecation warning (0.12 to 0.15): a warning, with the rename
    for pin in ("trl==0.12.0", "trl==0.15.2"):
        [w] = lint(f"# pip install {pin}\n" + textwrap.dedent(src), "TL804")
        assert w.severity == Severity.WARNING and w.fix is not None, pin
    assert lint("# pip install trl==0.16.0\n" + textwrap.dedent(src), "TL804")[0].severity == Severity.ERROR
    # a trainer that renamed it outright in 0.12; a local subclass; an aliased module
    orpo = src.replace("SFTConfig, SFTTrainer", "ORPOConfig, ORPOTrainer").replace("SFT", "ORPO")
    assert lint("# pip install trl==0.12.0\n" + textwrap.dedent(orpo), "TL804")[0].severity == Severity.ERROR
    assert lint("# pip install trl==0.11.4\n" + textwrap.dedent(orpo), "TL804") == []
    sub = "import trl, transformers\nclass MyTrainer(trl.SFTTrainer):\n    pass\nt = MyTrainer(model=m, tokenizer=tok)\n"
    assert codes(sub, "TL804") == ["TL804"]
    # correct forms: processing_class, a trainer of another library, a trl class without the argument
    assert codes(src.replace("tokenizer=tokenizer", "processing_class=tokenizer"), "TL804") == []
    assert codes("import transformers\nfrom mylib import SFTTrainer\nt = SFTTrainer(model=m, tokenizer=tok)\n",
                 "TL804") == []
    assert codes("import transformers\nfrom trl import DDPOTrainer\nt = DDPOTrainer(config, reward, prompt, pipeline, tokenizer=tok)\n",
                 "TL804") == []
    # a script that imports trl only (no torch / transformers line) is linted too
    assert codes("from trl import SFTTrainer\nt = SFTTrainer(model='m', train_dataset=d, tokenizer=tok)\n",
                 "TL804") == ["TL804"]


def test_tl809_versions_and_classes():
    src = 'from transformers import BertTokenizerFast\ntok = BertTokenizerFast(vocab_file="v.txt")\n'
    assert codes(src, "TL809", target_versions={"transformers": "5.0"}) == ["TL809"]
    assert codes(src, "TL809", target_versions={"transformers": "4.57"}) == []
    ok = 'from transformers import XLMTokenizer\ntok = XLMTokenizer(vocab_file="v.json", merges_file="m.txt")\n'
    assert codes(ok, "TL809", target_versions={"transformers": "5.0"}) == []
    loaded = 'from transformers import BertTokenizer\ntok = BertTokenizer.from_pretrained("d", vocab_file="v.txt")\n'
    assert codes(loaded, "TL809", target_versions={"transformers": "5.0"}) == []


# ---------------------------------------------------------------------------------------------
# Precision on the correct corpus and the fixed course scripts


def test_correct_corpus_has_no_findings_from_these_rules():
    files = sorted((ROOT / "tests" / "data" / "correct").glob("*.py")) + sorted((ROOT / "examples").glob("*_fixed.py"))
    assert files
    noisy = {}
    for f in files:
        found = [x.code for x in lint_source(f.read_text(), str(f), Settings(select=CODES)) if x.code in CODES]
        if found:
            noisy[f.name] = found
    assert noisy == {}


# ---------------------------------------------------------------------------------------------
# Found while checking official-style scripts


def test_tl702_evaluation_without_no_grad_that_keeps_only_argmax_is_left_alone():
    # the pattern of the final mismatched-MNLI evaluation in run_glue_no_trainer.py
    src = """
    import torch
    model.eval()
    for step, batch in enumerate(eval_dataloader):
        outputs = model(**batch)
        predictions = outputs.logits.argmax(dim=-1)
        metric.add_batch(predictions=accelerator.gather(predictions), references=batch["labels"])
    """
    assert codes(src, "TL702") == []
    kept = src.replace("predictions = outputs.logits.argmax(dim=-1)", "all_logits.append(outputs.logits)")
    assert codes(kept, "TL702") == ["TL702"]
    detached = src.replace("predictions = outputs.logits.argmax(dim=-1)", "all_logits.append(outputs.logits.detach())")
    assert codes(detached, "TL702") == []


def test_tl703_loss_rebound_to_its_value():
    src = """
    import torch
    for batch in loader:
        loss = criterion(model(batch["x"]), batch["y"])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss = loss.item()
        total += loss
    """
    assert codes(src, "TL703") == []


def test_tl504_new_model_named_from_args():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=2)
    for batch in loader:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
    assert codes(src, "TL504") == ["TL504"]


def test_tl502_tl503_quiet_for_sgd_and_linear_probes():
    sgd = """
    import torch
    from transformers import ViTForImageClassification
    model = ViTForImageClassification.from_pretrained("google/vit-base-patch16-224-in21k", num_labels=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    """
    probe = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=4)
    for p in model.bert.parameters():
        p.requires_grad = False
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    optimizer2 = torch.optim.Adam(model.parameters())
    """
    for src in (sgd, probe):
        assert [c for c in codes(src, "ALL") if c in ("TL502", "TL503")] == [], src


def test_tl702_frozen_teacher_in_eval_mode_is_fine():
    src = """
    import torch
    teacher.eval()
    student.train()
    optimizer = torch.optim.AdamW(student.parameters(), lr=5e-5)
    for batch in loader:
        with torch.no_grad():
            t_logits = teacher(**batch).logits
        s_out = student(**batch)
        loss = kd_loss(s_out.logits, t_logits) + s_out.loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
    assert codes(src, "TL702") == []
    assert codes(src.replace("student.train()", "student.eval()"), "TL702") == ["TL702"]
    # no optimizer in sight: the teacher is recognised by being run under no_grad
    no_opt = src.replace("torch.optim.AdamW(student.parameters(), lr=5e-5)", "make_optimizer()")
    assert codes(no_opt, "TL702") == []


def test_tl703_summed_losses_backpropagated_later():
    src = """
    import torch
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        loss_sum += loss
    (loss_sum / 4).backward()
    """
    assert codes(src, "TL703") == []


def test_big_file_stays_fast():
    import time

    one = (ROOT / "rules" / "TL702.md").read_text()
    block = "\n".join(ex.code for ex in parse_doc("TL702", one).bad + parse_doc("TL702", one).good)
    src = "import torch\nfrom transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments\n"
    src += "\n".join([block] * 60)
    # CPU time of this process (a loaded machine stretches the wall clock): this guards against a
    # quadratic blow-up of the loop rules (a few seconds here), it is no speed target
    start = time.process_time()
    lint_source(src, "big.py", Settings(select=CODES))
    assert time.process_time() - start < 20


def test_tl702_periodic_evaluation_inside_the_training_loop():
    src = """
    import torch
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model.train()
    for step, batch in enumerate(loader):
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 500 == 0:
            model.eval()
            with torch.no_grad():
                for vb in val_loader:
                    model(**vb)
    """
    assert codes(src, "TL702") == ["TL702"]
    fixed = src.replace("                    model(**vb)\n", "                    model(**vb)\n            model.train()\n")
    assert codes(fixed, "TL702") == []


def test_tl503_quiet_for_convolutional_checkpoints():
    src = """
    from transformers import AutoModelForImageClassification, Trainer, TrainingArguments
    model = AutoModelForImageClassification.from_pretrained("microsoft/resnet-50", num_labels=10)
    Trainer(model=model, args=TrainingArguments("out", learning_rate=1e-3))
    """
    assert codes(src, "TL503") == []


def test_tl505_gpus_hidden_by_the_script():
    src = """
    import os
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    from transformers import TrainingArguments
    args = TrainingArguments("out", fp16=True)
    """
    assert codes(src, "TL505") == ["TL505"]
    assert codes(src.replace('= ""', '= "0"'), "TL505") == []


def test_tl504_message_quotes_what_the_optimizer_was_given():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    optimizer = torch.optim.AdamW(model.named_parameters(), lr=2e-5)
    model = AutoModelForSequenceClassification.from_pretrained("roberta-base", num_labels=2)
    for batch in loader:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
    [f] = lint(src, "TL504")
    assert "AdamW(model.named_parameters(), ...)" in f.hint


def test_tl701_hint_names_the_optimizer_behind_a_grad_scaler():
    src = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for batch in loader:
        loss = model(**batch).loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    """
    [f] = lint(src, "TL701")
    assert "`optimizer.zero_grad()`" in f.hint and "scaler.zero_grad" not in f.hint


def test_tl602_names_a_keras_metric_fn_as_such():
    src = """
    from transformers.keras_callbacks import KerasMetricCallback

    def silent_fn(eval_predictions):
        print(eval_predictions)

    callback = KerasMetricCallback(silent_fn, eval_dataset=None)
    """
    [f] = lint(src, "TL602")
    assert "`silent_fn` (the `metric_fn` of `KerasMetricCallback`)" in f.message and "Trainer" not in f.message


def test_tl702_no_grad_is_recognised_by_the_call_not_the_text():
    looks_like_it = """
    import torch
    from torch.profiler import record_function
    for batch in loader:
        with record_function("no_grad_part"):
            loss = model(**batch).loss
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
    assert codes(looks_like_it, "TL702") == []
    for block in ("torch.no_grad()", "torch.set_grad_enabled(False)", "torch.inference_mode()"):
        src = looks_like_it.replace('record_function("no_grad_part")', block)
        assert codes(src, "TL702") == ["TL702"], block
    grads_on = looks_like_it.replace('record_function("no_grad_part")', "torch.inference_mode(False)")
    assert codes(grads_on, "TL702") == []



def test_tl702_to_device_chain_and_train_at_the_top_of_the_epoch_loop():
    # `model.to(device).train()` is `model.train()`: the eval() after the batch loop is switched back
    chain = """
    import torch
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(10):
        model.to(device).train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                out = model(x)
    """
    assert codes(chain, "TL702") == []
    assert codes(chain.replace("model.to(device).train()", "model.to(device)"), "TL702") == ["TL702"]
    # evaluation on the last step of the pass, train() at the top of the next one
    last_step = """
    import torch
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(10):
        model.train()
        for i, (x, y) in enumerate(train_loader):
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
            if i == len(train_loader) - 1:
                model.eval()
                with torch.no_grad():
                    for vx, vy in val_loader:
                        out = model(vx)
    """
    assert codes(last_step, "TL702") == []
    # every 100 steps: the rest of the pass trains in eval mode
    periodic = last_step.replace("if i == len(train_loader) - 1:", "if i % 100 == 0:")
    [f] = lint(periodic, "TL702")
    assert "until the next pass calls `train()`" in f.message


EVAL_FUNCTION = """
import torch

def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

def evaluate(model, loader):
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            correct += (out.argmax(1) == y).sum().item()
    return correct

model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(10):
    train(model, train_loader, optimizer)
    evaluate(model, test_loader)
"""


def test_tl702_evaluation_function_that_never_calls_eval():
    [f] = lint(EVAL_FUNCTION, "TL702")
    assert f.code == "TL702" and "`evaluate()` evaluates `model`" in f.message and "train(model" in f.message
    assert f.start.row == EVAL_FUNCTION.splitlines().index("            out = model(x)") + 1
    # the function switches the mode itself, or the caller does
    assert codes(EVAL_FUNCTION.replace("    correct = 0", "    model.eval()\n    correct = 0"), "TL702") == []
    assert codes(EVAL_FUNCTION.replace("    evaluate(model, test_loader)",
                                       "    model.eval()\n    evaluate(model, test_loader)"), "TL702") == []
    # keyword argument, and a global model set to train mode at the top of the epoch loop
    assert codes(EVAL_FUNCTION.replace("evaluate(model, test_loader)", "evaluate(loader=test_loader, model=model)"),
                 "TL702") == ["TL702"]
    global_model = """
    import torch
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    def evaluate(loader):
        preds = []
        with torch.no_grad():
            for batch in loader:
                preds.append(model(batch).argmax(-1))
        return preds
    for epoch in range(3):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
        evaluate(val_loader)
    """
    assert codes(global_model, "TL702") == ["TL702"]
    # nothing says which mode the model is in: a pretrained transformers model loads in eval mode
    inference = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("./fine-tuned")
    def evaluate(loader):
        preds = []
        with torch.no_grad():
            for batch in loader:
                preds.append(model(**batch).logits.argmax(-1))
        return preds
    evaluate(test_loader)
    """
    assert codes(inference, "TL702") == []


def test_tl704_scheduler_and_optimizer_of_the_two_branches_are_not_paired():
    # in the shape of diffusers' examples/vqgan/train_vqgan.py: generator and discriminator steps alternate
    src = """
    import torch
    for i, batch in enumerate(loader):
        if i % 2 == 0:
            generator_loss(batch).backward()
            optimizer.step()
            lr_scheduler.step()
        else:
            discriminator_loss(batch).backward()
            discr_optimizer.step()
            discr_lr_scheduler.step()
        optimizer.zero_grad()
        discr_optimizer.zero_grad()
    """
    assert codes(src, "TL704") == []
    swapped = src.replace("    optimizer.step()\n            lr_scheduler.step()", "    lr_scheduler.step()\n            optimizer.step()")
    assert swapped != src and codes(swapped, "TL704") == ["TL704"]


def test_tl504_saving_the_old_optimizer_state_is_not_a_step():
    # in the shape of LLMs-from-scratch ch05: the model is reloaded for inference, then the old optimizer's
    # state is saved beside it; a new optimizer is built before training again
    src = """
    import torch
    model = GPTModel(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=4e-4)
    train_model_simple(model, train_loader, optimizer)
    model = GPTModel(cfg)
    model.load_state_dict(torch.load("model.pth"))
    model.eval()
    torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()}, "both.pth")
    """
    assert codes(src, "TL504") == []
    stepped = src + """
    for batch in train_loader:
        loss_of(model, batch).backward()
        optimizer.step()
    """
    assert codes(stepped, "TL504") == ["TL504"]


def test_tl702_quiet_for_a_diffusers_model_without_dropout():
    # in the shape of peft's examples/hra_dreambooth/train_dreambooth.py (its BOFT twin sets boft_dropout)
    src = """
    import torch
    from diffusers import UNet2DConditionModel
    from peft import get_peft_model
    unet = UNet2DConditionModel.from_pretrained(args.model, subfolder="unet")
    unet = get_peft_model(unet, config)
    optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4)
    unet, optimizer, loader = accelerator.prepare(unet, optimizer, loader)

    def save_adaptor(unet, step):  # another `unet`: a parameter of its own function
        unet.save_pretrained(f"step-{step}")
    for epoch in range(args.epochs):
        unet.train()
        for step, batch in enumerate(loader):
            loss = loss_fn(unet(batch["x"], batch["t"]), batch["y"])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if step % args.validation_steps == 0:
                unet.eval()
                log_validation(unet)
    """
    assert codes(src, "TL702") == []
    with_dropout = src.replace("get_peft_model(unet, config)", "get_peft_model(unet, BOFTConfig(boft_dropout=0.1))")
    assert codes(with_dropout, "TL702") == ["TL702"]


KERAS_BACKBONE = """
import tensorflow as tf
from transformers import TFAutoModel
bert = TFAutoModel.from_pretrained("bert-base-uncased")
input_ids = tf.keras.Input(shape=(128,), dtype=tf.int32, name="input_ids")
mask = tf.keras.Input(shape=(128,), dtype=tf.int32, name="attention_mask")
x = bert(input_ids, attention_mask=mask)[0][:, 0, :]
x = tf.keras.layers.Dropout(0.1)(x)
out = tf.keras.layers.Dense(3, activation="softmax")(x)
model = tf.keras.Model(inputs=[input_ids, mask], outputs=out)
model.compile(optimizer={opt}, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(train_ds, epochs=2)
"""


def test_tl501_tl503_see_a_pretrained_backbone_inside_a_functional_keras_model():
    assert codes(KERAS_BACKBONE.format(opt='"adam"'), "TL501") == ["TL501"]
    assert codes(KERAS_BACKBONE.format(opt="tf.keras.optimizers.Adam(learning_rate=1e-3)"), "TL503") == ["TL503"]
    assert codes(KERAS_BACKBONE.format(opt="tf.keras.optimizers.Adam(learning_rate=3e-5)"), "TL503") == []
    # a frozen backbone: only the new head trains, at the default rate
    frozen = KERAS_BACKBONE.replace("x = tf.keras.layers.Dropout(0.1)(x)", "bert.trainable = False")
    assert codes(frozen.format(opt='"adam"'), "TL501") == []
    # a freeze of another model earlier in the file says nothing about this backbone
    other = "import torch\nvision = torch.nn.Linear(2, 2)\nvision.requires_grad_(False)\nhead.trainable = False\n"
    assert codes(other + KERAS_BACKBONE.format(opt='"adam"'), "TL501") == ["TL501"]
    # trained from scratch: no pretrained model anywhere in the graph
    scratch = """
    import tensorflow as tf
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    model = tf.keras.Sequential([tf.keras.layers.Embedding(30522, 64), tf.keras.layers.GlobalAveragePooling1D(),
                                 tf.keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    """
    assert codes(scratch, "TL501") == []


def test_tl501_sees_a_backbone_loaded_in_a_model_class_and_a_sequential():
    subclass = """
    import tensorflow as tf
    from transformers import TFAutoModel
    class Classifier(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.bert = TFAutoModel.from_pretrained("bert-base-uncased")
            self.head = tf.keras.layers.Dense(3)
        def call(self, inputs):
            return self.head(self.bert(inputs)[0][:, 0])
    model = Classifier()
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    """
    assert codes(subclass, "TL501") == ["TL501"]
    sequential = """
    import tensorflow as tf
    from transformers import TFAutoModel
    encoder = TFAutoModel.from_pretrained("distilbert-base-uncased")
    model = tf.keras.Sequential([encoder, tf.keras.layers.Dense(2)])
    model.compile(optimizer="rmsprop")
    """
    assert codes(sequential, "TL501") == ["TL501"]


def test_tl702_quiet_for_models_without_dropout_or_batch_norm():
    # in the shape of the "PyTorch classification" notebook of mrdbourke/pytorch-deep-learning: a model of
    # nn.Linear layers, evaluated every epoch with eval() and never switched back — nothing changes
    tpl = """
    import torch
    from torch import nn
    {model}
    optimizer = torch.optim.SGD(model_1.parameters(), lr=0.1)
    for epoch in range(1000):
        y_logits = model_1(X_train).squeeze()
        loss = loss_fn(y_logits, y_train)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model_1.eval()
        with torch.inference_mode():
            test_logits = model_1(X_test).squeeze()
    """
    linear = """
    class CircleModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer_1 = nn.Linear(in_features=2, out_features=10)
            self.layer_2 = nn.Linear(in_features=10, out_features=1)
            self.relu = nn.ReLU()
        def forward(self, x):
            return self.layer_2(self.relu(self.layer_1(x)))
    model_1 = CircleModel().to(device)
    """
    sequential = "model_1 = nn.Sequential(nn.Linear(2, 10), nn.ReLU(), nn.Linear(10, 1)).to(device)"
    for model in (textwrap.indent(textwrap.dedent(linear), "    "), sequential):
        assert codes(tpl.format(model=model), "TL702") == [], model
    # a dropout layer, or a layer trainlint does not know: the mode matters (or may)
    dropout = sequential.replace("nn.ReLU()", "nn.Dropout(0.2)")
    unknown = sequential.replace("nn.ReLU()", "Block()")
    for model in (dropout, unknown):
        assert codes(tpl.format(model=model), "TL702") == ["TL702"], model


def test_tl702_evaluation_function_on_a_new_module_never_put_in_eval_mode():
    # in the shape of nanoGPT's estimate_loss() without model.eval() (ipolharvard/ethos-ares#20)
    src = """
    import torch
    model = GPT(GPTConfig(n_layer=12, dropout=0.1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4)

    @torch.no_grad()
    def estimate_loss():
        losses = torch.zeros(50)
        for k in range(50):
            X, Y = get_batch("val")
            losses[k] = model(X, labels=Y).loss.item()
        return losses.mean()

    for it in range(1000):
        if it % 100 == 0:
            print(estimate_loss())
        X, Y = get_batch("train")
        model(X, labels=Y).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    """
    [f] = lint(src, "TL702")
    assert "a new module starts in it" in f.message
    # a pretrained transformers model loads in eval mode; a model loaded whole keeps its saved mode
    for made in ('AutoModelForCausalLM.from_pretrained("gpt2")', 'torch.load("model.pt")'):
        assert codes(src.replace("GPT(GPTConfig(n_layer=12, dropout=0.1)).to(device)", made), "TL702") == [], made
    # nothing shows a dropout or a batch norm (pytorch/examples super_resolution: convolutions only)
    assert codes(src.replace("dropout=0.1", "dropout=0.0"), "TL702") == []


def test_tl501_a_string_optimizer_in_the_branch_without_training_is_left_to_the_probe():
    # in the shape of transformers' TF examples (run_text_classification.py): a real optimizer when
    # there is a training set, `optimizer = "sgd"  # Just use any default` otherwise, then one compile
    src = """
    from transformers import TFAutoModelForSequenceClassification, create_optimizer
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    if "train" in datasets:
        optimizer, schedule = create_optimizer(init_lr=5e-5, num_train_steps=1000, num_warmup_steps=0)
    else:
        optimizer = "sgd"  # Just use any default
    model.compile(optimizer=optimizer, metrics=["accuracy"])
    """
    assert codes(src, "TL501") == []
    # the string in both branches, or assigned unconditionally after the object: still reported
    both = src.replace('optimizer, schedule = create_optimizer(init_lr=5e-5, num_train_steps=1000, num_warmup_steps=0)',
                       'optimizer = "adam"')
    assert codes(both, "TL501") == ["TL501"]
    after = src.replace('    model.compile(', '    optimizer = "adam"\n    model.compile(')
    assert codes(after, "TL501") == ["TL501"]
    assert codes(src.replace("optimizer=optimizer", 'optimizer="sgd"'), "TL501") == ["TL501"]


def test_tl704_in_one_function_outside_any_loop():
    # jiant-dev/jiant-dev#89: an optimizer/scheduler wrapper whose step() steps the scheduler first
    wrapper = """
    import torch
    class OptimizerScheduler:
        def __init__(self, optimizer, scheduler):
            self.optimizer = optimizer
            self.scheduler = scheduler
        def step(self):
            self.scheduler.step()
            self.optimizer.step()
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        wrapper.step()
    """
    wrapper = textwrap.dedent(wrapper)
    assert codes(wrapper, "TL704") == ["TL704"]
    fixed = wrapper.replace("self.scheduler.step()\n        self.optimizer.step()",
                            "self.optimizer.step()\n        self.scheduler.step()")
    assert fixed != wrapper and codes(fixed, "TL704") == []
    # two branches of one if/else never run in the same call
    branches = wrapper.replace("self.scheduler.step()\n        self.optimizer.step()",
                               "if warm:\n            self.scheduler.step()\n        else:\n            self.optimizer.step()")
    assert branches != wrapper and codes(branches, "TL704") == []
