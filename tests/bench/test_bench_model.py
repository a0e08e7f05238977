"""`gir bench MODEL.onnx` (targets/bench/model.py): every imported subgraph of a small ONNX model benchmarked on
sim and mlu-sim, judged against onnx.reference; symbolic sizes, --dtypes, the left-out report, the onnxruntime
and torch.compile columns when those are missing, and (on a GPU) the cuda path."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

from gir.cli import main  # noqa: E402
from gir.targets.bench.model import ModelCase, bench_model, model_cases, results_markdown  # noqa: E402


def _weight(name, shape, seed):
    return onnx.numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits, opset=20, name="m"):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                     [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in outputs], inits)
    m = h.make_model(g, opset_imports=[h.make_operatorsetid("", opset)])
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    return m


def bias_gelu(m=37, n=100, k=16, seq=None):
    """MatMul (left out) then bias + GELU (tanh)."""
    rows = seq or m
    return _model([h.make_node("MatMul", ["x", "w"], ["xw"]), h.make_node("Add", ["xw", "b"], ["xb"]),
                   h.make_node("Gelu", ["xb"], ["y"], approximate="tanh")],
                  [("x", T.FLOAT, [rows, k])], [("y", [rows, n])], [_weight("w", [k, n], 1), _weight("b", [n], 2)],
                  name="bias_gelu")


def residual_layernorm(m=29, n=96):
    return _model([h.make_node("Add", ["x", "res"], ["r"]),
                   h.make_node("LayerNormalization", ["r", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                  [("x", T.FLOAT, [m, n]), ("res", T.FLOAT, [m, n])], [("y", [m, n])],
                  [_weight("g", [n], 3), _weight("b", [n], 4)], name="residual_layernorm")


def scaled_softmax(b=2, s=17):
    scale = onnx.numpy_helper.from_array(np.array(0.125, np.float32), "scale")
    return _model([h.make_node("Mul", ["x", "scale"], ["xs"]), h.make_node("Softmax", ["xs"], ["y"], axis=-1)],
                  [("x", T.FLOAT, [b, s, s])], [("y", [b, s, s])], [scale], name="scaled_softmax")


MODELS = {"bias_gelu": bias_gelu, "residual_layernorm": residual_layernorm, "scaled_softmax": scaled_softmax}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_on_sim(tmp_path, capsys, name):
    path = tmp_path / f"{name}.onnx"
    onnx.save(MODELS[name](), str(path))
    out = tmp_path / "out"
    assert main(["bench", str(path), "--target", "sim", "-o", str(out), "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "results.json").read_text())
    rows = data["results"]
    assert rows and all(r["status"] == "ok" and r["rel_err"] <= r["tolerance"] for r in rows)
    assert all(r["reference"] == "onnx.reference" and r["traffic_ratio"] >= 1.0 for r in rows)
    assert data["environment"]["model"] == str(path)
    md = (out / "results.md").read_text()
    assert md.startswith("| case | compulsory_bytes") and rows[0]["label"] in md
    assert (out / "import" / "report.md").is_file()
    if name == "bias_gelu":  # the importer's left-out report is printed and written
        assert "left out MatMul_0 (MatMul, compute-bound)" in printed
        assert "| MatMul_0 | MatMul | compute-bound" in md
        assert "gelu_tanh(" in (out / "import" / f"{rows[0]['op']}.gir").read_text()


def test_models_on_mlu_sim(tmp_path):
    rows = []
    for name in ("bias_gelu", "residual_layernorm"):
        bench = bench_model(MODELS[name](), target="mlu-sim", out=tmp_path / name)
        rows += bench.rows
    assert len(rows) == 2
    for r in rows:
        assert r["status"] == "ok" and r["rel_err"] <= r["tolerance"]
        assert r["time_s"] > 0 and r["vs_roofline"] >= 1.0 and r["roofline_s"] > 0


def test_dtypes_store_float_parameters_in_each_type(tmp_path):
    bench = bench_model(residual_layernorm(m=5, n=33), target="sim", out=tmp_path, dtypes=("f16", "bf16", "f32"))
    assert [r["dtype"] for r in bench.rows] == ["f16", "bf16", "f32"]
    assert all(r["status"] == "ok" for r in bench.rows)
    by = {r["dtype"]: r for r in bench.rows}
    assert by["f16"]["compulsory_bytes"] < by["f32"]["compulsory_bytes"]
    assert by["f16"]["tolerance"] == 1e-2 and by["f32"]["tolerance"] == 1e-5


def test_verdict_is_against_onnx_reference_and_can_fail():
    cases, _ = model_cases(residual_layernorm(m=3, n=7))
    case = cases[0]
    from gir.evaluate import evaluate
    from gir.parser import parse_text

    func = parse_text(case.source).funcs[0]
    inputs = case.make_inputs(func, np.random.default_rng(0))
    good = evaluate(func, inputs)
    assert case.judge(func, inputs, good)["status"] == "ok"
    bad = {k: v * np.float32(1.001) for k, v in good.items()}
    row = case.judge(func, inputs, bad)
    assert row["status"] == "FAIL" and row["rel_err"] > row["tolerance"]


def test_symbolic_dimensions_need_sizes(tmp_path, capsys):
    path = tmp_path / "sym.onnx"
    onnx.save(bias_gelu(seq="seq"), str(path))
    assert main(["bench", str(path), "--target", "sim", "-o", str(tmp_path / "a")]) == 2
    assert "seq" in capsys.readouterr().err
    assert main(["bench", str(path), "--target", "sim", "--sizes", "tokens=3", "-o", str(tmp_path / "b")]) == 2
    assert "no symbolic dimension 'tokens'" in capsys.readouterr().err
    assert main(["bench", str(path), "--target", "sim", "--sizes", "seq=13", "-o", str(tmp_path / "c")]) == 0
    row = json.loads((tmp_path / "c" / "results.json").read_text())["results"][0]
    assert row["sizes"] == {"seq": 13} and row["status"] == "ok"


def test_usage_errors(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(scaled_softmax(), str(path))
    assert main(["bench", str(path), "softmax", "--target", "sim", "-o", str(tmp_path / "o")]) == 2
    assert main(["bench", str(tmp_path / "missing.onnx"), "--target", "sim"]) == 2
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    assert main(["bench", str(tmp_path / "junk.onnx"), "--target", "sim", "-o", str(tmp_path / "j")]) == 1
    err = capsys.readouterr().err
    assert "cannot read the ONNX model" in err and "Traceback" not in err


def test_subgraph_with_weights_as_inputs_is_a_valid_model():
    from onnx.reference import ReferenceEvaluator

    from gir.evaluate import evaluate
    from gir.parser import parse_text

    cases, _ = model_cases(bias_gelu(m=7, n=40))
    case = cases[0]
    model = case.subgraph()
    onnx.checker.check_model(model, full_check=True)
    func = parse_text(case.source).funcs[0]
    assert [vi.name for vi in model.graph.input] == [case.function.inputs[p.name] for p in func.params]
    inputs = case.make_inputs(func, np.random.default_rng(2))
    feeds = {case.function.inputs[g]: v for g, v in inputs.items()}
    want = ReferenceEvaluator(model).run(None, feeds)
    got = evaluate(func, inputs)
    for p, w in zip(func.results, want):
        assert np.linalg.norm(got[p.name] - w) <= 1e-5 * np.linalg.norm(w)


def test_missing_onnxruntime_and_torch_say_so_in_one_line(monkeypatch):
    from gir.parser import parse_text
    from gir.targets.bench import model_gpu

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import raises ImportError
    monkeypatch.setitem(sys.modules, "torch", None)
    cases, _ = model_cases(scaled_softmax())
    case: ModelCase = cases[0]
    func = parse_text(case.source).funcs[0]
    row = model_gpu.model_baselines(case, func, sets=[], repeat=1)
    assert row["ort_s"] is None and row["torch_compile_s"] is None
    assert row["ort_note"] == model_gpu.ORT_MISSING and row["torch_note"] == model_gpu.TORCH_MISSING
    assert "\n" not in row["ort_note"] + row["torch_note"]
    md = results_markdown([{"label": "x f32", "time_s": 1e-5, **row, "status": "ok"}], "cuda")
    assert "| n/a | n/a |" in md
    from gir.targets.bench.report import summary_table

    table = summary_table([{"label": "x f32", "time_s": 1e-5, **row, "status": "ok"}], "cuda")
    assert table.splitlines()[0].split()[-2] == "ort_s" and table.splitlines()[1].split()[-4:-1] == ["n/a"] * 3


@pytest.mark.gpu
def test_model_on_cuda(tmp_path):
    from gir.targets.cuda import available

    if not available():
        pytest.skip("no CUDA device (cupy missing or no GPU): the cuda path of gir bench MODEL.onnx is not run")
    bench = bench_model(bias_gelu(m=512, n=1024), target="cuda", out=tmp_path, repeat=5)
    row = bench.rows[0]
    assert row["status"] == "ok" and row["time_s"] > 0
    for key in ("ort_s", "torch_compile_s"):
        assert row.get(key) is not None or row.get(key.split("_")[0] + "_note")


def test_onnxruntime_without_cuda_provider_or_for_a_retyped_case(monkeypatch):
    import types

    from gir.parser import parse_text
    from gir.targets.bench import model_gpu

    fake = types.SimpleNamespace(get_available_providers=lambda: ["CPUExecutionProvider"])
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    cases, _ = model_cases(scaled_softmax(), dtypes=("f32", "f16"))
    func = parse_text(cases[0].source).funcs[0]
    row = model_gpu.ort_time(cases[0].subgraph(), cases[0], func, sets=[], repeat=1)
    assert row["ort_s"] is None and "no CUDAExecutionProvider" in row["ort_note"]
    fake.get_available_providers = lambda: ["CUDAExecutionProvider"]
    retyped = cases[1]
    assert retyped.retyped and retyped.dtype == "f16"
    row = model_gpu.ort_time(retyped.subgraph(), retyped, parse_text(retyped.source).funcs[0], sets=[], repeat=1)
    assert row["ort_s"] is None and "--dtypes f16" in row["ort_note"]
