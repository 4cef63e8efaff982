"""TL202 (custom collator) through a collator class with `__call__`, passed by position to a subclass of an
aliased `Seq2SeqTrainer`, with aliased `Seq2SeqTrainingArguments`; TL201 through `Dataset.from_dict`."""
import transformers
from datasets import Dataset
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
from transformers import Seq2SeqTrainingArguments as Args

tokenizer = AutoTokenizer.from_pretrained("t5-small")


class Collate:
    def __call__(self, features):
        batch = tokenizer([f["prompt"] for f in features], padding=True, return_tensors="pt")
        batch["labels"] = tokenizer([f["response"] for f in features], padding=True, return_tensors="pt").input_ids
        return batch


class MyTrainer(transformers.Seq2SeqTrainer):
    pass


table = Dataset.from_dict({"prompt": ["a", "b"], "response": ["c", "d"]})
encoded = table.map(lambda b: tokenizer(b["prompt"], truncation=True), batched=True)
model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
args = Args("out")
trainer = MyTrainer(model, args, Collate(), table)
other = transformers.Seq2SeqTrainer(model=model, args=args, train_dataset=encoded)
