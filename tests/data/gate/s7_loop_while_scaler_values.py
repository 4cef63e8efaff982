"""Hand-written loop through a `while`, with the optimizer and the scheduler known only by their
values (no "optim" / "sched" in their names) and the gradient scaler stepping the optimizer."""
import torch
from torch.optim.lr_scheduler import LambdaLR
from transformers import get_linear_schedule_with_warmup

net = torch.nn.Linear(4, 2)
o = torch.optim.AdamW(net.parameters(), lr=1e-3)
s = get_linear_schedule_with_warmup(o, 10, 100)
w = LambdaLR(o, lambda e: 0.9 ** e)
scaler = torch.cuda.amp.GradScaler()

step = 0
total = 0.0
while step < 100:
    x = torch.randn(8, 4)
    loss = net(x).sum()
    scaler.scale(loss).backward()
    total += loss
    s.step()
    scaler.step(o)
    scaler.update()
    step += 1

k = 0
while k < 10:
    w.step()
    loss = net(torch.randn(8, 4)).sum()
    loss.backward()
    o.step()
    o.zero_grad()
    k += 1
