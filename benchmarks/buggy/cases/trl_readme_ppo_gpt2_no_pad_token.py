# /// script
# dependencies = ["trl==0.4.6", "transformers", "torch"]
# ///
# (the environment of the report: trl in June 2023)
# trl's README example of the time: a GPT-2 policy with a value head, a reference copy, and the GPT-2
# tokenizer passed positionally to PPOTrainer; the tokenizer has no pad token, and the trainer's step pads
# the batch: "ValueError: Asking to pad but the tokenizer does not have a padding token".
# evidence: huggingface/trl#466 (running the README example; the maintainer: add
# `tokenizer.pad_token = tokenizer.eos_token` before running; the reporter: "Thanks that fixed it")
import torch
from transformers import AutoTokenizer
from trl import PPOTrainer, PPOConfig, AutoModelForCausalLMWithValueHead, create_reference_model
from trl.core import respond_to_batch

# get models
model = AutoModelForCausalLMWithValueHead.from_pretrained('gpt2')
model_ref = create_reference_model(model)

tokenizer = AutoTokenizer.from_pretrained('gpt2')

# initialize trainer
ppo_config = PPOConfig(
    batch_size=1,
)

# encode a query
query_txt = "This morning I went to the "
query_tensor = tokenizer.encode(query_txt, return_tensors="pt")

# get model response
response_tensor = respond_to_batch(model, query_tensor)

# create a ppo trainer
ppo_trainer = PPOTrainer(ppo_config, model, model_ref, tokenizer)  # BUG TL303: the GPT-2 tokenizer has no pad token and the trainer pads the batch in step()

# define a reward for response
reward = [torch.tensor(1.0)]

# train model for one step with ppo
train_stats = ppo_trainer.step([query_tensor[0]], [response_tensor[0]], reward)
