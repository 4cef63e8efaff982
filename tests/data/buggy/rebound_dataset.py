"""The dataset variable rebound to its tokenized version (`raw_datasets = raw_datasets.map(...)`),
as in run_glue.py, but the Trainer is given neither the tokenizer nor a collator."""

from dataclasses import dataclass, field

from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    HfArgumentParser,
    Trainer,
    TrainingArguments,
)


@dataclass
class DataArguments:
    max_seq_length: int = field(default=128)
    pad_to_max_length: bool = field(default=False)


def main():
    parser = HfArgumentParser((DataArguments, TrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses()
    raw_datasets = load_dataset("glue", "rte")
    tokenizer = AutoTokenizer.from_pretrained("roberta-base")
    model = AutoModelForSequenceClassification.from_pretrained("roberta-base", num_labels=2)

    def preprocess_function(examples):
        return tokenizer(examples["sentence1"], examples["sentence2"], padding=False,
                         max_length=data_args.max_seq_length, truncation=True)

    raw_datasets = raw_datasets.map(preprocess_function, batched=True)
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=raw_datasets["train"],
        eval_dataset=raw_datasets["validation"],
    )
    trainer.train()


if __name__ == "__main__":
    main()
