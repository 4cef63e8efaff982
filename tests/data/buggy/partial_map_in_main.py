"""Tokenization through `functools.partial`, the tokenizer called in a nested helper, all inside main()."""

from functools import partial

import evaluate
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments


def main():
    checkpoint = "roberta-base"
    ds = load_dataset("emotion")
    tok = AutoTokenizer.from_pretrained(checkpoint)

    def encode_texts(tokenizer, texts):
        return tokenizer(texts, truncation=True, max_length=256)

    def preprocess(batch, tokenizer):
        return encode_texts(tokenizer, batch["text"])

    ds_enc = ds.map(partial(preprocess, tokenizer=tok), batched=True)
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint)
    f1 = evaluate.load("f1")

    def compute_metrics(eval_pred):
        return f1.compute(predictions=eval_pred.predictions, references=eval_pred.label_ids, average="macro")

    trainer = Trainer(
        model=model,
        args=TrainingArguments("emotion-roberta", eval_strategy="epoch"),
        train_dataset=ds_enc["train"],
        eval_dataset=ds_enc["validation"],
        compute_metrics=compute_metrics,
    )
    trainer.train()


main()
