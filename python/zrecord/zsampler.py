"""``zrecord.zsampler``: ``Sampler`` where loaderx 2.0.1 keeps it."""

from ._sampler import Sampler

__all__ = ["Sampler"]
