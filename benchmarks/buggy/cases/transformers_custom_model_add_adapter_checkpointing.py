# /// script
# dependencies = ["transformers==4.33.3", "peft"]
# ///
# (the environment of the report: transformers before the fix of huggingface/transformers#25846)
# A custom PreTrainedModel wrapping Pythia-70M: __init__ attaches a LoRA adapter with transformers' own
# `add_adapter` (the PEFT integration, not a PeftModel) and turns on gradient checkpointing; the base weights
# and the embeddings are frozen and nothing makes the embedding output require grad, so the reentrant
# checkpointed blocks return outputs without a graph and the Trainer's backward fails.
# evidence: huggingface/transformers#25841 ("Peft integration incompatible with Trainer/gradient
# checkpointing"; the maintainer reproduced it: "you need to make sure the input requires_grad are force-set
# to True", as PeftModel does with enable_input_require_grads; fixed by huggingface/transformers#25846)
from datasets import load_from_disk
from peft import LoraConfig
from transformers import AutoModelForCausalLM, AutoTokenizer, PretrainedConfig, PreTrainedModel, Trainer, TrainingArguments


class CustomModel(PreTrainedModel):
    config_class = PretrainedConfig

    def __init__(self, config):
        super().__init__(config)
        self.model = AutoModelForCausalLM.from_pretrained('EleutherAI/pythia-70m')
        self.peft_config = LoraConfig(
            task_type="CAUSAL_LM", inference_mode=False, r=8, lora_alpha=32, lora_dropout=0.1
        )
        self.config.update(self.model.config.to_dict())
        self.tokenizer = AutoTokenizer.from_pretrained('EleutherAI/pythia-70m')

        self.model.add_adapter(self.peft_config)
        self.model.config.use_cache = False

        self.model.gradient_checkpointing_enable()  # BUG TL310: checkpointing on a frozen-embedding LoRA model without enable_input_require_grads(): "element 0 of tensors does not require grad"

    def forward(self, input_ids, attention_mask=None, labels=None):
        return self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)


model = CustomModel(PretrainedConfig())
train_dataset = load_from_disk("tokenized_train")  # input_ids and labels, prepared beforehand
trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", per_device_train_batch_size=4),
                  train_dataset=train_dataset)
trainer.train()
