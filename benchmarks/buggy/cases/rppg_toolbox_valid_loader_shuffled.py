# The rPPG-Toolbox training entry point (main.py): the validation DataLoader is built with shuffle=True
# (and draws from the same seeded generator `g` as the training loader).
# evidence: ubicomplab/rPPG-Toolbox#85 ("valid_shuffle_false": "set the shuffle flag of valid data loder
# false"; merged, commit a899736 changes the validation loader's shuffle=True to shuffle=False)
import argparse
import random

import numpy as np
import torch
from torch.utils.data import DataLoader

from config import get_config
from dataset import data_loader
from neural_methods import trainer

RANDOM_SEED = 100
torch.manual_seed(RANDOM_SEED)
torch.cuda.manual_seed(RANDOM_SEED)
np.random.seed(RANDOM_SEED)
random.seed(RANDOM_SEED)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
g = torch.Generator()
g.manual_seed(RANDOM_SEED)


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def add_args(parser):
    parser.add_argument("--config_file", required=False, default="configs/UBFC_SIGNAL.yaml", type=str)
    return parser


def train_and_test(config, data_loader_dict):
    if config.MODEL.NAME == "Physnet":
        model_trainer = trainer.PhysnetTrainer.PhysnetTrainer(config)
    elif config.MODEL.NAME == "Tscan":
        model_trainer = trainer.TscanTrainer.TscanTrainer(config)
    else:
        raise ValueError("Your Model is Not Supported  Yet!")
    model_trainer.train(data_loader_dict)
    model_trainer.test(data_loader_dict)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser = add_args(parser)
    parser = trainer.BaseTrainer.BaseTrainer.add_trainer_args(parser)
    parser = data_loader.BaseLoader.BaseLoader.add_data_loader_args(parser)
    args = parser.parse_args()
    config = get_config(args)

    data_loader_dict = dict()
    if config.TRAIN.DATA.DATASET == "UBFC":
        train_loader = data_loader.UBFCLoader.UBFCLoader
    elif config.TRAIN.DATA.DATASET == "PURE":
        train_loader = data_loader.PURELoader.PURELoader
    else:
        raise ValueError("Unsupported dataset! Currently supporting UBFC, PURE, and SCAMPS.")
    if config.VALID.DATA.DATASET == "UBFC":
        valid_loader = data_loader.UBFCLoader.UBFCLoader
    elif config.VALID.DATA.DATASET == "PURE":
        valid_loader = data_loader.PURELoader.PURELoader
    else:
        raise ValueError("Unsupported dataset! Currently supporting UBFC, PURE, and SCAMPS.")

    train_data_loader = train_loader(name="train", data_path=config.TRAIN.DATA.DATA_PATH, config_data=config.TRAIN.DATA)
    data_loader_dict["train"] = DataLoader(
        dataset=train_data_loader,
        num_workers=16,
        batch_size=config.TRAIN.BATCH_SIZE,
        shuffle=True,
        worker_init_fn=seed_worker,
        generator=g,
    )
    valid_data = valid_loader(name="valid", data_path=config.VALID.DATA.DATA_PATH, config_data=config.VALID.DATA)
    data_loader_dict["valid"] = DataLoader(
        dataset=valid_data,
        num_workers=16,
        batch_size=config.TRAIN.BATCH_SIZE,  # batch size for val is the same as train
        shuffle=True,  # BUG TL204: (reported at shuffle=True) the validation loader is shuffled
        worker_init_fn=seed_worker,
        generator=g,
    )
    train_and_test(config, data_loader_dict)
