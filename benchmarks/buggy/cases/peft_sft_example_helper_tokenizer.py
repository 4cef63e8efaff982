# PEFT's SFT example (examples/sft/train.py): three argument dataclasses parsed by HfArgumentParser,
# model, peft config and tokenizer returned together by a helper of the example's utils module
# (create_and_prepare_model), and the SFTTrainer given `tokenizer=` inside main().
# evidence: huggingface/peft#2400 / huggingface/trl#2968 ("Argument tokenizer should be now
# processing_class" running examples/sft/train.py; the maintainer: "the solution is just to rename the
# argument"); fixed in huggingface/peft@986b77c213db1c98962c4e1949392287731c6387 ("TRL renamed the tokenizer
# argument to processing_class in v0.12.0")
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

from transformers import HfArgumentParser, set_seed
from trl import SFTConfig, SFTTrainer
from utils import create_and_prepare_model, create_datasets


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})
    chat_template_format: Optional[str] = field(default="none")
    lora_alpha: Optional[int] = field(default=16)
    lora_dropout: Optional[float] = field(default=0.1)
    lora_r: Optional[int] = field(default=64)
    use_peft_lora: Optional[bool] = field(default=False)
    use_4bit_quantization: Optional[bool] = field(default=False)
    use_reentrant: Optional[bool] = field(default=False)
    use_unsloth: Optional[bool] = field(default=False)


@dataclass
class DataTrainingArguments:
    dataset_name: Optional[str] = field(default="timdettmers/openassistant-guanaco")
    append_concat_token: Optional[bool] = field(default=False)
    add_special_tokens: Optional[bool] = field(default=False)
    splits: Optional[str] = field(default="train,test")


def main(model_args, data_args, training_args):
    set_seed(training_args.seed)

    model, peft_config, tokenizer = create_and_prepare_model(model_args, data_args, training_args)

    model.config.use_cache = not training_args.gradient_checkpointing
    training_args.gradient_checkpointing = training_args.gradient_checkpointing and not model_args.use_unsloth
    if training_args.gradient_checkpointing:
        training_args.gradient_checkpointing_kwargs = {"use_reentrant": model_args.use_reentrant}

    training_args.dataset_kwargs = {
        "append_concat_token": data_args.append_concat_token,
        "add_special_tokens": data_args.add_special_tokens,
    }

    train_dataset, eval_dataset = create_datasets(
        tokenizer,
        data_args,
        training_args,
        apply_chat_template=model_args.chat_template_format != "none",
    )

    trainer = SFTTrainer(
        model=model,
        tokenizer=tokenizer,  # BUG TL804: SFTTrainer no longer takes tokenizer= (processing_class=): TypeError
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        peft_config=peft_config,
    )
    trainer.accelerator.print(f"{trainer.model}")
    checkpoint = None
    if training_args.resume_from_checkpoint is not None:
        checkpoint = training_args.resume_from_checkpoint
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model()


if __name__ == "__main__":
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, SFTConfig))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    main(model_args, data_args, training_args)
