"""``zrecord.zsampler``: loaderx 2.0.1's ``loaderx.zsampler`` names."""

from . import Sampler as Sampler
