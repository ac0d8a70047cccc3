"""What two runs of one scenario must agree on, whatever process or history made them. No torch.

Timings differ run to run; so do a few numbers that belong to the process (see ``ADDRESS`` and
``INSTALLED_GLOBAL``) and the trace files' paths. ``comparable`` leaves exactly those out: the
tests hold ``--jobs N`` to ``--isolate process``, shards merged to the unsharded report, and the
shipped configs before and after a refactor to it.
"""

from __future__ import annotations

import re

#: The JSON fields of a run that are wall-clock measurements (or derived from one), wherever they
#: occur (run, calls[], compile_events[]): two runs of the same report differ only there. `--jobs
#: N` is tested to give `--isolate process`'s report with exactly these fields left out.
TIMING_FIELDS = frozenset(
    {
        "latency_us",  # calls[]
        "compile_time_ms",  # run and compile_events[]
        "guard_latency_us",  # run and compile_events[] (Dynamo's own timing)
        "steady_state_us",
        "steady_state_min_us",
        "steady_state_p90_us",
        "steady_state_noisy",  # min against median of the same samples
        "eager_us",
        "eager_min_us",
        "eager_noisy",  # min against median, as steady_state_noisy
        "guard_check_us",
        "seconds",  # coverage: the decision's wall time
    }
)


#: Besides timings, two things in a report are the process's, not the run's:
#: - the object addresses Dynamo writes into ID_MATCH / TYPE_MATCH guard text, e.g.
#:   ``___check_obj_id(G['torch'], 140238952812192)``: id() in the process that compiled (two
#:   `--isolate process` runs of one scenario differ there too);
#: - the number Dynamo appends to the globals it installs in the target's module, e.g.
#:   ``G['__builtins_dict___68']``: a process-wide counter (bytecode_transformation.unique_id)
#:   that torch._dynamo.reset() does not reset, so it counts every compile the process made
#:   before (in an `--isolate process` worker, the warm-up's and the earlier sequences').
ADDRESS = re.compile(r"(___check_(?:type|obj)_id\(.+?, )\d+(?=\))")
#: an object's repr in a guard text: torch 2.11 appends ``type=<code object _check at 0x7fc5...>``
#: to an ID_MATCH guard, with that object's address
REPR_ADDRESS = re.compile(r"(\bat 0x)[0-9a-fA-F]+\b")
INSTALLED_GLOBAL = re.compile(
    r"\b(__builtins_dict__|__resume_at_\d+|___context_manager_\d+|"
    r"__warnings_warn_wrapper|__gen_rand_values)_\d+\b"
)


def without_timings(data: object) -> object:
    """A report's JSON data (``report.to_dict``) without TIMING_FIELDS, at any depth."""
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if k not in TIMING_FIELDS}
    if isinstance(data, (list, tuple)):
        return [without_timings(v) for v in data]
    return data


#: fields that say which process made a report, not what it measured
_PROCESS_FIELDS = frozenset({"trace_file", "worker_start"})


def comparable(data: object) -> object:
    """``without_timings``, with ADDRESS numbers replaced by ``<id>``, REPR_ADDRESS ones by
    ``<addr>``, INSTALLED_GLOBAL counters by ``<n>``, and ``trace_file`` and the environment's
    ``worker_start`` (a worker forked or started fresh) left out: what must be
    equal between two runs of one scenario in different processes or after different histories
    (``--jobs N`` against ``--isolate process``, merged shards against the unsharded report)."""
    data = without_timings(data)

    def mask(value: object) -> object:
        if isinstance(value, dict):
            return {k: mask(v) for k, v in value.items() if k not in _PROCESS_FIELDS}
        if isinstance(value, list):
            return [mask(v) for v in value]
        if not isinstance(value, str):
            return value
        value = REPR_ADDRESS.sub(r"\1<addr>", ADDRESS.sub(r"\1<id>", value))
        return INSTALLED_GLOBAL.sub(r"\1_<n>", value)

    return mask(data)
