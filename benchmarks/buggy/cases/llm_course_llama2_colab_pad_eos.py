# /// script
# dependencies = ["accelerate==0.21.0", "peft==0.4.0", "bitsandbytes==0.40.2", "transformers==4.31.0", "trl==0.4.7"]
# ///
# (the notebook's own pins)
# The LLM course's "Fine-tune Llama 2 in Google Colab" notebook (Fine_tune_Llama_2_in_Google_Colab.ipynb),
# cell by cell: hyperparameters as module-level constants, QLoRA on Llama-2-7b-chat, the tokenizer's pad
# token set to its EOS token, and TRL's SFTTrainer with its default language-modelling collator, which
# sets every pad id in the labels to -100: the `</s>` closing each training text is masked too, and the
# fine-tuned model never learns to stop.
# evidence: mlabonne/llm-course#33 ("Issue with pad_token == eos_token: model not learning when to stop":
# after fine-tuning with this notebook the model "was continuously generating text, effectively never
# producing the EOS_TOKEN"; the pad and EOS ids are the same, so the collator masks the EOS labels)
import torch
from datasets import load_dataset
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig, TrainingArguments
from trl import SFTTrainer

model_name = "NousResearch/Llama-2-7b-chat-hf"
dataset_name = "mlabonne/guanaco-llama2-1k"
new_model = "llama-2-7b-miniguanaco"
lora_r = 64
lora_alpha = 16
lora_dropout = 0.1
use_4bit = True
bnb_4bit_compute_dtype = "float16"
bnb_4bit_quant_type = "nf4"
output_dir = "./results"
num_train_epochs = 1
per_device_train_batch_size = 4
learning_rate = 2e-4
max_seq_length = None
packing = False
device_map = {"": 0}

dataset = load_dataset(dataset_name, split="train")

compute_dtype = getattr(torch, bnb_4bit_compute_dtype)
bnb_config = BitsAndBytesConfig(
    load_in_4bit=use_4bit,
    bnb_4bit_quant_type=bnb_4bit_quant_type,
    bnb_4bit_compute_dtype=compute_dtype,
)
model = AutoModelForCausalLM.from_pretrained(model_name, quantization_config=bnb_config, device_map=device_map)
model.config.use_cache = False
model.config.pretraining_tp = 1

tokenizer = AutoTokenizer.from_pretrained(model_name, trust_remote_code=True)
tokenizer.pad_token = tokenizer.eos_token  # BUG TL208: pad = EOS with the SFTTrainer's LM collator: every EOS label becomes -100, the model never learns to stop
tokenizer.padding_side = "right"

peft_config = LoraConfig(lora_alpha=lora_alpha, lora_dropout=lora_dropout, r=lora_r, bias="none", task_type="CAUSAL_LM")

training_arguments = TrainingArguments(
    output_dir=output_dir,
    num_train_epochs=num_train_epochs,
    per_device_train_batch_size=per_device_train_batch_size,
    optim="paged_adamw_32bit",
    learning_rate=learning_rate,
    group_by_length=True,
    lr_scheduler_type="cosine",
    report_to="tensorboard",
)

trainer = SFTTrainer(
    model=model,
    train_dataset=dataset,
    peft_config=peft_config,
    dataset_text_field="text",
    max_seq_length=max_seq_length,
    tokenizer=tokenizer,
    args=training_arguments,
    packing=packing,
)
trainer.train()
trainer.model.save_pretrained(new_model)
