# A transformers text-classification notebook's train() (in the shape of transformers' old
# examples run_glue.py): the warmup scheduler is stepped before the optimizer, so the first value of
# the schedule is skipped (PyTorch warns "Detected call of lr_scheduler.step() before optimizer.step()").
# evidence: ThilinaRajapakse/pytorch-transformers-classification#21 (the author: put optimizer.step()
# above scheduler.step() in the train function; fixed in the repository)
import torch
from torch.utils.data import DataLoader, RandomSampler
from transformers import get_linear_schedule_with_warmup


def train(train_dataset, model, tokenizer, args):
    train_dataloader = DataLoader(train_dataset, sampler=RandomSampler(train_dataset), batch_size=args["train_batch_size"])
    t_total = len(train_dataloader) // args["gradient_accumulation_steps"] * args["num_train_epochs"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=args["learning_rate"], eps=args["adam_epsilon"])
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=args["warmup_steps"], num_training_steps=t_total)
    global_step = 0
    tr_loss = 0.0
    model.zero_grad()
    for _ in range(int(args["num_train_epochs"])):
        for step, batch in enumerate(train_dataloader):
            model.train()
            inputs = {"input_ids": batch[0], "attention_mask": batch[1], "token_type_ids": batch[2], "labels": batch[3]}
            outputs = model(**inputs)
            loss = outputs[0]
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args["max_grad_norm"])
            tr_loss += loss.item()
            if (step + 1) % args["gradient_accumulation_steps"] == 0:
                scheduler.step()  # BUG TL704: the scheduler steps before the optimizer
                optimizer.step()
                model.zero_grad()
                global_step += 1
    return global_step, tr_loss / global_step
