# A Florence-2 object-detection fine-tuning loop (a labelling tool's target model): AdamW imported
# from transformers, which removed it in 4.50.
# evidence: autodistill/autodistill-florence-2#6 (model.py: ImportError: cannot import name 'AdamW'
# from 'transformers'; fix: import AdamW from torch.optim), autodistill/autodistill-florence-2#5
import torch
from torch.utils.data import DataLoader
from transformers import (AdamW, AutoModelForCausalLM, AutoProcessor,  # BUG TL802: transformers.AdamW was removed
                          get_scheduler)

from autodistill_florence_2.dataset import DetectionDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = AutoModelForCausalLM.from_pretrained("microsoft/Florence-2-base-ft", trust_remote_code=True).to(device)
processor = AutoProcessor.from_pretrained("microsoft/Florence-2-base-ft", trust_remote_code=True)


def collate_fn(batch):
    questions, answers, images = zip(*batch)
    inputs = processor(text=list(questions), images=list(images), return_tensors="pt", padding=True).to(device)
    return inputs, answers


train_loader = DataLoader(DetectionDataset("train"), batch_size=6, collate_fn=collate_fn, shuffle=True)


def train_model(train_loader, model, processor, epochs=10, lr=1e-6):
    optimizer = AdamW(model.parameters(), lr=lr)
    num_training_steps = epochs * len(train_loader)
    lr_scheduler = get_scheduler(
        name="linear", optimizer=optimizer, num_warmup_steps=0, num_training_steps=num_training_steps
    )
    for epoch in range(epochs):
        model.train()
        for inputs, answers in train_loader:
            labels = processor.tokenizer(text=answers, return_tensors="pt", padding=True).input_ids.to(device)
            outputs = model(input_ids=inputs["input_ids"], pixel_values=inputs["pixel_values"], labels=labels)
            loss = outputs.loss
            loss.backward()
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()


train_model(train_loader, model, processor)
