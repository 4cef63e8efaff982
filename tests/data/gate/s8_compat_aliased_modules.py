"""Removed names and renamed keywords reached through module aliases, `as` imports, submodules and
subclasses (no `from transformers import AdamW` / `Trainer(...)` spelled out)."""
import datasets as hf_datasets
import transformers as tr
from transformers import Seq2SeqTrainer as S2S
from transformers import Seq2SeqTrainingArguments as Args
from transformers.optimization import AdamW as LegacyAdamW

metric = hf_datasets.load_metric("glue", "mrpc")
model = tr.AutoModelForSeq2SeqLM.from_pretrained("t5-small")
tok = tr.AutoTokenizer.from_pretrained("t5-small")
opt = LegacyAdamW(model.parameters(), lr=5e-5)
old = tr.AdamW(model.parameters(), lr=5e-5)
tft = tr.TFTrainer


class Base(S2S):
    pass


class Mine(Base):
    pass


args = Args("out", evaluation_strategy="epoch")
trainer = Mine(model=model, args=args, tokenizer=tok)
trainer2 = tr.Trainer(model=model, args=tr.TrainingArguments("out", evaluation_strategy="steps"), tokenizer=tok)
