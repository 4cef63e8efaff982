# KPConv.pytorch's Trainer (trainer.py): an object built from an `args` namespace holding model, optimizer and
# both loaders; train() evaluates every few epochs through self.evaluate(), which sizes its loop on the test
# set but iterates `self.train_loader.__iter__()`: the reported validation loss, accuracy and IoU (and the
# best-model snapshots chosen from them) are measured on training data.
# evidence: XuyangBai/KPConv.pytorch#3 ("Evaluate on train?": test_loader_iter = self.train_loader.__iter__();
# the author: "That should be a mistake. I will fix it."), commit
# XuyangBai/KPConv.pytorch@d6fe0a71c00e10d4c90dbf49563e1d049e38ffe8
import numpy as np
import torch
from utils.metrics import calculate_acc, calculate_iou


class Trainer(object):
    def __init__(self, args):
        self.config = args.config
        self.start_epoch = args.start_epoch
        self.epoch = args.epoch
        self.device = args.device
        self.best_iou = 0
        self.best_loss = 10000000
        self.model = args.model.to(self.device)
        self.optimizer = args.optimizer
        self.scheduler = args.scheduler
        self.scheduler_interval = args.scheduler_interval
        self.evaluate_interval = args.evaluate_interval
        self.evaluate_metric = args.evaluate_metric
        self.train_loader = args.train_loader
        self.test_loader = args.test_loader

    def train(self):
        self.model.train()
        res = self.evaluate(self.start_epoch)
        for epoch in range(self.start_epoch, self.epoch):
            self.train_epoch(epoch)
            if (epoch + 1) % self.evaluate_interval == 0 or epoch == 0:
                res = self.evaluate(epoch + 1)
                if res['loss'] < self.best_loss:
                    self.best_loss = res['loss']
                    self._snapshot(epoch + 1, 'best_loss')
                if res['iou'] > self.best_iou:
                    self.best_iou = res['iou']
                    self._snapshot(epoch + 1, 'best_iou')
            if (epoch + 1) % self.scheduler_interval == 0:
                self.scheduler.step()

    def train_epoch(self, epoch):
        num_iter = int(len(self.train_loader.dataset) // self.train_loader.batch_size)
        train_loader_iter = self.train_loader.__iter__()
        for iter in range(num_iter):
            inputs = train_loader_iter.next()
            for k, v in inputs.items():
                inputs[k] = [item.to(self.device) for item in v] if type(v) == list else v.to(self.device)
            self.optimizer.zero_grad()
            predict = self.model(inputs)
            labels = inputs['labels'].long().squeeze()
            loss = self.evaluate_metric(predict, labels)
            loss.backward()
            self.optimizer.step()

    def evaluate(self, epoch):
        losses, accs, ious = [], [], []
        num_iter = int(len(self.test_loader.dataset) // self.train_loader.batch_size)
        test_loader_iter = self.train_loader.__iter__()  # BUG TL608: the evaluation iterates the training loader: validation metrics are measured on training data
        for iter in range(num_iter):
            inputs = test_loader_iter.next()
            for k, v in inputs.items():
                inputs[k] = [item.to(self.device) for item in v] if type(v) == list else v.to(self.device)
            predict = self.model(inputs)
            labels = inputs['labels'].long().squeeze()
            losses.append(float(self.evaluate_metric(predict, labels)))
            accs.append(float(calculate_acc(predict, labels)))
            ious.append(float(np.mean(calculate_iou(predict, labels, stack_lengths=inputs['stack_lengths'][0],
                                                    n_parts=self.config.num_classes))))
        self.model.train()
        return {'iou': np.mean(ious), 'loss': np.mean(losses), 'accuracy': np.mean(accs)}

    def _snapshot(self, epoch, name=None):
        torch.save(self.model.state_dict(), f"model_{name or epoch}.pth")
