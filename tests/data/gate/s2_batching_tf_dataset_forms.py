"""TL205 without a `collate_fn`: the `datasets` dataset is tokenized with `padding="max_length"`, the model
an aliased transformers TF class, the dataset given as `validation_data`."""
import datasets
from transformers import AutoTokenizer
from transformers import TFAutoModelForSequenceClassification as M

raw = datasets.load_dataset("glue", "sst2")
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
tokenized = raw.map(lambda b: tokenizer(b["sentence"], padding="max_length", truncation=True), batched=True)
train_set = tokenized["train"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="label", batch_size=16)
val_set = tokenized["validation"].to_tf_dataset(["input_ids"], label_cols="label", batch_size=16)
model = M.from_pretrained("bert-base-uncased", num_labels=2)
model.compile(optimizer="adam")
model.fit(train_set, validation_data=val_set)
