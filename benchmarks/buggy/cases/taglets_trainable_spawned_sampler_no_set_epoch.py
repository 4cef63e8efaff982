# TAGLETS' Trainable class (taglets/pipeline/trainable.py): train() starts workers with mp.spawn on a static
# method _do_train(rank, self, ...), which wraps the model in DistributedDataParallel, builds the training
# loader on a DistributedSampler and runs the epoch loop through self._train_epoch() without set_epoch().
# evidence: BatsResearch/taglets#28 ("Added set_epoch in Trainable to ensure shuffle works with
# DistributedSampler"; merged, commit 3fbe3fc11447439f14043fe4fd26b53c1b40e8c7)
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


class Trainable:
    def __init__(self, task):
        self.task = task
        self.lr = 0.0005
        self.criterion = torch.nn.CrossEntropyLoss()
        self.num_epochs = 50
        self.batch_size = 32
        self.n_proc = 1
        self.model = task.get_initial_model()
        params_to_update = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(params_to_update, lr=self.lr, weight_decay=1e-4)
        self.lr_scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=20, gamma=0.1)

    def train(self, train_data, val_data, use_gpu):
        os.environ['MASTER_ADDR'] = '127.0.0.1'
        os.environ['MASTER_PORT'] = '8888'
        args = (self, train_data, val_data, use_gpu, self.n_proc)
        mp.spawn(self._do_train, nprocs=self.n_proc, args=args)

    @staticmethod
    def _do_train(rank, self, train_data, val_data, use_gpu, n_proc):
        backend = 'nccl' if use_gpu else 'gloo'
        dist.init_process_group(backend=backend, init_method='env://', world_size=n_proc, rank=rank)
        if use_gpu:
            self.model = self.model.cuda(rank)
            self.model = nn.parallel.DistributedDataParallel(self.model, device_ids=[rank])
        else:
            self.model = nn.parallel.DistributedDataParallel(self.model.cpu(), device_ids=None)

        train_sampler = torch.utils.data.distributed.DistributedSampler(  # BUG TL209: set_epoch() is never called: the same order every epoch
            train_data, num_replicas=n_proc, rank=rank,
        )
        train_data_loader = torch.utils.data.DataLoader(
            dataset=train_data, batch_size=self.batch_size, shuffle=False,
            num_workers=0, pin_memory=True, sampler=train_sampler
        )
        val_sampler = torch.utils.data.distributed.DistributedSampler(val_data, num_replicas=n_proc, rank=rank)
        val_data_loader = torch.utils.data.DataLoader(
            dataset=val_data, batch_size=self.batch_size, shuffle=False,
            num_workers=0, pin_memory=True, sampler=val_sampler
        )

        for epoch in range(self.num_epochs):
            train_loss, train_acc = self._train_epoch(train_data_loader, use_gpu)
            val_loss, val_acc = self._validate_epoch(val_data_loader, use_gpu)
            if self.lr_scheduler:
                self.lr_scheduler.step()

    def _train_epoch(self, train_data_loader, use_gpu):
        self.model.train()
        running_loss = 0
        for batch_idx, batch in enumerate(train_data_loader):
            inputs, labels = batch[0], batch[1]
            if use_gpu:
                inputs, labels = inputs.cuda(), labels.cuda()
            self.optimizer.zero_grad()
            with torch.set_grad_enabled(True):
                outputs = self.model(inputs)
                loss = self.criterion(outputs, labels)
                loss.backward()
                self.optimizer.step()
            running_loss += loss.item()
        return running_loss / len(train_data_loader.dataset), 0

    def _validate_epoch(self, val_data_loader, use_gpu):
        self.model.eval()
        running_loss = 0
        for batch_idx, batch in enumerate(val_data_loader):
            inputs, labels = batch[0], batch[1]
            with torch.set_grad_enabled(False):
                outputs = self.model(inputs)
                running_loss += torch.nn.functional.cross_entropy(outputs, labels).item()
        return running_loss / len(val_data_loader.dataset), 0
