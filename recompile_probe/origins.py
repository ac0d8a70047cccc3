"""Which line of the user's code created each guard, specialization and graph break (issue 11).

Everything comes from what Dynamo already keeps in-process, read once per compile, never per call:

* the compile's ShapeEnv (captured in a backend, or by ``capture_hook`` around any backend):
  ``guards`` as ``ShapeGuard(expr, sloc)``, ``replacements`` / ``replacements_slocs`` (unification
  and specialization to constants), ``var_to_range_sloc`` (who set each bound),
  ``var_to_sources`` (which inputs a symbol stands for; two sources = duck sizing) and
  ``specialization_stacks`` (full user stacks of specializations);
* the cache entry's guard tree: each leaf guard's verbose code part ends in a comment naming the
  user line (for TENSOR_MATCH: where the tensor was first used);
* ``torch._dynamo.utils.graph_break_reasons``: each graph break with its full user stack.

Every hook is private: each is feature-detected, and what this torch cannot say is ``None``
(n/a), never a guessed line. Dynamo prints user paths shortened (``shorten_filename`` cuts the
prefix shared with torch's own directory, and one more character); the full path is recovered
only when exactly one candidate file (the traced code objects' files, loaded modules, linecache)
shortens to the same text, otherwise the short path is kept with ``file_exact`` False.

Mapping a FINAL shape guard (``5 <= L['x'].size()[0]``) back to its lines: Dynamo simplifies, so
the final guard is credited (its comment) to one SLoc while other lines constrained the same
symbols (a ``> 4`` check folded into a range credited to the line that unified two sizes). For
each final guard we report the credited lines AND every ShapeGuard or replacement whose symbols,
after unification, lie within the guard's symbols ("contributing"); see ``attribute``. What
cannot be mapped: guards on strides that Dynamo itself marks "unknown source" (no symbol is
behind them), and any text that names no known source: those get no origin.

Importing this module does not import torch (renderers and the trace reader may use the
records and parsers); capturing and reading Dynamo state import it lazily.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

ROLES = ("created", "specialized", "first_use", "graph_break")

#: Dynamo's framework text on the SLoc of a size's default lower bound (2 <= size): the line is
#: where the value was first used, the bound itself comes from 0/1 specialization.
FIRST_USE_MARK = "user code shown is first use of this value"
DUCK_MARK = "duck sizing added this equality"
RESUME_PREFIX = "torch_dynamo_resume_in_"

_RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<fn>.+)_at_(?P<line>\d+)$")
# "<code>  # <path>:<line> in <fn>" (format_frame(line=True)) or "<path>:<line> in <fn>"; the code
# may hold "  # " itself (a comment on the user's line), so it is matched greedily.
_USER_LOC = re.compile(r"^(?:(?P<code>.*)  # )?(?P<path>[^\s#][^#]*?):(?P<line>\d+) "
                       r"in (?P<fn>\S+)$", re.S)
# a location inside a longer comment (paths without spaces only: otherwise no origin)
_LOC_IN_TEXT = re.compile(r"(?:^|  # )(?P<path>[^\s#()]+):(?P<line>\d+) in (?P<fn>[^\s()]+)")
# torch's strip_local_scope: L['x'] -> x, as recompile messages print sources
_LOCAL_SCOPE = re.compile(r"L\[\s*['\"](.*?)['\"]\s*\]")
# the range guard Dynamo writes per symbol: "lo <= src", "lo <= src <= hi" or "src <= hi"
_RANGE = re.compile(r"^(?:-?\d+ <= (?P<a>.+?)(?: <= -?\d+)?|(?P<b>.+?) <= -?\d+)$")
_INTEGER = re.compile(r"^-?\d+$")
_TENSOR_PROPERTY = re.compile(r"\.(?:size\(\)\[\d+\]|stride\(\)\[\d+\]|storage_offset\(\))$")


# --- records ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Origin:
    """A line of the user's code and what it did to the compile."""

    file: str  #: full path; torch's shortened path when ``file_exact`` is False
    line: int
    function: str  #: the user's function (a graph-break resume function named after its own)
    code: str | None  #: the source line, stripped; None when torch did not print it
    role: str  #: created | specialized | first_use | graph_break
    #: False: ``file`` is the short path torch printed (no or several candidate files matched)
    file_exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function,
                "code": self.code, "role": self.role, "file_exact": self.file_exact}

    def where(self) -> str:
        """``file.py:23`` (the base name; renderers add the code)."""
        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass(frozen=True)
