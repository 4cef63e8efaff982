"""TL501 and TL503 (Keras path) on a model whose class is a subclass of a transformers model, with the
optimizer given through names: a string in a variable, `tf_keras` optimizers imported under another name."""
from tf_keras import optimizers as opts
from transformers import TFBertForSequenceClassification as Base


class Classifier(Base):
    pass


model = Classifier.from_pretrained("bert-base-cased", num_labels=2)
name = "adam"
model.compile(optimizer=name)  # TL501

third = Classifier.from_pretrained("bert-base-cased", num_labels=2)
third.compile(opts.Nadam())  # TL503: default learning rate
