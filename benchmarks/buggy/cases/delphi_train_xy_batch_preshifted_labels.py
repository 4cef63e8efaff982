# delphi's training loop (src/delphi/train/utils.py and train_step.py): a causal language model of the
# class named in the config (LlamaForCausalLM, BloomForCausalLM, ...) trained from scratch with gradient
# accumulation; the batch helper returns `data[:, :-1], data[:, 1:]` as inputs and labels, and the step
# calls `model(X, labels=Y)`. transformers' *ForCausalLM models shift the labels themselves, so the model
# is trained to predict the token two positions ahead.
# evidence: delphi-suite/delphi#134 ("Fix training data shifting bug": "*ForCausalLM models shift the labels
# internally"; merged), commit delphi-suite/delphi@72c47358a90724e4ac535dada792c2936a888dd3
from collections.abc import Iterable

import torch
import transformers
from datasets import Dataset
from transformers import PreTrainedModel


def get_xy_batch(
    dataset: Dataset,
    indices: list[int],
    batch_size: int,
    batch_num: int,
    feature_name: str,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    start = batch_num * batch_size
    end = (batch_num + 1) * batch_size
    batch_indices = indices[start:end]
    data = dataset[batch_indices][feature_name].to(device)
    return data[:, :-1], data[:, 1:]  # BUG TL490: labels shifted by hand for a *ForCausalLM model, which shifts them again


def gen_minibatches(dataset, batch_size, num_minibatches, step, indices, device, feature_name):
    minibatch_size = batch_size // num_minibatches
    first_minibatch_num = num_minibatches * step
    for i in range(num_minibatches):
        yield get_xy_batch(
            dataset=dataset,
            indices=indices,
            batch_num=first_minibatch_num + i,
            batch_size=minibatch_size,
            feature_name=feature_name,
            device=device,
        )


def accumulate_gradients(
    model: PreTrainedModel,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    num_batches: int,
) -> float:
    total_loss = 0.0
    for X, Y in batches:
        loss = model(X, labels=Y, return_dict=True).loss / num_batches
        total_loss += loss.item()
        loss.backward()
    return total_loss


def train(config, train_ds, device):
    model_class = getattr(transformers, config.model_config.model_class)
    model = model_class(model_class.config_class(**config.model_config.model_params)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.optimizer.max_lr)
    indices = list(range(len(train_ds)))
    for step in range(config.max_steps):
        minibatches = gen_minibatches(
            dataset=train_ds,
            indices=indices,
            batch_size=config.batch_size,
            num_minibatches=config.gradient_accumulation_steps,
            step=step,
            device=device,
            feature_name=config.dataset.feature,
        )
        accumulate_gradients(model=model, batches=minibatches, num_batches=config.gradient_accumulation_steps)
        if config.grad_clip != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