class ShapeGuardOrigin:
    """One ShapeGuard of a compile's ShapeEnv, in the order Dynamo added them."""

    expr: str  #: sympy text, as Dynamo's logs and TORCHDYNAMO_EXTENDED_DEBUG_GUARD_ADDED name it
    sources: tuple[str, ...]  #: the first source of each symbol in expr
    origin: Origin | None


@dataclass(frozen=True)
class Specialization:
    """A dynamic size or int forced to a constant by the user's code (a replacement to a number)."""

    source: str  #: the first source of the symbol, e.g. L['x'].size()[0]
    sources: tuple[str, ...]  #: every source of the symbol (duck-sized ones included)
    value: int | float
    reason: str | None  #: None in-process: Dynamo keeps the reason only in its logs and traces
    origin: Origin | None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "value": self.value, "reason": self.reason,
                "origin": None if self.origin is None else self.origin.to_dict(),
                "sources": list(self.sources)}


@dataclass(frozen=True)
class DuckSizing:
    """``source`` shares ``same_as``'s symbol only because their sizes were equal at compile time.

    The cache entry then carries ``source == same_as`` (Dynamo's comment: "duck sizing added this
    equality"). No line created it: ``origin`` is where ``source``'s tensor was first used
    (role first_use), known only when the cache entry's guards were given, else None."""

    source: str
    same_as: str
    size: int | None
    origin: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "same_as": self.same_as, "size": self.size,
                "origin": None if self.origin is None else self.origin.to_dict()}


@dataclass(frozen=True)
class GuardAttribution:
    """The lines behind one final guard text of a cache entry."""

    text: str  #: the guard, comment stripped
    sources: tuple[str, ...]  #: known sources the guard names (as the ShapeEnv names them)
    credited: tuple[Origin, ...]  #: what Dynamo's own comment names
    #: every ShapeGuard / replacement on the same symbols (after unification), creation order
    contributing: tuple[Origin, ...]
    duck_sizing: DuckSizing | None = None

    @property
    def origins(self) -> tuple[Origin, ...]:
        """Contributing lines first (they made the guard), then credited ones not among them."""
        seen = {(o.file, o.line) for o in self.contributing}
        return self.contributing + tuple(o for o in self.credited if (o.file, o.line) not in seen)

    @property
    def origin(self) -> Origin | None:
        """The first line that created the guard (the issue's single ``origin``), or None."""
        found = self.origins
        if found:
            return found[0]
        return None if self.duck_sizing is None else self.duck_sizing.origin

    def to_dict(self) -> dict[str, Any]:
        origin = self.origin
        return {"origin": None if origin is None else origin.to_dict(),
                "origins": [o.to_dict() for o in self.origins],
                "credited": [o.to_dict() for o in self.credited],
                "duck_sizing": None if self.duck_sizing is None else self.duck_sizing.to_dict()}


@dataclass(frozen=True)
class GraphBreak:
    """Graph breaks with the same reason at the same user line, counted."""

    reason: str  #: Dynamo's reason text, whole (its first line is the summary)
    origin: Origin | None  #: innermost user frame, role graph_break
    count: int  #: how many GraphCompileReasons (one per frame that compiled up to the break)
    stack: tuple[Origin, ...] = ()  #: the user frames, outermost first

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason,
                "origin": None if self.origin is None else self.origin.to_dict(),
                "count": self.count, "stack": [o.to_dict() for o in self.stack]}


# --- names and locations (no torch) ----------------------------------------------------------------

def user_function_name(co_name: str) -> str:
    """``torch_dynamo_resume_in_f_at_10`` -> ``f`` (nested resumes unwrapped); others unchanged."""
    name = co_name
    while True:
        match = _RESUME.match(name)
        if match is None:
            return name
        name = match.group("fn")


def resume_line(co_name: str) -> int | None:
    """The line a resume function continues after (``..._at_10`` -> 10), None for other code."""
    match = _RESUME.match(co_name)
    return None if match is None else int(match.group("line"))


