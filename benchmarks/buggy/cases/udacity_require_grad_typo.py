# A course's transfer-learning solution notebook: the VGG16 feature layers are meant to be frozen,
# but the attribute is misspelt (`require_grad`), so nothing is frozen and the whole network trains.
# evidence: udacity/deep-learning-v2-pytorch#12 ("CNN - Transfer learning notebook - `require_grad`
# needs to be `requires_grad`")
import torch
import torch.nn as nn
import torch.optim as optim
from torchvision import datasets, models, transforms

data_transform = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])
train_data = datasets.ImageFolder("flower_photos/train/", transform=data_transform)
train_loader = torch.utils.data.DataLoader(train_data, batch_size=20, num_workers=0, shuffle=True)

vgg16 = models.vgg16(pretrained=True)

# Freeze training for all "features" layers
for param in vgg16.features.parameters():
    param.require_grad = False  # BUG TL305: misspelt attribute: freezes nothing

vgg16.classifier[6] = nn.Linear(vgg16.classifier[6].in_features, 5)
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(vgg16.classifier.parameters(), lr=0.001)

for epoch in range(1, 3):
    for batch_i, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = vgg16(data)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
