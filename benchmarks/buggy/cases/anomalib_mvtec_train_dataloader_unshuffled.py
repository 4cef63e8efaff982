# anomalib's MVTec Lightning data module (anomalib/data/mvtec.py), which every anomaly-detection model of
# the library trains on through `trainer.fit(model, datamodule=...)`: train_dataloader() returns a loader
# with shuffle=False, so every epoch sees the training images in the same file order.
# evidence: open-edge-platform/anomalib#42 ("Shuffle train dataloader": "Shuffle the train dataloader in
# mvtec", marked as a bug fix; merged by the maintainer, commit 40c7bcbb5)
from pathlib import Path
from typing import Optional, Tuple, Union

import albumentations as A
from pytorch_lightning.core.datamodule import LightningDataModule
from torch.utils.data import DataLoader, Dataset

from anomalib.data.mvtec import MVTec
from anomalib.data.transforms import PreProcessor


class MVTecDataModule(LightningDataModule):
    """MVTec Lightning Data Module."""

    def __init__(
        self,
        root: str,
        category: str,
        image_size: Optional[Union[int, Tuple[int, int]]] = None,
        train_batch_size: int = 32,
        test_batch_size: int = 32,
        num_workers: int = 8,
        transform_config: Optional[Union[str, A.Compose]] = None,
    ) -> None:
        super().__init__()
        self.root = root if isinstance(root, Path) else Path(root)
        self.category = category
        self.dataset_path = self.root / self.category
        self.pre_process = PreProcessor(config=transform_config, image_size=image_size)
        self.train_batch_size = train_batch_size
        self.test_batch_size = test_batch_size
        self.num_workers = num_workers
        self.train_data: Dataset
        self.val_data: Dataset

    def prepare_data(self):
        MVTec(root=self.root, category=self.category, pre_process=self.pre_process, is_train=True, download=True)
        MVTec(root=self.root, category=self.category, pre_process=self.pre_process, is_train=False, download=True)

    def setup(self, stage: Optional[str] = None) -> None:
        self.val_data = MVTec(root=self.root, category=self.category, pre_process=self.pre_process, is_train=False)
        if stage in (None, "fit"):
            self.train_data = MVTec(root=self.root, category=self.category, pre_process=self.pre_process, is_train=True)

    def train_dataloader(self) -> DataLoader:
        """Get train dataloader."""
        return DataLoader(  # BUG TL203: the training loader is not shuffled (shuffle=False)
            self.train_data, shuffle=False, batch_size=self.train_batch_size, num_workers=self.num_workers
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_data, shuffle=False, batch_size=self.test_batch_size, num_workers=self.num_workers)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.val_data, shuffle=False, batch_size=self.test_batch_size, num_workers=self.num_workers)