def strip_local_scope(text: str) -> str:
    """``L['x'].size()[0]`` -> ``x.size()[0]``: sources as recompile messages print them."""
    return _LOCAL_SCOPE.sub(r"\1", text)


def tensor_of(source: str) -> str:
    """``L['x'].size()[0]`` -> ``L['x']``: the tensor a size/stride/offset source belongs to."""
    return _TENSOR_PROPERTY.sub("", source)


@dataclass(frozen=True)
class UserLoc:
    """A user location as torch printed it (path possibly shortened)."""

    path: str
    line: int
    function: str
    code: str | None


def parse_user_loc(text: str | None) -> UserLoc | None:
    """``"if x.shape[0] > 4:  # mp/exp.py:9 in f"`` (an SLoc's maybe_user_loc) -> its parts."""
    if not text:
        return None
    match = _USER_LOC.match(text.strip())
    if match is None:
        return None
    code = match.group("code")
    return UserLoc(match.group("path"), int(match.group("line")), match.group("fn"),
                   code.strip() if code is not None and code.strip() else None)


_REASON_LINE = re.compile(r"^\s*(?:-\s*)?(?P<cid>\d+/\d+): (?P<guard>.*)$", re.S)


def reason_guard(line: str) -> tuple[str | None, str]:
    """A recompile reason line, ``- 0/0: n == 3  # ...``, -> ("0/0", "n == 3  # ...").

    The compile id names the cache entry whose guard failed: attribute the text with that
    compile's CompileOrigins."""
    match = _REASON_LINE.match(line)
    return (match.group("cid"), match.group("guard")) if match else (None, line.strip())


def split_guard_text(text: str) -> tuple[str, str]:
    """A verbose guard part -> (guard code, comment); the comment is '' when there is none."""
    code, _, comment = text.partition("  # ")
    return code.strip(), comment.strip()


def locs_in_comment(comment: str) -> list[UserLoc]:
    """Every user location in a guard's comment, for guards with no ShapeEnv to match against.

    A location is ``path:line in fn`` after ``  # `` (or at the start); the code is the text
    between the previous ``  # `` and it. Paths holding spaces or parentheses are not matched
    (no origin rather than a wrong one).
    """
    out: list[UserLoc] = []
    start = 0
    for match in _LOC_IN_TEXT.finditer(comment):
        before = comment[start:match.start()]
        before = before.split(") and ")[-1]  # a range guard: "<lo sloc>) and <hi code>"
        # Not split on "  # ": the user's own line may end in a comment, and the whole line is
        # the code (the location's own "  # " is part of the match).
        code = before.strip() if before.strip() else None
        if code is not None and code.startswith("("):
            code = None
        out.append(UserLoc(match.group("path"), int(match.group("line")), match.group("fn"),
                           code))
        start = match.end()
    return out


# --- files: torch's short path -> the full one ------------------------------------------------------

_TORCH_DIR: list[str | None] = []


def _torch_dir() -> str | None:
    if not _TORCH_DIR:
        torch = sys.modules.get("torch")
        path = getattr(torch, "__file__", None)
        _TORCH_DIR.append(os.path.dirname(os.path.abspath(path)) if path else None)
    return _TORCH_DIR[0]


def _shorten(path: str) -> str:
    """torch.utils._traceback.shorten_filename, or the same rule where it is missing."""
    traceback_mod = sys.modules.get("torch.utils._traceback")
    shorten = getattr(traceback_mod, "shorten_filename", None)
    if shorten is not None:
        return shorten(path)
    base = _torch_dir()
    if base is None:
        return path
    try:
        prefix = os.path.commonpath([path, base])
    except ValueError:
        return path
    return path[len(prefix) + 1:]


def is_torch_file(path: str) -> bool:
    base = _torch_dir()
    return base is not None and os.path.abspath(path).startswith(base + os.sep)


