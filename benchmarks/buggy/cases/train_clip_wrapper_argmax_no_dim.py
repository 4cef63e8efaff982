# train-CLIP's Lightning wrapper (models/wrapper.py): training_step() uses manual optimisation over
# mini-batches, and under no_grad computes the batch accuracy as `torch.argmax(image_logits) == ground_truth`:
# argmax without a dim returns one flattened index of the whole similarity matrix, compared with every row's
# target index.
# evidence: Zasder3/train-CLIP#6 ("About the accuracy computation": torch.argmax returns the max index across
# all dimensions; the author: "It looks like it! Thanks for catching this bug."), fixed in
# Zasder3/train-CLIP@8d454de1999af4be93b6d99b956e83f005ff70dd (torch.argmax(image_logits, 0))
import math

import pytorch_lightning as pl
import torch
import torch.nn as nn
import torch.nn.functional as F

from .model import CLIP


class CLIPWrapper(pl.LightningModule):
    def __init__(self, model_name: str, config: dict, minibatch_size: int):
        super().__init__()
        self.model_name = model_name
        self.model = CLIP(**config)
        self.minibatch_size = minibatch_size
        self.image_loss = nn.CrossEntropyLoss()
        self.text_loss = nn.CrossEntropyLoss()
        self.automatic_optimization = False

    def get_image_logits(self, x, text_embed):
        return F.normalize(self.model.encode_image(x), dim=1) @ text_embed.t() * self.model.logit_scale.exp()

    def training_step(self, train_batch, idx):
        optimizer = self.optimizers()
        image, text = train_batch
        n = math.ceil(len(image) // self.minibatch_size) if self.minibatch_size > 0 else 1
        image_mbs = torch.chunk(image, n)
        text_mbs = torch.chunk(text, n)

        with torch.no_grad():
            ims = [F.normalize(self.model.encode_image(im), dim=1) for im in image_mbs]
            txt = [F.normalize(self.model.encode_text(t), dim=1) for t in text_mbs]
            ims = self.all_gather(torch.cat(ims))
            txt = self.all_gather(torch.cat(txt))
            if not isinstance(ims, list):
                ims = [ims]
                txt = [txt]
            image_logits = torch.cat(ims) @ torch.cat(txt).t() * self.model.logit_scale.exp()
            ground_truth = torch.arange(len(image_logits)).type_as(image_logits).long()
            loss = (self.image_loss(image_logits, ground_truth) + self.text_loss(image_logits.t(), ground_truth)).div(2)
            acc_i = (torch.argmax(image_logits) == ground_truth).sum()  # BUG TL610: argmax without dim: one flattened index of the whole matrix, not one per row
            acc_t = (torch.argmax(image_logits.t()) == ground_truth).sum()  # BUG TL610: argmax without dim: one flattened index of the whole matrix, not one per row
            self.log_dict({'loss': loss, 'acc': (acc_i + acc_t) / len(image) / 2}, prog_bar=True)

        optimizer.zero_grad()
        for j, mb in enumerate(image_mbs):
            image_logits = self.get_image_logits(mb, torch.cat(txt))
            ground_truth = torch.arange(len(mb)).type_as(image_logits).long() + len(mb) * j
            self.manual_backward(self.image_loss(image_logits, ground_truth))
        optimizer.step()
