# A graph neural network for the quadratic assignment problem (toolbox/losses.py and trainer.py): the
# triplet_loss module takes the softmax of the raw similarity scores and gives those probabilities to its
# nn.CrossEntropyLoss, which applies log-softmax again.
# evidence: mlelarge/graph_neural_net#37 ("Fix bug softmax": "There was a softmax before a crossentropyloss...
# I removed the softmax."; commit 62c6240 "correcting a bug by removing softmax", merged by the author)
import time

import torch
import torch.nn as nn

from toolbox.utils import get_device


class triplet_loss(nn.Module):
    def __init__(self, loss_reduction="mean", loss=nn.CrossEntropyLoss(reduction="sum")):
        super(triplet_loss, self).__init__()
        self.loss = loss
        if loss_reduction == "mean":
            self.increments = lambda new_loss, n_vertices: (new_loss, n_vertices)
        elif loss_reduction == "mean_of_mean":
            self.increments = lambda new_loss, n_vertices: (new_loss / n_vertices, 1)
        else:
            raise ValueError("Unknown loss_reduction parameters {}".format(loss_reduction))

    def forward(self, raw_scores, target_dummy):
        device = get_device(raw_scores)
        loss = 0
        total = 0
        outputs = torch.softmax(raw_scores, -1)  # BUG TL403: probabilities given to nn.CrossEntropyLoss, which expects logits
        for out in outputs:
            n_vertices = out.shape[0]
            ide = torch.arange(n_vertices)
            target = ide.to(device)
            incrs = self.increments(self.loss(out, target), n_vertices)
            loss += incrs[0]
            total += incrs[1]
        return loss / total


def train_triplet(train_loader, model, optimizer, criterion, device, epoch, print_freq=100):
    model.train()
    end = time.time()
    for i, (data, target) in enumerate(train_loader):
        data = data.to(device)
        target_deviced = target.to(device)
        raw_scores = model(data)
        loss = criterion(raw_scores, target_deviced)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (i + 1) % print_freq == 0:
            print("Epoch: [{0}][{1}/{2}]\tTime {3:.3f}\tLoss {4:.4f}".format(
                epoch, i, len(train_loader), time.time() - end, loss.item()))
        end = time.time()
