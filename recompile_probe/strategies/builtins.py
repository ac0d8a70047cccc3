"""The built-in strategies: the one place to add a preset (its advice is written by advice.py
from its fields). No torch."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .model import BATCH_SOURCES, SYMBOL, SYMBOL_MAX, SYMBOL_MIN, Strategy

BUILTINS: Mapping[str, Strategy] = MappingProxyType(
    {
        s.name: s
        for s in (
            Strategy(
                "default",
                "torch.compile defaults: static first, automatic dynamic after a size "
                "change (B=1 is still specialized).",
            ),
            Strategy(
                "static", "dynamic=False: every new batch size compiles again.", dynamic=False
            ),
            Strategy(
                "dynamic_true",
                "dynamic=True: symbolic sizes from the first call, but sizes 0 and 1 "
                "are specialized.",
                dynamic=True,
            ),
            Strategy(
                "mark_dynamic",
                "torch._dynamo.mark_dynamic on the batch dims before each call "
                "(backed: B=1 still specializes).",
                mark="dynamic",
            ),
            Strategy(
                "maybe_mark_dynamic",
                "torch._dynamo.maybe_mark_dynamic on the batch dims (a hint "
                "that may be specialized away).",
                mark="maybe_dynamic",
            ),
            Strategy(
                "mark_unbacked",
                "torch._dynamo.decorators.mark_unbacked on the batch dims before "
                "each call, in eager code (the vLLM fix): no 0/1 specialization.",
                mark="unbacked",
            ),
            Strategy(
                "unbacked_sources",
                "torch.compiler.config.unbacked_sources names the batch dims; no tensor is marked.",
                config={"torch.compiler.config.unbacked_sources": BATCH_SOURCES},
            ),
            Strategy(
                "backed_size_oblivious",
                "mark_dynamic plus backed_size_oblivious: backed sizes reasoned about as if >= 2.",
                mark="dynamic",
                config={"torch.fx.experimental._config.backed_size_oblivious": True},
            ),
            Strategy(
                "auto_unbacked",
                "automatic dynamic marks changed dims unbacked "
                "(automatic_dynamic_shapes_mark_as='unbacked').",
                config={"torch._dynamo.config.automatic_dynamic_shapes_mark_as": "unbacked"},
            ),
            Strategy(
                "as_is",
                "the target exactly as decorated by its own torch.compile(...).",
                as_is=True,
            ),
            # The knobs below run only where a scenario (or --strategies) names them.
            Strategy(
                "static_sources",
                "torch.compiler.config.static_sources names the batch dims: they stay static "
                "whatever else asks for dynamic (the control; torch 2.15).",
                config={"torch.compiler.config.static_sources": BATCH_SOURCES},
            ),
            Strategy(
                "shapes_spec",
                "torch.compile(dynamic_shapes=ShapesSpec(...)) (shapes_spec= on torch 2.13): "
                "one ShapeVar per varying symbol, its range the scenario's smallest and "
                "largest size.",
                shapes_spec=True,
            ),
            Strategy(
                "isolate_recompiles",
                "torch.compile(isolate_recompiles=True): this compile call keeps a cache and "
                "recompile limit of its own.",
                compile={"isolate_recompiles": True},
            ),
            Strategy(
                "recompile_limit",
                "torch.compile(recompile_limit=1): one compile for this call; sizes its entry "
                "rejects run eagerly.",
                compile={"recompile_limit": 1},
            ),
            Strategy(
                "mark_unbacked_ranges",
                "mark_unbacked(t, dim, shape_id=symbol, min=, max=) on the batch dims: one "
                "shape_id per symbol, its range the scenario's smallest and largest size.",
                mark="unbacked",
                mark_options={"shape_id": SYMBOL, "min": SYMBOL_MIN, "max": SYMBOL_MAX},
            ),
            Strategy(
                "maybe_mark_dynamic_ranges",
                "maybe_mark_dynamic(t, dim, min=, max=) on the batch dims, the range the "
                "scenario's smallest and largest size (torch 2.15).",
                mark="maybe_dynamic",
                mark_options={"min": SYMBOL_MIN, "max": SYMBOL_MAX},
            ),
        )
    }
)

#: The knob strategies a scenario runs only when it names them (or "all"): a scenario without
#: `strategies:` runs the others.
OPT_IN: tuple[str, ...] = (
    "static_sources",
    "shapes_spec",
    "isolate_recompiles",
    "recompile_limit",
    "mark_unbacked_ranges",
    "maybe_mark_dynamic_ranges",
)

#: What a scenario without `strategies:` runs: every built-in but ``OPT_IN``.
DEFAULT_STRATEGIES: tuple[str, ...] = tuple(n for n in BUILTINS if n not in OPT_IN)

#: Strategies of distributed scenarios only (``ranks:``): the knobs torch has for ranks that
#: compile differently. Outside a process group they would change nothing, so single-process
#: scenarios neither list nor run them.
RANK_BUILTINS: Mapping[str, Strategy] = MappingProxyType(
    {
        s.name: s
        for s in (
            Strategy(
                "compiler_collectives",
                "torch._dynamo.config.enable_compiler_collectives: ranks exchange their sizes "
                "while compiling, so automatic dynamic decides alike on every rank.",
                config={"torch._dynamo.config.enable_compiler_collectives": True},
            ),
            Strategy(
                "guard_collectives",
                "torch.compiler.set_enable_guard_collectives(True): a collective before each "
                "compiled call; when one rank's guards fail, every rank recompiles.",
                guard_collectives=True,
            ),
        )
    }
)