class FileResolver:
    """Recovers full paths from torch's shortened ones; exact or not at all.

    Candidates: ``hints`` (the compile's traced code files), every loaded module's file and every
    file linecache knows (notebook cells, exec'd code). A short path resolves only when exactly one
    candidate shortens to it (torch's own rule, so no suffix guessing) and, when torch printed the
    line's code, that file's line says the same.
    """

    _lock = threading.Lock()
    _global: dict[str, frozenset[str]] = {}
    _global_key: tuple[int, int] = (-1, -1)

    def __init__(self, hints: Iterable[str] = ()) -> None:
        self.hints = tuple(dict.fromkeys(h for h in hints if h))
        self._memo: dict[tuple[str, int, str | None], tuple[str, bool]] = {}

    @classmethod
    def _from_process(cls, short: str) -> frozenset[str]:
        with cls._lock:
            key = (len(sys.modules), len(linecache.cache))
            if key != cls._global_key:
                cls._global, cls._global_key = {}, key
            found = cls._global.get(short)
            if found is None:
                files = set()
                for module in list(sys.modules.values()):
                    path = getattr(module, "__file__", None)
                    if isinstance(path, str) and path.endswith(short):
                        files.add(path)
                files.update(p for p in list(linecache.cache) if isinstance(p, str)
                             and p.endswith(short))
                found = frozenset(p for p in files if _shorten(p) == short)
                cls._global[short] = found
            return found

    def resolve(self, short: str, line: int = 0, code: str | None = None) -> tuple[str, bool]:
        """(full path, True) when exactly one candidate matches, else (short, False)."""
        key = (short, line, code)
        if key in self._memo:
            return self._memo[key]
        matches = {h for h in self.hints if h.endswith(short) and _shorten(h) == short}
        matches |= self._from_process(short)
        result = (short, False)
        if len(matches) == 1:
            full = next(iter(matches))
            text = linecache.getline(full, line).strip() if line else ""
            if code is None or not text or text == code:
                result = (full, True)
        self._memo[key] = result
        return result

    def origin(self, loc: UserLoc | None, role: str) -> Origin | None:
        """An Origin for a user location; None when it is torch's own code (not the user's)."""
        if loc is None:
            return None
        full, exact = self.resolve(loc.path, loc.line, loc.code)
        if exact and is_torch_file(full):
            return None
        code = loc.code
        if code is None and exact:
            code = linecache.getline(full, loc.line).strip() or None
        return Origin(full, loc.line, user_function_name(loc.function), code, role, exact)


def frame_origin(frame: Any, role: str) -> Origin | None:
    """An Origin from a traceback.FrameSummary (full path already): None for torch frames."""
    filename = getattr(frame, "filename", None)
    lineno = getattr(frame, "lineno", None)
    if not isinstance(filename, str) or not isinstance(lineno, int) or is_torch_file(filename):
        return None
    line = getattr(frame, "line", None)
    return Origin(filename, lineno, user_function_name(str(getattr(frame, "name", "?"))),
                  line.strip() if line else None, role, True)


def innermost_user_frame(stack: Iterable[Any]) -> Any | None:
    frames = [f for f in stack if isinstance(getattr(f, "filename", None), str)]
    for frame in reversed(frames):
        if not is_torch_file(frame.filename):
            return frame
    return None


# --- capturing a compile's ShapeEnv -----------------------------------------------------------------

@dataclass(frozen=True)
class Capture:
    """What a backend sees of one compile: kept by reference, read after the compile ends.

    Reading later matters: guards added after the backend ran (the rest of the compile) are in
    the same ShapeEnv by then. Extract once the compile is over and drop the capture (a ShapeEnv
    references the compile's graph)."""

    compile_id: str | None
    shape_env: Any = field(repr=False)
    traced_code: tuple = field(default=(), repr=False)


def capture() -> Capture | None:
    """Call inside a backend (or anything Dynamo calls during a compile): O(1), nothing parsed."""
    guards_mod = sys.modules.get("torch._guards")
    if guards_mod is None:
        return None
    try:
        context = guards_mod.TracingContext.try_get()
        shape_env = getattr(getattr(context, "fake_mode", None), "shape_env", None)
        if shape_env is None:
            return None
        compile_id = guards_mod.CompileContext.current_compile_id()
        traced = tuple(getattr(context, "traced_code", None) or ())
    except Exception:  # noqa: BLE001 - a private API; unavailable means n/a
        return None
    return Capture(None if compile_id is None else str(compile_id), shape_env, traced)


