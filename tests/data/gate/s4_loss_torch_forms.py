# TL403 through less common spellings: `torch.special.expit` before the functional
# `binary_cross_entropy_with_logits`, an `nn.Sequential` ending in `nn.Softmax` before `nll_loss`,
# and `self.criterion` holding the loss module with `x.softmax(-1)` as input.
import torch
from torch import nn
from torch.nn import functional as F

net = nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=1))


def step(x, y, logits):
    a = F.binary_cross_entropy_with_logits(torch.special.expit(logits), y)
    b = F.nll_loss(net(x), y)
    return a + b


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss()

    def loss(self, logits, y):
        return self.criterion(logits.softmax(-1), y)
