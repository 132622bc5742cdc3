import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hypothesis import settings  # noqa: E402

# A property holds or fails whatever the time each example takes: a shared machine (or a model loaded on the first
# example of a script) would otherwise fail a correct property on Hypothesis's per-example deadline.
settings.register_profile("granrag", deadline=None)
settings.load_profile("granrag")
