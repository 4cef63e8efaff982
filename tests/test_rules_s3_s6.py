"""Stages 3 to 6 (model, loss, optimizer, evaluation): each rule reports only on premises the source
establishes. The scripts here keep the shapes the findings (and the silences) were seen in."""

from __future__ import annotations

import textwrap

import libcst as cst
from support import lint

from trainlint.facts import FACT_TYPES, ClassValue, Facts, walk


def lines(source: str, code: str) -> list[int]:
    return [f.start.row for f in lint(source, code) if f.code == code]


def _facts(source: str) -> Facts:
    module = cst.parse_module(textwrap.dedent(source))
    index, where = walk(module, FACT_TYPES | {"With"})
    return Facts(module, index, where)


# -- facts: a class that derives from the class its own name held before ----------------------------

# in the shape of the Mario RL tutorial (PyTorchKorea/tutorials-kr intermediate_source/mario_rl_tutorial.py):
# the agent class is grown section by section, each `class Mario(Mario):` deriving from the one before
MARIO = """
import torch
from torch import nn


class Mario:
    def __init__(self, state_dim, action_dim, save_dir):
        self.net = MarioNet(state_dim, action_dim).float()
        self.exploration_rate = 1


class Mario(Mario):
    def __init__(self, state_dim, action_dim, save_dir):
        super().__init__(state_dim, action_dim, save_dir)
        self.batch_size = 32


class MarioNet(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.online = nn.Linear(input_dim, output_dim)
        self.target = nn.Linear(input_dim, output_dim)
        for p in self.target.parameters():
            p.requires_grad = False

    def forward(self, input, model):
        return self.online(input) if model == "online" else self.target(input)


class Mario(Mario):
    def __init__(self, state_dim, action_dim, save_dir):
        super().__init__(state_dim, action_dim, save_dir)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=0.00025)
        self.loss_fn = torch.nn.SmoothL1Loss()

    def update_Q_online(self, td_estimate, td_target):
        loss = self.loss_fn(td_estimate, td_target)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


mario = Mario(state_dim=(4, 84, 84), action_dim=2, save_dir="checkpoints")
"""


def test_a_class_deriving_from_the_class_its_name_held_before_is_linted():
    findings = lint(MARIO, "ALL")
    assert not [f for f in findings if f.code == "TL003"], [f.message for f in findings]
    facts = _facts(MARIO)
    classes = [c for c in facts.index["ClassDef"] if c.name.value == "Mario"]
    first, second, third = classes
    assert facts.base_binding("Mario", second).value is first
    assert facts.base_binding("Mario", third).value is second
    v = facts.value_of(cst.ensure_type(third.bases[0].value, cst.Name), third)
    assert isinstance(v, ClassValue)
