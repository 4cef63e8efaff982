# A lip-sync forgery detector's trainer (trainer/trainer.py): with --fix_encoder (the default) the
# loop over named_parameters() is meant to freeze the CLIP encoder only, but both branches set
# requires_grad = False, so every parameter is frozen before the optimizer is built on all of them.
# evidence: AaronComo/LipFD#18 ("RuntimeError: element 0 of tensors does not require grad and does not have a
# grad_fn" when training; the reporter: fixed by changing trainer/trainer.py line 37 into p.requires_grad = True,
# "I am pretty sure it is a typo")
import argparse
import os
import torch
import torch.nn as nn
from models import build_model, get_loss


class Trainer(nn.Module):
    def __init__(self, opt):
        self.opt = opt
        self.total_steps = 0
        self.device = torch.device("cuda:{}".format(opt.gpu_ids[0])) if opt.gpu_ids else torch.device("cpu")
        self.model = build_model(opt.arch)

        if opt.fix_encoder:
            params = []
            for name, p in self.model.named_parameters():
                if name.split(".")[0] in ["encoder"]:
                    p.requires_grad = False
                else:
                    p.requires_grad = False  # BUG TL305: the non-encoder parameters are frozen too: nothing is left to train
            params = self.model.parameters()

        if opt.optim == "adam":
            self.optimizer = torch.optim.AdamW(params, lr=opt.lr, betas=(opt.beta1, 0.999), weight_decay=opt.weight_decay)
        elif opt.optim == "sgd":
            self.optimizer = torch.optim.SGD(params, lr=opt.lr, momentum=0.0, weight_decay=opt.weight_decay)
        else:
            raise ValueError("optim should be [adam, sgd]")

        self.criterion = get_loss().to(self.device)
        self.criterion1 = nn.CrossEntropyLoss()
        self.model.to(self.device)

    def set_input(self, input):
        self.input = input[0].to(self.device)
        self.crops = [[t.to(self.device) for t in sublist] for sublist in input[1]]
        self.label = input[2].to(self.device).float()

    def forward(self):
        self.features = self.model.get_features(self.input).to(self.device)
        self.output, self.weights_max, self.weights_org = self.model.forward(self.crops, self.features)
        self.output = self.output.view(-1)
        self.loss = self.criterion(self.weights_max, self.weights_org) + self.criterion1(self.output, self.label)

    def optimize_parameters(self):
        self.model.train()
        self.forward()
        self.optimizer.zero_grad()
        self.loss.backward()
        self.optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", type=str, default="CLIP:ViT-L/14")
    parser.add_argument("--fix_encoder", default=True)
    parser.add_argument("--optim", type=str, default="adam")
    parser.add_argument("--lr", type=float, default=2e-9)
    parser.add_argument("--beta1", type=float, default=0.9)
    parser.add_argument("--weight_decay", type=float, default=0.0)
    parser.add_argument("--gpu_ids", type=int, nargs="*", default=[0])
    parser.add_argument("--epoch", type=int, default=100)
    opt = parser.parse_args()

    from data import create_dataloader

    model = Trainer(opt)
    data_loader = create_dataloader(opt)
    for epoch in range(opt.epoch):
        model.train()
        for i, (img, crops, label) in enumerate(data_loader):
            model.total_steps += 1
            model.set_input((img, crops, label))
            model.optimize_parameters()
