"""A/B harnesses: two checkouts, or the shipped code against an alternative, in one run."""
