"""An example GIR pass plugin. The pass is found through the `gir.passes` entry point in pyproject.toml."""
from gir_plugin_example.strength_reduce import StrengthReduce
from gir_plugin_example.strength_reduce_idfg import StrengthReduceGraph

__all__ = ["StrengthReduce", "StrengthReduceGraph"]
