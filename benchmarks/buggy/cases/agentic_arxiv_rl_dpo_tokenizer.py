# /// script
# dependencies = ["torch>=2.0.0", "transformers>=4.35.0", "trl>=0.8.0", "datasets>=2.14.0"]
# ///
# (the environment of the report: the repository's requirements, resolved to a current TRL)
# The DPO stage of an agentic RL pipeline (rl/train_dpo.py): policy and reference model loaded from the
# SFT output inside main(), a DPOConfig, and the DPOTrainer given `tokenizer=`.
# evidence: Algorineko/AgenticArXiv-RL#11 ("update SFT/DPO trainers to the current TRL API":
# SFTTrainer(..., tokenizer=tokenizer) / DPOTrainer: TypeError unexpected keyword argument 'tokenizer';
# merged, commit 4fd808123bdc845a1997ff91ce27dc51ce849339)
from pathlib import Path

from datasets import load_dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import DPOConfig, DPOTrainer


def main():
    model_name = "./outputs/sft/final"
    train_data_path = "data/dpo/dpo_train.jsonl"
    output_dir = "./outputs/dpo"

    if not Path(model_name).exists():
        print("run the SFT stage first")
        return

    tokenizer = AutoTokenizer.from_pretrained(model_name)
    model = AutoModelForCausalLM.from_pretrained(model_name)
    ref_model = AutoModelForCausalLM.from_pretrained(model_name)

    train_dataset = load_dataset("json", data_files=train_data_path, split="train")

    config = DPOConfig(
        output_dir=output_dir,
        num_train_epochs=3,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=8,
        learning_rate=5e-6,
        beta=0.1,
        logging_steps=10,
        save_steps=100,
    )

    trainer = DPOTrainer(
        model=model,
        ref_model=ref_model,
        args=config,
        train_dataset=train_dataset,
        tokenizer=tokenizer,  # BUG TL804: DPOTrainer no longer takes tokenizer= (processing_class=): TypeError
    )
    trainer.train()
    trainer.save_model(f"{output_dir}/final")


if __name__ == "__main__":
    main()
