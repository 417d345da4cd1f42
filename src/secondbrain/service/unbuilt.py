"""RPCs that are part of the API but not built yet answer UNIMPLEMENTED, saying so, instead of a bare default."""

from secondbrain import __version__
from secondbrain.errors import NotBuiltYet


def not_built(rpc: str) -> NotBuiltYet:
    return NotBuiltYet(f"{rpc} is part of the API but not built yet in secondbrain {__version__}")
