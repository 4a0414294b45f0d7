"""Put this folder on PYTHONPATH to run litrank as on an install without the embeddings extra:
Python imports ``sitecustomize`` at start-up, and a ``None`` in ``sys.modules`` makes every
``import sentence_transformers`` fail and ``importlib.util.find_spec`` refuse it, which is how
:func:`recommender.models.embeddings.embeddings_available` tells that the extra is missing."""
import sys

sys.modules["sentence_transformers"] = None
