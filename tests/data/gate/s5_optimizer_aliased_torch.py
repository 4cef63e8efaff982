"""TL502, TL503 (torch path), TL504 through aliased imports: `import transformers as tr`,
`from torch import optim`, parameters given from `named_parameters()` (through a name, or inline),
a positional learning rate."""
import transformers as tr
from torch import optim

model = tr.AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2).to("cuda")
decay = [p for n, p in model.named_parameters() if "bias" not in n]
optimizer = optim.RAdam(decay, weight_decay=0.01)  # TL502: no lr

high = optim.Adamax((p for _, p in model.named_parameters()), 0.01)  # TL503: positional lr
model = tr.AutoModelForSequenceClassification.from_pretrained("roberta-base", num_labels=2)  # TL504
loader = []
for batch in loader:
    model(**batch).loss.backward()
    high.step()
