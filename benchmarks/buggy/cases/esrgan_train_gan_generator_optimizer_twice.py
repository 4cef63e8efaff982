# ESRGAN-PyTorch's GAN training script (train_gan.py): main() builds the generator and discriminator
# optimizers with a helper that returns both, then calls train(...) once per epoch with the optimizers as
# positional arguments; the call passes `g_optimizer` twice, so inside train() the discriminator's
# `scaler.step(d_optimizer)` steps the generator's optimizer and the discriminator never learns. (The
# model, data and loss builders are shortened here; the form of the call and of train() is the script's.)
# evidence: Lornatang/ESRGAN-PyTorch#39 ("line 147 and 148 in train_gan.py are all g_optimizer, I wonder
# the second should be d_optimizer?"; the author: "Yeah! You are right. Thank you for pointing out the
# mistake."), fixed in Lornatang/ESRGAN-PyTorch@0b0c7d4f4a003d3085f8917d467ef436f33878f8
import torch
from torch import nn, optim
from torch.cuda import amp
from torch.optim import lr_scheduler

import model
from dataset import CUDAPrefetcher


def define_optimizer(g_model: nn.Module, d_model: nn.Module, config) -> [optim.Adam, optim.Adam]:
    g_optimizer = optim.Adam(g_model.parameters(), config["TRAIN"]["OPTIM"]["LR"], config["TRAIN"]["OPTIM"]["BETAS"])
    d_optimizer = optim.Adam(d_model.parameters(), config["TRAIN"]["OPTIM"]["LR"], config["TRAIN"]["OPTIM"]["BETAS"])
    return g_optimizer, d_optimizer


def train(g_model, d_model, train_data_prefetcher, pixel_criterion, adversarial_criterion,
          g_optimizer: optim.Adam, d_optimizer: optim.Adam, epoch: int, scaler: amp.GradScaler, device):
    g_model.train()
    d_model.train()
    train_data_prefetcher.reset()
    batch_data = train_data_prefetcher.next()
    batch_size = batch_data["gt"].shape[0]
    real_label = torch.full([batch_size, 1], 1.0, dtype=torch.float, device=device)
    fake_label = torch.full([batch_size, 1], 0.0, dtype=torch.float, device=device)
    while batch_data is not None:
        gt = batch_data["gt"].to(device, non_blocking=True)
        lr = batch_data["lr"].to(device, non_blocking=True)

        for d_parameters in d_model.parameters():
            d_parameters.requires_grad = False
        g_model.zero_grad(set_to_none=True)
        with amp.autocast():
            sr = g_model(lr)
            gt_output = d_model(gt.detach().clone())
            sr_output = d_model(sr)
            pixel_loss = pixel_criterion(sr, gt)
            adversarial_loss = adversarial_criterion(sr_output - torch.mean(gt_output), real_label)
            g_loss = pixel_loss + adversarial_loss
        scaler.scale(g_loss).backward()
        scaler.step(g_optimizer)
        scaler.update()

        for d_parameters in d_model.parameters():
            d_parameters.requires_grad = True
        d_model.zero_grad(set_to_none=True)
        with amp.autocast():
            gt_output = d_model(gt)
            sr_output = d_model(sr.detach().clone())
            d_loss_gt = adversarial_criterion(gt_output - torch.mean(sr_output), real_label) * 0.5
            d_loss_sr = adversarial_criterion(sr_output - torch.mean(gt_output), fake_label) * 0.5
        scaler.scale(d_loss_gt + d_loss_sr).backward()
        scaler.step(d_optimizer)
        scaler.update()

        batch_data = train_data_prefetcher.next()


def main(config, device):
    scaler = amp.GradScaler()
    train_data_prefetcher = CUDAPrefetcher(config, device)
    g_model = model.rrdbnet_x4().to(device)
    d_model = model.discriminator_for_vgg().to(device)
    pixel_criterion = nn.L1Loss().to(device)
    adversarial_criterion = nn.BCEWithLogitsLoss().to(device)
    g_optimizer, d_optimizer = define_optimizer(g_model, d_model, config)
    g_scheduler = lr_scheduler.MultiStepLR(g_optimizer, config["TRAIN"]["LR_SCHEDULER"]["MILESTONES"])
    d_scheduler = lr_scheduler.MultiStepLR(d_optimizer, config["TRAIN"]["LR_SCHEDULER"]["MILESTONES"])

    for epoch in range(0, config["TRAIN"]["HYP"]["EPOCHS"]):
        train(g_model,
              d_model,
              train_data_prefetcher,
              pixel_criterion,
              adversarial_criterion,
              g_optimizer,
              g_optimizer,  # BUG TL590: the generator's optimizer handed in as the discriminator's: the discriminator's step moves the generator, the discriminator never learns
              epoch,
              scaler,
              device)
        g_scheduler.step()
        d_scheduler.step()
