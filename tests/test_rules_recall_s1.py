"""Stages 1-2, forms of real bugs the rules used to miss: each finding next to its correct twin.

TL104 a column taken out of a table before the table is shuffled; TL105 a multi-device Lightning run;
TL102 the text column of trl's `SFTTrainer`; TL204 a torchvision test split built in place.
"""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source


def lint(source: str, select: str | None = None):
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[select] if select else None))


def rows(source: str, code: str, select: str | None = None) -> list[int]:
    """The rows of the findings of ``code``, with that rule selected (or ``select``): whether it is on by
    default or not."""
    return [f.start.row for f in lint(source, select or code) if f.code == code]


# ---------------------------------------------------------------------------------------------
# TL104: taken out of a table, then the table is shuffled

DATASET_CLASS = """
import pandas as pd
import torch
from torch.utils.data import Dataset


class LeafDataset(Dataset):
    def __init__(self, csv_path, mode="train", split=0.8):
        self.data = pd.read_csv(csv_path)
        FIRST
        self.classes = sorted({lb for lbs in self.raw_labels for lb in lbs.split(" ")})
        self.lut = {lb: i for i, lb in enumerate(self.classes)}
        SECOND
        frac = int(split * len(self.data))
        self.data = self.data[:frac] if mode == "train" else self.data[frac:]
        self.img_names = list(self.data["image"])
        self.labels = self._prepare_labels()

    def _prepare_labels(self):
        return [torch.tensor(self._one_hot(lbs)) for lbs in self.raw_labels]

    def _one_hot(self, lbs):
        out = [0] * len(self.classes)
        for lb in lbs.split(" "):
            out[self.lut[lb]] = 1
        return out

    def __getitem__(self, idx):
        return load_image(self.img_names[idx]), self.labels[idx]

    def __len__(self):
        return len(self.data)
"""
TAKE = 'self.raw_labels = list(self.data["labels"])'
SHUFFLE = "self.data = self.data.sample(frac=1, random_state=42).reset_index(drop=True)"


def test_tl104_dataset_class_takes_labels_before_shuffling_its_table():
    # the real form (a Kaggle plant-pathology dataset class): the labels are copied out of the table, the
    # table is shuffled and split, and `__getitem__` pairs the image names read afterwards with labels built
    # (by a method of the class) from the copy
    bug = DATASET_CLASS.replace("FIRST", TAKE).replace("SECOND", SHUFFLE)
    [f] = [f for f in lint(bug, "TL104") if f.code == "TL104"]
    assert f.start.row == 13 and "`self.labels`" in f.message and "`self.img_names[idx]`" in f.message
    fixed = DATASET_CLASS.replace("FIRST", SHUFFLE).replace("SECOND", TAKE)
    assert rows(fixed, "TL104") == []


def test_tl104_dataset_class_positional_rows_of_the_shuffled_table():
    src = """
    import pandas as pd
    from torch.utils.data import Dataset

    class Tabular(Dataset):
        def __init__(self, path):
            self.df = pd.read_csv(path)
            self.targets = self.df["target"].values
            self.df = self.df.sample(frac=1)

        def __getitem__(self, idx):
            row = self.df.ROWS[idx]
            return row["features"], self.targets[idx]
    """
    assert rows(src.replace("ROWS", "iloc"), "TL104") == [9]
    # `.loc` reads by index label: the shuffled table keeps its labels, the rows stay aligned
    assert rows(src.replace("ROWS", "loc"), "TL104") == []


#: taken out of the table before its shuffle, and still aligned
ALIGNED = [
    # order-free values taken before (a vocabulary, the class names) and the rows read after
    """
    import pandas as pd
    import torch
    df = pd.read_csv("train.csv")
    vocab = build_vocab(df["text"])
    classes = sorted(df["label"].unique())
    df = df.sample(frac=1)
    x = encode(df["text"], vocab)
    y = df["label"].map({c: i for i, c in enumerate(classes)})
    model.fit(x, y)
    """,
    # shuffled together
    """
    import pandas as pd
    import torch
    from sklearn.utils import shuffle
    df = pd.read_csv("train.csv")
    x = df[["a", "b"]].values
    y = df["label"].values
    x, y = shuffle(x, y, random_state=0)
    model.fit(x, y)
    """,
    # a copy made to be shuffled, paired with its original on purpose (negatives for a contrastive loss)
    """
    import random
    import torch
    anchors = load_anchors()
    negatives = list(anchors)
    random.shuffle(negatives)
    pairs = list(zip(anchors, negatives))
    """,
    # each shuffled on its own with one seed: the same permutation
    """
    import pandas as pd
    import torch
    df = pd.read_csv("train.csv")
    labels = df["label"]
    df = df.sample(frac=1, random_state=0)
    labels = labels.sample(frac=1, random_state=0)
    model.fit(df["text"], labels)
    """,
]


