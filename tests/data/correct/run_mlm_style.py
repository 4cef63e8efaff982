"""Masked language modelling, line by line (in the spirit of run_mlm.py)."""

from dataclasses import dataclass, field

from datasets import load_dataset
from transformers import (
    AutoModelForMaskedLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    HfArgumentParser,
    Trainer,
    TrainingArguments,
)


@dataclass
class Arguments:
    model_name_or_path: str = field(default="distilroberta-base")
    train_file: str = field(default="train.txt")
    validation_file: str = field(default="valid.txt")
    max_seq_length: int = field(default=128)
    pad_to_max_length: bool = field(default=False)
    mlm_probability: float = field(default=0.15)


def main():
    parser = HfArgumentParser((Arguments, TrainingArguments))
    args, training_args = parser.parse_args_into_dataclasses()

    raw_datasets = load_dataset("text", data_files={"train": args.train_file, "validation": args.validation_file})
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForMaskedLM.from_pretrained(args.model_name_or_path)
    model.resize_token_embeddings(len(tokenizer))

    padding = "max_length" if args.pad_to_max_length else False

    def tokenize_function(examples):
        lines = [line for line in examples["text"] if len(line) > 0 and not line.isspace()]
        return tokenizer(
            lines,
            padding=padding,
            truncation=True,
            max_length=args.max_seq_length,
            return_special_tokens_mask=True,
        )

    tokenized_datasets = raw_datasets.map(tokenize_function, batched=True, remove_columns=["text"])
    data_collator = DataCollatorForLanguageModeling(
        tokenizer=tokenizer,
        mlm_probability=args.mlm_probability,
        pad_to_multiple_of=8 if training_args.fp16 else None,
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=tokenized_datasets["train"],
        eval_dataset=tokenized_datasets["validation"],
        processing_class=tokenizer,
        data_collator=data_collator,
    )
    trainer.train()
    trainer.save_model()


if __name__ == "__main__":
    main()
