# Hugging Face's Llama recipes, fine_tune/peft_finetuning.py: QLoRA on Llama 3.1 8B over IMDB with TRL's
# SFTTrainer, which still receives `tokenizer=` (and a transformers TrainingArguments), behind a QLoRA flag.
# evidence: huggingface/huggingface-llama-recipes#88 ("Breaking change - SFTTrainer dont take tokenizer
# argument anymore": fine_tune/peft_finetuning.py line 48 should pass processing_class; the maintainer
# asked for a pull request)
import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig, TrainingArguments
from trl import SFTTrainer

model_id = "meta-llama/Meta-Llama-3.1-8B"

tokenizer = AutoTokenizer.from_pretrained(model_id)
model = AutoModelForCausalLM.from_pretrained(model_id)

dataset = load_dataset("imdb", split="train")

training_args = TrainingArguments(
    output_dir="./results",
    num_train_epochs=3,
    per_device_train_batch_size=4,
    logging_steps=10,
)

QLoRA = True
if QLoRA:
    quantization_config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.float16,
                                             bnb_4bit_quant_type="nf4")
    lora_config = LoraConfig(r=8, target_modules="all-linear", bias="none", task_type="CAUSAL_LM")
else:
    lora_config = None

trainer = SFTTrainer(
    model=model,
    tokenizer=tokenizer,  # BUG TL804: SFTTrainer no longer takes tokenizer= (processing_class=): TypeError
    args=training_args,
    peft_config=lora_config,
    train_dataset=dataset,
    dataset_text_field="text",
)

trainer.train()
