"""A Trainer subclass with a class-weighted loss, an aliased import and everything inside main()."""

import numpy as np
import torch
import transformers as tr
from datasets import load_dataset
from sklearn.metrics import accuracy_score, f1_score
from torch import nn


class WeightedLossTrainer(tr.Trainer):
    def __init__(self, *args, class_weights=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.class_weights = class_weights

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss_fct = nn.CrossEntropyLoss(weight=self.class_weights.to(outputs.logits.device))
        loss = loss_fct(outputs.logits.view(-1, self.model.config.num_labels), labels.view(-1))
        return (loss, outputs) if return_outputs else loss


def main():
    ds = load_dataset("ag_news")
    tok = tr.AutoTokenizer.from_pretrained("distilroberta-base")
    ds = ds.map(lambda b: tok(b["text"], truncation=True, max_length=128), batched=True)
    ds = ds.rename_column("label", "labels")
    counts = np.bincount(ds["train"]["labels"], minlength=4)
    weights = torch.tensor(counts.sum() / (4 * counts), dtype=torch.float)
    model = tr.AutoModelForSequenceClassification.from_pretrained("distilroberta-base", num_labels=4)

    def compute_metrics(pred):
        labels = pred.label_ids
        preds = pred.predictions.argmax(-1)
        return {"accuracy": accuracy_score(labels, preds), "f1": f1_score(labels, preds, average="weighted")}

    trainer = WeightedLossTrainer(
        model,
        tr.TrainingArguments("ag-news-weighted", eval_strategy="epoch", learning_rate=3e-5),
        tr.DataCollatorWithPadding(tok),
        ds["train"],
        ds["test"],
        class_weights=weights,
        compute_metrics=compute_metrics,
    )
    trainer.train()


if __name__ == "__main__":
    main()
