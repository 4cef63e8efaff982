# modelforge's LightningDataModule for neural network potentials (modelforge/dataset/dataset.py): setup()
# loads the cached torch dataset and splits it with a splitting-strategy object; train_dataloader()
# returns a DataLoader over self.train_dataset with a custom collate function and no shuffle.
# evidence: choderalab/modelforge#129 ("Bugfix: training set was not shuffled at each epoch": "I was making
# a wrong assumption about the PyTorch dataset class's default behavior, which does not shuffle by
# default"; merged, commit 559bf724c3f3bb0437610afcb47c189d581530dc adds shuffle=True)
from typing import Dict, List, Optional

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from modelforge.dataset.utils import RandomRecordSplittingStrategy


class DataModule(pl.LightningDataModule):
    def __init__(self, name: str, splitting_strategy=RandomRecordSplittingStrategy(), batch_size: int = 64):
        super().__init__()
        self.name = name
        self.batch_size = batch_size
        self.splitting_strategy = splitting_strategy

    def setup(self, stage: Optional[str] = None) -> None:
        self.torch_dataset = torch.load("torch_dataset.pt")
        self.dataset_statistics = torch.load("dataset_statistics.pt")
        self.train_dataset, self.val_dataset, self.test_dataset = (
            self.splitting_strategy.split(self.torch_dataset)
        )

    def train_dataloader(self) -> DataLoader:
        return DataLoader(  # BUG TL203: the training loader is not shuffled
            self.train_dataset,
            batch_size=self.batch_size,
            collate_fn=collate_conformers,
            num_workers=4,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(
            self.val_dataset,
            batch_size=self.batch_size,
            collate_fn=collate_conformers,
            num_workers=4,
        )


def collate_conformers(conf_list: List[Dict[str, torch.Tensor]]):
    atomic_numbers = torch.cat([conf["atomic_numbers"] for conf in conf_list])
    positions = torch.cat([conf["positions"] for conf in conf_list]).requires_grad_(True)
    energies = torch.stack([conf["E"] for conf in conf_list])
    return {"atomic_numbers": atomic_numbers, "positions": positions, "E": energies}
