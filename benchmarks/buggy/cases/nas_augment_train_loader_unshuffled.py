# Retraining the searched cell of a NAS paper's code (augment.py): the CIFAR training DataLoader is
# built with shuffle=False, so every epoch visits the training set in its stored order.
# evidence: MAC-AutoML/rethinking_performance_estimation_in_NAS#17 (the authors: "shuffle=False may lead to
# worse performance ... after we set shuffle=True, it has exactly the same 97.3+ top-1 accuracy as we reported
# in our paper"); fixed in MAC-AutoML/rethinking_performance_estimation_in_NAS@7439cea1a22170feed0e9424dfede7b528e83c6e
import torch.nn as nn
from config import AugmentConfig
import utils
from models.augment_cnn import AugmentCNN
from utils import *

config = AugmentConfig()
device = torch.device("cuda")


def main():
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)

    input_size, input_channels, n_classes, train_data, valid_data = utils.get_data(
        config.dataset, config.data_path, config.image_size, config.cutout_length, validation=True)
    criterion = nn.CrossEntropyLoss().to(device)
    use_aux = config.aux_weight > 0.
    model = AugmentCNN(config.image_size, input_channels, config.init_channels, n_classes, config.layers,
                       use_aux, eval(config.genotype))
    model = nn.DataParallel(model, device_ids=config.gpus).to(device)
    optimizer = torch.optim.SGD(model.parameters(), config.lr, momentum=config.momentum,
                                weight_decay=config.weight_decay)

    if config.data_loader_type == 'Torch':
        train_loader = torch.utils.data.DataLoader(train_data,  # BUG TL203: the training loader is not shuffled (shuffle=False)
                                                   batch_size=config.batch_size,
                                                   shuffle=False,
                                                   num_workers=config.workers,
                                                   pin_memory=True)
        valid_loader = torch.utils.data.DataLoader(valid_data,
                                                   batch_size=config.batch_size,
                                                   shuffle=False,
                                                   num_workers=config.workers,
                                                   pin_memory=True)
    else:
        raise NotImplementedError
    lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, config.epochs)

    for epoch in range(config.epochs):
        drop_prob = config.drop_path_prob * epoch / config.epochs
        model.module.drop_path_prob(drop_prob, 32)
        train(train_loader, model, optimizer, criterion, epoch)
        validate(valid_loader, model, criterion, epoch)
        lr_scheduler.step()


def train(train_loader, model, optimizer, criterion, epoch):
    def train_iter(X, y):
        optimizer.zero_grad()
        logits, aux_logits = model(X)
        loss = criterion(logits, y)
        if config.aux_weight > 0.:
            loss += config.aux_weight * criterion(aux_logits, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()

    model.train()
    for step, (X, y) in enumerate(train_loader):
        X, y = X.to(device, non_blocking=True), y.to(device, non_blocking=True)
        train_iter(X, y)


def validate(valid_loader, model, criterion, epoch):
    model.eval()
    with torch.no_grad():
        for step, (X, y) in enumerate(valid_loader):
            X, y = X.to(device, non_blocking=True), y.to(device, non_blocking=True)
            logits, _ = model(X)
            loss = criterion(logits, y)


if __name__ == "__main__":
    main()
