"""SST-2 with `from transformers import *` and `from torch import *` alongside: names come from the
star imports (the transformers-shaped ones from transformers), the script is correct."""

from datasets import load_dataset
from torch import *
from transformers import *

raw = load_dataset("glue", "sst2")
tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")


def tokenize(batch):
    return tokenizer(batch["sentence"], truncation=True)


encoded = raw.map(tokenize, batched=True)
model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
args = TrainingArguments("sst2-distilbert", learning_rate=2e-5, per_device_train_batch_size=16, eval_strategy="epoch")
trainer = Trainer(model=model, args=args, train_dataset=encoded["train"], eval_dataset=encoded["validation"],
                  data_collator=DataCollatorWithPadding(tokenizer))
trainer.train()
