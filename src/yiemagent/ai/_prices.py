"""Model prices from a maintained database: the `genai-prices` package (DESIGN §13).

The built-in catalogue names the models (ids, APIs, context windows); what they cost comes
from `genai-prices` (Pydantic's price data for hundreds of models and providers, updated
with each release), looked up by provider and model id the first time a catalogue model is
used. The package is imported only then: importing it and loading its data takes a
noticeable part of a second once per process, too much for `import yiemagent`. Its bundled
snapshot is used as is; nothing is fetched over the network.

Prices are the base rate per million tokens; a model with tiered prices (more per token
above a long prompt, e.g. 200 000 tokens) is charged its first tier. Without the package
(it comes with the `openai` and `anthropic` extras) hosted models get no price; what needs
one (`yiem run --max-cost`, `yiem models`) says so.
"""

from __future__ import annotations

import datetime
import logging
from decimal import Decimal
from functools import cache
from typing import Any

from yiemagent.types.model import ModelCost

__all__ = ["lookup_price"]

logger = logging.getLogger(__name__)


def _number(value: Any) -> float:
    """A price field: a `Decimal`, tiered prices (their base), or None (0)."""
    if value is None:
        return 0.0
    if isinstance(value, Decimal | int | float):
        return float(value)
    base = getattr(value, "base", None)
    return float(base) if base is not None else 0.0


@cache
def lookup_price(provider: str, model_id: str) -> ModelCost | None:
    """The price of `provider`/`model_id` in USD per million tokens, or None when the
    database does not know it (or `genai-prices` is not installed)."""
    try:
        from genai_prices import data_snapshot
    except ModuleNotFoundError:  # said where a price is needed (`yiem run --max-cost`)
        logger.debug("no price for %s/%s: genai-prices is not installed", provider, model_id)
        return None
    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(model_id, None, provider, None)
        price = info.get_prices(datetime.datetime.now(datetime.UTC))
    except Exception as exc:  # LookupError for an unknown model; anything else: no price
        logger.debug("no price for %s/%s: %s", provider, model_id, exc)
        return None
    return ModelCost(
        input=_number(price.input_mtok),
        output=_number(price.output_mtok),
        cache_read=_number(price.cache_read_mtok),
        cache_write=_number(price.cache_write_mtok),
    )
