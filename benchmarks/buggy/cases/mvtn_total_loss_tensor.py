# A multi-view 3D classification training loop: `total_loss += loss` accumulates tensors with their
# graphs, and the process is killed in the second epoch (memory full).
# evidence: ajhamdi/MVTN#2 ("Memory leak": changed "total_loss += loss" to "total_loss += loss.item()",
# the author updated the code)
import torch
import torch.nn as nn


def train(data_loader, models_bag, setup):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(models_bag["mvnetwork"].parameters(), lr=setup["learning_rate"])
    total_loss = 0.0
    n = 0
    models_bag["mvnetwork"].train()
    for i, (targets, meshes, points) in enumerate(data_loader):
        optimizer.zero_grad()
        outputs = models_bag["mvnetwork"](points.cuda())
        loss = criterion(outputs, targets.cuda().long())
        total_loss += loss  # BUG TL703: the loss tensor (with its graph) is accumulated
        n += 1
        loss.backward()
        optimizer.step()
    return total_loss / n
