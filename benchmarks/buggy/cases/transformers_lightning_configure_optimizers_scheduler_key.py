# transformers-lightning's TransformersModel (transformers_lightning/models/transformersmodel.py): a
# LightningModule base class whose configure_optimizers builds AdamW and a linear warmup/decay schedule and
# returns them as {'optimizer': optimizer, 'scheduler': scheduler}; Lightning reads the scheduler from the
# 'lr_scheduler' key and ignores the other, so the learning rate never warms up nor decays.
# evidence: iKernels/transformers-lightning#44 ("Scheduler not working": "When using a `TransformersModel`
# the scheduler on the lr does not work. Maybe the return of `configure_optimizers` should use the
# `lr_scheduler` key instead of `scheduler`."; labelled bug, closed by the fix), commit
# iKernels/transformers-lightning@8076c8b0cf8cb3a628292ec94494ad88098a55fc ("fixed #44")
import pytorch_lightning as pl
from transformers import AdamW, get_linear_schedule_with_warmup


class TransformersModel(pl.LightningModule):

    def __init__(self, hparams, model):
        super().__init__()
        self.save_hyperparameters(hparams)
        self.model = model

    def training_step(self, batch, batch_idx):
        return self.model(**batch).loss

    def configure_optimizers(self):
        max_steps = self.hparams.max_steps
        all_named_parameters = self.model.named_parameters()
        no_decay = ["bias", "LayerNorm.weight"]
        optimizer_grouped_parameters = [
            {
                "params": [p for n, p in all_named_parameters if not any(nd in n for nd in no_decay)],
                "weight_decay": self.hparams.weight_decay,
            },
            {
                "params": [p for n, p in all_named_parameters if any(nd in n for nd in no_decay)],
                "weight_decay": 0.0
            },
        ]
        optimizer = AdamW(optimizer_grouped_parameters,
                          lr=self.hparams.learning_rate,
                          eps=self.hparams.adam_epsilon,
                          betas=self.hparams.adam_betas)
        scheduler = get_linear_schedule_with_warmup(optimizer,
                                                    num_warmup_steps=self.hparams.warmup_steps,
                                                    num_training_steps=max_steps)

        return {
            'optimizer': optimizer,
            'scheduler': scheduler  # BUG TL791: Lightning takes the scheduler from 'lr_scheduler'; under this key it is never stepped
        }
