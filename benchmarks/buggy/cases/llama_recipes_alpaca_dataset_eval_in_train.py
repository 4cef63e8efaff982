# llama-recipes' Alpaca instruction dataset (src/llama_recipes/datasets/alpaca_dataset.py) and its use by the
# fine-tuning entry point (finetuning.py): the "test" partition is the first 200 examples of the JSON file, but
# the "train" partition keeps every example, those 200 included, so the validation loss is computed on examples
# the model was trained on. (FSDP, PEFT and the config plumbing of finetuning.py are shortened here.)
# evidence: meta-llama/llama-cookbook#251 ("fix incorrect split of InstructionDataset": "InstructionDataset did
# not correctly split training set and test set, resulting in the test set being used for training"; merged),
# commit meta-llama/llama-cookbook@a7f603f303293bb0653584fcad94457bc1126d86
import copy
import json

import torch
from torch.utils.data import Dataset

from llama_recipes.utils.train_utils import train

PROMPT_DICT = {
    "prompt_input": (
        "Below is an instruction that describes a task, paired with an input that provides further context. "
        "Write a response that appropriately completes the request.\n\n"
        "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:"
    ),
    "prompt_no_input": (
        "Below is an instruction that describes a task. "
        "Write a response that appropriately completes the request.\n\n"
        "### Instruction:\n{instruction}\n\n### Response:"
    ),
}


class InstructionDataset(Dataset):
    def __init__(self, dataset_config, tokenizer, partition="train", max_words=30):
        self.ann = json.load(open(dataset_config.data_path))
        if partition == "train":
            self.ann = self.ann  # BUG TL608: the training partition keeps the 200 examples the "test" partition evaluates on
        else:
            self.ann = self.ann[:200]
        self.max_words = max_words
        self.tokenizer = tokenizer

    def __len__(self):
        return len(self.ann)

    def __getitem__(self, index):
        IGNORE_INDEX = -100
        ann = self.ann[index]
        if ann.get("input", "") == "":
            prompt = PROMPT_DICT["prompt_no_input"].format_map(ann)
        else:
            prompt = PROMPT_DICT["prompt_input"].format_map(ann)
        example = prompt + ann["output"]
        prompt = torch.tensor(self.tokenizer.encode(prompt), dtype=torch.int64)
        example = self.tokenizer.encode(example)
        example.append(self.tokenizer.eos_token_id)
        example = torch.tensor(example, dtype=torch.int64)
        padding = self.max_words - example.shape[0]
        if padding > 0:
            example = torch.cat((example, torch.zeros(padding, dtype=torch.int64) - 1))
        elif padding < 0:
            example = example[: self.max_words]
        labels = copy.deepcopy(example)
        labels[: len(prompt)] = -1
        example_mask = example.ge(0)
        label_mask = labels.ge(0)
        example[~example_mask] = 0
        labels[~label_mask] = IGNORE_INDEX
        return {"input_ids": example, "labels": labels, "attention_mask": example_mask.float()}


def main(train_config, dataset_config, model, tokenizer, optimizer, scheduler, local_rank=None, rank=None):
    dataset_train = InstructionDataset(dataset_config, tokenizer, partition="train", max_words=train_config.context_length)
    dataset_val = InstructionDataset(dataset_config, tokenizer, partition="test", max_words=train_config.context_length)
    train_dataloader = torch.utils.data.DataLoader(dataset_train, batch_size=train_config.batch_size_training,
                                                   shuffle=True, drop_last=True)
    eval_dataloader = torch.utils.data.DataLoader(dataset_val, batch_size=train_config.val_batch_size,
                                                  shuffle=False, drop_last=True)
    return train(model, train_dataloader, eval_dataloader, tokenizer, optimizer, scheduler,
                 train_config.gradient_accumulation_steps, train_config, None, local_rank, rank)
