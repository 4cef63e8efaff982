# /// script
# dependencies = ["trl==0.16.0", "transformers", "qwen-vl-utils", "datasets"]
# ///
# (the environment of the report: the README asks for trl 0.16.0)
# Video-R1's SFT cold-start script (src/r1-v/src/open_r1/sft_video.py): arguments parsed by TrlParser into
# (ScriptArguments, SFTConfig, ModelConfig), the model class chosen by the checkpoint name, and the
# SFTTrainer given the processor's tokenizer as `tokenizer=`.
# evidence: tulerfeng/Video-R1#14 (TypeError: SFTTrainer.__init__() got an unexpected keyword argument
# 'tokenizer'; the author: with trl 0.16.0 drop the argument); fixed in
# tulerfeng/Video-R1@8f4dc7aec69475fb206ae66f54c9b1cdbc5ea312 (the argument commented out)
import torch
from datasets import DatasetDict, Dataset, load_dataset
from qwen_vl_utils import process_vision_info
from transformers import AutoModelForVision2Seq, AutoProcessor, Qwen2VLForConditionalGeneration, Qwen2_5_VLForConditionalGeneration
from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser, get_kbit_device_map, get_peft_config


def prepare_dataset(example):
    messages = [
        {"role": "user", "content": [{"type": example["data_type"], example["data_type"]: example["path"]},
                                     {"type": "text", "text": example["problem"]}]},
        {"role": "assistant", "content": [{"type": "text", "text": example["process"] + "\n" + example["solution"]}]},
    ]
    return {"messages": messages}


def collate_fn(examples):
    texts = []
    for example in examples:
        texts.append(processor.apply_chat_template(example["messages"], tokenize=False))
        image_inputs, video_inputs, video_kwargs = process_vision_info(example["messages"], return_video_kwargs=True)
    inputs = processor(text=texts, images=image_inputs, videos=video_inputs, return_tensors="pt", padding=True)
    labels = inputs["input_ids"].clone()
    labels[labels == processor.tokenizer.pad_token_id] = -100
    inputs["labels"] = labels
    return inputs


if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, SFTConfig, ModelConfig))
    script_args, training_args, model_config = parser.parse_args_and_config()
    training_args.gradient_checkpointing_kwargs = dict(use_reentrant=False)
    training_args.remove_unused_columns = False
    training_args.dataset_kwargs = {"skip_prepare_dataset": True}

    if script_args.dataset_name.endswith(".json"):
        dataset = DatasetDict({"train": Dataset.from_json(script_args.dataset_name)})
    else:
        dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)

    torch_dtype = (model_config.torch_dtype if model_config.torch_dtype in ["auto", None]
                   else getattr(torch, model_config.torch_dtype))
    model_kwargs = dict(revision=model_config.model_revision, torch_dtype=torch_dtype, device_map=get_kbit_device_map())
    if "Qwen2-VL" in model_config.model_name_or_path:
        model = Qwen2VLForConditionalGeneration.from_pretrained(model_config.model_name_or_path, **model_kwargs)
    elif "Qwen2.5-VL" in model_config.model_name_or_path:
        model = Qwen2_5_VLForConditionalGeneration.from_pretrained(model_config.model_name_or_path, **model_kwargs)
    else:
        model = AutoModelForVision2Seq.from_pretrained(model_config.model_name_or_path, **model_kwargs)
    processor = AutoProcessor.from_pretrained(model_config.model_name_or_path)

    prepared_dataset = [prepare_dataset(example) for example in dataset["train"]]

    trainer = SFTTrainer(
        model=model,
        args=training_args,
        train_dataset=prepared_dataset,
        data_collator=collate_fn,
        peft_config=get_peft_config(model_config),
        tokenizer=processor.tokenizer  # BUG TL804: SFTTrainer no longer takes tokenizer= (processing_class=): TypeError
    )
    trainer.train()
    trainer.save_model(training_args.output_dir)
