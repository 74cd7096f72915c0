"""crseval: evaluate LLM-based conversational recommender systems under preference shifts."""

__version__ = "0.1.0"
