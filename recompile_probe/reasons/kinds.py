"""Every reason kind, in one table: what it means, why no strategy removes it, what to do.

A new kind lands here (its entry) and in parse.py (the text that yields it). ``explain`` prints
``no_fix_why`` when no strategy of the run removed a recompile of the kind; ``suggest`` prints
``remedy`` for a recompile no measured marking removed. Both are advice, never measured: the
renderers say so. No torch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ..records.reason_detail import ReasonDetail


@dataclass(frozen=True)
class Kind:
    name: str
    meaning: str  #: what a failing guard of this kind says changed
    no_fix_why: str  #: why no strategy (marks, config) removes it
    #: what to do about it when no marking removed it; None: the size remedy (SIZE_REMEDY)
    remedy: str | None = None
    #: strategies that can remove it where the run's own did not: named as measured (with their
    #: figures) where the report ran them, as not measured where it did not (analysis.fixes)
    tries: tuple[str, ...] = ()


#: a size change no measured marking removed
SIZE_REMEDY = (
    "no measured marking removed this size change: mark it by hand with the options "
    "(min/max) it needs, or pad the size to a few buckets"
)
#: an equality between sizes (``size()[2] == size()[3]``): no mark or range can remove it
EQUALITY_REMEDY = (
    "the code needs these sizes equal (an equality guard), so a call where they differ compiles "
    "again whatever the marks or their min/max: pad the inputs to one shape (e.g. square "
    "images), or warm up each shape once"
)
#: an equality between two sizes a shape-env guard wrote: both sides name a size, neither is a
#: plain number
_SIZE_EQUALITY = re.compile(r"size\(\)\[\d+\]\)?\s*==\s*[^=]*size\(\)\[\d+\]")
#: a guard on a container's length (``len(x) == 3``): a Python value too, with its own remedy
LIST_LENGTH_REMEDY = (
    "a list's length is part of the graph: pad the list to a few fixed lengths "
    "(buckets), or stack it into one tensor"
)

# The order is the JSON contract's enum order (schema): new kinds go at the end.
TABLE: Mapping[str, Kind] = MappingProxyType(
    {
        k.name: k
        for k in (
            Kind(
                "zero_one_specialization",
                "a size guard of an entry specialized to 0 or 1, or a failed `2 <= size` guard",
                "no strategy in this run kept the batch dim symbolic through sizes 0 and 1.",
                tries=("mark_unbacked", "unbacked_sources"),
            ),
            Kind(
                "static_size_change",
                "a static size changed",
                "no strategy in this run made the changing dim dynamic.",
            ),
            Kind(
                "dtype_change",
                "a tensor's dtype changed",
                "a dtype change cannot be removed by marking dims: each dtype gets its own graph. "
                "Cast "
                "the inputs to one dtype before the call.",
                "a dtype change always recompiles: cast to one dtype before the call, or warm up "
                "each "
                "dtype once",
            ),
            Kind(
                "requires_grad_change",
                "a tensor's requires_grad changed",
                "requires_grad is part of every tensor guard: keep it the same across calls (e.g. "
                "detach, or run under torch.no_grad()).",
                "requires_grad is guarded: call with one setting (detach, or torch.no_grad() "
                "around "
                "every call)",
            ),
            Kind(
                "stride_change",
                "a tensor's strides changed",
                "the input's layout changed: make it contiguous (or the same layout) before the "
                "call.",
                "the layout changed: make the input contiguous before the call",
            ),
            Kind(
                "python_scalar_change",
                "a Python value the graph holds as a constant changed",
                "a Python number is specialized as a constant: pass it as a tensor, or let Dynamo "
                "treat "
                "it as dynamic (e.g. torch._dynamo.config.specialize_float = False for floats).",
                "a Python number is a constant in the graph: pass it as a tensor "
                "(torch.tensor(v)), or "
                "round it to a few buckets",
            ),
            Kind(
                "global_or_config_change",
                "global state (grad mode, autocast, a global, a config) changed",
                "global state (grad mode, autocast, a config) differs between calls: keep it the "
                "same, "
                "or compile one function per state.",
                "a global or config value changed between calls: set it once before the first call",
            ),
            Kind(
                "shape_env_guard",
                "a symbolic (shape-env) guard failed",
                "a symbolic guard failed; no strategy in this run avoided it. Read the expression: "
                "it "
                "names the relation the new sizes break.",
            ),
            Kind(
                "recompile_limit_hit",
                "the frame was past its recompile limit",
                "the frame ran out of recompiles: remove the recompiles above it, or raise "
                "compile: "
                "{recompile_limit: N} if they are intended.",
                "the recompile limit was hit: fix the recompiles above it first",
            ),
            Kind(
                "other",
                "a guard this tool does not classify (the raw text is kept)",
                "no strategy in this run removed it.",
            ),
            Kind(
                "duck_sizing",
                "an equality between two unrelated dims, there only because their "
                "sizes coincided at the first compile (Dynamo's comment says \"duck sizing added "
                "this "
                'equality")',
                "two unrelated dims had the same size at the first compile, so Dynamo equated them "
                "(duck sizing); give them different sizes in the first call, or set "
                "torch.fx.experimental._config.use_duck_shape = False.",
                "duck sizing tied two dims whose sizes were equal at the first compile (marks "
                "with min/max cannot untie them): give them different sizes in the first call, "
                "or set torch.fx.experimental._config.use_duck_shape = False",
            ),
            Kind(
                "user_specialization",
                "a dynamic size or int forced to a constant by the user's code "
                "(`n == 3` from `range(n)`, `if x.shape[0] == 8:`): told apart from "
                "python_scalar_change by the origin's role `specialized`, not by the text",
                "the user's code forces it to a constant (the line below).",
            ),
            Kind(
                "type_or_id_change",
                "___check_type_id / TYPE_MATCH, ___check_obj_id / ID_MATCH on a "
                "local: a module or object swapped for another (ids of globals stay "
                "global_or_config_change)",
                "an argument's type or identity changed (a module or object swapped): pass the "
                "same "
                "object each call, or compile one function per type.",
                "the argument's type or identity changed: pass the same kind of object every call",
            ),
            Kind(
                "backend_change",
                "BACKEND_MATCH: the same code compiled again with another backend callable",
                "the same code was compiled with another backend callable: reuse one backend "
                "object "
                "(or functools.partial) for every torch.compile.",
                "the backend changed: compile once per backend",
            ),
            Kind(
                "shared_code_object",
                "one code object (a decorator's `wrapped(*args, **kwargs)`) compiled for several "
                "functions: the entries compiled for one rejected the call of another (the guard "
                "reads like a swapped object or a changed len(args)); told apart by the "
                "functions the frame's closure held, not by the text",
                "the recompile limit is per code object, and this one serves several functions: "
                "no strategy removes that. Dynamo enters the wrapper as a frame of its own only "
                "after a graph break above it: remove that break (the wrapper is then inlined), "
                "compile the inner function (torch.compile(fn.__wrapped__)) instead of the "
                "decorated one, or raise compile: {recompile_limit: N} to leave room for every "
                "function.",
                "one code object serves several functions and its recompile limit is shared: "
                "remove the graph break above the wrapper (it is then inlined), or compile the "
                "inner function (fn.__wrapped__) instead of the decorated one",
            ),
            Kind(
                "object_state",
                "a flag or counter on an object the function reads changed (a cache's "
                "`is_initialized`, a module's `training`, a config field): "
                "`kwargs['cache'].layers[0].is_initialized == False`",
                "the function branches on the state of an object it is given, so each state "
                "gets its own graph; marking dims cannot change that.",
                "an object's state is part of the graph: keep it the same on every call (build "
                "the object once, in its final state, before the first call), or keep the "
                "branch on it outside the compiled function",
            ),
            Kind(
                "arguments_changed",
                "the set of arguments changed: `len(kwargs) == 6` or `len(args) == 1` of a "
                "function taking *args or **kwargs (a keyword argument came or went)",
                "the call passes other arguments than the cached one did; marking dims cannot "
                "change that.",
                "pass the same arguments on every call (an optional one explicitly as None "
                "rather than left out)",
            ),
            Kind(
                "tensor_aliasing",
                "two tensor arguments were the same object in one call and distinct in another, "
                'or the reverse: `a is b`, `Duplicate tensors found: ["a", "b"]`, '
                "NO_TENSOR_ALIASING",
                "Dynamo compiles aliased and distinct tensor arguments as different graphs (a "
                "write through one must be seen through the other); marking dims cannot change "
                "that.",
                "pass distinct tensors on every call (x.clone() where one tensor would be passed "
                "twice), or the same one twice on every call",
            ),
            Kind(
                "torch_internal_error",
                'torch raised an internal assertion ("Guard failed on the same frame it was '
                'created"), or recompiled although every guard passes on the re-check, with no '
                "other rank to force it: a bug in torch, not in the code it compiles",
                "torch raised an internal assertion; this is not your code. It comes from the "
                "marking this strategy applies (e.g. a shape_id shared by tensors whose sizes "
                "differ, sizes outside a mark's min/max): drop or correct that marking, and "
                "report the assertion to PyTorch.",
                "torch raised an internal assertion; this is not your code: drop or correct the "
                "marking that triggers it (a shape_id shared by tensors whose sizes differ, sizes "
                "outside a mark's min/max), and report it to PyTorch",
            ),
            Kind(
                "peer_rank_recompiled",
                "this rank's guards passed, but another rank's failed and guard collectives "
                'made every rank recompile (Dynamo: "Unexpected recompilation: runtime guards '
                'failed even though they passed during recompilation-reason analysis"; 2.9: '
                '"Unable to find recompilation reasons")',
                "this rank recompiled for another rank (guard collectives keep the ranks "
                "together): the cause is the other rank's recompile, read its reason.",
                "remove the recompile on the rank whose guards failed; this one follows it",
            ),
            Kind(
                "rank_change",
                "a tensor's number of dimensions changed",
                "a tensor's number of dimensions is part of every tensor guard: no mark or "
                "config makes it dynamic, each rank gets its own graph.",
                "give the tensor one number of dimensions at every call (reshape, unsqueeze or "
                "flatten before the call), or warm up each rank once",
            ),
        )
    }
)

#: shared_code_object, where the installed torch.compile takes isolate_recompiles (the recorder
#: feature-detects it and keeps the answer in reason_detail)
ISOLATE_RECOMPILES = (
    "Where the functions are compiled by separate torch.compile calls, "
    "torch.compile(..., isolate_recompiles=True) gives each call its own entries and limit "
    "(it cannot split the compiles of one torch.compile call)."
)

KINDS = tuple(TABLE)

#: the kind of torch's own assertions, and the words every report puts beside one
INTERNAL = "torch_internal_error"
INTERNAL_WORDS = "torch raised an internal assertion; this is not your code"


def _isolates(kind: str | None, detail: ReasonDetail | None) -> bool:
    return kind == "shared_code_object" and bool(detail and detail.isolate_recompiles)


def tries(kind: str | None) -> tuple[str, ...]:
    """The strategies that can remove a recompile of ``kind`` (``Kind.tries``)."""
    return TABLE[kind if kind is not None and kind in TABLE else "other"].tries


def no_fix_why(kind: str | None, detail: ReasonDetail | None = None) -> str:
    text = TABLE[kind if kind is not None and kind in TABLE else "other"].no_fix_why
    return f"{text} {ISOLATE_RECOMPILES}" if _isolates(kind, detail) else text


def remedy(kind: str | None, text: str, detail: ReasonDetail | None = None) -> str:
    """What to do about a recompile no measured marking removed; a length guard (``len(...)``)
    read as a Python value gets the list remedy."""
    if kind in ("python_scalar_change", "other") and "len(" in text:
        return LIST_LENGTH_REMEDY
    if kind == "shape_env_guard" and _SIZE_EQUALITY.search(text):
        return EQUALITY_REMEDY
    entry = TABLE.get(kind or "")
    found = entry.remedy if entry is not None and entry.remedy else SIZE_REMEDY
    return f"{found}. {ISOLATE_RECOMPILES}" if _isolates(kind, detail) else found
