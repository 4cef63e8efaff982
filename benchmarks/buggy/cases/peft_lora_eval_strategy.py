# A LoRA text-classification tutorial notebook (PEFT + Trainer) run on a current transformers, where
# TrainingArguments no longer accepts `evaluation_strategy`.
# evidence: aws-samples/aws-ai-ml-workshop-kr#151 (TypeError: TrainingArguments.__init__() got an
# unexpected keyword argument 'evaluation_strategy')
import numpy as np
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

model_checkpoint = "distilbert-base-uncased"
lr = 1e-3
batch_size = 16
num_epochs = 10

dataset = load_dataset("shawhin/imdb-truncated")
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint, add_prefix_space=True)
model = AutoModelForSequenceClassification.from_pretrained(model_checkpoint, num_labels=2)


def tokenize_function(examples):
    return tokenizer(examples["text"], truncation=True, max_length=512)


tokenized_dataset = dataset.map(tokenize_function, batched=True)
data_collator = DataCollatorWithPadding(tokenizer=tokenizer)

peft_config = LoraConfig(task_type="SEQ_CLS", r=4, lora_alpha=32, lora_dropout=0.01, target_modules=["q_lin"])
model = get_peft_model(model, peft_config)


def compute_metrics(p):
    predictions, labels = p
    predictions = np.argmax(predictions, axis=1)
    return {"accuracy": (predictions == labels).mean()}


training_args = TrainingArguments(
    output_dir=model_checkpoint + "-lora-text-classification",
    learning_rate=lr,
    per_device_train_batch_size=batch_size,
    per_device_eval_batch_size=batch_size,
    num_train_epochs=num_epochs,
    weight_decay=0.01,
    evaluation_strategy="epoch",  # BUG TL805: removed argument, renamed eval_strategy
    save_strategy="epoch",
    load_best_model_at_end=True,
)

trainer = Trainer(
    model=model,
    args=training_args,
    train_dataset=tokenized_dataset["train"],
    eval_dataset=tokenized_dataset["validation"],
    data_collator=data_collator,
    compute_metrics=compute_metrics,
)
trainer.train()
