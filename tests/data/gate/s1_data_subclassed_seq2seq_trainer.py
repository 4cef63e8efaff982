"""TL101 through a subclass of an aliased `Seq2SeqTrainer`, the dataset passed by position."""
from datasets import load_dataset as ld
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, Seq2SeqTrainingArguments
from transformers import Seq2SeqTrainer as S2S


class MyTrainer(S2S):
    pass


raw = ld("samsum")
tokenizer = AutoTokenizer.from_pretrained("t5-small")


def preprocess(examples):
    return tokenizer(examples["dialogue"], truncation=True)


encoded = raw.map(preprocess, batched=True)
model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
trainer = MyTrainer(model, Seq2SeqTrainingArguments("out"), None, raw["train"])
trainer.train()
