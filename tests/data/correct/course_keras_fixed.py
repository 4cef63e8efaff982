# /// script
# requires-python = ">=3.10"
# dependencies = ["transformers<5", "tensorflow>=2.16", "tf-keras", "datasets", "evaluate"]
# ///
"""The course's MNLI Keras script (chapter 8, TensorFlow) once every bug is fixed: the real dataset,
the attention mask, `num_labels=3`, the model's internal loss and an optimizer with a fine-tuning rate."""

import os

# transformers 4 TF models are tf-keras (Keras 2) models: make `tensorflow.keras` tf-keras too.
os.environ["TF_USE_LEGACY_KERAS"] = "1"

from datasets import load_dataset
from tensorflow.keras.optimizers import Adam
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

raw_datasets = load_dataset("glue", "mnli")

model_checkpoint = "distilbert-base-uncased"
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)
collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="np")

train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "labels"], batch_size=16, shuffle=True, collate_fn=collator
)
validation_dataset = tokenized_datasets["validation_matched"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "labels"], batch_size=16, shuffle=False, collate_fn=collator
)

model = TFAutoModelForSequenceClassification.from_pretrained(model_checkpoint, num_labels=3)
model.compile(optimizer=Adam(5e-5))
model.fit(train_dataset, validation_data=validation_dataset, epochs=3)
