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


# -- TL504 ------------------------------------------------------------------------------------------

# in the shape of PyTorchKorea/tutorials-kr beginner_source/blitz/autograd_tutorial.py: the first section
# names its optimizer `optim`; the later section's `from torch import nn, optim` makes `optim` the module
# again, and the new model gets an optimizer of its own
AUTOGRAD_TUTORIAL = """
import torch
from torchvision.models import resnet18, ResNet18_Weights

model = resnet18(weights=ResNet18_Weights.DEFAULT)
data = torch.rand(1, 3, 64, 64)
labels = torch.rand(1, 1000)
prediction = model(data)
loss = (prediction - labels).sum()
loss.backward()
optim = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
optim.step()

from torch import nn, optim

model = resnet18(weights=ResNet18_Weights.DEFAULT)
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(512, 10)
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
"""


def test_tl504_silent_when_an_import_rebinds_the_optimizer_name():
    assert lines(AUTOGRAD_TUTORIAL, "TL504") == []
    # without the import, the old SGD object is what `optim` names when it steps for the new model
    stepped = AUTOGRAD_TUTORIAL.replace("from torch import nn, optim", "from torch import nn") + (
        "model(data).sum().backward()\noptim.step()\n")
    assert lines(stepped, "TL504") == [16]


# in the shape of rasbt/LLMs-from-scratch ch05: the trained model is rebuilt to reload its weights for
# inference; the old optimizer's state is saved, never stepped, and a new optimizer is built later
LLM_CH05 = """
import torch
from previous_chapters import GPTModel

model = GPTModel(GPT_CONFIG_124M)
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.0004, weight_decay=0.1)
train_losses, val_losses, tokens_seen = train_model_simple(
    model, train_loader, val_loader, optimizer, device,
    num_epochs=10, eval_freq=5, eval_iter=5, start_context="Every effort moves you", tokenizer=tokenizer)
torch.save(model.state_dict(), "model.pth")

model = GPTModel(GPT_CONFIG_124M)
model.load_state_dict(torch.load("model.pth", map_location=device, weights_only=True))
model.eval()

torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()},
           "model_and_optimizer.pth")
checkpoint = torch.load("model_and_optimizer.pth", weights_only=True)
model = GPTModel(GPT_CONFIG_124M)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer = torch.optim.AdamW(model.parameters(), lr=0.0005, weight_decay=0.1)
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
model.train()
"""


def test_tl504_silent_when_the_old_optimizer_never_steps_for_the_new_model():
    assert lines(LLM_CH05, "TL504") == []
    # training the reloaded model with the old optimizer is the bug
    resumed = LLM_CH05.replace('torch.save({"model_state_dict"', "train_model_simple(model, train_loader, "
                               "val_loader, optimizer, device, num_epochs=1)\ntorch.save({\"model_state_dict\"")
    assert lines(resumed, "TL504") == [13]