SCRIPT = """
import pandas as pd
import torch

df = pd.read_csv("train.csv")
FIRST
SECOND
texts = df["text"].tolist()
dataset = torch.utils.data.TensorDataset(encode(texts), torch.tensor(labels))
"""


def test_tl104_script_takes_labels_before_shuffling_the_dataframe():
    bug = SCRIPT.replace("FIRST", 'labels = df["label"].tolist()').replace(
        "SECOND", "df = df.sample(frac=1).reset_index(drop=True)")
    [f] = [f for f in lint(bug, "TL104") if f.code == "TL104"]
    assert f.start.row == 7 and "`TensorDataset(...)`" in f.message
    fixed = SCRIPT.replace("FIRST", "df = df.sample(frac=1).reset_index(drop=True)").replace(
        "SECOND", 'labels = df["label"].tolist()')
    assert rows(fixed, "TL104") == []
    for src in ALIGNED:
        assert rows(src, "TL104") == [], src


def test_tl104_hub_dataset_shuffled_after_its_labels_were_read():
    src = """
    from datasets import load_dataset
    from sklearn.model_selection import train_test_split

    ds = load_dataset("imdb", split="train")
    FIRST
    SECOND
    x_train, x_val, y_train, y_val = train_test_split(ds["text"], labels, test_size=0.1)
    """
    bug = src.replace("FIRST", 'labels = ds["label"]').replace("SECOND", "ds = ds.shuffle(seed=42)")
    assert rows(bug, "TL104") == [7]
    fixed = src.replace("FIRST", "ds = ds.shuffle(seed=42)").replace("SECOND", 'labels = ds["label"]')
    assert rows(fixed, "TL104") == []


# ---------------------------------------------------------------------------------------------
# TL105: a Lightning Trainer on several devices runs every process's own draw

DATAMODULE = """
import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, random_split


class MNISTData(pl.LightningDataModule):
    def setup(self, stage):
        full = load_mnist(train=True)
        self.train_set, self.val_set = random_split(full, [55000, 5000]SPLIT_ARGS)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=32, shuffle=True)


if __name__ == "__main__":
    trainer = pl.Trainer(TRAINER_ARGS)
    trainer.fit(Classifier(), MNISTData())
"""


def _datamodule(trainer_args: str, split_args: str = "") -> str:
    return DATAMODULE.replace("TRAINER_ARGS", trainer_args).replace("SPLIT_ARGS", split_args)


def test_tl105_lightning_datamodule_split_on_several_devices():
    # the real form (Lightning's DataModule documentation, trained on 4 GPUs): setup() runs in every process
    for args in ('accelerator="gpu", devices=4, strategy="ddp"', "devices=2", 'strategy="ddp_spawn", devices=2',
                 "devices=-1", "num_nodes=2"):
        [f] = [f for f in lint(_datamodule(args), "TL105") if f.code == "TL105"]
        assert f.start.row == 10 and "Lightning" in f.message, args
    quiet = [
        _datamodule('accelerator="gpu", devices=4, strategy="ddp"', ", generator=torch.Generator().manual_seed(42)"),
        _datamodule("devices=1"),
        _datamodule("devices=args.gpus"),  # maybe one device
        _datamodule('devices=2, strategy="dp"'),  # DataParallel: one process
        _datamodule("devices=4").replace('if __name__ == "__main__":', 'if __name__ == "__main__":\n'
                                         "    pl.seed_everything(42)"),
    ]
    for src in quiet:
        assert rows(src, "TL105") == [], src


