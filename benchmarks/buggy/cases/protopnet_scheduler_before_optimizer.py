# A prototype-network training script: the joint learning-rate scheduler is stepped at the start of
# each epoch, before any optimizer step of that epoch.
# evidence: jdonnelly36/Deformable-ProtoPNet#6 (UserWarning: Detected call of lr_scheduler.step() before
# optimizer.step(); fixed by the author in commit e6a7d39)
import torch

import model as ppnet_model
import train_and_test as tnt
from settings import joint_optimizer_lrs, joint_lr_step_size, num_train_epochs

ppnet = ppnet_model.construct_PPNet(base_architecture="resnet50", pretrained=True, img_size=224)
joint_optimizer_specs = [
    {"params": ppnet.features.parameters(), "lr": joint_optimizer_lrs["features"], "weight_decay": 1e-3},
    {"params": ppnet.prototype_vectors, "lr": joint_optimizer_lrs["prototype_vectors"]},
]
joint_optimizer = torch.optim.Adam(joint_optimizer_specs)
joint_lr_scheduler = torch.optim.lr_scheduler.StepLR(joint_optimizer, step_size=joint_lr_step_size, gamma=0.1)

for epoch in range(num_train_epochs):
    joint_lr_scheduler.step()  # BUG TL704: stepped before the epoch's optimizer steps
    for image, label in tnt.train_loader:
        output, min_distances = ppnet(image)
        loss = torch.nn.functional.cross_entropy(output, label)
        joint_optimizer.zero_grad()
        loss.backward()
        joint_optimizer.step()
