"""``zrecord.torch``: collating Ragged batches for ``torch.utils.data``."""

from typing import Any, List, NamedTuple, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt
import torch

class PackedBatch(NamedTuple):
    """Records back to back: ``values[offsets[k]:offsets[k + 1]]`` is record ``k``."""

    values: torch.Tensor
    offsets: torch.Tensor
    shapes: torch.Tensor

class PaddedBatch(NamedTuple):
    """Records of one rank padded to their largest shape; ``shapes[k]`` is record ``k``'s own."""

    values: torch.Tensor
    shapes: torch.Tensor

def collate_ragged(
    batch: Union[List[npt.NDArray[Any]], Tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    padding_value: Optional[Any] = None,
) -> Union[PackedBatch, PaddedBatch]:
    """A Ragged batch (list of arrays or packed tuple) as tensors: packed, or padded with ``padding_value``."""
