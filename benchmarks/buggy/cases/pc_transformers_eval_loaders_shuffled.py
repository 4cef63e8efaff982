# The data-loading module of PC-Transformers, a predictive-coding language model trained in PyTorch
# (Data_preprocessing/dataloader.py): the validation and test DataLoaders are built with shuffle=True,
# like the training one.
# evidence: iCog-Labs-Dev/PC-Transformers#65 ("fix: update DataLoader shuffle settings for validation and test
# datasets", branch fix/disable-shuffle-in-eval; merged, commit d3f9216 sets shuffle=False on both)
from torch.utils.data import DataLoader

from Data_preprocessing.config import Config
from Data_preprocessing.datasets.merged_sets import TokenizedDataset
from utils.model_utils import load_tokenizer, pad_collate_fn

tokenizer = load_tokenizer()
pad_token_id = tokenizer.pad_token_id


def get_datasets():
    train_dataset = TokenizedDataset("train", Config.TOKENIZER_DIR, Config.MAX_LENGTH)
    valid_dataset = TokenizedDataset("valid", Config.TOKENIZER_DIR, Config.MAX_LENGTH)
    test_dataset = TokenizedDataset("test", Config.TOKENIZER_DIR, Config.MAX_LENGTH)
    return train_dataset, valid_dataset, test_dataset


def get_loaders():
    train_dataset, valid_dataset, test_dataset = get_datasets()
    train_loader = DataLoader(
        train_dataset,
        batch_size=Config.BATCH_SIZE,
        shuffle=True,
        collate_fn=lambda batch: pad_collate_fn(batch, pad_token_id),
    )
    valid_loader = DataLoader(
        valid_dataset,
        batch_size=Config.BATCH_SIZE,
        shuffle=True,  # BUG TL204: (reported at shuffle=True) the validation loader is shuffled
        collate_fn=lambda batch: pad_collate_fn(batch, pad_token_id),
    )
    test_loader = DataLoader(
        test_dataset,
        batch_size=Config.BATCH_SIZE,
        shuffle=True,  # BUG TL204: (reported at shuffle=True) the test loader is shuffled
        collate_fn=lambda batch: pad_collate_fn(batch, pad_token_id),
    )
    return train_loader, valid_loader, test_loader
