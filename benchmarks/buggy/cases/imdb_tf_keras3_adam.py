# /// script
# dependencies = ["tensorflow>=2.16", "transformers<5", "datasets"]
# ///
# (the environment the bug was reported in: TensorFlow 2.16+, whose tf.keras is Keras 3)
# DistilBERT fine-tuned on IMDb with Keras: a Keras 3 optimizer handed to the compile() of a
# transformers TF model, which is built on tf-keras (Keras 2).
# evidence: keras-team/keras#19262 (ValueError: Could not interpret optimizer identifier:
# <keras.src.optimizers.adam.Adam object>)
import tensorflow as tf
from datasets import load_dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification, DataCollatorWithPadding
from tensorflow.keras.optimizers import Adam
from tensorflow.keras.optimizers.schedules import PolynomialDecay
from tensorflow.keras.losses import SparseCategoricalCrossentropy


def prepare_imdb_dataset(tokenizer):
    imdb = load_dataset("imdb")
    train_set = imdb["train"].map(lambda x: tokenizer(x["text"], truncation=True), batched=True)
    test_set = imdb["test"].map(lambda x: tokenizer(x["text"], truncation=True), batched=True)
    return train_set, test_set


tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")
model = TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
train_set, test_set = prepare_imdb_dataset(tokenizer)
data_collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="tf")
tf_train_dataset = train_set.to_tf_dataset(
    columns=["attention_mask", "input_ids"], label_cols=["label"], shuffle=True, collate_fn=data_collator, batch_size=8
)
tf_validation_dataset = test_set.to_tf_dataset(
    columns=["attention_mask", "input_ids"], label_cols=["label"], shuffle=False, collate_fn=data_collator, batch_size=8
)
num_epochs = 3
num_train_steps = len(tf_train_dataset) * num_epochs
lr_scheduler = PolynomialDecay(initial_learning_rate=5e-5, end_learning_rate=0.0, decay_steps=num_train_steps)
opt = Adam(learning_rate=lr_scheduler)  # BUG TL808: a Keras 3 optimizer given to a tf-keras (Keras 2) transformers model (reported where the optimizer is built)
loss = SparseCategoricalCrossentropy(from_logits=True)
model.compile(optimizer=opt, loss=loss, metrics=["accuracy"])
model.fit(tf_train_dataset, validation_data=tf_validation_dataset, epochs=num_epochs)
