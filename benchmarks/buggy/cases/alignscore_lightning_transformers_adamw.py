# /// script
# dependencies = ["transformers>=4.20.1,<5", "pytorch-lightning", "torch", "scikit-learn"]
# ///
# (the environment of the report: the package's range, resolved to a transformers release without AdamW)
# AlignScore's training model (src/alignscore/model.py): a LightningModule whose configure_optimizers()
# builds transformers' AdamW over grouped parameters with a linear warmup schedule.
# evidence: yuh-zha/AlignScore#23 (ImportError: cannot import name 'AdamW' from 'transformers': AdamW was
# removed from transformers, the code must import it from torch; others confirm, one runs it pinned to
# transformers 4.41.0)
import pytorch_lightning as pl
import torch
import torch.nn as nn
from transformers import AdamW, get_linear_schedule_with_warmup, AutoConfig  # BUG TL802: transformers.AdamW was removed: ImportError
from transformers import RobertaModel, RobertaForMaskedLM


class BERTAlignModel(pl.LightningModule):
    def __init__(self, model='roberta-large', using_pretrained=True, *args, **kwargs) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.base_model = RobertaModel.from_pretrained(model)
        self.mlm_head = RobertaForMaskedLM.from_pretrained(model).lm_head
        self.bin_layer = nn.Linear(self.base_model.config.hidden_size, 2)
        self.tri_layer = nn.Linear(self.base_model.config.hidden_size, 3)
        self.reg_layer = nn.Linear(self.base_model.config.hidden_size, 1)

    def forward(self, batch):
        pooled = self.base_model(input_ids=batch['input_ids'], attention_mask=batch['attention_mask']).pooler_output
        return self.bin_layer(pooled), self.tri_layer(pooled), self.reg_layer(pooled)

    def training_step(self, train_batch, batch_idx):
        bin_logits, tri_logits, reg = self(train_batch)
        loss = nn.functional.cross_entropy(tri_logits, train_batch['tri_label'], ignore_index=-100)
        self.log('train_loss', loss)
        return loss

    def configure_optimizers(self):
        no_decay = ["bias", "LayerNorm.weight"]
        optimizer_grouped_parameters = [
            {"params": [p for n, p in self.named_parameters() if not any(nd in n for nd in no_decay)],
             "weight_decay": self.hparams.weight_decay},
            {"params": [p for n, p in self.named_parameters() if any(nd in n for nd in no_decay)],
             "weight_decay": 0.0},
        ]
        optimizer = AdamW(optimizer_grouped_parameters, lr=self.hparams.learning_rate, eps=self.hparams.adam_epsilon)
        scheduler = get_linear_schedule_with_warmup(
            optimizer,
            num_warmup_steps=int(self.hparams.warmup_steps_portion * self.trainer.estimated_stepping_batches),
            num_training_steps=self.trainer.estimated_stepping_batches,
        )
        return [optimizer], [{"scheduler": scheduler, "interval": "step", "frequency": 1}]
