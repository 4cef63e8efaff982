# The "going modular" chapter of a PyTorch course (data_setup.py): create_dataloaders builds the test
# DataLoader with shuffle=True, next to a comment that test data need no shuffling.
# evidence: mrdbourke/pytorch-deep-learning#665 ("Dataloader shuffle In Test Set": test_dataloader has
# shuffle=True; the author: "Thank you! Just fixed it")
import os

from torchvision import datasets, transforms
from torch.utils.data import DataLoader

NUM_WORKERS = os.cpu_count()


def create_dataloaders(
    train_dir: str,
    test_dir: str,
    transform: transforms.Compose,
    batch_size: int,
    num_workers: int = NUM_WORKERS
):
    """Creates training and testing DataLoaders."""
    train_data = datasets.ImageFolder(train_dir, transform=transform)
    test_data = datasets.ImageFolder(test_dir, transform=transform)

    class_names = train_data.classes

    train_dataloader = DataLoader(
        train_data,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        pin_memory=True,
    )
    test_dataloader = DataLoader(
        test_data,
        batch_size=batch_size,
        shuffle=True,  # don't usually need to shuffle testing data  # BUG TL204: (reported at shuffle=True) the test loader is shuffled
        num_workers=num_workers,
        pin_memory=True,
    )

    return train_dataloader, test_dataloader, class_names
