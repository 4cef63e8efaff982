# Casanovo's de novo peptide sequencing data module (casanovo/denovo/dataloaders.py): one private helper,
# _make_loader(dataset, batch_size), builds every DataLoader; train_dataloader() returns
# self._make_loader(self.train_dataset, ...), so the training spectra are never shuffled.
# evidence: Noble-Lab/casanovo#234 ("Added shuffling to trainset dataloaders": "By default casanovo does
# not shuffle the dataloaders' batches"; labelled bug, merged by the maintainer)
import functools
import os

import lightning.pytorch as pl
import numpy as np
import torch
from depthcharge.data import AnnotatedSpectrumIndex

from ..data.datasets import AnnotatedSpectrumDataset, SpectrumDataset


class DeNovoDataModule(pl.LightningDataModule):
    def __init__(self, train_index=None, valid_index=None, test_index=None, train_batch_size=128,
                 eval_batch_size=1028, n_peaks=150, min_mz=50.0, max_mz=2500.0, n_workers=None,
                 random_state=None):
        super().__init__()
        self.train_index = train_index
        self.valid_index = valid_index
        self.test_index = test_index
        self.train_batch_size = train_batch_size
        self.eval_batch_size = eval_batch_size
        self.n_peaks = n_peaks
        self.min_mz = min_mz
        self.max_mz = max_mz
        self.n_workers = n_workers if n_workers is not None else os.cpu_count()
        self.rng = np.random.default_rng(random_state)
        self.train_dataset = None
        self.valid_dataset = None
        self.test_dataset = None

    def setup(self, stage=None, annotated=True):
        if stage in (None, "fit", "validate"):
            make_dataset = functools.partial(AnnotatedSpectrumDataset, n_peaks=self.n_peaks,
                                             min_mz=self.min_mz, max_mz=self.max_mz)
            if self.train_index is not None:
                self.train_dataset = make_dataset(self.train_index, random_state=self.rng)
            if self.valid_index is not None:
                self.valid_dataset = make_dataset(self.valid_index)
        if stage in (None, "test"):
            make_dataset = functools.partial(AnnotatedSpectrumDataset if annotated else SpectrumDataset,
                                             n_peaks=self.n_peaks, min_mz=self.min_mz, max_mz=self.max_mz)
            if self.test_index is not None:
                self.test_dataset = make_dataset(self.test_index)

    def _make_loader(self, dataset, batch_size):
        return torch.utils.data.DataLoader(  # BUG TL203: the training loader (built here for train_dataloader) is not shuffled
            dataset,
            batch_size=batch_size,
            collate_fn=prepare_batch,
            pin_memory=True,
            num_workers=self.n_workers,
        )

    def train_dataloader(self):
        return self._make_loader(self.train_dataset, self.train_batch_size)

    def val_dataloader(self):
        return self._make_loader(self.valid_dataset, self.eval_batch_size)

    def test_dataloader(self):
        return self._make_loader(self.test_dataset, self.eval_batch_size)


def prepare_batch(batch):
    spectra, precursor_mzs, precursor_charges, spectrum_ids = list(zip(*batch))
    spectra = torch.nn.utils.rnn.pad_sequence(spectra, batch_first=True)
    precursors = torch.vstack([torch.tensor(precursor_mzs), torch.tensor(precursor_charges)]).T.float()
    return spectra, precursors, np.asarray(spectrum_ids)
