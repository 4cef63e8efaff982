# torchforge's SFT recipe (apps/sft/main.py): a ForgeEngine subclass whose train() clears the gradients once
# before its while loop and calls self.train_step(batch) per step; train_step runs forward_backward() (the
# backward is inside it) and steps the optimizers container, never clearing the gradients.
# evidence: meta-pytorch/torchforge#71 ("[ez] zero grad every step": "Fixing a dumb bug where we weren't
# zeroing grad on optimizers after each step"; merged, commit f55a2076 adds self.optimizers.zero_grad()
# after self.optimizers.step())
import torch
from torchtitan.experiments.forge.engine import ForgeEngine
from tqdm import tqdm


class ForgeSFTRecipe(ForgeEngine):
    def __init__(self, job_config):
        self.current_step = 0
        self.num_training_steps = job_config.training.steps
        super().__init__(job_config)

    def forward_backward(self, input_dict, labels, do_backward=True):
        inputs = input_dict["tokens"]
        with self.maybe_enable_amp:
            pred = self.model_parts[0](inputs)
            loss = self.loss_fn(pred, labels)
        del pred
        if do_backward:
            loss.backward()
        return loss

    def train_step(self, batch):
        labels = batch.pop("labels")
        loss = self.forward_backward(batch, labels)
        self.pbar.update(1)
        self.pbar.set_description(f"{self.current_step}|Loss: {loss}")
        self.optimizers.step()  # BUG TL701: the gradients are cleared once before the loop in train(), never per step: they pile up
        self.lr_schedulers.step()

    def train(self):
        dataloader = iter(self.train_dataloader)
        self.optimizers.zero_grad()
        self.pbar = tqdm(initial=0, total=self.num_training_steps)
        while self.current_step < self.num_training_steps:
            batch = next(dataloader)
            for k, v in batch.items():
                if isinstance(v, torch.Tensor):
                    batch[k] = v.to("cuda")
            self.train_step(batch)
            self.current_step += 1
