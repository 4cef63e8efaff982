# A popular video tutorial's notebook: DistilBERT sentiment classification with TFTrainer and
# TFTrainingArguments, in the shape of the transformers docs' "fine-tuning with custom datasets"
# TensorFlow example of the time; TFTrainer was removed from transformers (4.x, and all TF in 5).
# evidence: krishnaik06/Huggingfacetransformer#5 ("Import Error: Deprecation of TFTrainer in the Hugging
# Face and usage of Keras is suggested")
import pandas as pd
import tensorflow as tf
from sklearn.model_selection import train_test_split
from transformers import DistilBertTokenizerFast
from transformers import TFDistilBertForSequenceClassification, TFTrainer, TFTrainingArguments  # BUG TL803: TFTrainer was removed from transformers

message = pd.read_csv("SMSSpamCollection", sep="\t", names=["label", "message"])
X = list(message["message"])
y = list(pd.get_dummies(message["label"], drop_first=True)["spam"])
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.20, random_state=0)

tokenizer = DistilBertTokenizerFast.from_pretrained("distilbert-base-uncased")
train_encodings = tokenizer(X_train, truncation=True, padding=True)
test_encodings = tokenizer(X_test, truncation=True, padding=True)
train_dataset = tf.data.Dataset.from_tensor_slices((dict(train_encodings), y_train))
test_dataset = tf.data.Dataset.from_tensor_slices((dict(test_encodings), y_test))

training_args = TFTrainingArguments(
    output_dir="./results",
    num_train_epochs=2,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=16,
    warmup_steps=500,
    weight_decay=0.01,
    logging_dir="./logs",
    logging_steps=10,
)
with training_args.strategy.scope():
    model = TFDistilBertForSequenceClassification.from_pretrained("distilbert-base-uncased")

trainer = TFTrainer(model=model, args=training_args, train_dataset=train_dataset, eval_dataset=test_dataset)
trainer.train()
