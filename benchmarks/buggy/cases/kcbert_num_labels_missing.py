# A Korean comment classifier: a PyTorch Lightning module around BertForSequenceClassification
# loaded without num_labels, trained on a file whose labels are 0..4.
# evidence: Beomi/KcBERT#3 (IndexError: Target 2 is out of bounds; the author: BertForSequenceClassification
# defaults to num_labels=2, pass num_labels=5)
import pandas as pd
import torch
from pytorch_lightning import LightningModule, Trainer
from torch.utils.data import DataLoader, TensorDataset
from transformers import AutoTokenizer, BertForSequenceClassification


class Arg:
    pretrained_model: str = "beomi/kcbert-large"
    batch_size: int = 32
    lr: float = 5e-6
    epochs: int = 20
    max_length: int = 128
    train_data_path: str = "comments_30K_labeled_train_01234.txt"
    val_data_path: str = "comments_30K_labeled_test_01234.txt"


class Model(LightningModule):
    def __init__(self, options):
        super().__init__()
        self.args = options
        self.bert = BertForSequenceClassification.from_pretrained(self.args.pretrained_model)  # BUG TL301: the labels run 0..4, the head has 2 outputs
        self.tokenizer = AutoTokenizer.from_pretrained(self.args.pretrained_model)

    def forward(self, **kwargs):
        return self.bert(**kwargs)

    def training_step(self, batch, batch_idx):
        data, labels = batch
        output = self(input_ids=data, labels=labels)
        return output.loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.args.lr)

    def dataloader(self, path, shuffle=False):
        df = pd.read_csv(path, sep="\t")
        encoded = [self.tokenizer.encode(t, truncation=True, max_length=self.args.max_length, padding="max_length") for t in df["document"]]
        dataset = TensorDataset(torch.tensor(encoded), torch.tensor(df["label"].to_list(), dtype=torch.long))
        return DataLoader(dataset, batch_size=self.args.batch_size, shuffle=shuffle)

    def train_dataloader(self):
        return self.dataloader(self.args.train_data_path, shuffle=True)


model = Model(Arg())
trainer = Trainer(max_epochs=Arg.epochs)
trainer.fit(model)
