# The pytorch-transformers 1.x README's migration section ("Optimizers: BertAdam & OpenAIAdam are now AdamW,
# schedules are standard PyTorch schedules"): a snippet (the README shows no imports; the two below are
# the library of the time, pytorch-transformers 1.x), that steps the warmup schedule before the optimizer. Users following it get PyTorch's warning
# "Detected call of `lr_scheduler.step()` before `optimizer.step()`" and the first value of the schedule is
# skipped.
# evidence: huggingface/transformers#1017 ("the execution order of `scheduler.step()` and
# `optimizer.step()`": the README's order contradicts the PyTorch documentation; the examples were swapped in
# huggingface/transformers#1056 and #1136, "swap order of optimizer.step() and scheduler.step()")
import torch
from pytorch_transformers import AdamW, WarmupLinearSchedule

optimizer = AdamW(model.parameters(), lr=lr, correct_bias=False)
scheduler = WarmupLinearSchedule(optimizer, warmup_steps=num_warmup_steps, t_total=num_total_steps)
for batch in train_data:
    loss = model(batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scheduler.step()  # BUG TL704: the schedule steps before the optimizer: its first value is skipped
    optimizer.step()
    optimizer.zero_grad()
