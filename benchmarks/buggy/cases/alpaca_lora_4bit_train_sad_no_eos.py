# alpaca_lora_4bit's fine-tuning data (train_data.py) and script (finetune.py): the Stanford-Alpaca format
# prompt (instruction, input, response) is tokenized with truncation and max_length padding, and the last
# token dropped; no EOS token is ever appended to the response, so the LoRA-tuned LLaMA never learns to stop
# and "just starts dreaming up more prompts". (The 4-bit model loading and the text-file format are shortened
# here.)
# evidence: johnsmith0031/alpaca_lora_4bit#35 ("Is the training data prepared correctly?": "it doesn't seem to
# output an EOS token at the end of the response ... I'm thinking the EOS token wasn't added to the training
# examples"; fixed by johnsmith0031/alpaca_lora_4bit#39, "I can confirm that training with the EOS token
# works"), commit johnsmith0031/alpaca_lora_4bit@daad59f8efb0c3962c264a0c7f4d4ad8d85097da
from typing import Any, Dict

import transformers
from datasets import load_dataset


class TrainSAD:
    def __init__(self, dataset: str, val_set_size: int, tokenizer, cutoff_len) -> None:
        self.dataset = dataset
        self.val_set_size = val_set_size
        self.tokenizer = tokenizer
        self.cutoff_len = cutoff_len
        self.train_data = None
        self.val_data = None

    def tokenize(self, prompt: str) -> Dict[str, Any]:
        result = self.tokenizer(
            prompt,  # BUG TL290: the training text never ends in the EOS token: the model does not learn to stop
            truncation=True,
            max_length=self.cutoff_len + 1,
            padding="max_length",
        )
        return {
            "input_ids": result["input_ids"][:-1],
            "attention_mask": result["attention_mask"][:-1],
        }

    def prepare_data(self, **kwargs) -> None:
        data = load_dataset("json", data_files=self.dataset)
        self.train_data = data["train"].shuffle().map(self.generate_and_tokenize_prompt)

    def generate_prompt(self, data_point):
        return "{0}\n\n{1}\n{2}\n\n{3}\n{4}\n\n{5}\n{6}".format(
            "Below is an instruction that describes a task, paired with an input that provides further context. Write a response that appropriately completes the request.",
            "### Instruction:",
            data_point["instruction"],
            "### Input:",
            data_point["input"],
            "### Response:",
            data_point["output"]
        )

    def generate_and_tokenize_prompt(self, data_point):
        prompt = self.generate_prompt(data_point)
        return self.tokenize(prompt)


def finetune(ft_config, model):
    tokenizer = transformers.LlamaTokenizer.from_pretrained(ft_config.llama_q4_config_dir)
    tokenizer.pad_token_id = 0
    data = TrainSAD(ft_config.dataset, ft_config.val_set_size, tokenizer, ft_config.cutoff_len)
    data.prepare_data()
    trainer = transformers.Trainer(
        model=model,
        train_dataset=data.train_data,
        eval_dataset=data.val_data,
        args=transformers.TrainingArguments(
            per_device_train_batch_size=ft_config.mbatch_size,
            gradient_accumulation_steps=ft_config.gradient_accumulation_steps,
            warmup_steps=ft_config.warmup_steps,
            num_train_epochs=ft_config.epochs,
            learning_rate=ft_config.lr,
            fp16=True,
            logging_steps=ft_config.logging_steps,
            output_dir=ft_config.lora_out_dir,
        ),
        data_collator=transformers.DataCollatorForLanguageModeling(tokenizer, mlm=False),
    )
    trainer.train()
