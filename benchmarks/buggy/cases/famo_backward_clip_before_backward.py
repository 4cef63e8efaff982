# FAMO's multitask loss weighting (famo.py): FAMO.backward() builds the weighted loss and, when max_norm > 0
# and the shared parameters are given, clips their gradient norm, then calls loss.backward(): the clip runs on
# the gradients left from before (zeroed by the caller), and the gradient that the optimizer then uses is
# never clipped. (The module's example loop follows it.)
# evidence: Cranial-XIX/FAMO#4 ("Why should `clip_grad_norm_` before `loss.backward()`?"; the author: "Woof,
# thanks for catching this bug, it should be after ..."), fixed in
# Cranial-XIX/FAMO@250873e763412f7460c05877491d383645bf3fde ("fix example famo grad clip")
from typing import List, Union

import torch
import torch.nn.functional as F


class FAMO:
    def __init__(self, n_tasks: int, device: torch.device, gamma: float = 0.01, w_lr: float = 0.025,
                 max_norm: float = 1.0):
        self.min_losses = torch.zeros(n_tasks).to(device)
        self.w = torch.tensor([0.0] * n_tasks, device=device, requires_grad=True)
        self.w_opt = torch.optim.Adam([self.w], lr=w_lr, weight_decay=gamma)
        self.max_norm = max_norm
        self.n_tasks = n_tasks
        self.device = device

    def get_weighted_loss(self, losses):
        self.prev_loss = losses
        z = F.softmax(self.w, -1)
        D = losses - self.min_losses + 1e-8
        c = (z / D).sum().detach()
        loss = (D.log() * z / c).sum()
        return loss

    def update(self, curr_loss):
        delta = (self.prev_loss - self.min_losses + 1e-8).log() - (curr_loss - self.min_losses + 1e-8).log()
        with torch.enable_grad():
            d = torch.autograd.grad(F.softmax(self.w, -1), self.w, grad_outputs=delta.detach())[0]
        self.w_opt.zero_grad()
        self.w.grad = d
        self.w_opt.step()

    def backward(self, losses: torch.Tensor,
                 shared_parameters: Union[List[torch.nn.parameter.Parameter], torch.Tensor] = None):
        loss = self.get_weighted_loss(losses=losses)
        if self.max_norm > 0 and shared_parameters is not None:
            torch.nn.utils.clip_grad_norm_(shared_parameters, self.max_norm)  # BUG TL792: clipped before loss.backward(): the gradient the optimizer uses is never clipped
        loss.backward()
        return loss


if __name__ == "__main__":
    n, dim, K = 1000, 20, 100
    X = torch.randn(n, dim)
    Y = torch.randn(n, K)
    model = torch.nn.Linear(dim, K)
    weight_opt = FAMO(n_tasks=K, device="cpu")
    opt = torch.optim.Adam(model.parameters())
    for it in range(100):
        loss = (Y - model(X)).pow(2).mean(0)
        opt.zero_grad()
        weight_opt.backward(loss)
        opt.step()
        with torch.no_grad():
            new_loss = (Y - model(X)).pow(2).mean(0)
            weight_opt.update(new_loss)
