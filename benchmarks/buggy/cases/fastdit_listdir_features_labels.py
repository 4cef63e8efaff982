# Training DiT on pre-extracted VAE features (fast-DiT's train.py): a Dataset lists the feature files and
# the label files with two separate os.listdir() calls and pairs them by index in __getitem__.
# evidence: chuanyangjin/fast-DiT#4 ("os.listdir does not guarantee the returned list the be sorted. Wouldn't
# this cause mismatch between the feature files and label files?"; the author: "I've updated the code with
# 'sorted' to ensure the lists are in the correct order"); fixed in
# chuanyangjin/fast-DiT@dbe04f63d8840bfa5f63a610cd1f306257f7d035
import argparse
import os
from copy import deepcopy

import numpy as np
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset

from diffusion import create_diffusion
from models import DiT_models


class CustomDataset(Dataset):
    def __init__(self, features_dir, labels_dir):
        self.features_dir = features_dir
        self.labels_dir = labels_dir

        self.features_files = os.listdir(features_dir)  # BUG TL104: file-system order, paired by index with a second unsorted listing
        self.labels_files = os.listdir(labels_dir)

    def __len__(self):
        assert len(self.features_files) == len(self.labels_files), \
            "Number of feature files and label files should be same"
        return len(self.features_files)

    def __getitem__(self, idx):
        feature_file = self.features_files[idx]
        label_file = self.labels_files[idx]

        features = np.load(os.path.join(self.features_dir, feature_file))
        labels = np.load(os.path.join(self.labels_dir, label_file))
        return torch.from_numpy(features), torch.from_numpy(labels)


def main(args):
    accelerator = Accelerator()
    device = accelerator.device

    latent_size = args.image_size // 8
    model = DiT_models[args.model](input_size=latent_size, num_classes=args.num_classes)
    model = model.to(device)
    ema = deepcopy(model).to(device)
    diffusion = create_diffusion(timestep_respacing="")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)

    features_dir = f"{args.feature_path}/imagenet256_features"
    labels_dir = f"{args.feature_path}/imagenet256_labels"
    dataset = CustomDataset(features_dir, labels_dir)
    loader = DataLoader(
        dataset,
        batch_size=int(args.global_batch_size // accelerator.num_processes),
        shuffle=True,
        num_workers=args.num_workers,
        pin_memory=True,
        drop_last=True
    )

    model.train()
    ema.eval()
    model, opt, loader = accelerator.prepare(model, opt, loader)

    for epoch in range(args.epochs):
        for x, y in loader:
            x = x.to(device).squeeze(dim=1)
            y = y.to(device).squeeze(dim=1)
            t = torch.randint(0, diffusion.num_timesteps, (x.shape[0],), device=device)
            loss_dict = diffusion.training_losses(model, x, t, dict(y=y))
            loss = loss_dict["loss"].mean()
            opt.zero_grad()
            accelerator.backward(loss)
            opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--feature-path", type=str, default="features")
    parser.add_argument("--model", type=str, choices=list(DiT_models.keys()), default="DiT-XL/2")
    parser.add_argument("--image-size", type=int, choices=[256, 512], default=256)
    parser.add_argument("--num-classes", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=1400)
    parser.add_argument("--global-batch-size", type=int, default=256)
    parser.add_argument("--num-workers", type=int, default=4)
    main(parser.parse_args())
