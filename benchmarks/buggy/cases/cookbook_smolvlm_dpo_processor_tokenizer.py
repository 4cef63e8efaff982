# /// script
# dependencies = ["transformers", "trl", "datasets", "bitsandbytes", "peft", "accelerate"]
# ///
# (the environment of the report: the notebook's `pip install -U transformers trl datasets ...`, i.e. a
# current TRL)
# The Hugging Face cookbook notebook "Fine-tuning SmolVLM with Direct Preference Optimization (DPO) using
# TRL" (notebooks/en/fine_tuning_vlm_dpo_smolvlm_instruct.ipynb), cell by cell: Idefics3 in 4 bits, a DoRA
# config, a DPOConfig, and the DPOTrainer given the whole processor as `tokenizer=`.
# evidence: huggingface/cookbook#305 ("SFTTrainer init arg tokenizer not found": TypeError: ... unexpected
# keyword argument 'tokenizer'); fixed by the maintainers in huggingface/cookbook#306 (commit 085a221
# "tokenizer -> processor in DPOTrainer init": processing_class=processor)
from datasets import load_dataset

dataset_id = "HuggingFaceH4/rlaif-v_formatted"
train_dataset, test_dataset = load_dataset(dataset_id, split=['train[:6%]', 'test[:1%]'])

from PIL import Image


def ensure_rgb(example):
    image = example['images'][0]
    if isinstance(image, Image.Image):
        if image.mode != 'RGB':
            image = image.convert('RGB')
        example['images'] = [image]
    return example


train_dataset = train_dataset.map(ensure_rgb, num_proc=32)
test_dataset = test_dataset.map(ensure_rgb, num_proc=32)

import torch
from transformers import Idefics3ForConditionalGeneration, AutoProcessor

model_id = "HuggingFaceTB/SmolVLM-Instruct"

from transformers import BitsAndBytesConfig

bnb_config = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_use_double_quant=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_compute_dtype=torch.bfloat16
)
model = Idefics3ForConditionalGeneration.from_pretrained(
    model_id,
    device_map="auto",
    torch_dtype=torch.bfloat16,
    quantization_config=bnb_config,
    _attn_implementation="flash_attention_2",
)
processor = AutoProcessor.from_pretrained(model_id)

from peft import LoraConfig, get_peft_model

peft_config = LoraConfig(
    r=8,
    lora_alpha=8,
    lora_dropout=0.1,
    target_modules=['down_proj', 'o_proj', 'k_proj', 'q_proj', 'gate_proj', 'up_proj', 'v_proj'],
    use_dora=True,
    init_lora_weights="gaussian"
)
peft_model = get_peft_model(model, peft_config)
peft_model.print_trainable_parameters()

from trl import DPOConfig

training_args = DPOConfig(
    output_dir="smolvlm-instruct-trl-dpo-rlaif-v",
    bf16=True,
    gradient_checkpointing=True,
    per_device_train_batch_size=1,
    per_device_eval_batch_size=1,
    gradient_accumulation_steps=32,
    num_train_epochs=5,
    dataset_num_proc=8,
    dataloader_num_workers=8,
    logging_steps=10,
    save_strategy="steps",
    save_steps=10,
    eval_steps=10,
    eval_strategy="steps",
)

from trl import DPOTrainer

trainer = DPOTrainer(
    model=model,
    ref_model=None,
    args=training_args,
    train_dataset=train_dataset,
    eval_dataset=test_dataset,
    peft_config=peft_config,
    tokenizer=processor,  # BUG TL804: DPOTrainer no longer takes tokenizer= (processing_class=): TypeError
)

trainer.train()
trainer.save_model(training_args.output_dir)
