# RoBERTa on yelp_polarity with the Trainer and a custom collator class that tokenizes the raw `text` column
# itself, while the Trainer is left to drop every column the model's forward does not take.
# (The tensor conversion at the end of the collator and the training arguments are shortened.)
# evidence: huggingface/transformers#7823 ("Support for custom data_collator in Trainer.train() with
# datasets.Dataset": the Trainer removes unknown columns (not present in forward method of a model) from the
# datasets.Dataset, which prevents using a custom DataCollator that needs them); the Trainer's answer is
# TrainingArguments(remove_unused_columns=False), as the maintainers advise in huggingface/transformers#38091
from typing import List

import torch
from datasets import load_dataset
from transformers import RobertaForSequenceClassification, RobertaTokenizer, Trainer, TrainingArguments

tokenizer = RobertaTokenizer.from_pretrained('roberta-base')
model = RobertaForSequenceClassification.from_pretrained('roberta-base', return_dict=True)

train_dataset = load_dataset("yelp_polarity", split="train")
val_dataset = load_dataset("yelp_polarity", split="test")


class DataCollator:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __call__(self, examples: List[dict]):
        labels = [example['label'] for example in examples]
        texts = [example['text'] for example in examples]  # BUG TL202: the Trainer has already dropped "text" (not a forward argument): KeyError
        tokenizer_output = self.tokenizer(texts, truncation=True, padding=True)
        tokenizer_output['input_ids'] = torch.tensor(tokenizer_output['input_ids'])
        tokenizer_output['attention_mask'] = torch.tensor(tokenizer_output['attention_mask'])
        return dict(labels=torch.tensor(labels), **tokenizer_output)


trainer = Trainer(
    model=model,
    args=TrainingArguments(output_dir='./results'),
    train_dataset=train_dataset,
    eval_dataset=val_dataset,
    data_collator=DataCollator(tokenizer),
)
trainer.train()
