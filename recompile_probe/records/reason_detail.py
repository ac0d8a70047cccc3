"""A failing guard as structured data (reasons/parse.py reads it from Dynamo's text). No torch."""

from __future__ import annotations

from dataclasses import dataclass, field

from .encode import OMIT_NONE


@dataclass(frozen=True)
class ReasonDetail:
    """One failing guard, structured."""

    kind: str  #: one of KINDS
    what: str  #: size, stride, dtype, requires_grad, device, rank, value, type, id,
    #: global state, shape-env expression, another rank's guards, recompile limit, unknown
    source: str | None = None  #: e.g. L['x'], or the expression's subject
    dim: int | None = None
    expected: str | None = None
    actual: str | None = None
    entry: str | None = None  #: the cache entry whose guard failed, e.g. "0/0"
    text: str = ""  #: the guard-failure line, comment stripped
    #: the size symbol (B, S, ...) whose dim this is, where the source and dim map to one; set
    #: by the probe, which knows the scenario's dims
    symbol: str | None = None
    #: a recompile of one code object compiled for several functions (kind
    #: shared_code_object): the function it was first compiled for, the others, and whether
    #: this torch's torch.compile takes ``isolate_recompiles``; unset (and not written) otherwise
    function: str | None = field(default=None, metadata=OMIT_NONE)
    compiled_for: tuple[str, ...] | None = field(default=None, metadata=OMIT_NONE)
    isolate_recompiles: bool | None = field(default=None, metadata=OMIT_NONE)
