# /// script
# dependencies = ["unsloth", "transformers>=5", "datasets>=3.4.1,<4.0.0", "librosa", "soundfile", "evaluate", "jiwer"]
# ///
# (the environment of the report: a current install resolves transformers 5.x)
# Unsloth's Whisper fine-tuning notebook (python_scripts/Whisper.py): LoRA on whisper-large-v3 loaded with
# `FastModel.from_pretrained(..., auto_model=WhisperForConditionalGeneration)`, whose second return value is
# the Whisper processor; the Seq2SeqTrainer is built with `tokenizer = tokenizer.feature_extractor`, an
# argument transformers 5 removed, and arguments inlined in the call.
# evidence: unslothai/notebooks#290 ("Whisper: pass processing_class instead of removed tokenizer kwarg":
# "transformers 5.x removed the deprecated tokenizer argument from Seq2SeqTrainer, so the Whisper notebook
# fails at trainer construction on current installs with TypeError: Seq2SeqTrainer.__init__() got an
# unexpected keyword argument 'tokenizer'")
from unsloth import FastModel
from transformers import WhisperForConditionalGeneration
import numpy as np
import torch
import tqdm
import evaluate
from dataclasses import dataclass
from typing import Any, Dict, List, Union
from datasets import load_dataset, Audio

model, tokenizer = FastModel.from_pretrained(
    model_name="unsloth/whisper-large-v3",
    dtype=None,
    load_in_4bit=False,
    auto_model=WhisperForConditionalGeneration,
    whisper_language="English",
    whisper_task="transcribe",
)

model = FastModel.get_peft_model(
    model,
    r=64,
    target_modules=["q_proj", "v_proj"],
    lora_alpha=64,
    lora_dropout=0,
    bias="none",
    use_gradient_checkpointing="unsloth",
    random_state=3407,
    task_type=None,
)

model.generation_config.language = "<|en|>"
model.generation_config.task = "transcribe"
model.config.suppress_tokens = []
model.generation_config.forced_decoder_ids = None


def formatting_prompts_func(example):
    audio_arrays = example["audio"]["array"]
    sampling_rate = example["audio"]["sampling_rate"]
    features = tokenizer.feature_extractor(audio_arrays, sampling_rate=sampling_rate)
    tokenized_text = tokenizer.tokenizer(example["text"])
    return {"input_features": features.input_features[0], "labels": tokenized_text.input_ids}


dataset = load_dataset("MrDragonFox/Elise", split="train")
dataset = dataset.cast_column("audio", Audio(sampling_rate=16000))
dataset = dataset.train_test_split(test_size=0.06)
train_dataset = [formatting_prompts_func(example) for example in tqdm.tqdm(dataset["train"], desc="Train split")]
test_dataset = [formatting_prompts_func(example) for example in tqdm.tqdm(dataset["test"], desc="Test split")]

metric = evaluate.load("wer")


def compute_metrics(pred):
    pred_logits = pred.predictions[0]
    label_ids = pred.label_ids
    label_ids[label_ids == -100] = tokenizer.pad_token_id
    pred_ids = np.argmax(pred_logits, axis=-1)
    pred_str = tokenizer.batch_decode(pred_ids, skip_special_tokens=True)
    label_str = tokenizer.batch_decode(label_ids, skip_special_tokens=True)
    wer = 100 * metric.compute(predictions=pred_str, references=label_str)
    return {"wer": wer}


@dataclass
class DataCollatorSpeechSeq2SeqWithPadding:
    processor: Any

    def __call__(self, features: List[Dict[str, Union[List[int], torch.Tensor]]]) -> Dict[str, torch.Tensor]:
        input_features = [{"input_features": feature["input_features"]} for feature in features]
        batch = self.processor.feature_extractor.pad(input_features, return_tensors="pt")
        label_features = [{"input_ids": feature["labels"]} for feature in features]
        labels_batch = self.processor.tokenizer.pad(label_features, return_tensors="pt")
        labels = labels_batch["input_ids"].masked_fill(labels_batch.attention_mask.ne(1), -100)
        if (labels[:, 0] == self.processor.tokenizer.bos_token_id).all().cpu().item():
            labels = labels[:, 1:]
        batch["labels"] = labels
        return batch


from transformers import Seq2SeqTrainingArguments, Seq2SeqTrainer
from unsloth import is_bf16_supported

trainer = Seq2SeqTrainer(
    model=model,
    train_dataset=train_dataset,
    data_collator=DataCollatorSpeechSeq2SeqWithPadding(processor=tokenizer),
    eval_dataset=test_dataset,
    tokenizer=tokenizer.feature_extractor,  # BUG TL804: removed in transformers 5: TypeError (processing_class=)
    compute_metrics=compute_metrics,
    args=Seq2SeqTrainingArguments(
        per_device_train_batch_size=1,
        gradient_accumulation_steps=4,
        warmup_steps=5,
        max_steps=60,
        learning_rate=1e-4,
        logging_steps=1,
        optim="adamw_8bit",
        fp16=not is_bf16_supported(),
        bf16=is_bf16_supported(),
        weight_decay=0.01,
        remove_unused_columns=False,
        lr_scheduler_type="linear",
        label_names=["labels"],
        eval_steps=5,
        eval_strategy="steps",
        seed=3407,
        output_dir="outputs",
        report_to="none",
    ),
)
trainer_stats = trainer.train()
