# Unsloth's Kaggle notebook for fine-tuning the Orpheus 3B text-to-speech model with LoRA: each example's
# input_ids (text tokens + SNAC audio codes) has its own length and is not padded, and the Trainer gets
# neither a tokenizer nor a data collator; on Kaggle's two T4 GPUs the Trainer wraps the model in
# DataParallel and batches one example per GPU, and the default collator cannot stack them:
# "ValueError: expected sequence of length 715 at dim 1".
# evidence: unslothai/notebooks#27 ("Update Kaggle-Orpheus_(3B)-TTS.ipynb to fix issue #24": "the default
# data collator couldn't handle the variable sequence lengths ... fixes the issue #24 by explicitly
# providing a DataCollatorForSeq2Seq to the Trainer"; merged, commit 468b5b54)
import torch
import torchaudio.transforms as T
from datasets import load_dataset
from snac import SNAC
from transformers import Trainer, TrainingArguments
from unsloth import FastLanguageModel, is_bfloat16_supported

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="unsloth/orpheus-3b-0.1-ft-unsloth-bnb-4bit",
    max_seq_length=2048,
    dtype=None,
    load_in_4bit=True,
)
model = FastLanguageModel.get_peft_model(
    model,
    r=64,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    lora_alpha=64,
    lora_dropout=0,
    bias="none",
    use_gradient_checkpointing="unsloth",
    random_state=3407,
)

dataset = load_dataset("MrDragonFox/Elise", split="train")
ds_sample_rate = dataset[0]["audio"]["sampling_rate"]
snac_model = SNAC.from_pretrained("hubertsiuzdak/snac_24khz").to("cuda")

tokeniser_length = 128256
end_of_text = 128009
start_of_speech = tokeniser_length + 1
end_of_speech = tokeniser_length + 2
start_of_human = tokeniser_length + 3
end_of_human = tokeniser_length + 4
start_of_ai = tokeniser_length + 5
end_of_ai = tokeniser_length + 6


def tokenise_audio(waveform):
    waveform = torch.from_numpy(waveform).unsqueeze(0).to(dtype=torch.float32)
    waveform = T.Resample(orig_freq=ds_sample_rate, new_freq=24000)(waveform)
    waveform = waveform.unsqueeze(0).to("cuda")
    with torch.inference_mode():
        codes = snac_model.encode(waveform)
    all_codes = []
    for i in range(codes[0].shape[1]):
        all_codes.append(codes[0][0][i].item() + 128266)
        all_codes.append(codes[1][0][2 * i].item() + 128266 + 4096)
        all_codes.append(codes[2][0][4 * i].item() + 128266 + (2 * 4096))
        all_codes.append(codes[2][0][(4 * i) + 1].item() + 128266 + (3 * 4096))
        all_codes.append(codes[1][0][(2 * i) + 1].item() + 128266 + (4 * 4096))
        all_codes.append(codes[2][0][(4 * i) + 2].item() + 128266 + (5 * 4096))
        all_codes.append(codes[2][0][(4 * i) + 3].item() + 128266 + (6 * 4096))
    return all_codes


def add_codes(example):
    codes_list = None
    answer_audio = example.get("audio")
    if answer_audio and "array" in answer_audio:
        codes_list = tokenise_audio(answer_audio["array"])
    example["codes_list"] = codes_list
    return example


dataset = dataset.map(add_codes, remove_columns=["audio"])
dataset = dataset.filter(lambda x: x["codes_list"] is not None)


def create_input_ids(example):
    text_prompt = f"{example['source']}: {example['text']}" if "source" in example else example["text"]
    text_ids = tokenizer.encode(text_prompt, add_special_tokens=True)
    text_ids.append(end_of_text)
    input_ids = (
        [start_of_human] + text_ids + [end_of_human] + [start_of_ai] + [start_of_speech]
        + example["codes_list"] + [end_of_speech] + [end_of_ai]
    )
    example["input_ids"] = input_ids
    example["labels"] = input_ids
    example["attention_mask"] = [1] * len(input_ids)
    return example


dataset = dataset.map(create_input_ids, remove_columns=["text", "codes_list"])
columns_to_keep = ["input_ids", "labels", "attention_mask"]
dataset = dataset.remove_columns([col for col in dataset.column_names if col not in columns_to_keep])

trainer = Trainer(  # BUG TL201: no tokenizer and no data collator for unpadded rows of different lengths (two GPUs batch two rows)
    model=model,
    train_dataset=dataset,
    args=TrainingArguments(
        per_device_train_batch_size=1,
        gradient_accumulation_steps=4,
        warmup_steps=5,
        max_steps=60,
        learning_rate=2e-4,
        fp16=not is_bfloat16_supported(),
        bf16=is_bfloat16_supported(),
        logging_steps=1,
        optim="adamw_8bit",
        weight_decay=0.01,
        lr_scheduler_type="linear",
        seed=3407,
        output_dir="outputs",
        report_to="none",
    ),
)
trainer_stats = trainer.train()
