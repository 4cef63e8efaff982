"""DDP launched with `python -m torch.distributed.launch --nnodes=1 --nproc_per_node=8
ddp_launch_local_rank.py` (or torchrun), in the shape of pytorch/examples distributed/ddp/example.py
(BSD-3-Clause): a `--local_rank` argument, each process takes `torch.cuda.device_count() //
local_world_size` GPUs, `ToyModel().cuda(device_ids[0])`, DDP over those devices. Written for the
trainlint tests: a classifier on synthetic data and a few steps instead of the example's one."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic(local_world_size, local_rank):
    n = torch.cuda.device_count() // local_world_size
    device_ids = list(range(local_rank * n, (local_rank + 1) * n))
    print(f"[{os.getpid()}] rank = {dist.get_rank()}, world_size = {dist.get_world_size()}, n = {n}, "
          f"device_ids = {device_ids}")
    model = ToyModel().cuda(device_ids[0])
    ddp_model = DDP(model, device_ids)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(0)
    for step in range(100):
        optimizer.zero_grad()
        outputs = ddp_model(torch.randn(20, 10, generator=g))
        labels = torch.randint(0, 5, (20,), generator=g).to(device_ids[0])
        loss_fn(outputs, labels).backward()
        optimizer.step()


def spmd_main(local_world_size, local_rank):
    env_dict = {key: os.environ[key] for key in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    print(f"[{os.getpid()}] Initializing process group with: {env_dict}")
    dist.init_process_group(backend="nccl")
    demo_basic(local_world_size, local_rank)
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)
    parser.add_argument("--local_world_size", type=int, default=1)
    args = parser.parse_args()
    spmd_main(args.local_world_size, args.local_rank)
