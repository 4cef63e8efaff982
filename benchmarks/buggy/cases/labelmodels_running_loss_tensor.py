# A weak-supervision label model's training loop: the epoch loss is summed as tensors, keeping every
# batch's graph alive until the GPU runs out of memory.
# evidence: BatsResearch/labelmodels#4 ("Memory leak in training loop": running_loss is the sum of
# non-detached tensors; change to running_loss += loss.item())
import torch
from torch.utils.data import DataLoader


def _do_estimate(model, votes, batch_size=64, epochs=5, lr=0.01):
    loader = DataLoader(votes, batch_size=batch_size, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        running_loss = 0.0
        for i_batch, inputs in enumerate(loader):
            optimizer.zero_grad()
            log_likelihood = model(*inputs)
            loss = -1 * torch.mean(log_likelihood)
            loss += model._get_regularization_loss()
            loss.backward()
            optimizer.step()
            running_loss += loss  # BUG TL703: summing the loss tensor keeps each batch's graph alive
        epoch_loss = running_loss / len(loader)
        print("Epoch {}: {}".format(epoch, epoch_loss))
