# A script that fine-tunes a code model on a local codebase with LoRA: the checkpoint name is an argparse
# default ("codellama/CodeLlama-7b-hf"), handed to a helper that loads the tokenizer and tokenizes the
# concatenated files with padding="max_length" in a nested function. CodeLlama's tokenizer has no pad token.
# evidence: ayminovitch/fine-tune-codebase#2 ("pad_token crash": ValueError: Asking to pad but the
# tokenizer does not have a padding token; the author: CodeLlama has no padding token defined, set
# tokenizer.pad_token = tokenizer.eos_token after loading the tokenizer)
import argparse
import os

from datasets import load_dataset, load_from_disk
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments


def load_and_tokenize_dataset(output_file, model_name):
    if os.path.exists("tokenized_dataset"):
        tokenized_dataset = load_from_disk("tokenized_dataset")
    else:
        dataset = load_dataset("text", data_files={"train": output_file})
        dataset = dataset["train"].train_test_split(test_size=0.1)

        tokenizer = AutoTokenizer.from_pretrained(model_name)

        def tokenize_function(examples):
            return tokenizer(examples["text"], truncation=True, padding="max_length", max_length=512)  # BUG TL303: the decoder's tokenizer has no pad token: "Asking to pad but the tokenizer does not have a padding token"

        tokenized_dataset = dataset.map(tokenize_function, batched=True, remove_columns=["text"])
        tokenized_dataset.save_to_disk("tokenized_dataset")
    return tokenized_dataset, tokenizer


def fine_tune_model(tokenized_dataset, tokenizer, model_name, output_dir, learning_rate, batch_size, num_epochs):
    model = AutoModelForCausalLM.from_pretrained(model_name)
    lora_config = LoraConfig(r=8, lora_alpha=32, target_modules=["q_proj", "v_proj"], lora_dropout=0.1)
    model = get_peft_model(model, lora_config)
    training_args = TrainingArguments(
        output_dir=output_dir,
        per_device_train_batch_size=batch_size,
        num_train_epochs=num_epochs,
        learning_rate=learning_rate,
        save_strategy="epoch",
    )
    trainer = Trainer(model=model, args=training_args, train_dataset=tokenized_dataset["train"],
                      eval_dataset=tokenized_dataset["test"])
    trainer.train()
    trainer.save_model(output_dir)
    tokenizer.save_pretrained(output_dir)


def main():
    parser = argparse.ArgumentParser(description="Fine-tune a language model on a codebase.")
    parser.add_argument("--output_file", type=str, default="codebase.txt")
    parser.add_argument("--model_name", type=str, default="codellama/CodeLlama-7b-hf")
    parser.add_argument("--output_dir", type=str, default="./fine_tuned_model")
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--num_epochs", type=int, default=3)
    args = parser.parse_args()

    tokenized_dataset, tokenizer = load_and_tokenize_dataset(args.output_file, args.model_name)
    fine_tune_model(tokenized_dataset, tokenizer, args.model_name, args.output_dir, args.learning_rate,
                    args.batch_size, args.num_epochs)


if __name__ == "__main__":
    main()
