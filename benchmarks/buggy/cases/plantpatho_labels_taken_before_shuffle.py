# The Kaggle Plant Pathology dataset class of a PyTorch Lightning image classifier
# (kaggle_plantpatho/data.py): the label list is copied from the table, then the table is shuffled and
# split and the image names are read from the shuffled split, while the one-hot labels are still built
# from the copy taken before the shuffle: image i is paired with the label of another row.
# evidence: Borda/kaggle_image-classify#12 ("fix dataset shuffle": "the shuffle was made after taking raw
# labels :/", labelled bug; the author's fix 00083ee moves the shuffle before `self.raw_labels = ...`)
import itertools
import os
from typing import Tuple, Union

import matplotlib.pyplot as plt
import pandas as pd
import torch
from PIL import Image
from torch.utils.data import Dataset


class PlantPathologyDataset(Dataset):
    """The full dataset with one-hot encoding for multi-label case."""

    def __init__(
        self,
        df_data: Union[str, pd.DataFrame] = "train.csv",
        path_img_dir: str = "train_images",
        transforms=None,
        mode: str = "train",
        split: float = 0.8,
        uq_labels: Tuple[str] = None,
        random_state=42,
    ):
        self.path_img_dir = path_img_dir
        self.transforms = transforms
        self.mode = mode
        if isinstance(df_data, pd.DataFrame):
            self.data = df_data
        else:
            self.data = pd.read_csv(df_data)

        self.raw_labels = list(self.data["labels"])
        if uq_labels:
            self.labels_unique = uq_labels
        else:
            labels_all = list(itertools.chain(*[lbs.split(" ") for lbs in self.raw_labels]))
            self.labels_unique = sorted(set(labels_all))
        self.labels_lut = {lb: i for i, lb in enumerate(self.labels_unique)}
        self.num_classes = len(self.labels_unique)

        # shuffle data
        self.data = self.data.sample(frac=1, random_state=random_state).reset_index(drop=True)  # BUG TL104: the rows are shuffled after the labels were copied out in the old order

        # split dataset
        frac = int(split * len(self.data))
        self.data = self.data[:frac] if mode == "train" else self.data[frac:]
        self.img_names = list(self.data["image"])
        self.labels = self._prepare_labels()

    def _prepare_labels(self) -> list:
        return [torch.tensor(self.to_onehot_encoding(lb)) if lb else None for lb in self.raw_labels]

    def to_onehot_encoding(self, labels: str) -> tuple:
        one_hot = [0] * len(self.labels_unique)
        for lb in labels.split(" "):
            one_hot[self.labels_lut[lb]] = 1
        return tuple(one_hot)

    def __getitem__(self, idx: int) -> tuple:
        img_name = self.img_names[idx]
        img_path = os.path.join(self.path_img_dir, img_name)
        label = self.labels[idx]
        img = plt.imread(img_path)
        if self.transforms:
            img = self.transforms(Image.fromarray(img))
        label = label if label is not None else img_name
        return img, label

    def __len__(self) -> int:
        return len(self.data)
