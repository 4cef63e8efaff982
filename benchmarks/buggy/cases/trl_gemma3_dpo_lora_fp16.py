# /// script
# dependencies = ["trl==0.16.0", "transformers==4.50.3", "peft", "datasets", "accelerate"]
# ///
# (the environment of the report: April 2025, gemma-3 support had just landed in transformers 4.50)
# A DPO script on gemma-3-12b-it launched with accelerate: the model loaded in full precision, a LoRA
# config, and a DPOConfig built with keyword arguments and then given an attribute; with fp16=True
# (the report's switch from full precision) the logs show loss=0, grad_norm=0 and NaN rewards. Gemma 3
# is a bfloat16 model whose activations overflow float16. (The report's LoRA settings and trainer call are
# shortened here.)
# evidence: huggingface/trl#3236 ("Reward becomes nan when switching from full precision to fp16 for
# gemma3-12b-it"; the run is fine in full precision); the model's float16 overflow is
# huggingface/transformers#36822 ("Gemma 3 is broken with fp16", bfloat16 works)
from datasets import load_dataset
from trl import DPOConfig, DPOTrainer
from peft import LoraConfig, TaskType
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

model_name = "gemma-3-12b-it"
model = AutoModelForCausalLM.from_pretrained(model_name, attn_implementation="eager")
tokenizer = AutoTokenizer.from_pretrained(model_name)
train_dataset = load_dataset("json", data_files="training_data.json", split="train")
tokenizer.pad_token = tokenizer.eos_token


def process_training_data(example):
    example["prompt"] = example.pop("input")
    example['rejected'] = example['rejected'][0]
    return example


train_dataset = train_dataset.map(process_training_data)

training_args = DPOConfig(
    dataloader_pin_memory=False,
    per_device_train_batch_size=1,
    gradient_accumulation_steps=4,
    logging_steps=10,
    fp16=True,  # BUG TL508: float16 mixed precision on Gemma 3, a bfloat16 model: loss 0, grad_norm 0, NaN rewards
)
training_args.optimize_cuda_cache = True

peft_config = LoraConfig(
    task_type=TaskType.CAUSAL_LM,
)

trainer = DPOTrainer(
    model=model,
    args=training_args,
    processing_class=tokenizer,
    train_dataset=train_dataset,
    peft_config=peft_config,
)
trainer.train()
