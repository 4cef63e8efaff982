"""TL105: the script runs as several processes because it reads "LOCAL_RANK" — only in a string, which is
no gate word; the unseeded draws come from `random` and a `datasets` dataset's `train_test_split`."""
import os
import random

import torch
from datasets import Dataset

local_rank = int(os.environ["LOCAL_RANK"])
files = sorted(os.path.join("data", f) for f in os.listdir("data"))
random.shuffle(files)
table = Dataset.from_dict({"path": files})
parts = table.train_test_split(test_size=0.1)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for row in parts["train"]:
    model(load(row["path"])).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
