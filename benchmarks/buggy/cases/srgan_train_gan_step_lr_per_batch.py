# SRGAN-PyTorch's GAN trainer (trainer.py): StepLR schedulers for the discriminator and the generator built
# with step_size=epochs // 2 (a decay halfway through the run, counted in epochs), but train_gan() calls
# `discriminator_scheduler.step()` and `generator_scheduler.step()` at the end of every batch: the rate is
# divided by 10 after a few iterations and the GAN stops learning. (The loss terms and logging are
# shortened here.)
# evidence: Lornatang/SRGAN-PyTorch#1 ("Learning rate scheduler is working incorrect": the schedulers are
# "called at each training step which means that learning rate is quickly becoming zero"; the author:
# "Yeah, I found it. I will fix it."), fixed in Lornatang/SRGAN-PyTorch@4f58b760a03dfb64217733fa1a2adad411987ea4
import math

import torch
import torch.nn as nn
import torch.utils.data
from tqdm import tqdm


def train_gan(epoch: int,
              dataloader: torch.utils.data.DataLoader,
              discriminator: nn.Module,
              generator: nn.Module,
              content_criterion: nn.Module,
              adversarial_criterion: nn.BCELoss,
              discriminator_optimizer: torch.optim.Adam,
              generator_optimizer: torch.optim.Adam,
              discriminator_scheduler: torch.optim.lr_scheduler,
              generator_scheduler: torch.optim.lr_scheduler,
              device: torch.device):
    generator.train()
    discriminator.train()
    progress_bar = tqdm(enumerate(dataloader), total=len(dataloader))
    for i, data in progress_bar:
        lr = data[0].to(device)
        hr = data[1].to(device)
        batch_size = lr.size(0)
        real_label = torch.full((batch_size, 1), 1, dtype=lr.dtype, device=device)
        fake_label = torch.full((batch_size, 1), 0, dtype=lr.dtype, device=device)

        discriminator.zero_grad()
        output = discriminator(hr)
        errD_real = adversarial_criterion(output, real_label)
        errD_real.backward()
        sr = generator(lr)
        output = discriminator(sr.detach())
        errD_fake = adversarial_criterion(output, fake_label)
        errD_fake.backward()
        discriminator_optimizer.step()

        generator.zero_grad()
        content_loss = content_criterion(sr, hr)
        output = discriminator(sr)
        adversarial_loss = adversarial_criterion(output, real_label)
        errG = content_loss + 0.001 * adversarial_loss
        errG.backward()
        generator_optimizer.step()

        # Dynamic adjustment of learning rate
        discriminator_scheduler.step()  # BUG TL790: an epoch-counted StepLR stepped once per batch
        generator_scheduler.step()


class Trainer(object):
    def __init__(self, args, train_dataloader, discriminator, generator, device):
        self.args = args
        self.train_dataloader = train_dataloader
        self.discriminator = discriminator
        self.generator = generator
        self.device = device
        self.epochs = math.ceil(args.iters / len(self.train_dataloader))
        self.discriminator_optimizer = torch.optim.Adam(self.discriminator.parameters(), lr=args.lr, betas=(0.9, 0.999))
        self.generator_optimizer = torch.optim.Adam(self.generator.parameters(), lr=args.lr, betas=(0.9, 0.999))
        self.discriminator_scheduler = torch.optim.lr_scheduler.StepLR(self.discriminator_optimizer,
                                                                       step_size=self.epochs // 2,
                                                                       gamma=0.1)
        self.generator_scheduler = torch.optim.lr_scheduler.StepLR(self.generator_optimizer,
                                                                   step_size=self.epochs // 2,
                                                                   gamma=0.1)
        self.content_criterion = nn.MSELoss().to(device)
        self.adversarial_criterion = nn.BCELoss().to(device)

    def run(self):
        for epoch in range(self.epochs):
            train_gan(epoch=epoch,
                      dataloader=self.train_dataloader,
                      discriminator=self.discriminator,
                      generator=self.generator,
                      content_criterion=self.content_criterion,
                      adversarial_criterion=self.adversarial_criterion,
                      discriminator_optimizer=self.discriminator_optimizer,
                      generator_optimizer=self.generator_optimizer,
                      discriminator_scheduler=self.discriminator_scheduler,
                      generator_scheduler=self.generator_scheduler,
                      device=self.device)
