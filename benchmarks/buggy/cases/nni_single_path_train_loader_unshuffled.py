# A one-shot NAS trainer class (NNI Retiarii's SinglePathTrainer, random.py): the trainer builds its own
# training DataLoader from the dataset it is given, without shuffle=True.
# evidence: microsoft/nni#4692 ("shuffle should be set to True in train_loader of SinglePathTrainer"; the
# maintainer: "Excellent. Please open a pull request"), fixed by microsoft/nni#4696 ("[Fix] shuffle is set to
# True in train_loader of SinglePathTrainer", merged)
import logging
import random

import torch
from nni.retiarii.oneshot.interface import BaseOneShotTrainer
from nni.retiarii.oneshot.pytorch.utils import AverageMeterGroup, replace_input_choice, replace_layer_choice, to_device
from nni.retiarii.oneshot.pytorch.random import PathSamplingInputChoice, PathSamplingLayerChoice  # defined next to the trainer

_logger = logging.getLogger(__name__)


class SinglePathTrainer(BaseOneShotTrainer):
    """Samples one path of the supernet at every step and trains that path."""

    def __init__(self, model, loss, metrics,
                 optimizer, num_epochs, dataset_train, dataset_valid,
                 batch_size=64, workers=4, device=None, log_frequency=None):
        self.model = model
        self.loss = loss
        self.metrics = metrics
        self.optimizer = optimizer
        self.num_epochs = num_epochs
        self.dataset_train = dataset_train
        self.dataset_valid = dataset_valid
        self.device = torch.device('cuda' if torch.cuda.is_available() else 'cpu') if device is None else device
        self.log_frequency = log_frequency
        self.model.to(self.device)

        self.nas_modules = []
        replace_layer_choice(self.model, PathSamplingLayerChoice, self.nas_modules)
        replace_input_choice(self.model, PathSamplingInputChoice, self.nas_modules)

        self.train_loader = torch.utils.data.DataLoader(self.dataset_train,  # BUG TL203: the training loader is not shuffled
                                                        batch_size=batch_size,
                                                        num_workers=workers)
        self.valid_loader = torch.utils.data.DataLoader(self.dataset_valid,
                                                        batch_size=batch_size,
                                                        num_workers=workers)

    def _resample(self):
        result = {}
        for name, module in self.nas_modules:
            if name not in result:
                result[name] = random.randint(0, len(module) - 1)
            module.sampled = result[name]
        return result

    def _train_one_epoch(self, epoch):
        self.model.train()
        meters = AverageMeterGroup()
        for step, (x, y) in enumerate(self.train_loader):
            x, y = to_device(x, self.device), to_device(y, self.device)
            self.optimizer.zero_grad()
            self._resample()
            logits = self.model(x)
            loss = self.loss(logits, y)
            loss.backward()
            self.optimizer.step()
            metrics = self.metrics(logits, y)
            metrics["loss"] = loss.item()
            meters.update(metrics)

    def _validate_one_epoch(self, epoch):
        self.model.eval()
        with torch.no_grad():
            for step, (x, y) in enumerate(self.valid_loader):
                x, y = to_device(x, self.device), to_device(y, self.device)
                self._resample()
                logits = self.model(x)
                loss = self.loss(logits, y)

    def fit(self):
        for i in range(self.num_epochs):
            self._train_one_epoch(i)
            self._validate_one_epoch(i)
