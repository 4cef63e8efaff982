# The Hugging Face course's own broken script, chapter 8 section 4 (TensorFlow), "Debugging the
# training pipeline" (chapters/en/chapter8/4_tf.mdx in huggingface/course): DistilBERT on GLUE MNLI
# with Keras compile/fit.
# evidence: huggingface/course chapters/en/chapter8/4_tf.mdx (the course's deliberately broken script)
from datasets import load_dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

raw_datasets = load_dataset("glue", "mnli")

model_checkpoint = "distilbert-base-uncased"
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)

train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["input_ids", "labels"], batch_size=16, shuffle=True
)

validation_dataset = tokenized_datasets["validation_matched"].to_tf_dataset(
    columns=["input_ids", "labels"], batch_size=16, shuffle=True
)

model = TFAutoModelForSequenceClassification.from_pretrained(model_checkpoint)  # BUG TL301: 3 MNLI classes, 2-way head: NaN loss on label 2

model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")  # BUG TL401: labels are inside the input dict and a Keras loss is given: no gradients # BUG TL501: "adam" means lr 1e-3, training stalls # BUG TL402: the string loss expects probabilities but the model outputs logits (the chapter: "there is one more problem with the loss we specified")

model.fit(train_dataset)