class Collector:
    """Captures per compile id; extracted on demand, each once, the ShapeEnv then dropped.

    ``collector.capture()`` from a backend, or ``with capture_hook(collector.add): ...`` around
    code whose backend is not ours; ``collector.get("0/1")`` after that compile ended.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._captures: dict[str | None, Capture] = {}
        self._done: dict[str | None, CompileOrigins | None] = {}

    def capture(self) -> None:
        self.add(capture())

    def add(self, cap: Capture | None) -> None:
        if cap is None:
            return
        with self._lock:
            self._captures[cap.compile_id] = cap  # a frame's later backend call: same ShapeEnv
            self._done.pop(cap.compile_id, None)

    def compile_ids(self) -> list[str | None]:
        with self._lock:
            return list(dict.fromkeys([*self._done, *self._captures]))

    def get(self, compile_id: str | None) -> CompileOrigins | None:
        with self._lock:
            if compile_id in self._done:
                return self._done[compile_id]
            cap = self._captures.pop(compile_id, None)
        if cap is None:
            return None
        result = extract(cap)
        with self._lock:
            self._done[compile_id] = result
        return result


def capture_hook(on_capture: Callable[[Capture | None], None]) -> "_Hook":
    """Capture every compile that reaches a backend, whatever the backend (watch, record()).

    Wraps ``OutputGraph.call_user_compiler`` (what hands the graph to any backend) while the
    block runs; the original does all the work. Yields False where this torch has no such method.
    """
    return _Hook(on_capture)


class _Hook:
    def __init__(self, on_capture: Callable[[Capture | None], None]) -> None:
        self.on_capture = on_capture
        self._owner: Any = None
        self._original: Any = None
        self._wrapper: Any = None

    def __enter__(self) -> bool:
        import torch._dynamo.output_graph as output_graph

        owner = getattr(output_graph, "OutputGraph", None)
        original = getattr(owner, "call_user_compiler", None)
        if original is None:
            return False
        on_capture = self.on_capture

        def call_user_compiler(graph_self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                on_capture(capture())
            except Exception:  # noqa: BLE001 - observing must never change the compile
                pass
            return original(graph_self, *args, **kwargs)

        call_user_compiler.__wrapped__ = original  # type: ignore[attr-defined]
        self._owner, self._original, self._wrapper = owner, original, call_user_compiler
        owner.call_user_compiler = call_user_compiler
        return True

    def __exit__(self, *exc: Any) -> None:
        if self._owner is not None and self._owner.__dict__.get("call_user_compiler") is \
                self._wrapper:
            self._owner.call_user_compiler = self._original
        self._owner = None


# --- reading a ShapeEnv ---------------------------------------------------------------------------

def _name(source: Any) -> str:
    name = getattr(source, "name", None)
    if callable(name):
        name = name()
    return str(name) if name is not None else str(source)


def _sloc_role(sloc: Any, default: str) -> str:
    framework = getattr(sloc, "framework_loc", None)
    return "first_use" if isinstance(framework, str) and FIRST_USE_MARK in framework else default


def _number(value: Any) -> int | float | None:
    if getattr(value, "is_number", False):
        try:
            return int(value) if getattr(value, "is_integer", False) else float(value)
        except (TypeError, ValueError):
            return None
    return None


@dataclass(frozen=True)
class _Constraint:
    """A ShapeGuard or replacement, reduced to what attribution needs."""

    symbols: frozenset  # free symbols as written
    roots: frozenset  # the same after unification (constants drop out)
    origin: Origin
    #: bound (a guard on one symbol), unify (relates symbols: an Eq guard, a replacement by
    #: another symbol) or specialize (a replacement by a constant, its Eq guard)
    kind: str


@dataclass(frozen=True)
class CompileOrigins:
    """Every origin one compile's ShapeEnv knows, as plain data (the ShapeEnv is not kept)."""

    compile_id: str | None
    guards: tuple[ShapeGuardOrigin, ...]
    specializations: tuple[Specialization, ...]
    duck_sizing: tuple[DuckSizing, ...]
    # for attribute(): source name (and its L[...]-less form) -> symbol; symbol -> roots; the
    # SLoc text -> its Origin; constraints in creation order
    _source_symbol: dict = field(default_factory=dict, repr=False, compare=False)
    _roots: dict = field(default_factory=dict, repr=False, compare=False)
    _slocs: dict = field(default_factory=dict, repr=False, compare=False)
    _constraints: tuple = field(default=(), repr=False, compare=False)
    _resolver: Any = field(default=None, repr=False, compare=False)
    _source_order: tuple | None = field(default=None, repr=False, compare=False)

    def sources_in(self, guard_code: str) -> tuple[str, ...]:
        """Known sources named in a guard's code, as the ShapeEnv names them (L['x']...), in the
        order they appear; the longest name wins where two overlap."""
        if self._source_order is None:
            object.__setattr__(self, "_source_order",
                               tuple(sorted(self._source_symbol, key=len, reverse=True)))
        spans: list[tuple[int, int, str]] = []
        for text in self._source_order:
            start = guard_code.find(text)
            while start >= 0:
                end = start + len(text)
                before = guard_code[start - 1] if start else " "
                after = guard_code[end] if end < len(guard_code) else " "
                whole = not (before.isalnum() or before in "_.]'\"") and not (
                    (text[-1].isalnum() or text[-1] == "_") and (after.isalnum() or after in "_.[("))
                if whole and not any(s < end and start < e for s, e, _ in spans):
                    spans.append((start, end, self._source_symbol[text][1]))
                start = guard_code.find(text, start + 1)
        return tuple(dict.fromkeys(name for _, _, name in sorted(spans)))

    def _folded_kinds(self, code: str) -> frozenset[str]:
        """Which constraints Dynamo may have folded into a final guard of this shape.

        Dynamo writes three kinds of shape guard: a value range per symbol (``5 <= src``, every
        bound and unification of the symbol folded in), an input equality per extra source
        (``src == other``: made by unification; ``src == 3``: by specialization) and the issued
        guards themselves, each credited to its own creating line (nothing folded in).
        """
        match = _RANGE.match(code)
        if match is not None and (match.group("a") or match.group("b")) in self._source_symbol:
            return frozenset({"bound", "unify", "specialize"})
        left, eq, right = code.partition(" == ")
        if eq and left.strip() in self._source_symbol:
            right = right.strip()
            if _INTEGER.match(right):
                return frozenset({"specialize"})
            if self.sources_in(right):
                return frozenset({"unify"})
        return frozenset()

    def attribute(self, text: str, first_uses: dict[str, Origin] | None = None
                  ) -> GuardAttribution:
        """The lines behind one guard text of this compile's cache entry.

        ``text`` is a shape-env guard's verbose code part (the epilogue lambda guard's
        ``verbose_code_parts()``) or a recompile reason's failing guard with its comment; without
        the comment only contributing lines can be found. ``first_uses`` (from ``first_uses``)
        gives duck-sized sources the line where their tensor was first used.
        """
        code, comment = split_guard_text(text)
        sources = self.sources_in(code)
        symbols = frozenset(self._source_symbol[s][0] for s in sources
                            if s in self._source_symbol)
        roots = frozenset().union(*(self._roots.get(s, frozenset({s})) for s in symbols))
        credited = self._credited(comment)
        kinds = self._folded_kinds(code)
        contributing: list[Origin] = []
        seen: set[tuple[str, int]] = set()
        if symbols and kinds:
            for c in self._constraints:
                if c.kind in kinds and c.roots <= roots and \
                        (c.symbols | c.roots) & (symbols | roots):
                    key = (c.origin.file, c.origin.line)
                    if key not in seen:
                        seen.add(key)
                        contributing.append(c.origin)
        duck = None
        if comment.startswith(DUCK_MARK):
            for d in self.duck_sizing:
                if {d.source, d.same_as} <= set(sources):
                    origin = d.origin
                    if origin is None and first_uses:
                        origin = first_uses.get(tensor_of(d.source))
                        if origin is not None:
                            d = DuckSizing(d.source, d.same_as, d.size, origin)
                    duck = d
                    break
        return GuardAttribution(code, sources, tuple(credited), tuple(contributing), duck)

    def _credited(self, comment: str) -> list[Origin]:
        if not comment or comment.startswith(DUCK_MARK):
            return []
        hit = self._slocs.get(comment)
        if hit is not None:
            return [hit]
        # a range guard: "<lower sloc> and <upper sloc>"
        start = comment.find(" and ")
        while start >= 0:
            lower, upper = self._slocs.get(comment[:start]), self._slocs.get(comment[start + 5:])
            if lower is not None and upper is not None:
                return [lower] if (lower.file, lower.line) == (upper.file, upper.line) \
                    else [lower, upper]
            start = comment.find(" and ", start + 1)
        resolver = self._resolver or FileResolver()
        out = [resolver.origin(loc, "created") for loc in locs_in_comment(comment)]
        return [o for o in out if o is not None]


