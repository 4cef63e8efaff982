"""A single-GPU training script with automatic mixed precision, in the shape of the PyTorch AMP recipe
(`torch.amp.GradScaler("cuda")`, `autocast("cuda", dtype=torch.float16)`) and of pytorch/examples
mnist/main.py: a hard-coded CUDA device, CUDA queries for logging. Written for the trainlint tests on
synthetic data (4 classes of 20 features)."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.dropout = nn.Dropout(0.1)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


def make_data(n=512, num_classes=4):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 20, generator=g)
    w = torch.randn(20, num_classes, generator=g)
    y = (x @ w).argmax(dim=1)
    return TensorDataset(x, y)


def train(model, device, loader, optimizer, scaler, epoch):
    model.train()
    for step, (data, target) in enumerate(loader):
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(data)
            loss = F.cross_entropy(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if step % 10 == 0:
            torch.cuda.synchronize()
            mem = torch.cuda.max_memory_allocated() / 2**20
            print(f"epoch {epoch} step {step} loss {loss.item():.4f} mem {mem:.0f} MiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    device = torch.device("cuda")
    print("training on", torch.cuda.get_device_name(0))
    torch.backends.cudnn.benchmark = True
    cuda_kwargs = {"pin_memory": True} if torch.cuda.is_available() else {}
    loader = DataLoader(make_data(), batch_size=32, shuffle=True, **cuda_kwargs)
    model = Net().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(1, args.epochs + 1):
        train(model, device, loader, optimizer, scaler, epoch)
        torch.cuda.empty_cache()
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
