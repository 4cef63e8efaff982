# /// script
# dependencies = ["transformers==5.16.1", "torch==2.13.0"]
# ///
# (the environment of the report)
# Soup's knowledge-distillation trainer (src/soup_cli/trainer/distill.py): a `_DistillTrainer(Trainer)` class
# defined inside the training method, closing over the teacher model, whose compute_loss accepts
# `num_items_in_batch` but averages the CE and KD terms within each micro-batch and never uses it, without
# setting model_accepts_loss_kwargs = False: Trainer then skips its gradient-accumulation division and the
# accumulated gradient grows with gradient_accumulation_steps.
# evidence: MakazhanAlpamys/Soup#720 ("Distillation compute_loss ignores num_items_in_batch and can
# over-scale gradient accumulation": reproduced ratio 4.0 between the accumulated and the full-batch gradient
# norm with four micro-batches; closed)
import math
from pathlib import Path

import torch
from transformers import Trainer, TrainingArguments

_CE_WEIGHT = 0.5
_DISTILL_WEIGHT = 0.5


class DistillRunner:
    def __init__(self, config, student, teacher, tokenizer, device):
        self.config = config
        self.model = student
        self.teacher = teacher
        self.tokenizer = tokenizer
        self.device = device

    def train(self, train_ds, temperature=2.0):
        cfg = self.config
        tcfg = cfg.training
        output_dir = Path(cfg.output)
        batch_size = tcfg.batch_size if tcfg.batch_size != "auto" else 4
        total_steps = math.ceil(len(train_ds) / batch_size / tcfg.gradient_accumulation_steps) * tcfg.epochs
        args = TrainingArguments(
            output_dir=str(output_dir),
            num_train_epochs=tcfg.epochs,
            per_device_train_batch_size=batch_size,
            gradient_accumulation_steps=tcfg.gradient_accumulation_steps,
            learning_rate=tcfg.lr,
            warmup_steps=int(total_steps * tcfg.warmup_ratio),
            remove_unused_columns=False,
        )

        teacher_ref = self.teacher

        class _DistillTrainer(Trainer):
            def compute_loss(  # BUG TL411: compute_loss ignores num_items_in_batch (and model_accepts_loss_kwargs stays True): under gradient accumulation the loss is not divided by the accumulation steps
                self,
                model,
                inputs,
                return_outputs: bool = False,
                num_items_in_batch=None,
            ):
                labels = inputs.get("labels")
                outputs = model(**{k: v for k, v in inputs.items() if k != "labels"})
                student_logits = outputs.logits
                shift_logits = student_logits[:, :-1, :].contiguous()
                shift_labels = labels[:, 1:].contiguous()
                ce_loss = torch.nn.functional.cross_entropy(
                    shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1), ignore_index=-100)
                with torch.no_grad():
                    teacher_logits = teacher_ref(**{k: v for k, v in inputs.items() if k != "labels"}).logits
                kd_loss = torch.nn.functional.kl_div(
                    torch.log_softmax(student_logits / temperature, dim=-1),
                    torch.softmax(teacher_logits / temperature, dim=-1),
                    reduction="batchmean") * temperature ** 2
                total = _CE_WEIGHT * ce_loss + _DISTILL_WEIGHT * kd_loss
                return (total, outputs) if return_outputs else total

        trainer = _DistillTrainer(model=self.model, args=args, train_dataset=train_ds)
        trainer.train()
        return trainer
