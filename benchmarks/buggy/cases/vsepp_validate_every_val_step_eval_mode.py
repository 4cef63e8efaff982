# VSE++ image-caption embedding training (train.py, with the VSE wrapper of model.py and encode_data of
# evaluation.py): the wrapper's train_start() is called once at the top of train(), and the validation
# run every `val_step` iterations calls val_start() (img_enc.eval(), txt_enc.eval()) and nothing switches
# back: after the first mid-epoch validation the rest of the epoch trains with dropout and batch norm in
# eval mode.
# evidence: fartashf/vsepp#4 ("Finish validation without running model.train()"; the author: "Good catch
# ... I'm observing non-negligible changes in the results"; fixed in 4266959 "Make sure the model is in
# training mode after validation", later kept behind a flag to reproduce the paper's numbers)
import numpy as np
import torch
import torch.nn as nn
import torchvision.models as models

import data
from vocab import Vocabulary  # noqa: F401


class EncoderImageFull(nn.Module):
    def __init__(self, embed_size):
        super().__init__()
        self.cnn = models.vgg19(pretrained=True)
        self.cnn.classifier = nn.Sequential(*list(self.cnn.classifier.children())[:-1])
        self.fc = nn.Linear(4096, embed_size)

    def forward(self, images):
        return self.fc(self.cnn(images))


class EncoderText(nn.Module):
    def __init__(self, vocab_size, word_dim, embed_size, num_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, word_dim)
        self.rnn = nn.GRU(word_dim, embed_size, num_layers, batch_first=True)

    def forward(self, x, lengths):
        out, _ = self.rnn(self.embed(x))
        return out[:, -1]


class VSE(object):
    def __init__(self, opt):
        self.img_enc = EncoderImageFull(opt.embed_size)
        self.txt_enc = EncoderText(opt.vocab_size, opt.word_dim, opt.embed_size, opt.num_layers)
        params = list(self.txt_enc.parameters()) + list(self.img_enc.fc.parameters())
        self.optimizer = torch.optim.Adam(params, lr=opt.learning_rate)
        self.Eiters = 0

    def train_start(self):
        self.img_enc.train()
        self.txt_enc.train()

    def val_start(self):
        self.img_enc.eval()
        self.txt_enc.eval()

    def forward_emb(self, images, captions, lengths):
        return self.img_enc(images), self.txt_enc(captions, lengths)

    def train_emb(self, images, captions, lengths, ids=None):
        self.Eiters += 1
        img_emb, cap_emb = self.forward_emb(images, captions, lengths)
        scores = img_emb @ cap_emb.t()
        diagonal = scores.diag().view(-1, 1)
        loss = (0.2 + scores - diagonal).clamp(min=0).sum()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


def encode_data(model, data_loader):
    model.val_start()
    img_embs, cap_embs = [], []
    with torch.no_grad():
        for images, captions, lengths, ids in data_loader:
            img_emb, cap_emb = model.forward_emb(images, captions, lengths)
            img_embs.append(img_emb.numpy())
            cap_embs.append(cap_emb.numpy())
    return np.concatenate(img_embs), np.concatenate(cap_embs)


def validate(opt, val_loader, model):
    img_embs, cap_embs = encode_data(model, val_loader)
    sims = img_embs @ cap_embs.T
    return float(np.mean(np.argmax(sims, axis=1) == np.arange(len(sims))))


def train(opt, train_loader, model, epoch, val_loader):
    # switch to train mode
    model.train_start()
    for i, train_data in enumerate(train_loader):
        model.train_emb(*train_data)
        # validate at every val_step
        if model.Eiters % opt.val_step == 0:
            validate(opt, val_loader, model)  # BUG TL702: validate() leaves the encoders in eval mode and train_start() is not called again before the next training step


def main(opt):
    train_loader, val_loader = data.get_loaders(opt.data_name, opt.vocab, opt.crop_size, opt.batch_size, opt.workers, opt)
    model = VSE(opt)
    best_rsum = 0
    for epoch in range(opt.num_epochs):
        train(opt, train_loader, model, epoch, val_loader)
        rsum = validate(opt, val_loader, model)
        best_rsum = max(rsum, best_rsum)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--data_name", default="precomp")
    parser.add_argument("--num_epochs", default=30, type=int)
    parser.add_argument("--batch_size", default=128, type=int)
    parser.add_argument("--val_step", default=500, type=int)
    parser.add_argument("--learning_rate", default=0.0002, type=float)
    parser.add_argument("--embed_size", default=1024, type=int)
    parser.add_argument("--word_dim", default=300, type=int)
    parser.add_argument("--num_layers", default=1, type=int)
    parser.add_argument("--vocab_size", default=11755, type=int)
    parser.add_argument("--crop_size", default=224, type=int)
    parser.add_argument("--workers", default=10, type=int)
    opt = parser.parse_args()
    opt.vocab = None
    main(opt)
