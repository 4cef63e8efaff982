"""Fine-tune a small BERT-style classifier with the Trainer, entirely offline: the model, the
tokenizer and the data are built on the spot, so `trainlint --probe` runs it on any machine without
the Hugging Face hub. `offline_trainer_buggy.py` is the same script with two bugs of the course
chapter "Debugging the training pipeline"; here both are fixed: the Trainer gets the tokenizer
(`processing_class`), whose padding collator stacks rows of different lengths, and the head is built
with `num_labels=3` for the 3 classes of the data.
"""

import tempfile

from datasets import Dataset
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordPiece
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    BertConfig,
    BertModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

WORDS = "the a cat dog sees likes reads book ball apple never every day at home with joy .".split()


def build_checkpoint(path):
    """A tiny BERT encoder and its WordPiece tokenizer, saved like a hub checkpoint."""
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
        sep_token="[SEP]", mask_token="[MASK]",
    ).save_pretrained(path)
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=37, vocab_size=len(vocab), max_position_embeddings=64)
    BertModel(config).save_pretrained(path)


def build_data(n=120):
    """Sentences of varied lengths with 3 classes."""
    texts, labels = [], []
    for i in range(n):
        words = WORDS[i % 5 : i % 5 + 3 + i % 7]
        texts.append(" ".join(words))
        labels.append(i % 3)
    return Dataset.from_dict({"text": texts, "label": labels}).train_test_split(test_size=0.2, seed=0)


def main():
    checkpoint = tempfile.mkdtemp(prefix="tiny-bert-")
    build_checkpoint(checkpoint)
    raw_datasets = build_data()

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)

    def tokenize(batch):
        return tokenizer(batch["text"], truncation=True)

    tokenized = raw_datasets.map(tokenize, batched=True)
    model = AutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=3)

    args = TrainingArguments(
        tempfile.mkdtemp(prefix="offline-trainer-"),
        per_device_train_batch_size=8,
        num_train_epochs=1,
        report_to="none",
    )
    trainer = Trainer(
        model,
        args,
        train_dataset=tokenized["train"],
        eval_dataset=tokenized["test"],
        processing_class=tokenizer,
    )
    trainer.train()


if __name__ == "__main__":
    main()
