# The Keras part of transformers' "Fine-tune a pretrained model" documentation page (training.mdx),
# after the BatchEncoding fix: GLUE CoLA tokenized as NumPy arrays, with the text read from a
# `text` column that CoLA does not have (its text is `sentence`).
# evidence: huggingface/transformers#21201 ("Fix code example in training tutorial": the Keras section "throws an
# error because it tokenizes dataset["text"] instead of dataset["sentence"]. There is no text column in this
# dataset"; merged by the maintainers)
import numpy as np
from datasets import load_dataset
from transformers import AutoTokenizer
from transformers import TFAutoModelForSequenceClassification
from tensorflow.keras.optimizers import Adam

dataset = load_dataset("glue", "cola")
dataset = dataset["train"]  # Just take the training split for now

tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
tokenized_data = tokenizer(dataset["text"], return_tensors="np", padding=True)  # BUG TL102: GLUE CoLA has no "text" column (it is "sentence")
# Tokenizer returns a BatchEncoding, but we convert that to a dict for Keras
tokenized_data = dict(tokenized_data)

labels = np.array(dataset["label"])  # Label is already an array of 0 and 1

# Load and compile our model
model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased")
# Lower learning rates are often better for fine-tuning transformers
model.compile(optimizer=Adam(3e-5))

model.fit(tokenized_data, labels)
