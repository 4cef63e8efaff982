"""Supervised fine-tuning of a causal language model with trl's SFTTrainer.

Our own transcription, for the trainlint probe tests, in the shape of huggingface/trl trl/scripts/sft.py
(Apache-2.0; the file as released in trl 1.16.0): `TrlParser` over `ScriptArguments`, `SFTConfig`,
`ModelConfig` and `DatasetMixtureConfig`, `load_dataset(dataset_name)`, the model given to `SFTTrainer`
by name (trl loads it, with `SFTConfig`'s defaults: bf16=True), `get_peft_config` for `--use_peft`.
Shortened (no hub push, no dataset mixtures). Run as the real script:

    python sft.py --model_name_or_path CKPT --dataset_name DATA_DIR --output_dir out/sft
"""

import argparse


def main(script_args, training_args, model_args):
    from datasets import load_dataset

    from trl import SFTTrainer, get_peft_config, get_quantization_config

    model_init_kwargs = dict(
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        attn_implementation=model_args.attn_implementation,
        dtype=model_args.dtype,
    )
    if training_args.model_init_kwargs is not None:
        model_init_kwargs.update(training_args.model_init_kwargs)
    training_args.model_init_kwargs = model_init_kwargs

    dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)

    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=dataset[script_args.dataset_train_split],
        eval_dataset=dataset[script_args.dataset_test_split] if training_args.eval_strategy != "no" else None,
        quantization_config=get_quantization_config(model_args),
        peft_config=get_peft_config(model_args),
    )

    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)


def make_parser(subparsers: argparse._SubParsersAction | None = None):
    from trl import ModelConfig, ScriptArguments, SFTConfig, TrlParser

    dataclass_types = (ScriptArguments, SFTConfig, ModelConfig)
    if subparsers is not None:
        return subparsers.add_parser("sft", help="Run the SFT training script", dataclass_types=dataclass_types)
    return TrlParser(dataclass_types)


if __name__ == "__main__":
    parser = make_parser()
    script_args, training_args, model_args = parser.parse_args_and_config(fail_with_unknown_args=False)
    main(script_args, training_args, model_args)