def _guard_kind(free: frozenset, role: str) -> str:
    return "specialize" if role == "specialized" else "unify" if len(free) > 1 else "bound"


def extract(cap: Capture) -> CompileOrigins | None:
    """A capture -> CompileOrigins; None when this torch's ShapeEnv is not the one we know."""
    try:
        return _extract(cap)
    except Exception:  # noqa: BLE001 - private structures; unreadable means n/a
        return None


def _extract(cap: Capture) -> CompileOrigins | None:
    env = cap.shape_env
    shape_guards = getattr(env, "guards", None)
    var_to_sources = getattr(env, "var_to_sources", None)
    if shape_guards is None or var_to_sources is None:
        return None
    replacements = dict(getattr(env, "replacements", None) or {})
    replacement_slocs = dict(getattr(env, "replacements_slocs", None) or {})
    range_slocs = dict(getattr(env, "var_to_range_sloc", None) or {})
    stacks = dict(getattr(env, "specialization_stacks", None) or {})
    values = getattr(env, "backed_var_to_val", None)
    if values is None:
        values = getattr(env, "var_to_val", None) or {}
    resolver = FileResolver(getattr(c, "co_filename", None) for c in cap.traced_code)

    source_names = {sym: tuple(_name(s) for s in srcs) for sym, srcs in var_to_sources.items()}
    source_symbol: dict[str, tuple[Any, str]] = {}
    for sym, names in source_names.items():
        for name in names:
            source_symbol.setdefault(name, (sym, name))
            source_symbol.setdefault(strip_local_scope(name), (sym, name))

    root_memo: dict[Any, frozenset] = {}

    def roots(sym: Any, depth: int = 0) -> frozenset:
        if sym in root_memo:
            return root_memo[sym]
        target = replacements.get(sym)
        if target is None or depth > 64:
            out = frozenset({sym})
        elif _number(target) is not None:
            out = frozenset()
        else:
            out = frozenset().union(*(roots(s, depth + 1) for s in target.free_symbols))
        root_memo[sym] = out
        return out

    def origin_of(sloc: Any, role: str) -> Origin | None:
        return resolver.origin(parse_user_loc(getattr(sloc, "maybe_user_loc", None)),
                               _sloc_role(sloc, role))

    slocs: dict[str, Origin] = {}
    for bounds in range_slocs.values():
        for sloc in (getattr(bounds, "lower", None), getattr(bounds, "upper", None)):
            origin = origin_of(sloc, "created") if sloc is not None else None
            if origin is not None:
                slocs.setdefault(str(sloc), origin)

    constraints: list[_Constraint] = []
    guard_records: list[ShapeGuardOrigin] = []
    for guard in list(shape_guards):
        expr = guard.expr
        free = frozenset(expr.free_symbols)
        role = "created"
        args = getattr(expr, "args", ())
        if type(expr).__name__ == "Equality" and len(args) == 2 and len(free) == 1:
            sym = next(iter(free))
            constant = [a for a in args if _number(a) is not None]
            if constant and _number(replacements.get(sym)) == _number(constant[0]):
                role = "specialized"
        origin = origin_of(guard.sloc, role)
        if origin is not None:
            slocs[str(guard.sloc)] = origin
            constraints.append(_Constraint(free, frozenset().union(*(roots(s) for s in free)),
                                           origin, _guard_kind(free, role)))
        guard_records.append(ShapeGuardOrigin(
            str(expr), tuple(source_names[s][0] for s in sorted(free, key=str)
                             if source_names.get(s)), origin))

    specializations: list[Specialization] = []
    for sym, target in replacements.items():
        sloc = replacement_slocs.get(sym)
        value = _number(target)
        role = "specialized" if value is not None else "created"
        origin = origin_of(sloc, role) if sloc is not None else None
        names = source_names.get(sym, ())
        if value is not None and names:
            # the full user stack Dynamo kept for this source beats the shortened SLoc path
            stack = next((stacks[s] for s in var_to_sources.get(sym, ()) if s in stacks), None)
            frame = innermost_user_frame(stack) if stack else None
            exact = frame_origin(frame, "specialized") if frame is not None else None
            specializations.append(Specialization(names[0], names, value, None, exact or origin))
            origin = exact or origin
        if origin is not None:
            slocs[str(sloc)] = origin
            constraints.append(_Constraint(frozenset({sym}), roots(sym), origin,
                                           "specialize" if value is not None else "unify"))

    duck: list[DuckSizing] = []
    for sym, names in source_names.items():
        if len(names) > 1 and roots(sym):
            size = _number(values.get(sym)) if hasattr(values, "get") else None
            duck.extend(DuckSizing(name, names[0], size) for name in names[1:])

    root_map = {sym: roots(sym) for sym in source_names}
    return CompileOrigins(cap.compile_id, tuple(guard_records), tuple(specializations),
                          tuple(duck), source_symbol, root_map, slocs, tuple(constraints),
                          resolver)


