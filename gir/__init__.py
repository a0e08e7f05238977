"""GIR: a memory-centric tensor compiler. Front end: parse, verify, print, evaluate."""
from gir.errors import Diagnostic, GirError, Loc
from gir.parser import parse_file, parse_text
from gir.printer import print_module

__all__ = ["Diagnostic", "GirError", "Loc", "parse_file", "parse_text", "print_module"]
