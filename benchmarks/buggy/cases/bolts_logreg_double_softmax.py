# A logistic-regression LightningModule of a model zoo: the training step takes the log-softmax of a
# softmax before the NLL loss (softmax applied twice).
# evidence: Lightning-Universe/lightning-bolts#654 ("Softmax applied twice when computing loss in
# LogisticRegression": loss = F.nll_loss(F.log_softmax(F.softmax(self.linear(x))), y))
import torch
from torch import nn
from torch.nn import functional as F
from pytorch_lightning import LightningModule


class LogisticRegression(LightningModule):
    def __init__(self, input_dim, num_classes, bias=True, learning_rate=1e-4):
        super().__init__()
        self.learning_rate = learning_rate
        self.linear = nn.Linear(in_features=input_dim, out_features=num_classes, bias=bias)

    def forward(self, x):
        x = self.linear(x)
        y_hat = F.softmax(x)
        return y_hat

    def training_step(self, batch, batch_idx):
        x, y = batch
        x = x.view(x.size(0), -1)
        y_hat = self.linear(x)
        loss = F.nll_loss(F.log_softmax(F.softmax(y_hat)), y)  # BUG TL403: softmax then log_softmax: probabilities treated as logits
        return {"loss": loss}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.learning_rate)
