"""T5 fine-tuned with Adafactor at 1e-3, its usual rate (relative step off), in a manual loop."""

import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import Adafactor, AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq

tokenizer = AutoTokenizer.from_pretrained("t5-small")
model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
raw = load_dataset("xsum", split="train[:2000]")


def preprocess(batch):
    inputs = tokenizer(["summarize: " + doc for doc in batch["document"]], max_length=512, truncation=True)
    inputs["labels"] = tokenizer(text_target=batch["summary"], max_length=64, truncation=True)["input_ids"]
    return inputs


train = raw.map(preprocess, batched=True, remove_columns=raw.column_names)
loader = DataLoader(train, batch_size=8, shuffle=True, collate_fn=DataCollatorForSeq2Seq(tokenizer, model=model))
optimizer = Adafactor(model.parameters(), lr=1e-3, relative_step=False, scale_parameter=False, warmup_init=False)

model.train()
for epoch in range(2):
    for step, batch in enumerate(loader):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            print(epoch, step, loss.item())
model.save_pretrained("t5-xsum")
