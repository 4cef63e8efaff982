# A fully-convolutional-network segmentation package's Trainer class (torchfcn/trainer.py, PyTorch 0.2/0.3
# API: Variable(volatile=True)): `train_epoch()` calls `self.model.train()` once, then `self.validate()`
# every `interval_validate` iterations inside the batch loop; `validate()` sets `self.model.eval()` and
# never switches back, so after the first validation the FCN (VGG16 with dropout in fc6/fc7) trains in
# eval mode until the next epoch.
# evidence: wkentaro/pytorch-fcn#56 ("Return to train mode after validation": validation can occur before the
# end of an epoch and sets the model to eval mode), fixed in
# wkentaro/pytorch-fcn@d10dd3062824195fe5cc9d196b4af4081247bb3f ("Check training mode in the Trainer":
# validate() restores train mode, train_epoch() asserts it)
import datetime
import math
import os
import os.path as osp

import numpy as np
import torch
from torch.autograd import Variable
import torch.nn.functional as F
import tqdm

import torchfcn


def cross_entropy2d(input, target, weight=None, size_average=True):
    n, c, h, w = input.size()
    log_p = F.log_softmax(input, dim=1)
    log_p = log_p.transpose(1, 2).transpose(2, 3).contiguous()
    log_p = log_p[target.view(n, h, w, 1).repeat(1, 1, 1, c) >= 0]
    log_p = log_p.view(-1, c)
    mask = target >= 0
    target = target[mask]
    loss = F.nll_loss(log_p, target, weight=weight, size_average=False)
    if size_average:
        loss /= mask.data.sum()
    return loss


class Trainer(object):

    def __init__(self, cuda, model, optimizer, train_loader, val_loader, out, max_iter,
                 size_average=False, interval_validate=None):
        self.cuda = cuda
        self.model = model
        self.optim = optimizer
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.size_average = size_average
        if interval_validate is None:
            self.interval_validate = len(self.train_loader)
        else:
            self.interval_validate = interval_validate
        self.out = out
        if not osp.exists(self.out):
            os.makedirs(self.out)
        self.epoch = 0
        self.iteration = 0
        self.max_iter = max_iter
        self.best_mean_iu = 0

    def validate(self):
        self.model.eval()

        n_class = len(self.val_loader.dataset.class_names)
        val_loss = 0
        label_trues, label_preds = [], []
        for batch_idx, (data, target) in tqdm.tqdm(enumerate(self.val_loader), total=len(self.val_loader),
                                                   desc="Valid iteration=%d" % self.iteration, ncols=80, leave=False):
            if self.cuda:
                data, target = data.cuda(), target.cuda()
            data, target = Variable(data, volatile=True), Variable(target)
            score = self.model(data)

            loss = cross_entropy2d(score, target, size_average=self.size_average)
            if np.isnan(float(loss.data[0])):
                raise ValueError("loss is nan while validating")
            val_loss += float(loss.data[0]) / len(data)

            lbl_pred = score.data.max(1)[1].cpu().numpy()[:, :, :]
            lbl_true = target.data.cpu()
            for lt, lp in zip(lbl_true, lbl_pred):
                label_trues.append(lt)
                label_preds.append(lp)
        metrics = torchfcn.utils.label_accuracy_score(label_trues, label_preds, n_class)
        val_loss /= len(self.val_loader)

        mean_iu = metrics[2]
        if mean_iu > self.best_mean_iu:
            self.best_mean_iu = mean_iu
        torch.save({
            "epoch": self.epoch,
            "iteration": self.iteration,
            "optim_state_dict": self.optim.state_dict(),
            "model_state_dict": self.model.state_dict(),
            "best_mean_iu": self.best_mean_iu,
        }, osp.join(self.out, "checkpoint.pth.tar"))

    def train_epoch(self):
        self.model.train()

        n_class = len(self.train_loader.dataset.class_names)

        for batch_idx, (data, target) in tqdm.tqdm(enumerate(self.train_loader), total=len(self.train_loader),
                                                   desc="Train epoch=%d" % self.epoch, ncols=80, leave=False):
            iteration = batch_idx + self.epoch * len(self.train_loader)
            if self.iteration != 0 and (iteration - 1) != self.iteration:
                continue  # for resuming
            self.iteration = iteration

            if self.iteration % self.interval_validate == 0:
                self.validate()  # BUG TL702: validate() leaves the model in eval mode: the rest of the epoch trains without dropout

            if self.cuda:
                data, target = data.cuda(), target.cuda()
            data, target = Variable(data), Variable(target)
            self.optim.zero_grad()
            score = self.model(data)

            loss = cross_entropy2d(score, target, size_average=self.size_average)
            loss /= len(data)
            if np.isnan(float(loss.data[0])):
                raise ValueError("loss is nan while training")
            loss.backward()
            self.optim.step()

            if self.iteration >= self.max_iter:
                break

    def train(self):
        max_epoch = int(math.ceil(1.0 * self.max_iter / len(self.train_loader)))
        for epoch in tqdm.trange(self.epoch, max_epoch, desc="Train", ncols=80):
            self.epoch = epoch
            self.train_epoch()
            if self.iteration >= self.max_iter:
                break
