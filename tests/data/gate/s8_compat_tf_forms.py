# /// script
# dependencies = ["transformers>=5", "tensorflow>=2.16"]
# ///
"""transformers TensorFlow classes through a module alias and a TF module import; a Keras 3
optimizer given through a variable to a subclass of a TF model, the tokenizer through an alias."""
import keras
import transformers as tr
from transformers import GPT2Tokenizer as Tok
from transformers import TFBertForSequenceClassification
from transformers.modeling_tf_utils import TFPreTrainedModel

encoder = tr.TFBertModel.from_pretrained("bert-base-uncased")
assert issubclass(TFBertForSequenceClassification, TFPreTrainedModel)


class Classifier(TFBertForSequenceClassification):
    pass


clf = Classifier.from_pretrained("bert-base-uncased", num_labels=2)
optimizer = keras.optimizers.Adam(learning_rate=3e-5)
clf.compile(optimizer)

tokenizer = Tok(vocab_file="bpe/vocab.json", merges_file="bpe/merges.txt")
fast = tr.RobertaTokenizerFast(vocab_file="v.json", merges_file="m.txt")
