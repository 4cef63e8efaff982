"""TL203 reports a loader only when the training steps consume its batches, in stored order that means
nothing to the model, over several epochs: the forms that code nobody tuned it on showed, each in the shape it
was found in, next to the twin that must be reported."""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source


def lint(source: str, code: str = "TL203"):
    return [f for f in lint_source(textwrap.dedent(source), "train.py", Settings(select=[code])) if f.code == code]


def rows(source: str, code: str = "TL203") -> list[int]:
    return [f.start.row for f in lint(source, code)]


def row_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# -- TL203: which loader the training steps consume ------------------------------------------------------

# in the shape of Noble-Lab/casanovo's DeNovoDataModule before #234
DATAMODULE = """
import lightning.pytorch as pl
import torch

class DeNovoDataModule(pl.LightningDataModule):
    def _make_loader(self, dataset, batch_size):
        return torch.utils.data.DataLoader(dataset, batch_size=batch_size, collate_fn=prepare_batch)

    def train_dataloader(self):
        return self._make_loader(self.train_dataset, self.train_batch_size)

    def val_dataloader(self):
        return self._make_loader(self.valid_dataset, self.eval_batch_size)
"""


def test_tl203_the_loader_a_shared_helper_builds_for_train_dataloader():
    [f] = lint(DATAMODULE, "TL203")
    assert f.start.row == row_of(DATAMODULE, "return torch.utils.data.DataLoader(")
    assert "train_dataloader()" in f.message and len(f.message) <= 160
    # the helper shuffles when train_dataloader() asks it to: followed through the parameter on the way down
    flag = DATAMODULE.replace("def _make_loader(self, dataset, batch_size):", "def _make_loader(self, dataset, batch_size, shuffle=False):"
                              ).replace("collate_fn=prepare_batch)", "collate_fn=prepare_batch, shuffle=shuffle)"
                                        ).replace("self.train_batch_size)", "self.train_batch_size, shuffle=True)")
    assert rows(flag, "TL203") == []


def test_tl203_a_loader_only_for_an_accuracy_check_and_training_rebuilt_later():
    src = """
    import torch
    from torch.utils.data import DataLoader, SubsetRandomSampler

    train_loader = DataLoader(train_dataset, batch_size=256)
    print(compute_accuracy(model, train_loader))

    train_loader = DataLoader(train_dataset, batch_size=64, sampler=SubsetRandomSampler(train_idx))
    for epoch in range(10):
        for x, y in train_loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
    """
    assert rows(src, "TL203") == []


def test_tl203_a_loader_handed_to_a_pass_that_trains_only_when_asked():
    src = """
    import torch
    from torch.utils.data import DataLoader

    def run_epoch(model, loader, train):
        for x, y in loader:
            loss = loss_fn(model(x), y)
            if train:
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()

    train_loader = DataLoader(train_dataset, batch_size=64, shuffle=True)
    val_loader = DataLoader(val_dataset, batch_size=64)
    for epoch in range(10):
        run_epoch(model, train_loader, train=True)
        run_epoch(model, val_loader, train=False)
    """
    assert rows(src, "TL203") == []
    assert rows(src.replace("batch_size=64, shuffle=True", "batch_size=64"), "TL203") == [row_of(src, "train_loader = ")]


def test_tl203_hidden_state_fed_back_from_batch_to_batch():
    src = """
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(windows, batch_size=32, drop_last=True)
    hidden = None
    for epoch in range(20):
        for x, y in loader:
            x, y = to_device(x, device), to_device(y, device)
            out, hidden = model(x, hidden)
            hidden = hidden.detach()
            loss_fn(out, y).backward()
            optimizer.step()
            optimizer.zero_grad()
    """
    assert rows(src, "TL203") == []
    # the batch moved to the device is no state: `x` is read from this pass's batch
    stateless = src.replace("out, hidden = model(x, hidden)", "out = model(x)").replace("            hidden = hidden.detach()\n", "")
    assert rows(stateless, "TL203") == [row_of(src, "loader = DataLoader(")]
