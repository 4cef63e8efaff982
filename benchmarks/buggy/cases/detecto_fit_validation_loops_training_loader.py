# detecto's Model.fit (detecto/core.py): a Faster R-CNN fine-tuning loop that wraps the training and
# validation datasets in DataLoaders, trains one epoch, then computes the validation loss under no_grad,
# but the validation loop iterates `dataset` (the training loader) and divides by the validation set's
# size: the reported validation losses are training losses.
# evidence: alankbi/detecto#38 ("Fix validation loss incorrectly using training dataset", fixes
# alankbi/detecto#37; merged), commit alankbi/detecto@c055e5d621f9d3deac095f05a5b41eb107d4f554
import torch

from detecto.core import DataLoader


class Model:
    def fit(self, dataset, val_dataset=None, epochs=10, learning_rate=0.005, momentum=0.9,
            weight_decay=0.0005, gamma=0.1, lr_step_size=3, verbose=False):
        if not isinstance(dataset, DataLoader):
            dataset = DataLoader(dataset, shuffle=True)

        if val_dataset is not None and not isinstance(val_dataset, DataLoader):
            val_dataset = DataLoader(val_dataset)

        losses = []
        parameters = [p for p in self._model.parameters() if p.requires_grad]
        optimizer = torch.optim.SGD(parameters, lr=learning_rate, momentum=momentum, weight_decay=weight_decay)
        lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=lr_step_size, gamma=gamma)

        for epoch in range(epochs):
            self._model.train()
            for images, targets in dataset:
                self._convert_to_int_labels(targets)
                images, targets = self._to_device(images, targets)
                loss_dict = self._model(images, targets)
                total_loss = sum(loss for loss in loss_dict.values())
                optimizer.zero_grad()
                total_loss.backward()
                optimizer.step()

            if val_dataset is not None:
                avg_loss = 0
                with torch.no_grad():
                    for images, targets in dataset:  # BUG TL608: the validation loss is computed over the training loader
                        self._convert_to_int_labels(targets)
                        images, targets = self._to_device(images, targets)
                        loss_dict = self._model(images, targets)
                        total_loss = sum(loss for loss in loss_dict.values())
                        avg_loss += total_loss.item()

                avg_loss /= len(val_dataset.dataset)
                losses.append(avg_loss)

            lr_scheduler.step()

        if len(losses) > 0:
            return losses
