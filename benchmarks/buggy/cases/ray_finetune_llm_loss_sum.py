# A template that fine-tunes an LLM with DeepSpeed through accelerate inside Ray Train: the epoch's
# loss sum adds the loss tensors, so every step's graph is kept (a memory leak over the epoch).
# evidence: ray-project/ray#40940 ("Make sure that loss can be freed after every iteration":
# doc/source/templates/04_finetuning_llms_with_deepspeed/finetune_hf_llm.py, `loss_sum += loss`)
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup


def training_function(kwargs: dict):
    config = kwargs["config"]
    accelerator = Accelerator(gradient_accumulation_steps=config["gradient_accumulation_steps"])
    model = AutoModelForCausalLM.from_pretrained(config["model_name"], torch_dtype=torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["lr"])
    train_dataloader = config["train_dataloader"]
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=100, num_training_steps=config["num_steps"])
    model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)

    for epoch in range(config["num_epochs"]):
        loss_sum = torch.tensor(0.0).to(accelerator.device)
        model.train()
        for step, batch in enumerate(train_dataloader):
            with accelerator.accumulate(model):
                outputs = model(**batch)
                loss = outputs.loss
                loss_sum += loss  # BUG TL703: the loss tensor (with its graph) is summed over the epoch
                accelerator.backward(loss)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()
        print(epoch, loss_sum.item() / (step + 1))
