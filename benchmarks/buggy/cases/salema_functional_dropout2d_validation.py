# SalEMA's saliency model (src/model/SalEMA.py) and its training script's validation (src/train.py): the
# model applies `dropout2d(x)` from torch.nn.functional when built with dropout=True, which ignores the
# module's mode, so validate()'s `model.eval()` leaves dropout on; the inference parser also defaulted to
# dropout=True. (The VGG16 encoder-decoder is shortened here.)
# evidence: Linardos/SalEMA#6 ("Wrong usage of dropout": "`nn.Dropout` performs different during train
# and test phase, your code will result in incorrect inference"; the author: "On test time you just turn it
# off ... I shouldn't expect the user to set it to False himself, I'll change it"), fixed in
# Linardos/SalEMA@deabd5967b2fa0705e2323e2e12a4169a21c6fff (the inference default set to dropout=False)
import torch
from torch import nn, sigmoid
from torch.nn.functional import dropout2d
from torchvision.models import vgg16


class SalEMA(nn.Module):
    def __init__(self, alpha, ema_loc, residual, dropout, use_gpu=True):
        super(SalEMA, self).__init__()
        self.dropout = dropout
        self.residual = residual
        self.alpha = torch.Tensor([alpha])
        self.ema_loc = ema_loc
        encoder = torch.nn.Sequential(*list(vgg16().features)[:30])
        decoder = torch.nn.Sequential(
            nn.Conv2d(512, 512, kernel_size=(3, 3), padding=(1, 1)),
            nn.ReLU(),
            nn.Conv2d(512, 1, kernel_size=(1, 1)),
            nn.Sigmoid(),
        )
        self.salgan = torch.nn.Sequential(*(list(encoder.children()) + list(decoder.children())))

    def forward(self, input_, prev_state=None):
        x = self.salgan[:self.ema_loc](input_)
        residual = x
        if self.dropout == True:
            x = dropout2d(x)  # BUG TL311: functional dropout without training=self.training stays on after model.eval()
        if prev_state is None:
            current_state = self.salgan[self.ema_loc](x)
        else:
            current_state = sigmoid(self.alpha) * self.salgan[self.ema_loc](x) + (1 - sigmoid(self.alpha)) * prev_state
        if self.residual == True:
            x = current_state + residual
        else:
            x = current_state
        x = self.salgan[self.ema_loc + 1:](x)
        return current_state, x


def validate(val_loader, model, criterion, epoch):
    model.eval()
    total_loss = 0
    with torch.no_grad():
        for i, (frames, gtruths) in enumerate(val_loader):
            state = None
            for j in range(frames.size(0)):
                state, saliency_map = model.forward(input_=frames[j], prev_state=state)
                total_loss += criterion(saliency_map, gtruths[j])
    return total_loss / len(val_loader)


def train(train_loader, model, criterion, optimizer, epoch):
    model.train()
    for i, (frames, gtruths) in enumerate(train_loader):
        state = None
        loss = 0
        for j in range(frames.size(0)):
            state, saliency_map = model.forward(input_=frames[j], prev_state=state)
            loss = loss + criterion(saliency_map, gtruths[j])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(args, train_loader, val_loader):
    model = SalEMA(alpha=args.alpha, residual=args.residual, dropout=args.dropout, ema_loc=args.ema_loc)
    criterion = nn.BCELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch)
        print("Validation loss: {}".format(validate(val_loader, model, criterion, epoch)))
