# s1's supervised fine-tuning script (train/sft.py) as it was before its data was pre-tokenized: trl's
# SFTTrainer reads the column named by dataset_text_field ('text'), but the dataset the run loaded
# (simplescaling/s1K, the value train/sft.sh passed as --train_file_path) has no 'text' column: KeyError: 'text'.
# evidence: simplescaling/s1#39 ("KeyError: 'text' ... there is no text field in your simplescaling/s1K dataset";
# the maintainer: "it should be simplescaling/s1K_tokenized which has that column; I think it is already fixed
# on main"), fixed in simplescaling/s1@4344acae3d8fcb223d52e11e0f704b0228586dc9 ("add tokenization": the data
# path becomes simplescaling/s1K_tokenized)
import os
from dataclasses import dataclass, field, asdict
from typing import Optional
import logging
from datasets import load_dataset
import transformers
import trl


@dataclass
class TrainingConfig:
    model_name: str = field(default="Qwen/Qwen2.5-32B-Instruct")
    block_size: int = field(default=32768)
    wandb_project: Optional[str] = field(default="s1")
    train_file_path: Optional[str] = field(default='simplescaling/s1K')
    dagger: bool = field(default=False)

    def __post_init__(self):
        os.environ['WANDB_PROJECT'] = self.wandb_project


def train():
    parser = transformers.HfArgumentParser((TrainingConfig, trl.SFTConfig))
    config, args = parser.parse_args_into_dataclasses()
    logging.info(f"Training config: {asdict(config)}")

    model = transformers.AutoModelForCausalLM.from_pretrained(config.model_name)
    dataset = load_dataset(config.train_file_path)

    tokenizer = transformers.AutoTokenizer.from_pretrained(config.model_name, use_fast=True)
    instruction_template = "<|im_start|>user"
    response_template = "<|im_start|>assistant\n"
    tokenizer.pad_token = "<|fim_pad|>"

    collator = trl.DataCollatorForCompletionOnlyLM(
        instruction_template=instruction_template,
        response_template=response_template,
        tokenizer=tokenizer,
        mlm=False
    )
    args.dataset_text_field = 'text'  # BUG TL102: simplescaling/s1K has no 'text' column (only the tokenized s1K_tokenized does)
    args.max_seq_length = config.block_size
    trainer = trl.SFTTrainer(
        model,
        train_dataset=dataset['train'],
        eval_dataset=dataset['test'] if 'test' in dataset else dataset['train'],
        args=args,
        data_collator=collator
    )

    trainer.train()
    trainer.save_model(output_dir=args.output_dir)


if __name__ == "__main__":
    train()
