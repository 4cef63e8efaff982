# /// script
# dependencies = ["transformers==3.0.2", "torch"]
# ///
# (the transformers of the time: `transformers.AdamW` still existed)
# A multitask NLP toolkit's optimizer setup (jiant/shared/model_setup.py): optimizer and linear-warmup
# scheduler are wrapped in an `OptimizerScheduler` whose `step()` method steps the scheduler first ("Scheduler
# updates first"), then the optimizer; the runner calls `self.optimizer_scheduler.step()` once per
# (accumulated) training step. PyTorch warns "Detected call of `lr_scheduler.step()` before
# `optimizer.step()`" and the first value of the warmup schedule is skipped.
# evidence: jiant-dev/jiant-dev#89 ("Minor: re-order optimizer and scheduler steps", addressing that warning;
# merged as jiant-dev/jiant-dev@c3e6bea91c6bd0e27caed22358233905da7afdac "call optimizer step before scheduler
# step")
import transformers
import torch

from jiant.ext.radam import RAdam


class OptimizerScheduler:
    def __init__(self, optimizer, scheduler):
        super().__init__()
        self.optimizer = optimizer
        self.scheduler = scheduler

    def step(self):
        # Scheduler updates first
        self.scheduler.step()  # BUG TL704: the scheduler steps before the optimizer: the first warmup value is skipped
        self.optimizer.step()

    def state_dict(self):
        return {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
        }

    def load_state_dict(self, state_dict, strict=True):
        self.optimizer.load_state_dict(state_dict["optimizer"], strict=strict)
        self.scheduler.load_state_dict(state_dict["scheduler"], strict=strict)


def resolve_warmup_steps(t_total, warmup_steps, warmup_proportion):
    if warmup_steps is None and warmup_proportion is not None:
        return warmup_proportion * t_total
    return warmup_steps


def create_optimizer_from_params(named_parameters, learning_rate, t_total, warmup_steps, warmup_proportion,
                                 optimizer_epsilon=1e-8, optimizer_type="adam", verbose=False):
    no_decay = ["bias", "LayerNorm.bias", "LayerNorm.weight"]
    used_named_parameters = [(n, p) for n, p in named_parameters if p.requires_grad]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in used_named_parameters if not any(nd in n for nd in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in used_named_parameters if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    if optimizer_type == "adam":
        optimizer = transformers.AdamW(optimizer_grouped_parameters, lr=learning_rate, eps=optimizer_epsilon)
    elif optimizer_type == "radam":
        optimizer = RAdam(optimizer_grouped_parameters, lr=learning_rate, eps=optimizer_epsilon)
    else:
        raise KeyError(optimizer_type)
    warmup_steps = resolve_warmup_steps(t_total=t_total, warmup_steps=warmup_steps, warmup_proportion=warmup_proportion)
    scheduler = transformers.get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=warmup_steps, num_training_steps=t_total
    )
    return OptimizerScheduler(optimizer=optimizer, scheduler=scheduler)


class JiantRunner:
    def __init__(self, jiant_task_container, jiant_model, optimizer_scheduler, device):
        self.jiant_task_container = jiant_task_container
        self.jiant_model = jiant_model
        self.optimizer_scheduler = optimizer_scheduler
        self.device = device

    def run_train_step(self, train_dataloader_dict, train_state):
        self.jiant_model.train()
        task_name, task = self.jiant_task_container.task_sampler.pop()
        task_specific_config = self.jiant_task_container.task_specific_configs[task_name]

        loss_val = 0
        for i in range(task_specific_config.gradient_accumulation_steps):
            batch, batch_metadata = train_dataloader_dict[task_name].pop()
            batch = batch.to(self.device)
            model_output = self.jiant_model(batch=batch, task=task, compute_loss=True)
            loss = self.complex_backpropagate(
                loss=model_output.loss,
                gradient_accumulation_steps=task_specific_config.gradient_accumulation_steps,
            )
            loss_val += loss.item()

        self.optimizer_scheduler.step()
        self.optimizer_scheduler.optimizer.zero_grad()
        train_state.step(task_name=task_name)

    def complex_backpropagate(self, loss, gradient_accumulation_steps):
        if gradient_accumulation_steps > 1:
            loss = loss / gradient_accumulation_steps
        loss.backward()
        return loss
