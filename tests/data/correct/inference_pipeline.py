"""Inference with checkpoints that already carry their classification heads: no `num_labels`
(the checkpoint's config has them), no training."""

import torch
from transformers import AutoModelForSequenceClassification, AutoModelForTokenClassification, AutoTokenizer, pipeline

checkpoint = "ProsusAI/finbert"
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
model = AutoModelForSequenceClassification.from_pretrained(checkpoint)
model.eval()

headlines = ["Stocks rallied after the earnings call.", "The company cut its guidance for the year."]
inputs = tokenizer(headlines, padding=True, truncation=True, return_tensors="pt")
with torch.no_grad():
    probs = model(**inputs).logits.softmax(dim=-1)
for text, row in zip(headlines, probs):
    print(text, {model.config.id2label[i]: round(p.item(), 3) for i, p in enumerate(row)})

ner_model = AutoModelForTokenClassification.from_pretrained("dslim/bert-base-NER")
ner = pipeline("token-classification", model=ner_model, tokenizer="dslim/bert-base-NER", aggregation_strategy="simple")
print(ner("Hugging Face is based in New York City."))
