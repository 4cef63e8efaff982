"""TL104 through aliased listings (`from os import listdir as ls`, pathlib's `rglob`), a pairing by
`TensorDataset`, and a lone `permutation` imported from `numpy.random`."""
from os import listdir as ls
from pathlib import Path

import torch
from numpy.random import permutation
from torch.utils.data import TensorDataset


def load(p):
    return p


images = ls("data/images")
labels = torch.load("labels.pt")
pairs = list(zip(images, labels))

masks = Path("data/masks").rglob("*.png")
frames = [load(p) for p in Path("data/frames").iterdir()]
pairs2 = list(zip(masks, frames))

feats = torch.load("feats.pt")
targets = torch.load("targets.pt")
feats = permutation(feats)
ds = TensorDataset(feats, targets)