# --- cache entries: where each tensor was first used ------------------------------------------------

def origin_of_guard_part(text: str, role: str, resolver: FileResolver | None = None
                         ) -> Origin | None:
    """The user line in a (non shape-env) guard's verbose code part, e.g. TENSOR_MATCH."""
    _, comment = split_guard_text(text)
    locs = locs_in_comment(comment) if comment else []
    return (resolver or FileResolver()).origin(locs[0], role) if locs else None


def first_uses(entry: Any, code: Any = None) -> dict[str, Origin] | None:
    """Tensor source (L['x']) -> where Dynamo first used it, from the entry's TENSOR_MATCH guards.

    A TENSOR_MATCH size mismatch has no creating line (the first compile was static by design);
    this is the line to show, role first_use. None where the guard tree cannot be read.
    """
    root = getattr(getattr(entry, "guard_manager", None), "root", None)
    if root is None:
        return None
    from .guards import _walk  # the one guard-tree walk (imports torch: only reached with it)

    resolver = FileResolver([getattr(code, "co_filename", None)])
    out: dict[str, Origin] = {}
    try:
        for source, guard in _walk(root):
            if source is None or source in out or type(guard).__name__ != "TENSOR_MATCH":
                continue
            for part in guard.verbose_code_parts():
                origin = origin_of_guard_part(part, "first_use", resolver)
                if origin is not None:
                    out[source] = origin
                    break
    except Exception:  # noqa: BLE001 - private tree API
        return None
    return out


