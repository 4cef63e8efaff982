"""Fine-tune a BERT-style model on MNLI with Keras `fit` (transformers 4.x TF models) — with the
bugs of the course chapter "Debugging the training pipeline" (TensorFlow)."""

import evaluate
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

CHECKPOINT = "distilbert-base-uncased"

raw_datasets = evaluate.load("glue", "mnli")  # bug: a metric, not the dataset
tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)


def preprocess(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized = raw_datasets.map(preprocess, batched=True)
train_set = tokenized["train"].to_tf_dataset(columns=["input_ids", "labels"], batch_size=16, shuffle=True)

# bug: MNLI has 3 classes
model = TFAutoModelForSequenceClassification.from_pretrained(CHECKPOINT)
# bugs: a Keras loss while the labels are in the feature dict, a probability loss on logits,
# and a string optimizer (learning rate 1e-3)
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
model.fit(train_set)
