"""`run_func`: execute an explicit-layer GIR function on the SIMT simulator."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gir import ir
from gir.errors import Diagnostic, GirError, Loc
from gir.evaluate import _Evaluator, _cast, bind_sizes, shape_of
from gir.targets.sim.kernel import KernelExec, fill_value
from gir.targets.sim.races import Race
from gir.targets.sim.stats import InstrStats, SimStats
from gir.targets.sim.values import Buf
from gir.views import enter, to_outer


@dataclass(frozen=True)
class RaceReport:
    """A data race: two accesses of `buffer` at `index` by different instances, not ordered by a barrier."""
    kernel: str
    buffer: str
    kind: str                 # write-write | read-write | write-read (first access, then second)
    first_loc: Loc | None
    second_loc: Loc | None
    first: str                # "block b=3, thread 5" (or "several threads")
    second: str
    index: tuple[int, ...]

    def diagnostic(self) -> Diagnostic:
        a, b = self.kind.split("-")
        return Diagnostic(f"data race on '{self.buffer}' in kernel '{self.kernel}': {a} then {b} by different "
                          "threads with no barrier in between", self.second_loc,
                          (f"{b} here by {self.second}",
                           f"{a} at {self.first_loc or '?'} by {self.first}",
                           f"address: {self.buffer}[{', '.join(map(str, self.index))}]"))


@dataclass
class SimRun:
    outputs: dict[str, np.ndarray]
    stats: SimStats
    races: list[RaceReport] = field(default_factory=list)


def run_func(func: ir.Func, inputs: dict[str, np.ndarray], sizes: dict | None = None, *, warp_size: int = 32,
             check_races: bool = True, on_race: str = "raise") -> SimRun:
    """Run `func` on the simulator. Results have their declared dtypes; global temporaries and results
    start as NaN (floats) so unwritten elements show up. With `check_races`, races are detected and, with
    `on_race="raise"`, raised as a GirError after the kernel that had them (`"collect"`: only returned)."""
    if on_race not in ("raise", "collect"):
        raise ValueError("on_race must be 'raise' or 'collect'")
    inputs, sizes = enter(func, inputs, sizes)   # reshape views: declared-shape arrays seen in the view's shape
    runner = _Runner(func, inputs, sizes, warp_size, check_races)
    for item in func.body:
        if isinstance(item, ir.Assign):
            runner.op_assign(item)
        elif isinstance(item, ir.Alloc):
            runner.alloc(item)
        elif isinstance(item, ir.Kernel):
            before = len(runner.races)
            runner.stats.kernels[item.name] = KernelExec(runner, item).run()
            if on_race == "raise" and len(runner.races) > before:
                raise GirError(diagnostics=[r.diagnostic() for r in runner.races[before:]])
    outputs = {}
    for p in func.results:
        buf = runner.globals.get(p.name)
        if buf is None:
            raise GirError(f"result '{p.name}' is never written", p.loc)
        outputs[p.name] = buf.data.copy()
    return SimRun(to_outer(func, outputs, runner.sizes), runner.stats, runner.races)


class _Runner:
    def __init__(self, func: ir.Func, inputs, sizes, warp_size: int, check_races: bool):
        self.func = func
        self.warp_size = warp_size
        self.check_races = check_races
        self.sizes = bind_sizes(func, inputs, sizes)
        self.stats = SimStats()
        self.races: list[RaceReport] = []
        self._seen_races: set = set()
        self.instrs: dict[int, int] = {}
        self.instr_nodes: list = []
        self.globals: dict[str, Buf] = {}
        for p in func.params:
            data = np.array(inputs[p.name], dtype=p.type.dtype.numpy, copy=True, order="C")
            self.globals[p.name] = Buf(p.name, p.type.dtype, data.shape, ir.Level.global_, -1, data)
        for p in func.results:
            self.new_global(p.name, p.type, ir.Level.global_)
        self._info = None

    def new_global(self, name: str, ttype: ir.TensorType, level: ir.Level) -> Buf:
        shape = shape_of(ttype, self.sizes)
        data = np.full(shape, fill_value(ttype.dtype), dtype=ttype.dtype.numpy)
        buf = self.globals[name] = Buf(name, ttype.dtype, shape, level, -1, data)
        return buf

    def alloc(self, item: ir.Alloc) -> None:
        missing = [d for d in item.type.shape if isinstance(d, str) and d not in self.sizes]
        if missing:
            raise GirError(f"size '{missing[0]}' of '{item.name}' is unknown", item.loc)
        self.new_global(item.name, item.type, item.level)

    def op_assign(self, item: ir.Assign) -> None:
        """An operator-layer statement between kernels, with the reference evaluator's semantics in f32."""
        from gir.shapes import _walk, func_info

        if self._info is None:
            self._info = func_info(self.func)
        st = next(s for s in self._info.stmts if s.stmt is item)
        reads = [self.globals[x.name] for x in _walk(item.value) if isinstance(x, ir.Ref) and x.name in self.globals]
        f64 = self._info.types[item.target.name].dtype == ir.DType.f64 or any(b.dtype == ir.DType.f64 for b in reads)
        cdt = np.dtype(np.float64 if f64 else np.float32)   # f64 arithmetic when an f64 value takes part
        ev = object.__new__(_Evaluator)
        ev.info, ev.cdt, ev.sizes, ev.guarded = self._info, cdt, self.sizes, 0
        ev.env = {b.name: b.data.astype(cdt) if b.dtype.is_float else b.data for b in reads}
        value = ev.stmt(st)
        name = item.target.name
        ttype = self._info.types[name]
        buf = self.globals.get(name) or self.new_global(name, ttype, ir.Level.global_)
        buf.data[...] = _cast(value, ttype.dtype)

    # ---------------------------------------------------------- bookkeeping
    def instr_index(self, s) -> int:
        k = self.instrs.get(id(s))
        if k is None:
            k = self.instrs[id(s)] = len(self.instr_nodes)
            self.instr_nodes.append(s)
        return k

    def instr_stats(self, kernel: ir.Kernel, s, kind: str, buffer: str) -> InstrStats:
        k = self.instr_index(s)
        key = str(s.loc) if s.loc else f"{kernel.name}#{k}"
        if buffer:
            key += f":{buffer}"
        st = self.stats.instrs.get(key)
        if st is None:
            st = self.stats.instrs[key] = InstrStats(kernel.name, kind, buffer)
        return st

    def report_race(self, race: Race, ex: KernelExec) -> None:
        key = (race.buffer, race.kind, race.first_instr, race.second_instr)
        if key in self._seen_races:
            return
        self._seen_races.add(key)
        buf = ex.buffers.get(race.buffer) or self.globals[race.buffer]

        def who(inst):
            if inst[0] < 0:
                return "several threads"
            return f"{ex.block_desc(inst[0])}, thread {inst[1]}"
        index = tuple(int(i) for i in np.unravel_index(race.address, buf.shape)) if buf.shape else ()
        self.races.append(RaceReport(ex.kernel.name, race.buffer, race.kind,
                                     self.instr_nodes[race.first_instr].loc, self.instr_nodes[race.second_instr].loc,
                                     who(race.first), who(race.second), index))
