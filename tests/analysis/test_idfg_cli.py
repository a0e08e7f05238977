"""IDFG edges and round trip; the `gir check` / `gir analyze` command lines."""
from dataclasses import replace

from gir import ir
from gir.cli import main
from gir.parser import parse_text
from gir.printer import print_module
from gir.verifier import verify_module
from gir.passes.analysis.idfg import build_idfg
from tests.analysis.conftest import load


def edges(g):
    return {(e.src, e.dst, e.kind, e.buf) for e in g.edges}


def test_softmax_idfg_edges():
    f = load("softmax_rows")
    g = build_idfg(f, f.kernels[0])
    assert len(g.nodes) == 17 and [n.kind for n in g.nodes].count("sync") == 3
    e = edges(g)
    assert (0, 1, "RAW", "xr") in e and (3, 5, "RAW", "red") in e and (5, 11, "WAR", "red") in e
    assert not any(src == 16 for src, *_ in e)  # the final store feeds nothing
    assert not any(buf in ("x", "y") for *_, buf in e)  # x only read, y only written
    assert g.to_dot().startswith('digraph "softmax_rows"') and "S3 -> S5" in g.to_dot()
    assert "S0 [load]" in g.to_text()


def test_idfg_back_to_gir():
    f = load("softmax_rows")
    g = build_idfg(f, f.kernels[0])
    assert g.to_gir() == f.kernels[0]
    fewer = g.to_gir(keep={n.id for n in g.nodes if n.kind != "sync"})
    module = ir.Module((replace(f, body=(fewer,)),))
    reparsed = parse_text(print_module(module))
    verify_module(reparsed)
    assert "sync" not in print_module(reparsed)


def test_cli_check(kernel_file, capsys):
    assert main(["check", "-q", "samples/explicit/softmax_rows.gir", "samples/softmax.gir"]) == 0
    assert main(["check", kernel_file("copy_tail_oob")]) == 1
    assert "[bounds]" in capsys.readouterr().err
    assert main(["check", "--no-deep", kernel_file("copy_tail_oob")]) == 0
    assert main(["check", "--sizes", "M=2097152", "samples/explicit/softmax_rows.gir"]) == 1
    assert main(["check", "--target", "cuda-optin", kernel_file("shared_tile_too_big")]) == 0


def test_cli_analyze(tmp_path, capsys):
    assert main(["analyze", "samples/explicit/softmax_rows.gir", "--sizes", "M=2"]) == 0
    out = capsys.readouterr().out
    assert "compulsory: read 8192 B, write 8192 B" in out and "1.00x compulsory" in out
    assert main(["analyze", "samples/explicit/softmax_rows.gir"]) == 1  # M needed
    dot = tmp_path / "g.dot"
    assert main(["analyze", "samples/explicit/softmax_rows.gir", "--dot", str(dot)]) == 0
    assert dot.read_text().startswith("digraph")
