# ShrinkBench's TrainingExperiment (experiment/train.py): build_dataloader() looks the dataset class up by name
# with getattr(datasets, dataset) and builds both splits from the same constructor, but the validation one
# with `train=True`: every validation epoch of run_epoch(train=False) reports accuracy on the training data.
# evidence: JJGO/shrinkbench#7 ("Fix loading of validation data set": "it seems like the training set is being
# used as the validation set"; the maintainer: "the mistake happened during the release refactor"; merged,
# commit e17fb6c32a67914831f74b46b87b1ed87b49f603)
import torch
import torchvision.models
from torch import nn
from torch.utils.data import DataLoader
from tqdm import tqdm

from .base import Experiment
from .. import datasets
from .. import models
from ..metrics import correct


class TrainingExperiment(Experiment):

    default_dl_kwargs = {'batch_size': 128, 'pin_memory': False, 'num_workers': 8}
    default_train_kwargs = {'optim': 'SGD', 'epochs': 30, 'lr': 1e-3}

    def __init__(self, dataset, model, seed=42, dl_kwargs=dict(), train_kwargs=dict(), pretrained=False):
        super(TrainingExperiment, self).__init__(seed)
        dl_kwargs = {**self.default_dl_kwargs, **dl_kwargs}
        train_kwargs = {**self.default_train_kwargs, **train_kwargs}
        self.build_dataloader(dataset, **dl_kwargs)
        self.build_model(model, pretrained)
        self.build_train(**train_kwargs)

    def build_dataloader(self, dataset, **dl_kwargs):
        constructor = getattr(datasets, dataset)
        self.train_dataset = constructor(train=True)
        self.val_dataset = constructor(train=True)  # BUG TL608: the validation set is built from the training split: validation metrics are measured on training data
        self.train_dl = DataLoader(self.train_dataset, shuffle=True, **dl_kwargs)
        self.val_dl = DataLoader(self.val_dataset, shuffle=False, **dl_kwargs)

    def build_model(self, model, pretrained=True):
        if isinstance(model, str):
            if hasattr(models, model):
                model = getattr(models, model)(pretrained=pretrained)
            else:
                model = getattr(torchvision.models, model)(pretrained=pretrained)
        self.model = model

    def build_train(self, optim, epochs, **optim_kwargs):
        self.epochs = epochs
        constructor = getattr(torch.optim, optim)
        self.optim = constructor(self.model.parameters(), momentum=0.9, nesterov=True, **optim_kwargs)
        self.loss_func = nn.CrossEntropyLoss()

    def run_epochs(self):
        for epoch in range(self.epochs):
            self.run_epoch(True, epoch)
            self.run_epoch(False, epoch)

    def run_epoch(self, train, epoch=0):
        if train:
            self.model.train()
            dl = self.train_dl
        else:
            dl = self.val_dl
            self.model.eval()
        with torch.set_grad_enabled(train):
            for i, (x, y) in enumerate(tqdm(dl), start=1):
                yhat = self.model(x)
                loss = self.loss_func(yhat, y)
                if train:
                    loss.backward()
                    self.optim.step()
                    self.optim.zero_grad()
                c1, c5 = correct(yhat, y, (1, 5))
