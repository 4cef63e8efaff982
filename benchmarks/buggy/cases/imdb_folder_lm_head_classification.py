# Sentiment classification in the shape of transformers' "Fine-tuning with custom datasets" tutorial
# (IMDb reviews read from pos/neg folders, IMDbDataset, Trainer), with the model loaded through
# AutoModelWithLMHead: a masked-LM head (one prediction per token) trained on one label per review.
# evidence: huggingface/transformers#7421 ("Sequence Classification with IMDb Reviews" error with
# AutoModelWithLMHead; after the maintainer's answer the reporter switched to AutoModelForSequenceClassification:
# "I modify my code, then everything well")
from pathlib import Path
from sklearn.model_selection import train_test_split
import torch
from transformers import Trainer, TrainingArguments
from transformers import AutoTokenizer, AutoModelWithLMHead

tokenizer = AutoTokenizer.from_pretrained("bert-base-multilingual-cased")
model = AutoModelWithLMHead.from_pretrained("bert-base-multilingual-cased")  # BUG TL302: a language-modelling head trained on one class label per review


def read_imdb_split(split_dir):
    split_dir = Path(split_dir)
    texts = []
    labels = []
    for label_dir in ["pos", "neg"]:
        for text_file in (split_dir / label_dir).iterdir():
            texts.append(text_file.read_text())
            labels.append(0 if label_dir == "neg" else 1)
    return texts, labels


train_texts, train_labels = read_imdb_split('dataset/ChnSentiCorp')
test_texts, test_labels = read_imdb_split('dataset/ChnSentiCorp')
train_texts, val_texts, train_labels, val_labels = train_test_split(train_texts, train_labels, test_size=.2)

train_encodings = tokenizer(train_texts, truncation=True, padding=True, max_length=100)
val_encodings = tokenizer(val_texts, truncation=True, padding=True, max_length=100)
test_encodings = tokenizer(test_texts, truncation=True, padding=True, max_length=100)


class IMDbDataset(torch.utils.data.Dataset):
    def __init__(self, encodings, labels):
        self.encodings = encodings
        self.labels = labels

    def __getitem__(self, idx):
        item = {key: torch.tensor(val[idx]) for key, val in self.encodings.items()}
        item['labels'] = torch.tensor(self.labels[idx])
        return item

    def __len__(self):
        return len(self.labels)


train_dataset = IMDbDataset(train_encodings, train_labels)
val_dataset = IMDbDataset(val_encodings, val_labels)
test_dataset = IMDbDataset(test_encodings, test_labels)

training_args = TrainingArguments(
    output_dir='./results',
    num_train_epochs=3,
    per_device_train_batch_size=16,
    per_device_eval_batch_size=64,
    warmup_steps=500,
    weight_decay=0.01,
    logging_dir='./logs',
    logging_steps=10,
)

trainer = Trainer(
    model=model,
    args=training_args,
    train_dataset=train_dataset,
    eval_dataset=val_dataset,
)
trainer.train()
