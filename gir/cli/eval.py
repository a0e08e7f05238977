"""`gir eval FILE`: run the reference evaluator on random or given inputs."""
from __future__ import annotations

import numpy as np

from gir.cli.common import load_verified, pick_func, parse_sizes
from gir.files import write_atomic
from gir.cli.inputs import load_inputs


def register(sub) -> None:
    p = sub.add_parser("eval", help="run an operator-layer program with the numpy reference evaluator",
                       description="Run a program with the reference evaluator on random inputs (or inputs "
                                   "from an .npz file, checked as gir run checks them) and print a summary of "
                                   "the results.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--func", dest="func_name", help="function to run (default: the first)")
    p.add_argument("--sizes", help="size bindings, e.g. M=4,N=7")
    p.add_argument("--inputs", metavar="NPZ",
                   help="read inputs by parameter name from an .npz file (numpy.savez(NPZ, x=...)), each of "
                        "exactly the declared type and shape; missing ones are random")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--precision", choices=["f64", "f32"], default="f64",
                   help="float arithmetic precision (default f64)")
    p.add_argument("-o", "--output", metavar="NPZ", help="write the results to an .npz file")
    p.add_argument("--print", dest="show", action="store_true", help="print the result arrays")
    p.set_defaults(func=run)


def run(args) -> int:
    from gir.evaluate import evaluate, random_inputs

    sizes = parse_sizes(args.sizes)
    module = load_verified(args.file, sizes)
    func = pick_func(module, args.func_name, args.file)
    given = load_inputs(args.inputs, func, sizes) if args.inputs else {}  # binds sizes from the arrays
    inputs = random_inputs(func, sizes, np.random.default_rng(args.seed), given=given)
    dtype = np.float64 if args.precision == "f64" else np.float32
    outputs = evaluate(func, inputs, sizes, compute_dtype=dtype)
    for name, arr in outputs.items():
        a = np.asarray(arr, dtype=np.float64)
        with np.errstate(all="ignore"):  # inf - inf in the mean of an overflowed result is just nan
            stats = (f"min={a.min():.6g} max={a.max():.6g} mean={a.mean():.6g} sum={a.sum():.6g}" if a.size
                     else "empty (a zero-size dimension)")
            print(f"{name}: {arr.dtype}{list(arr.shape)}  {stats}")
        if args.show:
            print(np.array2string(np.asarray(arr), threshold=200))
    if args.output:
        import io

        buf = io.BytesIO()
        np.savez(buf, **outputs)
        write_atomic(args.output, buf.getvalue())
    return 0