def test_tl105_spawned_lightning_processes_rerun_only_the_hooks():
    src = """
    import random
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader

    class Data(pl.LightningDataModule):
        def __init__(self, items):
            super().__init__()
            self.items = items

        def prepare_data(self):
            random.shuffle(cache_list)

        def setup(self, stage):
            random.shuffle(self.items)

    class Splitter:
        def split(self, items):
            random.shuffle(items)
            return items[:900], items[900:]

    if __name__ == "__main__":
        items = load_items()
        random.shuffle(items)
        train_items, val_items = Splitter().split(items)
        trainer = pl.Trainer(strategy="STRATEGY", devices=2)
        trainer.fit(Model(), Data(train_items))
    """
    # spawned: what the parent drew reaches every process pickled (its own shuffle, a helper class's method);
    # the data module's setup() runs again in each
    assert rows(src.replace("STRATEGY", "ddp_spawn"), "TL105") == [15]
    # launched as scripts: the __main__ block runs again in each process too; prepare_data() never does
    assert rows(src.replace("STRATEGY", "ddp"), "TL105") == [15, 19, 24]


def test_tl105_fabric_seed_everything_seeds_every_process():
    src = """
    import torch
    from lightning.fabric import Fabric
    from torch.utils.data import random_split

    def main():
        fabric = Fabric(accelerator="cuda", devices=2, strategy="ddp")
        fabric.launch()
        SEED
        train_set, val_set = random_split(load_data(), [0.9, 0.1])
        model, optimizer = fabric.setup(build_model(), build_optimizer())
        for batch in fabric.setup_dataloaders(make_loader(train_set)):
            fabric.backward(model(batch).loss)
            optimizer.step()

    if __name__ == "__main__":
        main()
    """
    assert rows(src.replace("SEED", "pass"), "TL105") == [10]
    assert rows(src.replace("SEED", "fabric.seed_everything(42)"), "TL105") == []


# ---------------------------------------------------------------------------------------------
# TL102: the text column of trl's SFTTrainer

SFT_CONFIG = """
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

raw = load_dataset("glue", "sst2")
config = SFTConfig(output_dir="out", dataset_text_field=FIELD)
trainer = SFTTrainer(model="gpt2", args=config, train_dataset=raw["train"]EXTRA)
trainer.train()
"""


def test_tl102_sft_config_text_field_not_a_column():
    [f] = lint(SFT_CONFIG.replace("FIELD", '"text"').replace("EXTRA", ""), "TL102")
    assert f.start.row == 6 and "'text'" in f.message and "'sentence'" in f.hint
    assert rows(SFT_CONFIG.replace("FIELD", '"sentence"').replace("EXTRA", ""), "TL102", "TL102") == []
    # a formatting function builds the text: the field is not read
    with_fmt = SFT_CONFIG.replace("FIELD", '"text"').replace("EXTRA", ", formatting_func=to_text")
    assert rows(with_fmt, "TL102", "TL102") == []


def test_tl102_text_field_set_on_the_parsed_config():
    # the real form (an SFT script): the config comes from the command line, the field is set on it afterwards
    src = """
    import trl
    from datasets import load_dataset

    def train():
        parser = trl.TrlParser((trl.SFTConfig,))
        (args,) = parser.parse_args_and_config()
        dataset = load_dataset("cnn_dailymail", "3.0.0")
        args.dataset_text_field = FIELD
        trainer = trl.SFTTrainer(model, train_dataset=dataset["train"], args=args)
        trainer.train()

    if __name__ == "__main__":
        train()
    """
    [f] = lint(src.replace("FIELD", '"text"'), "TL102")
    assert f.start.row == 9 and "KeyError: 'text'" in f.message
    assert rows(src.replace("FIELD", '"article"'), "TL102", "TL102") == []


# ---------------------------------------------------------------------------------------------
# TL204 (off by default): the test split built in place


def test_tl204_torchvision_test_split_built_in_the_loader():
    # the real form (an adversarial-training MNIST script): `train=False` says the split, not a name
    src = """
    import torch
    from torchvision import datasets, transforms

    test_loader = torch.utils.data.DataLoader(
        datasets.MNIST("../data", train=FLAG, transform=transforms.ToTensor()),
        batch_size=128, shuffle=True)
    """
    assert rows(src.replace("FLAG", "False"), "TL204", "TL204") == [7]
    assert rows(src.replace("FLAG", "True"), "TL204", "TL204") == []
    assert "TL204" not in [f.code for f in lint(src.replace("FLAG", "False"))]  # off by default
