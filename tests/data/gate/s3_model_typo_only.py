# TL305: a misspelt `requires_grad` is reported on its own (no Trainer, no optimizer, no `fit`).
import torch

layer = torch.nn.Linear(4, 2)
layer.weight.requires_gradient = False
