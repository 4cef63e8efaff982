# An in-domain GAN inversion reproduction (training/training_loop_encoder.py): per batch the discriminator
# is updated (`D_loss.backward(); optimizer_D.step()`), then the encoder (`optimizer_E.zero_grad();
# E_loss.backward(); optimizer_E.step()`). Only the encoder's optimizer is cleared: the discriminator's
# gradients pile up over the steps (and receive the adversarial term of the encoder's loss too).
# evidence: Hsintien-Ng/idinvert_pytorch-reproduced#1 ("optimizer_D.zero_grad() missing?"; the author: "You're
# right. Sorry I forgot to add it. I have fixed it."), fixed in
# Hsintien-Ng/idinvert_pytorch-reproduced@cf3302510573138cf16202add06feae7c93624ea ("fix zero_grad() on D")
from datasets.celebahq import CelebaHQ
from models.stylegan_generator import StyleGANGenerator
from models.stylegan_encoder import StyleGANEncoder
from models.perceptual_model import PerceptualModel
from models.stylegan_discriminator import StyleGANDiscriminator
from training.misc import EasyDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


def GAN_loss(scores_out, real=True):
    if real:
        return torch.mean(F.softplus(-scores_out))
    else:
        return torch.mean(F.softplus(scores_out))


def training_loop(config, dataset_args={}, E_lr_args=EasyDict(), D_lr_args=EasyDict(), opt_args=EasyDict(),
                  E_loss_args=EasyDict(), D_loss_args=EasyDict(), max_epoch=50):
    loss_pix_weight = E_loss_args.loss_pix_weight
    loss_feat_weight = E_loss_args.loss_feat_weight
    loss_adv_weight = E_loss_args.loss_adv_weight
    loss_real_weight = D_loss_args.loss_real_weight
    loss_fake_weight = D_loss_args.loss_fake_weight

    train_dataset = CelebaHQ(dataset_args, train=True)
    train_dataloader = DataLoader(train_dataset, batch_size=config.train_batch_size, shuffle=True)

    G = StyleGANGenerator(config.model_name, None, gpu_ids=config.gpu_ids)
    E = StyleGANEncoder(config.model_name, None, gpu_ids=config.gpu_ids)
    F = PerceptualModel(min_val=G.min_val, max_val=G.max_val, gpu_ids=config.gpu_ids)
    D = StyleGANDiscriminator(config.model_name, None, gpu_ids=config.gpu_ids)
    G.net.synthesis.eval()
    E.net.train()
    F.net.eval()
    D.net.train()
    encode_dim = [G.num_layers, G.w_space_dim]

    optimizer_E = torch.optim.Adam(E.net.parameters(), lr=E_lr_args.learning_rate, **opt_args)
    optimizer_D = torch.optim.Adam(D.net.parameters(), lr=D_lr_args.learning_rate, **opt_args)

    for epoch in range(max_epoch):
        for step, items in enumerate(train_dataloader):
            E.net.train()
            x = items.float().cuda()
            batch_size = x.shape[0]
            z = E.net(x).view(batch_size, *encode_dim)
            x_rec = G.net.synthesis(z)

            # optimizing D
            x_real = D.net(x)
            x_fake = D.net(x_rec.detach())
            loss_real = GAN_loss(x_real, real=True)
            loss_fake = GAN_loss(x_fake, real=False)
            D_loss = loss_real_weight * loss_real + loss_fake_weight * loss_fake
            D_loss.backward()
            optimizer_D.step()  # BUG TL701: optimizer_D is never cleared: D's gradients accumulate step after step

            # optimizing E
            loss_pix = torch.mean((x - x_rec) ** 2)
            x_feat = F.net(x)
            x_rec_feat = F.net(x_rec)
            loss_feat = torch.mean((x_feat - x_rec_feat) ** 2)
            x_adv = D.net(x_rec)
            loss_adv = GAN_loss(x_adv, real=True)
            E_loss = loss_pix_weight * loss_pix + loss_feat_weight * loss_feat + loss_adv_weight * loss_adv
            optimizer_E.zero_grad()
            E_loss.backward()
            optimizer_E.step()
