# The course's chapter 7 "Fine-tuning a masked language model" (DistilBERT on IMDb) with the chapter's
# whole-word-masking collator handed to the Trainer, as the chapter suggests as an exercise: the Trainer
# drops the `word_ids` column (not an argument of the model's forward) before the collator reads it, and
# training stops with KeyError: 'word_ids'.
# evidence: huggingface/course#22 ("Add note about `remove_unused_columns` for whole word masking", fixing
# the forum report discuss.huggingface.co/t/chapter-7-questions/11746/23; commit 2ecc4da6: "if you're using
# the whole word masking collator, you'll also need to set `remove_unused_columns=False` to ensure we
# don't lose the `word_ids` column during training")
import collections

import numpy as np
from datasets import load_dataset
from transformers import (
    AutoModelForMaskedLM,
    AutoTokenizer,
    Trainer,
    TrainingArguments,
    default_data_collator,
)

model_checkpoint = "distilbert-base-uncased"
model = AutoModelForMaskedLM.from_pretrained(model_checkpoint)
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)
imdb_dataset = load_dataset("imdb")
chunk_size = 128
wwm_probability = 0.2


def tokenize_function(examples):
    result = tokenizer(examples["text"])
    if tokenizer.is_fast:
        result["word_ids"] = [result.word_ids(i) for i in range(len(result["input_ids"]))]
    return result


def group_texts(examples):
    concatenated_examples = {k: sum(examples[k], []) for k in examples.keys()}
    total_length = len(concatenated_examples[list(examples.keys())[0]])
    total_length = (total_length // chunk_size) * chunk_size
    result = {
        k: [t[i : i + chunk_size] for i in range(0, total_length, chunk_size)]
        for k, t in concatenated_examples.items()
    }
    result["labels"] = result["input_ids"].copy()
    return result


def whole_word_masking_data_collator(features):
    for feature in features:
        word_ids = feature.pop("word_ids")  # BUG TL202: the Trainer has already dropped "word_ids" (remove_unused_columns defaults to True): KeyError
        mapping = collections.defaultdict(list)
        current_word_index = -1
        current_word = None
        for idx, word_id in enumerate(word_ids):
            if word_id is not None:
                if word_id != current_word:
                    current_word = word_id
                    current_word_index += 1
                mapping[current_word_index].append(idx)
        mask = np.random.binomial(1, wwm_probability, (len(mapping),))
        input_ids = feature["input_ids"]
        labels = feature["labels"]
        new_labels = [-100] * len(labels)
        for word_id in np.where(mask)[0]:
            word_id = word_id.item()
            for idx in mapping[word_id]:
                new_labels[idx] = labels[idx]
                input_ids[idx] = tokenizer.mask_token_id
    return default_data_collator(features)


tokenized_datasets = imdb_dataset.map(tokenize_function, batched=True, remove_columns=["text", "label"])
lm_datasets = tokenized_datasets.map(group_texts, batched=True)
downsampled_dataset = lm_datasets["train"].train_test_split(train_size=10_000, test_size=1_000, seed=42)

batch_size = 64
logging_steps = len(downsampled_dataset["train"]) // batch_size
model_name = model_checkpoint.split("/")[-1]
training_args = TrainingArguments(
    output_dir=f"{model_name}-finetuned-imdb",
    overwrite_output_dir=True,
    eval_strategy="epoch",
    learning_rate=2e-5,
    weight_decay=0.01,
    per_device_train_batch_size=batch_size,
    per_device_eval_batch_size=batch_size,
    fp16=True,
    logging_steps=logging_steps,
)
trainer = Trainer(
    model=model,
    args=training_args,
    train_dataset=downsampled_dataset["train"],
    eval_dataset=downsampled_dataset["test"],
    data_collator=whole_word_masking_data_collator,
)
trainer.train()
