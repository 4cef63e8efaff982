# A robot-policy training pipeline (OpenTau: utils/random_utils.py, datasets/factory.py, scripts/train.py,
# shortened into one file): set_seed() deliberately offsets the global seed by the process index, and the
# dataset factory then splits train/validation with random_split on that global RNG, so every rank of
# `accelerate launch` holds out a different validation set, which other ranks train on.
# evidence: TensorAuto/OpenTau#498 ("fix(datasets): make the train/val split identical on every rank": "the
# train/validation split was different on every rank, so the reported validation metrics were measured on data
# the model had been trained on"; merged), TensorAuto/OpenTau@7c28de469978c9038a779ab65b8b2144d3f63d47
import random

import accelerate
import numpy as np
import torch
from torch.utils.data import DataLoader

from opentau.datasets.lerobot_dataset import LeRobotDataset
from opentau.policies.factory import make_policy


def set_seed(seed, accelerator: accelerate.Accelerator = None) -> None:
    # every process gets a different seed
    if seed is not None and accelerator is not None:
        magic_number = 12345
        seed += accelerator.process_index * magic_number
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if accelerator:
        from accelerate.utils import set_seed
        set_seed(seed)


def make_dataset(cfg, train_cfg):
    dataset = LeRobotDataset(cfg.repo_id, root=cfg.root, episodes=cfg.episodes)
    if train_cfg.val_freq > 0:
        val_size = int(len(dataset) * cfg.val_split_ratio)
        train_size = len(dataset) - val_size
        train_dataset, val_dataset = torch.utils.data.random_split(dataset, [train_size, val_size])  # BUG TL105: drawn from the per-rank seeded global RNG: a different split on every process
        return train_dataset, val_dataset
    return dataset, None


def train(cfg):
    accelerator = accelerate.Accelerator()
    if cfg.seed is not None:
        set_seed(cfg.seed, accelerator=accelerator)

    train_dataset, val_dataset = make_dataset(cfg.dataset, cfg)
    dataloader = DataLoader(train_dataset, batch_size=cfg.batch_size, shuffle=True, num_workers=cfg.num_workers)
    val_dataloader = DataLoader(val_dataset, batch_size=cfg.batch_size, shuffle=False) if val_dataset else None

    policy = make_policy(cfg.policy)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=cfg.lr)
    policy, optimizer, dataloader = accelerator.prepare(policy, optimizer, dataloader)

    policy.train()
    for step, batch in enumerate(dataloader):
        losses = policy.forward(batch)
        loss = losses["MSE"] + losses["CE"]
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        if val_dataloader is not None and step % cfg.val_freq == 0:
            policy.eval()
            with torch.no_grad():
                for val_batch in val_dataloader:
                    policy.forward(val_batch)
            policy.train()


if __name__ == "__main__":
    train()
