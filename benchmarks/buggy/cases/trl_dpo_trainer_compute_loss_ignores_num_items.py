# /// script
# dependencies = ["transformers==4.48.1", "trl==0.13.0"]
# ///
# (the environment of the report: TRL 0.13 on transformers 4.48.1, the version huggingface/transformers#35856
# names)
# TRL's DPOTrainer (trl/trainer/dpo_trainer.py), a Trainer subclass: its compute_loss override accepts
# `num_items_in_batch` but computes the sequence-level DPO loss as a per-micro-batch mean and ignores it,
# while the parent Trainer, seeing a model whose forward takes **kwargs, assumes the loss is already
# normalised over the accumulated batch and skips the division by gradient_accumulation_steps: with gradient
# accumulation the reported loss and the gradients are scaled up by the number of accumulation steps.
# evidence: huggingface/trl#2615 ("Fix DPO gradient accumulation loss scaling", for
# huggingface/transformers#35856; merged, commit 40c238395e345e6013f899b3768b53c73e60844b sets
# self.model_accepts_loss_kwargs = False)
from contextlib import nullcontext
from typing import Any, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import PreTrainedModel, Trainer


class DPOTrainer(Trainer):
    def __init__(self, model, ref_model=None, args=None, data_collator=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, beta=0.1):
        self.ref_model = ref_model
        self.beta = beta
        self._peft_has_been_casted_to_bf16 = False
        super().__init__(model=model, args=args, data_collator=data_collator, train_dataset=train_dataset,
                         eval_dataset=eval_dataset, processing_class=processing_class)

    def concatenated_forward(self, model, batch):
        logits = model(batch["concatenated_input_ids"], attention_mask=batch["concatenated_attention_mask"]).logits
        logps = torch.gather(logits.log_softmax(-1), 2, batch["concatenated_labels"].unsqueeze(2)).squeeze(2).sum(-1)
        n = batch["prompt_input_ids"].shape[0]
        return logps[:n], logps[n:]

    def get_batch_loss_metrics(self, model, batch, train_eval="train"):
        chosen_logps, rejected_logps = self.concatenated_forward(model, batch)
        with torch.no_grad():
            ref_chosen_logps, ref_rejected_logps = self.concatenated_forward(self.ref_model, batch)
        logits = (chosen_logps - ref_chosen_logps) - (rejected_logps - ref_rejected_logps)
        losses = -F.logsigmoid(self.beta * logits)
        return losses.mean(), {"rewards/margins": logits.mean().item()}

    def compute_loss(  # BUG TL411: compute_loss ignores num_items_in_batch (and model_accepts_loss_kwargs stays True): under gradient accumulation the loss is not divided by the accumulation steps
        self,
        model: Union[PreTrainedModel, nn.Module],
        inputs: dict[str, Union[torch.Tensor, Any]],
        return_outputs=False,
        num_items_in_batch=None,
    ):
        compute_loss_context_manager = (
            torch.amp.autocast("cuda") if self._peft_has_been_casted_to_bf16 else nullcontext()
        )
        with compute_loss_context_manager:
            loss, metrics = self.get_batch_loss_metrics(model, inputs, train_eval="train")
        loss = loss.to(self.args.device)
        if return_outputs:
            return loss, metrics
        return loss
