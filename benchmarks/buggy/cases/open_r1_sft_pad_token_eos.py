# /// script
# dependencies = ["transformers==4.50.0", "trl==0.16.0", "datasets"]
# ///
# (the repository's pins from 2025-03-24 to 2025-04-11, while the line was in sft.py: trl 0.16.0, whose
# SFTTrainer appends the EOS token to every example and collates with transformers' language-modelling
# collator; the report ran a development commit of trl 0.16 with the same collator, and from 2025-04-11 the
# pinned trl commit already padded the labels by position)
# Open R1's SFT script (src/open_r1/sft.py): arguments parsed by TrlParser, the tokenizer returned by the
# package's get_tokenizer() helper and its pad token set to its EOS token inside main(); the SFTTrainer's
# language-modelling collator then turns every EOS label into -100, so the model never learns to end
# its answer.
# evidence: huggingface/open-r1#494 ("sft learn to generate eos token": "Avoid 'eos_token' from being
# labeled as -100", for open-r1#492; the maintainer: "Thanks!"); fixed in
# huggingface/open-r1@5112bfc4012d8bb4f919c79c900064a9c0d61430 ("Fix pad token bug in SFT": the line is
# removed)
import logging
import os
import sys

import datasets
import torch
import transformers
from datasets import load_dataset
from transformers import set_seed
from transformers.trainer_utils import get_last_checkpoint

from open_r1.configs import SFTConfig
from open_r1.utils import get_tokenizer
from open_r1.utils.callbacks import get_callbacks
from trl import ModelConfig, ScriptArguments, SFTTrainer, TrlParser, get_kbit_device_map, get_peft_config, get_quantization_config

logger = logging.getLogger(__name__)


def main(script_args, training_args, model_args):
    set_seed(training_args.seed)

    last_checkpoint = None
    if os.path.isdir(training_args.output_dir):
        last_checkpoint = get_last_checkpoint(training_args.output_dir)

    dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)

    tokenizer = get_tokenizer(model_args, training_args)
    tokenizer.pad_token = tokenizer.eos_token  # BUG TL208: pad = EOS with the SFTTrainer's LM collator: every EOS label becomes -100, the model never learns to stop

    torch_dtype = (
        model_args.torch_dtype if model_args.torch_dtype in ["auto", None] else getattr(torch, model_args.torch_dtype)
    )
    quantization_config = get_quantization_config(model_args)
    model_kwargs = dict(
        revision=model_args.model_revision,
        trust_remote_code=model_args.trust_remote_code,
        attn_implementation=model_args.attn_implementation,
        torch_dtype=torch_dtype,
        use_cache=False if training_args.gradient_checkpointing else True,
        device_map=get_kbit_device_map() if quantization_config is not None else None,
        quantization_config=quantization_config,
    )
    training_args.model_init_kwargs = model_kwargs

    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset[script_args.dataset_train_split],
        eval_dataset=dataset[script_args.dataset_test_split] if training_args.eval_strategy != "no" else None,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=get_callbacks(training_args, model_args),
    )

    checkpoint = None
    if training_args.resume_from_checkpoint is not None:
        checkpoint = training_args.resume_from_checkpoint
    elif last_checkpoint is not None:
        checkpoint = last_checkpoint
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(training_args.output_dir)


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
    main(script_args, training_args, model_args)
