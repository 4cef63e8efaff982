# A scientific-concept coreference model (multiclass head in a LightningModule): the validation step
# softmaxes the logits into probabilities before the CrossEntropyLoss, which applies its own softmax;
# the validation loss gets stuck around 1.0.
# evidence: ariecattan/SciCo#2 ("Double-softmax in validation loss": models/muticlass.py; fixed by the
# authors)
import pytorch_lightning as pl
import torch
from torch import nn
from transformers import AutoModel


class MulticlassModel(pl.LightningModule):
    def __init__(self, config, num_classes=4):
        super().__init__()
        self.model = AutoModel.from_pretrained(config["model"]["bert_model"])
        self.linear = nn.Linear(self.model.config.hidden_size, num_classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, input_ids, attention_mask):
        output = self.model(input_ids=input_ids, attention_mask=attention_mask)
        return self.linear(output.last_hidden_state[:, 0])

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(**x)
        return self.criterion(y_hat, y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(**x)
        y_hat = torch.softmax(y_hat, dim=1)  # BUG TL403: probabilities given to CrossEntropyLoss (softmax applied twice)
        loss = self.criterion(y_hat, y)
        self.log("val_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-5)
