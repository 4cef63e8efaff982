# A knowledge-distillation listing of a book on LLMs in production (teacher/student BERT with a custom
# Trainer); `load_metric` was removed from datasets 3.
# evidence: IMJONEZZ/LLMs-in-Production#3 (listing_5.4.knowledgedistillation.py: ImportError: cannot
# import name 'load_metric' from 'datasets')
import numpy as np
import torch
import torch.nn.functional as F
from datasets import load_dataset, load_metric  # BUG TL801: load_metric was removed from datasets
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

teacher_id = "bert-base-uncased"
student_id = "distilbert-base-uncased"
dataset = load_dataset("glue", "sst2")
tokenizer = AutoTokenizer.from_pretrained(teacher_id)


def process(examples):
    return tokenizer(examples["sentence"], truncation=True, max_length=128)


tokenized = dataset.map(process, batched=True)
accuracy_metric = load_metric("accuracy")


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    predictions = np.argmax(predictions, axis=1)
    return accuracy_metric.compute(predictions=predictions, references=labels)


class DistillationTrainer(Trainer):
    def __init__(self, *args, teacher_model=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.teacher = teacher_model

    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        outputs_student = model(**inputs)
        with torch.no_grad():
            outputs_teacher = self.teacher(**inputs)
        loss_kd = F.kl_div(
            F.log_softmax(outputs_student.logits / 2.0, dim=-1),
            F.softmax(outputs_teacher.logits / 2.0, dim=-1),
            reduction="batchmean",
        )
        loss = 0.5 * outputs_student.loss + 0.5 * loss_kd
        return (loss, outputs_student) if return_outputs else loss


teacher = AutoModelForSequenceClassification.from_pretrained(teacher_id, num_labels=2)
student = AutoModelForSequenceClassification.from_pretrained(student_id, num_labels=2)
args = TrainingArguments(output_dir="distil", num_train_epochs=3, per_device_train_batch_size=32, eval_strategy="epoch")
trainer = DistillationTrainer(
    student,
    args,
    teacher_model=teacher,
    train_dataset=tokenized["train"],
    eval_dataset=tokenized["validation"],
    data_collator=DataCollatorWithPadding(tokenizer),
    compute_metrics=compute_metrics,
)
trainer.train()
