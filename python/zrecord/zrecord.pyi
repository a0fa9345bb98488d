"""``zrecord.zrecord``: loaderx 2.0.1's ``loaderx.zrecord`` names."""

from . import DICT_TIERS as DICT_TIERS, Dense as Dense, Ragged as Ragged, ZrecordError as ZrecordError

MAX_RECORD_LEN: int
