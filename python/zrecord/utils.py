"""``zrecord.utils``: ``train_dict`` where loaderx 2.0.1 keeps it."""

from ._train import train_dict

__all__ = ["train_dict"]
