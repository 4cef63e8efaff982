# /// script
# requires-python = ">=3.10"
# dependencies = ["transformers<5", "tensorflow>=2.16", "tf-keras", "datasets", "evaluate"]
# ///
"""Fine-tune a TensorFlow transformers model with Keras (transformers 4.x): `prepare_tf_dataset`,
`create_optimizer`, the model's internal loss and a `KerasMetricCallback`."""

import evaluate
import numpy as np
import tensorflow as tf
from datasets import load_dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification, create_optimizer
from transformers.keras_callbacks import KerasMetricCallback

CHECKPOINT = "distilbert-base-uncased"
BATCH_SIZE = 16
EPOCHS = 3

dataset = load_dataset("emotion")
tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)


def tokenize(batch):
    return tokenizer(batch["text"], truncation=True)


encoded = dataset.map(tokenize, batched=True)
id2label = {i: name for i, name in enumerate(dataset["train"].features["label"].names)}
model = TFAutoModelForSequenceClassification.from_pretrained(
    CHECKPOINT, num_labels=len(id2label), id2label=id2label, label2id={v: k for k, v in id2label.items()}
)

tf_train = model.prepare_tf_dataset(encoded["train"], batch_size=BATCH_SIZE, shuffle=True, tokenizer=tokenizer)
tf_eval = model.prepare_tf_dataset(encoded["validation"], batch_size=BATCH_SIZE, shuffle=False, tokenizer=tokenizer)

num_train_steps = len(tf_train) * EPOCHS
optimizer, lr_schedule = create_optimizer(
    init_lr=2e-5, num_train_steps=num_train_steps, num_warmup_steps=int(0.1 * num_train_steps), weight_decay_rate=0.01
)
# No `loss=`: the model computes its own loss from the labels prepare_tf_dataset puts in the inputs.
model.compile(optimizer=optimizer, jit_compile=True)

accuracy = evaluate.load("accuracy")


def compute_metrics(eval_predictions):
    logits, labels = eval_predictions
    predictions = np.argmax(logits, axis=-1)
    return accuracy.compute(predictions=predictions, references=labels)


metric_callback = KerasMetricCallback(metric_fn=compute_metrics, eval_dataset=tf_eval)
early_stopping = tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, restore_best_weights=True)
model.fit(tf_train, validation_data=tf_eval, epochs=EPOCHS, callbacks=[metric_callback, early_stopping])
model.save_pretrained("emotion-distilbert")
