from .base import AbstractCheckpoint as AbstractCheckpoint
from .binomial import BinomialCheckpoint as BinomialCheckpoint
from .names import (
    CHECKPOINTS as CHECKPOINTS,
    parse_checkpoint as parse_checkpoint,
    resolve_checkpoint as resolve_checkpoint,
    schedule_name as schedule_name,
    spellings as spellings,
)
from .nested import NestedCheckpoint as NestedCheckpoint
from .plain import NoCheckpoint as NoCheckpoint
from .recursive import RecursiveCheckpoint as RecursiveCheckpoint
from .step import StepCheckpoint as StepCheckpoint
