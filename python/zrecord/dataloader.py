"""``zrecord.dataloader``: ``DataLoader`` where loaderx 2.0.1 keeps it."""

from ._loader import DataLoader

__all__ = ["DataLoader"]
