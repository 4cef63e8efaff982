"""A Trainer subclass of a subclass, given the tokenizer with the removed `tokenizer=` argument."""

from datasets import load_dataset
from torch import nn
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments


class LoggingTrainer(Trainer):
    def log(self, logs, start_time=None):
        logs["lr"] = self._get_learning_rate()
        super().log(logs, start_time)


class SmoothedTrainer(LoggingTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = nn.functional.cross_entropy(outputs.logits, labels, label_smoothing=0.1)
        return (loss, outputs) if return_outputs else loss


tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
news = load_dataset("ag_news")
news_tok = news.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)

trainer = SmoothedTrainer(
    model=model,
    args=TrainingArguments("ag-news", evaluation_strategy="steps", eval_steps=500),
    train_dataset=news_tok["train"],
    eval_dataset=news_tok["test"],
    tokenizer=tokenizer,
)
trainer.train()
