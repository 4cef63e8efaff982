# /// script
# dependencies = ["trl==0.15.2", "peft", "transformers==4.49.0"]
# ///
# (the environment of the report: trl 0.15.2, whose GRPOTrainer did not enable input gradients, and transformers 4.49)
# A GRPO run on Qwen2-0.5B-Instruct with a LoRA adapter applied by hand (`get_peft_model`) and handed to
# GRPOTrainer, with reentrant gradient checkpointing in the GRPOConfig: the base model is frozen, so the
# embedding output does not require grad and the checkpointed blocks produce no graph.
# evidence: huggingface/trl#3150 ("GRPO Trainer's Gradient issues": RuntimeError: element 0 of tensors does not
# require grad and does not have a grad_fn; the reporter: solved by adding model.enable_input_require_grads()
# before get_peft_model; labelled bug; the mechanism explained in huggingface/trl#3089)
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM
from trl import GRPOConfig, GRPOTrainer

model_name = "/netcache/huggingface/Qwen2-0.5B-Instruct"
batch_size = 16
num_generations = 8

model = AutoModelForCausalLM.from_pretrained(
    model_name,
    torch_dtype="bfloat16",
)

lora_config = LoraConfig(
    base_model_name_or_path=model_name,
    task_type="CAUSAL_LM",
    r=16,
    lora_alpha=32,
    lora_dropout=0.05,
    bias="none",
)
lora_model = get_peft_model(model, lora_config)

training_args = GRPOConfig(output_dir=f"checkpoints/{model_name}/GRPO",
                           learning_rate=1e-5,
                           bf16=True,
                           max_completion_length=2048,
                           max_prompt_length=4096,
                           logging_steps=10,
                           per_device_train_batch_size=batch_size,
                           num_generations=num_generations,
                           log_completions=True,
                           gradient_checkpointing=True,  # BUG TL310: reentrant checkpointing on a LoRA model without enable_input_require_grads(): "element 0 of tensors does not require grad"
                           gradient_checkpointing_kwargs=dict(use_reentrant=True)
                           )


def reward_len(completions, **kwargs):
    return [-abs(20 - len(completion)) for completion in completions]


dataset = load_dataset("trl-lib/tldr", split="train")
trainer = GRPOTrainer(
    model=lora_model,
    reward_funcs=reward_len,
    args=training_args,
    train_dataset=dataset,
)
trainer.train()
