"""``zrecord.utils``: loaderx 2.0.1's ``loaderx.utils`` names."""

from . import train_dict as train_dict
