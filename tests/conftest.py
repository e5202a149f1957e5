"""Settings for the whole suite: hypothesis runs each example without a deadline and does not
fail a test for generating slowly, since on a loaded 2-core machine one example may take
longer than hypothesis's 200 ms default. Time budgets are `bench/`'s business (DESIGN §9);
a test's own `@settings` still sets its example count. `HYPOTHESIS_PROFILE=default` restores
hypothesis's defaults."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "loaded-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "loaded-machine"))