# --- graph breaks ---------------------------------------------------------------------------------

def _graph_break_reasons() -> list | None:
    utils = sys.modules.get("torch._dynamo.utils")
    reasons = getattr(utils, "graph_break_reasons", None)
    return reasons if isinstance(reasons, list) else None


def graph_break_mark() -> int | None:
    """Where Dynamo's graph-break list ends now: pass it to ``graph_breaks`` later."""
    reasons = _graph_break_reasons()
    return None if reasons is None else len(reasons)


def graph_breaks(since: int | None = 0) -> list[GraphBreak] | None:
    """Graph breaks recorded since ``since`` (a mark), grouped by (reason, user line), in order.

    Dynamo clears the list on reset: a mark beyond its end counts from the start. None where
    this torch keeps no such list.
    """
    reasons = _graph_break_reasons()
    if reasons is None:
        return None
    start = since or 0
    if start > len(reasons):
        start = 0
    groups: dict[tuple, list] = {}
    for item in list(reasons)[start:]:
        text = str(getattr(item, "reason", ""))
        stack = list(getattr(item, "user_stack", None) or ())
        frame = innermost_user_frame(stack)
        origin = frame_origin(frame, "graph_break") if frame is not None else None
        key = (text, None if origin is None else (origin.file, origin.line))
        if key in groups:
            groups[key][2] += 1
        else:
            frames = tuple(o for o in (frame_origin(f, "graph_break") for f in stack)
                           if o is not None)
            groups[key] = [text, origin, 1, frames]
    return [GraphBreak(text, origin, count, frames)
            for text, origin, count, frames in groups.values()]
