# /// script
# dependencies = ["transformers[ja,torch]", "datasets<4.0.0", "matplotlib", "japanize-matplotlib"]
# ///
# (the environment of the report: the notebook's own `!pip install transformers[ja,torch] 'datasets<4.0.0'`,
# unpinned transformers, run in 2025)
# A Japanese LLM textbook's chapter 5 notebook (5-2-sentiment-analysis-finetuning.ipynb), cell by cell:
# MARC-ja sentiment classification with cl-tohoku/bert-base-japanese-v3 and the Trainer;
# TrainingArguments still says `evaluation_strategy`.
# evidence: ghmagazine/llm-book#56 ("5.2.8 章 evaluation_strategy 廃止に伴うコードの変更": TypeError:
# TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'); fixed by the
# authors in ghmagazine/llm-book@119ca27fc33a37863ec3125f7731226fd6b096f3 (transformers pinned <4.41.0)
from transformers.trainer_utils import set_seed

set_seed(42)

from pprint import pprint
from datasets import load_dataset

train_dataset = load_dataset("llm-book/JGLUE", name="MARC-ja", split="train")
valid_dataset = load_dataset("llm-book/JGLUE", name="MARC-ja", split="validation")
pprint(train_dataset[0])

from transformers import AutoTokenizer

model_name = "cl-tohoku/bert-base-japanese-v3"
tokenizer = AutoTokenizer.from_pretrained(model_name)

from transformers import BatchEncoding


def preprocess_text_classification(example: dict[str, str | int]) -> BatchEncoding:
    encoded_example = tokenizer(example["sentence"], max_length=512)
    encoded_example["labels"] = example["label"]
    return encoded_example


encoded_train_dataset = train_dataset.map(preprocess_text_classification, remove_columns=train_dataset.column_names)
encoded_valid_dataset = valid_dataset.map(preprocess_text_classification, remove_columns=valid_dataset.column_names)

from transformers import DataCollatorWithPadding

data_collator = DataCollatorWithPadding(tokenizer=tokenizer)

from transformers import AutoModelForSequenceClassification

class_label = train_dataset.features["label"]
label2id = {label: id for id, label in enumerate(class_label.names)}
id2label = {id: label for id, label in enumerate(class_label.names)}
model = AutoModelForSequenceClassification.from_pretrained(
    model_name,
    num_labels=class_label.num_classes,
    label2id=label2id,
    id2label=id2label,
)
for param in model.parameters():
    param.data = param.data.contiguous()

from transformers import TrainingArguments

training_args = TrainingArguments(
    output_dir="output_marc_ja",
    per_device_train_batch_size=32,
    per_device_eval_batch_size=32,
    learning_rate=2e-5,
    lr_scheduler_type="linear",
    warmup_ratio=0.1,
    num_train_epochs=3,
    save_strategy="epoch",
    logging_strategy="epoch",
    evaluation_strategy="epoch",  # BUG TL805: removed argument (eval_strategy): TypeError on the transformers the notebook installs
    load_best_model_at_end=True,
    metric_for_best_model="accuracy",
    fp16=True,
    report_to="none",
)

import numpy as np


def compute_accuracy(eval_pred: tuple[np.ndarray, np.ndarray]) -> dict[str, float]:
    predictions, labels = eval_pred
    predictions = np.argmax(predictions, axis=1)
    return {"accuracy": (predictions == labels).mean()}


from transformers import Trainer

trainer = Trainer(
    model=model,
    train_dataset=encoded_train_dataset,
    eval_dataset=encoded_valid_dataset,
    data_collator=data_collator,
    args=training_args,
    compute_metrics=compute_accuracy,
)
trainer.train()

eval_metrics = trainer.evaluate(encoded_valid_dataset)
pprint(eval_metrics)
