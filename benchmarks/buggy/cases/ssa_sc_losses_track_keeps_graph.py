# The semantic scene completion network SSA-SC (networks/train_SSA_SC.py with the LossesTrackEpoch helper of
# networks/common/metrics.py, inherited from LMSCNet): after each backward the loss dict is handed to
# update_train_losses, which adds the loss tensors themselves to running sums, so every batch's graph stays
# referenced for the whole epoch and GPU memory keeps rising.
# evidence: jokester-zzz/SSA-SC#2 ("Continuous rising of GPU memory": "it should be loss[key].item()"; the
# author: "changing to loss[key].item() would be more elegant and reasonable. Thank you for your attention
# and correction.")
import torch


class LossesTrackEpoch:
    def __init__(self, num_iterations):
        self.num_iterations = num_iterations
        self.train_losses = {}
        self.train_iteration_counts = 0

    def set_train_losses(self, keys):
        for key in keys:
            self.train_losses[key] = 0

    def update_train_losses(self, loss):
        for key in loss:
            self.train_losses[key] += loss[key]  # BUG TL703: the loss tensors (with their graphs) are summed across the epoch
        self.train_iteration_counts += 1

    def restart_train_losses(self):
        for key in self.train_losses.keys():
            self.train_losses[key] = 0
        self.train_iteration_counts = 0


def train(model, optimizer, scheduler, dataset, device, nbr_epochs, start_epoch=1):
    model = model.to(device=device)
    dset = dataset["train"]
    losses_track = LossesTrackEpoch(len(dset))
    losses_track.set_train_losses(model.get_train_loss_keys())
    for epoch in range(start_epoch, nbr_epochs + 1):
        model.train()
        for t, (data, indices) in enumerate(dset):
            data = {k: v.to(device) for k, v in data.items()}
            scores = model(data)
            loss = model.compute_loss(scores, data)
            optimizer.zero_grad()
            loss["total"].backward()
            optimizer.step()
            scheduler.step()
            losses_track.update_train_losses(loss)
        epoch_loss = losses_track.train_losses["total"] / losses_track.train_iteration_counts
        print(epoch, epoch_loss.item())
        losses_track.restart_train_losses()
