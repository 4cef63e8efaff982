# /// script
# dependencies = ["transformers==5.15.0", "datasets", "torch"]
# ///
# (the version the report was made with)
# An ontology-learning library's supervised term-typing learner (ontolearner/learner/term_typing/rwthdbis.py):
# the Trainer is built inside a learner method from attributes (`self.model`, `self.tokenizer`, the latter
# loaded in a try/except fast/slow fallback) and still passes `tokenizer=`, which transformers 5 rejects.
# evidence: sciknoworg/OntoLearner#347 ("rwthdbis term typing trainer bug": with transformers==5.15.0,
# "TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'"; fix: processing_class=)
import os
import random
from typing import Any, Dict, List, Optional, Tuple

import torch
from datasets import Dataset, DatasetDict
from transformers import (
    AutoTokenizer,
    AutoModelForSequenceClassification,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
    set_seed,
)

from ...base import AutoLearner


class RWTHDBISSFTLearner(AutoLearner):
    def __init__(self, model_name: str = "microsoft/deberta-v3-small", trained_model_path: Optional[str] = None,
                 output_dir: Optional[str] = None, device: str = "cpu", max_length: int = 64,
                 per_device_train_batch_size: int = 16, gradient_accumulation_steps: int = 2,
                 num_train_epochs: int = 3, learning_rate: float = 2e-5, weight_decay: float = 0.01,
                 logging_steps: int = 50, save_strategy: str = "epoch", save_total_limit: int = 1,
                 fp16: bool = False, bf16: bool = False, seed: int = 42) -> None:
        super().__init__()
        self.model_name = model_name
        self.trained_model_path = trained_model_path
        self.output_dir = output_dir or "./term_typing"
        os.makedirs(self.output_dir, exist_ok=True)
        self.max_length = max_length
        self.per_device_train_batch_size = per_device_train_batch_size
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.num_train_epochs = num_train_epochs
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.logging_steps = logging_steps
        self.save_strategy = save_strategy
        self.save_total_limit = save_total_limit
        self.fp16 = fp16
        self.bf16 = bf16
        self.seed = seed
        self.device = device
        self.model: Optional[AutoModelForSequenceClassification] = None
        self.tokenizer: Optional[AutoTokenizer] = None
        self.id2label: Dict[int, str] = {}
        self.label2id: Dict[str, int] = {}

    def _train_from_term_typings(self, train_data: Any) -> None:
        set_seed(self.seed)
        random.seed(self.seed)
        torch.manual_seed(self.seed)

        term_typings: List[Any] = getattr(train_data, "term_typings", None)
        if term_typings is None:
            raise ValueError("train_data must provide .term_typings for term-typing.")

        labels = sorted({str(label) for instance in term_typings for label in instance.types})
        self.id2label = {i: label for i, label in enumerate(labels)}
        self.label2id = {label: i for i, label in enumerate(labels)}
        texts = [str(instance.term) for instance in term_typings for _ in instance.types]
        label_ids = [self.label2id[str(label)] for instance in term_typings for label in instance.types]

        dataset = DatasetDict({"train": Dataset.from_dict({"labels": label_ids, "text": texts})})

        backbone = self.trained_model_path or self.model_name
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(backbone, use_fast=True)
        except Exception:
            self.tokenizer = AutoTokenizer.from_pretrained(backbone, use_fast=False)

        def tokenize_batch(batch: Dict[str, List[str]]):
            return self.tokenizer(batch["text"], truncation=True, max_length=self.max_length)

        tokenized = dataset.map(tokenize_batch, batched=True, remove_columns=["text"])
        data_collator = DataCollatorWithPadding(self.tokenizer)

        self.model = AutoModelForSequenceClassification.from_pretrained(
            backbone,
            num_labels=len(self.id2label),
            id2label=self.id2label,
            label2id=self.label2id,
        )

        training_args = TrainingArguments(
            output_dir=self.output_dir,
            learning_rate=self.learning_rate,
            per_device_train_batch_size=self.per_device_train_batch_size,
            gradient_accumulation_steps=self.gradient_accumulation_steps,
            num_train_epochs=self.num_train_epochs,
            weight_decay=self.weight_decay,
            save_strategy=self.save_strategy,
            save_total_limit=self.save_total_limit,
            logging_steps=self.logging_steps,
            fp16=self.fp16,
            bf16=self.bf16,
            report_to=[],
        )

        trainer = Trainer(
            model=self.model,
            args=training_args,
            train_dataset=tokenized["train"],
            tokenizer=self.tokenizer,  # BUG TL804: transformers 5 has no `tokenizer=`: TypeError (processing_class=)
            data_collator=data_collator,
        )

        trainer.train()
        trainer.save_model(self.output_dir)
        self.tokenizer.save_pretrained(self.output_dir)
