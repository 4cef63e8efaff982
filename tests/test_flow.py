"""Where the objects of a file go (trainlint.facts.flow), where its training steps run (trainlint.facts.steps)
and which loops accumulate gradients (trainlint.facts.accumulation): each answer established from the
source, unknown (silent) where it is not."""

from __future__ import annotations

import textwrap

import libcst as cst

from trainlint.facts import FACT_TYPES, Facts, walk
from trainlint.facts.accumulation import accumulate_around, accumulations, backward_value, unscaled_loss
from trainlint.facts.flow import flow
from trainlint.facts.steps import repeated, trains
from trainlint.facts.walk import Links


def _facts(source: str) -> Facts:
    module = cst.parse_module(textwrap.dedent(source))
    index, where = walk(module, FACT_TYPES | {"With"})
    return Facts(module, index, where)


def _call(facts: Facts, text: str) -> cst.Call:
    return next(c for c in facts.index["Call"] if facts.module.code_for_node(c).startswith(text))


def _uses(source: str, made: str) -> list[tuple[str, str]]:
    facts = _facts(source)
    return [(u.kind, facts.module.code_for_node(u.node).split("\n")[0]) for u in flow(facts).uses(_call(facts, made))]


def test_links_number_nodes_as_the_walk_does():
    source = textwrap.dedent("""
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return [y for y in x]
                return x
        for i in range(3):
            with open("f") as fh:
                print(M()(fh))
    """)
    module = cst.parse_module(source)
    index, where = walk(module, FACT_TYPES | {"Name", "If", "Attribute", "With", "ListComp"})
    links = Links(module)
    assert all(links.order[id(n)] == w.order and links.blocks(n) == w.blocks for n, w in where.items())
    # not the names bound (`i`, `fh`'s binding, the parameters), the attributes (`nn`, `sum`) or the imports
    assert sorted(links.reads) == ["M", "fh", "open", "print", "range", "torch", "x", "y"]


BRANCHES = """
import torch
from torch.utils.data import DataLoader, DistributedSampler

def train_epoch(loader, model):
    for x, y in loader:
        model(x, y).backward()

def main(ds, model, args):
    if args.distributed:
        sampler = DistributedSampler(ds)
    else:
        sampler = None
    loader = DataLoader(ds, sampler=sampler, shuffle=sampler is None)
    print(len(loader), loader.dataset)
    for epoch in range(args.epochs):
        train_epoch(loader, model)
    results.append(loader)
"""


def test_uses_follow_both_branches_a_parameter_and_report_what_leaves_sight():
    assert sorted(_uses(BRANCHES, "DistributedSampler")) == [
        ("arg", "DataLoader(ds, sampler=sampler, shuffle=sampler is None)"), ("test", "sampler is None")]
    assert sorted(_uses(BRANCHES, "DataLoader")) == [
        ("arg", "results.append(loader)"), ("attr", "loader.dataset"), ("iter", "for x, y in loader:"), ("test", "len(loader)")]


def test_a_read_after_both_branches_is_reached_by_both_bindings():
    facts = _facts(BRANCHES)
    call = _call(facts, "DataLoader")
    read = next(a.value for a in call.args if a.keyword is not None and a.keyword.value == "sampler")
    assert [facts.module.code_for_node(b.value) for b in flow(facts).reaching("sampler", read)] == ["None", "DistributedSampler(ds)"]


RETURNED = """
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

class Runner:
    def build(self, ds):
        return DataLoader(ds, batch_size=4)

    def setup(self, ds):
        self.loader = self.build(ds)

    def run(self):
        for batch in tqdm(self.loader):
            pass
        yield self.loader
"""


def test_uses_follow_returns_to_callers_and_self_attributes():
    assert sorted(_uses(RETURNED, "DataLoader")) == [("escape", "yield self.loader"), ("iter", "for batch in tqdm(self.loader):")]


IDENTITY = """
import torch
from datasets import load_dataset

ds = load_dataset("imdb")
train = ds["train"]
alias = train
other = ds["test"]
if flag:
    maybe = train
else:
    maybe = other
probe(train, alias, ds["train"], other, maybe)
"""


def test_identity_follows_aliases_and_subscripts_and_is_unknown_across_branches():
    facts = _facts(IDENTITY)
    args = [a.value for a in _call(facts, "probe").args]
    keys = [flow(facts).identity(a) for a in args]
    assert keys[0] == keys[1] == keys[2] != keys[3]
    assert keys[4] is None


LOOPS = """
import torch

def step(model, batch, opt):
    model(batch).backward()
    opt.step()

def epoch(model, loader, opt):
    for batch in loader:
        step(model, batch, opt)

def evaluate(model, loader):
    for batch in loader:
        model(batch)

for e in range(10):
    epoch(model, loader, opt)
evaluate(model, loader)
for e in range(1):
    evaluate(model, loader)
"""


def test_training_passes_through_the_files_functions_and_repetition_through_callers():
    facts = _facts(LOOPS)
    fors = facts.index["For"]
    by_fn = {facts.where[f].function.name.value if facts.where[f].function else "module": f for f in fors}
    assert trains(facts, by_fn["epoch"]) and not trains(facts, by_fn["evaluate"])
    assert repeated(facts, by_fn["epoch"])
    assert not repeated(facts, by_fn["evaluate"])  # called at module level, and in a loop of one pass


ACCUMULATION = """
import torch
from accelerate import Accelerator

model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
count = 0
for x, y in loader:
    count += 1
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    if count >= 4:
        opt.step()
        opt.zero_grad()
        count = 0

for i, (x, y) in enumerate(loader):
    loss = torch.nn.functional.cross_entropy(model(x), y) / 4
    if i % 4 == 0:
        loss.backward()
        opt.step()

for batch in loader:
    with accelerator.accumulate(model):
        accelerator.backward(model(**batch).loss)
"""


def test_accumulations_need_every_backward_on_every_pass_and_every_step_under_the_test():
    facts = _facts(ACCUMULATION)
    found = accumulations(facts)
    assert len(found) == 1
    acc = found[0]
    assert acc.counter == "count" and facts.module.code_for_node(acc.every) == "4"
    value = backward_value(acc.backwards[0])
    assert unscaled_loss(facts, acc.loop, value, acc.backwards[0])
    backward = _call(facts, "accelerator.backward")
    assert facts.module.code_for_node(backward_value(backward)) == "model(**batch).loss"
    assert facts.module.code_for_node(accumulate_around(facts, backward)) == "model"
    assert accumulate_around(facts, _call(facts, "opt.step")) is None
