# AlpacaFarm's PPO trainer base class (src/alpaca_farm/rl/rl_trainer.py): step_with_rollouts() accumulates
# gradients with `accelerator.accumulate(self.policy)`, whose AcceleratedOptimizer skips zero_grad() on the
# accumulation steps, but clears the gradients through the wrapped module with `self.policy.zero_grad()`,
# which is not skipped: every micro-batch's gradient is wiped, and only the last one of each accumulation
# window is applied.
# evidence: tatsu-lab/alpaca_farm#57 ("Possible issue with gradient accumulation": policy.zero_grad is used
# instead of optimizer.zero_grad; the maintainer: "You're absolutely correct. The AcceleratedOptimizer object
# has the right wraps that disable zero_grad on non-sync steps"), fixed by tatsu-lab/alpaca_farm#58 (commit
# 19fb3918b009c4c6ffffcabe05cd871ffd743be0)
import abc

import torch
import tqdm
from accelerate.optimizer import AcceleratedOptimizer

from .. import common, trainer_utils


class RLTrainer(object):
    def __init__(self, args, train_dataset, eval_dataset, data_collator, policy, ref_policy, reward_model,
                 tokenizer, accelerator, optimizer=None, lr_scheduler=None):
        super(RLTrainer, self).__init__()
        self.args = args
        self.train_dataset = train_dataset
        self.policy = policy
        self.ref_policy = ref_policy
        self.reward_model = reward_model
        self.tokenizer = tokenizer
        self.optimizer = optimizer
        self.accelerator = accelerator
        self.lr_scheduler = lr_scheduler

    @abc.abstractmethod
    def compute_loss(self, rollouts):
        raise NotImplementedError

    def step_with_rollouts(self, rollouts):
        assert isinstance(self.optimizer, AcceleratedOptimizer)
        rollouts_dataloader = self.get_rollouts_dataloader(rollouts=rollouts)
        stats_list = []
        for epoch_idx in range(self.args.noptepochs):
            for batch_idx, rollouts_batch in tqdm.tqdm(enumerate(rollouts_dataloader, 1), desc="gradstep"):
                with self.accelerator.accumulate(self.policy):
                    ppo_loss, stats_for_this_step = self.compute_loss(rollouts_batch)
                    self.accelerator.backward(ppo_loss)
                    if self.accelerator.sync_gradients:
                        if self.args.max_grad_norm is not None:
                            self.accelerator.clip_grad_norm_(self.policy.parameters(), self.args.max_grad_norm)
                        stats_list.append(stats_for_this_step)
                    self.optimizer.step()
                    self.policy.zero_grad(set_to_none=True)  # BUG TL708: zero_grad on the module inside the accumulation: the accumulated gradients are cleared every micro-batch
        return common.merge_dict(stats_list, torch.stack)

    def create_optimizer_and_scheduler(self, num_training_steps: int):
        optimizer = trainer_utils.create_optimizer(args=self.args, model=self.policy, optimizer=self.optimizer)
        lr_scheduler = trainer_utils.create_scheduler(args=self.args, optimizer=optimizer,
                                                      lr_scheduler=self.lr_scheduler, num_training_steps=num_training_steps)
        self.optimizer, self.lr_scheduler = self.accelerator.prepare(optimizer, lr_scheduler)
        return self.optimizer, self.lr_scheduler
