"""``zrecord.zrecord``: the record containers where loaderx 2.0.1 keeps them
(``from loaderx.zrecord import ...``), so replacing the word ``loaderx`` by
``zrecord`` switches a program."""

from ._errors import ZrecordError
from ._records import DICT_TIERS, MAX_RECORD_LEN, Dense, Ragged

__all__ = ["Dense", "Ragged", "ZrecordError", "DICT_TIERS"]
