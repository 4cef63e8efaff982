# A health-record transformer trained in the shape of nanoGPT's train.py, whose loss estimate on the
# validation split runs under torch.no_grad() but never switches the model to eval mode: dropout stays
# active in evaluation.
# evidence: ipolharvard/ethos-ares#20 ("Dropout active during inference and evaluation?": no model.eval()
# call anywhere; the maintainer: "Good catch! This is definitely a bug")
import torch

from ethos.model import GPT2LMNoBiasModel
from ethos.datasets import TimelineDataset

eval_iters = 50
max_iters = 100000
eval_interval = 1000
device = "cuda" if torch.cuda.is_available() else "cpu"

train_dataset = TimelineDataset("data/train", n_positions=2048)
val_dataset = TimelineDataset("data/val", n_positions=2048)
model = GPT2LMNoBiasModel.from_config_file("config.json").to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)


def get_batch(split):
    data = train_dataset if split == "train" else val_dataset
    ix = torch.randint(len(data), (32,))
    x = torch.stack([data[i][0] for i in ix]).to(device)
    y = torch.stack([data[i][1] for i in ix]).to(device)
    return x, y


@torch.no_grad()
def estimate_loss():
    out = {}
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            output = model(X, labels=Y)  # BUG TL702: evaluation without model.eval(): dropout is active
            losses[k] = output.loss.item()
        out[split] = losses.mean()
    return out


X, Y = get_batch("train")
for iter_num in range(max_iters):
    if iter_num % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    output = model(X, labels=Y)
    X, Y = get_batch("train")
    output.loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
