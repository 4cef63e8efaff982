"""A custom Trainer subclass on data tokenized without padding, and no tokenizer or collator."""

import transformers
from datasets import load_dataset


class MyTrainer(transformers.Trainer):
    def training_step(self, model, inputs, num_items_in_batch=None):
        return super().training_step(model, inputs, num_items_in_batch)


def tokenize_function(examples, tokenizer):
    return tokenizer(examples["sentence"], truncation=True, padding=True)


def run():
    tokenizer = transformers.AutoTokenizer.from_pretrained("bert-base-uncased")
    sst2 = load_dataset("glue", "sst2")
    sst2_tok = sst2.map(tokenize_function, batched=True, fn_kwargs={"tokenizer": tokenizer})
    model = transformers.AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    trainer = MyTrainer(model=model, args=transformers.TrainingArguments("sst2"), train_dataset=sst2_tok["train"])
    trainer.train()


run()
