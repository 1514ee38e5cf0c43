"""Settings for the whole suite.

Under ``CI=true`` hypothesis is derandomized: each property test draws the same examples on
every run (seeded from the test itself) and keeps no example database, so a CI result depends
on the commit alone. Random exploration is for maintainers' longer runs (docs/reliability.md),
whose finds are committed as explicit examples with their fix.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")
