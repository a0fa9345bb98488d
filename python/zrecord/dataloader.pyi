"""``zrecord.dataloader``: loaderx 2.0.1's ``loaderx.dataloader`` names."""

from . import DataLoader as DataLoader
