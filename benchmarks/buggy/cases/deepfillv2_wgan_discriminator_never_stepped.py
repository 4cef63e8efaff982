# DeepFill v2's WGAN trainer (deepfillv2/trainer.py): Adam optimizers for the generator and the
# discriminator; every batch zeroes the discriminator's gradient, computes the WGAN critic loss and calls
# loss_D.backward(), but never `optimizer_d.step()`: the discriminator keeps its initial weights while the
# generator trains against it. (The perceptual network, learning-rate decay and checkpointing are shortened
# here.)
# evidence: zhaoyuzhi/deepfillv2#6 ("Discriminator parameter not update?": "It seems like that you do not
# include optimizer.step in trainer.py"; the author: "Thanks for point it out, you are right. I will add
# it."), fixed in zhaoyuzhi/deepfillv2@0786ae0b49b6c7fa19be1783a18de90246710ea6
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

import dataset
import utils


def WGAN_trainer(opt):
    generator = utils.create_generator(opt).cuda()
    discriminator = utils.create_discriminator(opt).cuda()

    L1Loss = nn.L1Loss()

    optimizer_g = torch.optim.Adam(generator.parameters(), lr = opt.lr_g, betas = (opt.b1, opt.b2), weight_decay = opt.weight_decay)
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr = opt.lr_d, betas = (opt.b1, opt.b2), weight_decay = opt.weight_decay)

    trainset = dataset.InpaintDataset(opt)
    dataloader = DataLoader(trainset, batch_size = opt.batch_size, shuffle = True, num_workers = opt.num_workers, pin_memory = True)

    for epoch in range(opt.epochs):
        for batch_idx, (img, mask) in enumerate(dataloader):
            img = img.cuda()
            mask = mask.cuda()

            ### Train Discriminator
            optimizer_d.zero_grad()
            first_out, second_out = generator(img, mask)
            first_out_wholeimg = img * (1 - mask) + first_out * mask
            second_out_wholeimg = img * (1 - mask) + second_out * mask
            fake_scalar = discriminator(second_out_wholeimg.detach(), mask)
            true_scalar = discriminator(img, mask)
            loss_D = - torch.mean(true_scalar) + torch.mean(fake_scalar)
            loss_D.backward()  # BUG TL591: the discriminator's gradient is computed but optimizer_d.step() is never called

            ### Train Generator
            optimizer_g.zero_grad()
            first_MaskL1Loss = L1Loss(first_out_wholeimg, img)
            second_MaskL1Loss = L1Loss(second_out_wholeimg, img)
            fake_scalar = discriminator(second_out_wholeimg, mask)
            GAN_Loss = - torch.mean(fake_scalar)
            loss = first_MaskL1Loss + second_MaskL1Loss + opt.gan_param * GAN_Loss
            loss.backward()
            optimizer_g.step()
