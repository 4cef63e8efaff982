# A tennis-court keypoint detector's training function (base_trainer.py): `train(model, train_loader,
# optimizer, ...)` receives the optimizer from the main script (`torch.optim.Adam(model.parameters(), ...)`)
# and runs backward and step every batch, without ever clearing the gradients.
# evidence: yastrebksv/TennisCourtDetector#7 ("Why there is no optimizer.zero_grad() in base_trainer.py?";
# the author: "You are right, thanks! I fixed it."), fixed in
# yastrebksv/TennisCourtDetector@e5cd4f1ce26b15361700d3d89e068cbf0e82749e ("added optimizer.zero_grad")
import torch.nn.functional as F
import numpy as np


def train(model, train_loader, optimizer, criterion, device, epoch, max_iters=1000):
    model.train()
    losses = []
    max_iters = min(max_iters, len(train_loader))

    for iter_id, batch in enumerate(train_loader):
        out = model(batch[0].float().to(device))
        gt_hm_hp = batch[1].float().to(device)
        loss = criterion(F.sigmoid(out), gt_hm_hp)

        loss.backward()
        optimizer.step()  # BUG TL701: no zero_grad anywhere: every step adds the gradients of all earlier batches
        print("train, epoch = {}, iter_id = {}/{}, loss = {}".format(epoch, iter_id, max_iters, loss.item()))
        losses.append(loss.item())
        if iter_id > max_iters:
            break

    return np.mean(losses)
