# /// script
# dependencies = ["transformers==4.25.1", "tensorflow==2.11.0", "datasets", "numpy"]
# ///
# (the versions of the time: before transformers 4.38, a TF model's fit() did not convert a BatchEncoding)
# The TensorFlow part of transformers' "Fine-tune a pretrained model" documentation page
# (docs/source/en/training.mdx): BERT on GLUE CoLA with Keras, the tokenizer's output given to fit()
# as it is.
# evidence: huggingface/transformers#20732 ("Convert tokenizer outputs for Keras in doc example": the TF
# examples in training.mdx don't turn the tokenizer outputs into a dict, so Keras gets confused; fixes
# huggingface/transformers#20709)
import numpy as np
from datasets import load_dataset
from transformers import AutoTokenizer
from transformers import TFAutoModelForSequenceClassification
from tensorflow.keras.optimizers import Adam

dataset = load_dataset("glue", "cola")
dataset = dataset["train"]
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
tokenized_data = tokenizer(dataset["sentence"], return_tensors="np", padding=True)
labels = np.array(dataset["label"])

model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased")
model.compile(optimizer=Adam(3e-5))
model.fit(tokenized_data, labels)  # BUG TL206: a BatchEncoding given to Keras fit (transformers 4.25): convert it with dict(tokenized_data)
