# Source-free domain adaptation of a segmentation network (trainers/target_adapt_PFA_trainer.py): the
# source prototypes (the weights of the last layer `outc`) are meant to stay fixed, but
# `self.model.outc.requires_grad = False` sets a plain attribute on the nn.Module, which freezes none of
# its parameters; the optimizer built on all model.parameters() goes on updating the prototypes.
# evidence: CSCYQJ/MICCAI23-ProtoContra-SFDA#18 ("It seems like the last layer is not frozen?": outc is an
# nn.Module and requires_grad does not propagate to its parameters; "comparing the source with the
# after-pfa model, this does not freeze the last layer"; a second user: "I think you're right")
import torch
from einops import rearrange
from torch.utils.data import DataLoader

from dataloaders import MyDataset
from losses import ProtoLoss
from models import get_model


class PFA_Trainer:
    def __init__(self, opt):
        self.opt = opt

    def initialize(self):
        self.train_dataloader = DataLoader(
            MyDataset(self.opt["data_root"], self.opt["target_sites"], phase="train", split_train=True),
            batch_size=self.opt["batch_size"],
            shuffle=True,
            drop_last=True,
            num_workers=self.opt["num_workers"],
        )
        self.model = get_model(self.opt)
        checkpoint = torch.load(self.opt["source_model_path"], map_location="cpu")
        self.model.load_state_dict(checkpoint)
        self.model = self.model.to(self.opt["gpu_id"])
        self.source_prototypes = self.model.outc.conv.weight.view(
            (self.opt["num_classes"] * self.opt["num_prototypes"], self.opt["output_dim"])
        )
        self.model.outc.requires_grad = False  # BUG TL305: an attribute of the module, not of its parameters: outc is not frozen
        self.optimizer, self.schedular = self.get_optimizers()
        self.grad_scaler = torch.cuda.amp.GradScaler(enabled=True)
        self.criterion_proto = ProtoLoss(
            self.opt["nav_t"], self.opt["beta"], self.opt["num_classes"], self.opt["gpu_id"], self.opt["s_par"]
        )

    def get_optimizers(self):
        params = list(self.model.parameters())
        optimizer = torch.optim.Adam(params, lr=self.opt["lr"], betas=(0.9, 0.999), weight_decay=0.0005)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.8)
        return optimizer, scheduler

    def train_one_step(self, data):
        self.optimizer.zero_grad()
        imgs = data[0]
        target_f, predict = self.model(imgs, only_feature=True)
        target_f = rearrange(target_f, "b c h w -> (b h w) c")
        t2p_loss, p2t_loss = self.criterion_proto(self.source_prototypes, target_f)
        loss = t2p_loss + p2t_loss
        self.grad_scaler.scale(loss).backward()
        self.grad_scaler.step(self.optimizer)
        self.grad_scaler.update()

    def launch(self):
        self.initialize()
        for epoch in range(self.opt["total_epochs"]):
            self.model.train()
            for data in self.train_dataloader:
                self.train_one_step(data)
            self.schedular.step()
