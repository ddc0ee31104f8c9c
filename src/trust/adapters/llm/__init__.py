"""Model adapter: the OpenAI-compatible chat client (`client`) and sentence embeddings (`embeddings`)."""

__all__: list[str] = []
