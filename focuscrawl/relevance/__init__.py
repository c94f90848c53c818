"""The topic model ("nugget function"): labelled examples in, a scored probability out."""

from focuscrawl.relevance.examples import Example, ExampleList, ExamplesError, load_examples, read_labels
from focuscrawl.relevance.model import ModelError, TopicModel, TrainingError, train_topic_model

__all__ = [
    "Example", "ExampleList", "ExamplesError", "load_examples", "read_labels",
    "ModelError", "TopicModel", "TrainingError", "train_topic_model",
]
