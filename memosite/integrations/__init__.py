"""Adapters that put memosite behind other tools' interfaces (each needs its own optional extra)."""
