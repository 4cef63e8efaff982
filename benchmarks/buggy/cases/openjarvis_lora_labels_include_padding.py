# OpenJarvis's LoRA trainer (src/openjarvis/learning/training/lora.py): a hand-written PEFT fine-tuning loop;
# the tokenizer's pad token is set to its EOS token, every example is padded to max_length, and the step
# passes `labels=input_ids`, so every padded position is a target: most loss terms are "predict EOS at a
# padded position", which dilutes the gradient on the real tokens and makes the loss look low. (The
# configuration class, 4-bit loading and adapter saving are shortened here.)
# evidence: open-jarvis/OpenJarvis#521 ("fix(learning): exclude padding tokens from SFT loss": "The code is
# not masking the labels ... every position in `labels` must be set to `-100` wherever `attention_mask` is
# `0`"; merged), commit open-jarvis/OpenJarvis@1b2b0a06e16e80ad670595f773850330f8ba1848
from typing import Any, Dict, List

import torch
from peft import LoraConfig, TaskType, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer


class LoRATrainer:
    def __init__(self, config, model_name: str, device: str = "cuda"):
        self.config = config
        self.model_name = model_name
        self.device = device
        self.tokenizer = None
        self.model = None

    def prepare_dataset(self, pairs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        self._ensure_tokenizer()
        dataset: List[Dict[str, Any]] = []
        for pair in pairs:
            messages = [
                {"role": "user", "content": pair.get("input", "")},
                {"role": "assistant", "content": pair.get("output", "")},
            ]
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
            encoding = self.tokenizer(
                text,
                truncation=True,
                max_length=self.config.max_seq_length,
                padding="max_length",
                return_tensors="pt",
            )
            dataset.append({"input_ids": encoding["input_ids"].squeeze(0),
                            "attention_mask": encoding["attention_mask"].squeeze(0)})
        return dataset

    def train(self, pairs: List[Dict[str, Any]]) -> float:
        dataset = self.prepare_dataset(pairs)
        self.model = AutoModelForCausalLM.from_pretrained(self.model_name, torch_dtype=torch.bfloat16,
                                                          device_map="auto")
        lora_config = LoraConfig(task_type=TaskType.CAUSAL_LM, r=self.config.lora_rank,
                                 lora_alpha=self.config.lora_alpha, lora_dropout=self.config.lora_dropout,
                                 target_modules=self.config.target_modules)
        self.model = get_peft_model(self.model, lora_config)
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.config.learning_rate,
                                      weight_decay=self.config.weight_decay)
        self.model.train()
        total_loss = 0.0
        for epoch in range(self.config.num_epochs):
            for i in range(0, len(dataset), self.config.batch_size):
                total_loss += self._train_step(dataset[i:i + self.config.batch_size], optimizer)
        return total_loss

    def _ensure_tokenizer(self) -> None:
        if self.tokenizer is not None:
            return
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_name)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    def _train_step(self, batch_items: List[Dict[str, Any]], optimizer: Any) -> float:
        input_ids = torch.stack([item["input_ids"] for item in batch_items]).to(self.device)
        attention_mask = torch.stack([item["attention_mask"] for item in batch_items]).to(self.device)

        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            labels=input_ids,  # BUG TL491: labels are the padded input_ids: every padding position is trained as a target
        )
        loss = outputs.loss

        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        optimizer.step()
        return loss.item()
