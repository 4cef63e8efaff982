"""TL203 through `from torch.utils import data` (`data.DataLoader`) and a dataset key in a string;
TL204 through a positional `shuffle` and a name bound to `True`."""
import torch
from torch.utils import data
from torch.utils.data import DataLoader as DL

splits = {"train": torch.randn(8, 4), "test": torch.randn(4, 4)}
train_loader = data.DataLoader(splits["train"], batch_size=4)
SHUFFLE = True
val_set = torch.randn(4, 4)
val_loader = DL(val_set, 4, True)
test_loader = data.DataLoader(splits["test"], batch_size=4, shuffle=SHUFFLE)
