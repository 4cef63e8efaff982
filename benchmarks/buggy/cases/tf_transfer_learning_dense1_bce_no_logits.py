# /// script
# dependencies = ["tensorflow-gpu==2.0.0-alpha0", "tensorflow-datasets", "matplotlib"]
# ///
# (the tutorial's own pin at the time: TensorFlow 2.0 alpha)
# TensorFlow's transfer-learning tutorial (cats vs dogs on a frozen MobileNetV2): the head is a
# prediction_layer = keras.layers.Dense(1) kept in a variable, tried on a batch, then put into a
# Sequential list with the base model and the pooling layer; the tutorial's text calls its output a
# logit, but both compiles (before and after unfreezing the top of the base) use
# loss='binary_crossentropy', which expects probabilities.
# evidence: tensorflow/tensorflow#28718 ("Transfer Learning Using Pretrained ConvNets tutorial should use
# sigmoid activation"; a maintainer's answer: set from_logits=True in the loss); fixed in
# tensorflow/docs@c289884cd1cda0c4a67e8493568ef8e73d78e83e ("Explicit loss": both compiles get
# BinaryCrossentropy(from_logits=True), "since the model provides a linear output")
import tensorflow as tf
import tensorflow_datasets as tfds

keras = tf.keras

SPLIT_WEIGHTS = (8, 1, 1)
splits = tfds.Split.TRAIN.subsplit(weighted=SPLIT_WEIGHTS)

(raw_train, raw_validation, raw_test), metadata = tfds.load(
    'cats_vs_dogs', split=list(splits),
    with_info=True, as_supervised=True)

IMG_SIZE = 160


def format_example(image, label):
    image = tf.cast(image, tf.float32)
    image = (image/127.5) - 1
    image = tf.image.resize(image, (IMG_SIZE, IMG_SIZE))
    return image, label


train = raw_train.map(format_example)
validation = raw_validation.map(format_example)

BATCH_SIZE = 32
SHUFFLE_BUFFER_SIZE = 1000
train_batches = train.shuffle(SHUFFLE_BUFFER_SIZE).batch(BATCH_SIZE)
validation_batches = validation.batch(BATCH_SIZE)

for image_batch, label_batch in train_batches.take(1):
    pass

IMG_SHAPE = (IMG_SIZE, IMG_SIZE, 3)
base_model = tf.keras.applications.MobileNetV2(input_shape=IMG_SHAPE,
                                               include_top=False,
                                               weights='imagenet')
feature_batch = base_model(image_batch)
base_model.trainable = False

global_average_layer = tf.keras.layers.GlobalAveragePooling2D()
feature_batch_average = global_average_layer(feature_batch)

prediction_layer = keras.layers.Dense(1)
prediction_batch = prediction_layer(feature_batch_average)

model = tf.keras.Sequential([
    base_model,
    global_average_layer,
    prediction_layer
])

base_learning_rate = 0.0001
model.compile(optimizer=tf.keras.optimizers.RMSprop(lr=base_learning_rate),
              loss='binary_crossentropy',  # BUG TL412: the head is a linear Dense(1) (a logit) and the loss expects probabilities
              metrics=['accuracy'])

initial_epochs = 10
history = model.fit(train_batches,
                    epochs=initial_epochs,
                    validation_data=validation_batches)

base_model.trainable = True
fine_tune_at = 100
for layer in base_model.layers[:fine_tune_at]:
    layer.trainable = False

model.compile(loss='binary_crossentropy',  # BUG TL412: the same linear head, recompiled for fine-tuning with the same probability loss
              optimizer=tf.keras.optimizers.RMSprop(lr=base_learning_rate/10),
              metrics=['accuracy'])

fine_tune_epochs = 10
total_epochs = initial_epochs + fine_tune_epochs
history_fine = model.fit(train_batches,
                         epochs=total_epochs,
                         initial_epoch=initial_epochs,
                         validation_data=validation_batches)
