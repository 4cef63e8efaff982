"""Heads whose size does not match the data: token classification on CoNLL-2003 without
`num_labels`, and sentence classifiers with the wrong count."""

from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    Trainer,
    TrainingArguments,
)

conll = load_dataset("conll2003")
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")


def tokenize_and_align(examples):
    enc = tokenizer(examples["tokens"], truncation=True, is_split_into_words=True)
    enc["labels"] = [
        [-100 if w is None else tags[w] for w in enc.word_ids(batch_index=i)]
        for i, tags in enumerate(examples["ner_tags"])
    ]
    return enc


conll_tok = conll.map(tokenize_and_align, batched=True, remove_columns=conll["train"].column_names)
ner_model = AutoModelForTokenClassification.from_pretrained("bert-base-cased")
Trainer(
    model=ner_model,
    args=TrainingArguments("ner"),
    train_dataset=conll_tok["train"],
    data_collator=DataCollatorForTokenClassification(tokenizer),
).train()


banking = load_dataset("banking77")
banking_tok = banking.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
too_few = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=7)
Trainer(model=too_few, args=TrainingArguments("banking"), train_dataset=banking_tok["train"],
        processing_class=tokenizer)

news = load_dataset("ag_news", split="train")
news_tok = news.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
too_many = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=10)
Trainer(model=too_many, args=TrainingArguments("news"), train_dataset=news_tok, processing_class=tokenizer)
