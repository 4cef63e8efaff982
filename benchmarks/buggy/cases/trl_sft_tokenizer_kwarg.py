# Supervised fine-tuning with TRL's SFTTrainer, still passing `tokenizer=` (renamed processing_class
# in TRL 0.12 and then removed).
# evidence: huggingface/trl#6168 (TypeError: Trainer.__init__() got an unexpected keyword argument
# 'tokenizer' from SFTTrainer(..., tokenizer=tokenizer, ...))
from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import SFTConfig, SFTTrainer

SEED = 42
output_dir = "sft-out"
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B")
tokenizer = AutoTokenizer.from_pretrained("Qwen/Qwen2.5-0.5B")
dataset = load_dataset("json", data_files="train.jsonl")["train"]

SFT_config = SFTConfig(
    output_dir=output_dir,
    per_device_train_batch_size=1,
    gradient_accumulation_steps=8,
    learning_rate=6e-5,
    num_train_epochs=100,
    logging_strategy="steps",
    logging_steps=5,
    save_strategy="steps",
    save_steps=100,
    optim="adamw_torch",
    report_to="none",
    seed=SEED,
    data_seed=SEED,
    remove_unused_columns=False,
)
sfttrainer = SFTTrainer(
    model=model,
    train_dataset=dataset,
    tokenizer=tokenizer,  # BUG TL804: `tokenizer=` is no longer accepted (processing_class)
    args=SFT_config,
)
sfttrainer.train()
