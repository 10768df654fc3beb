"""A verify run at the size issue 11 measures: 2,000 rows over a 300-node engine graph, from real files.

    from tests.models.scale_verify import make_scale_run
    report = make_scale_run(tmp_path)            # -> VerifyReport (saved under tmp_path/lab)

Writes a transformer-like ONNX graph (``stem``, ``blocks.<b>.attn`` / ``blocks.<b>.mlp``,
``head``; the exporter's name-scope metadata on every node), a build folder ``model.ort/``
(``engine.onnx``: that graph with every tap exposed, the way compile exposes them;
``sample_outputs.npz``; ``build.json`` with the tap manifest) and ``model.reference.npz``, then
runs the real ``leapp_lab.verify`` on them. One op tap per node (named after its tensor, like
prepare's op taps) and manual taps ``probe_<i>`` spread over the same tensors make the 2,000
rows. The engine's error grows with depth (x1.03 per node), so the rows cross the rule (nrmse >
1 %) about half-way; node ``blocks.3.mlp`` overflows to inf on its second matmul (a non-finite
row, like an fp16 engine). Nothing is random between runs (seeded), so reports compare.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

PER_BLOCK = (("attn", ("LayerNormalization", "MatMul", "MatMul", "MatMul", "MatMul", "Softmax", "MatMul",
                       "MatMul", "Add")),
             ("mlp", ("LayerNormalization", "MatMul", "Relu", "MatMul", "Add")))
STEM = ("MatMul", "Add")
HEAD = ("LayerNormalization", "MatMul", "Relu", "MatMul")
WIDTH = 8


def _layout(nodes: int) -> list[tuple[str, str]]:
    """(op, module path) of every node, in model order."""
    per = sum(len(ops) for _, ops in PER_BLOCK)
    blocks = max(1, (nodes - len(STEM) - len(HEAD)) // per)
    out = [(op, "stem") for op in STEM]
    for b in range(blocks):
        for part, ops in PER_BLOCK:
            out += [(op, f"blocks.{b}.{part}") for op in ops]
    out += [(op, "head") for op in HEAD]
    while len(out) < nodes:                      # pad the head up to the size asked for
        out.insert(len(out) - 1, ("Relu", "head"))
    return out[:nodes]


def make_graph(nodes: int = 300):
    """The model graph: (onnx.ModelProto, [(tensor, op, node name, scope)] in model order)."""
    import onnx
    from onnx import TensorProto, helper

    layout = _layout(nodes)
    inits = [helper.make_tensor("w", TensorProto.FLOAT, [WIDTH, WIDTH], [0.1] * WIDTH * WIDTH),
             helper.make_tensor("gamma", TensorProto.FLOAT, [WIDTH], [1.0] * WIDTH)]
    graph_nodes, values, last, residual = [], [], "x", "x"
    counts: dict[str, int] = {}
    for op, scope in layout:
        counts[op] = counts.get(op, 0) + 1
        tensor = f"{op.lower()}_{counts[op]}"
        name = f"node_{tensor}"
        if op == "MatMul":
            ins = [last, "w"]
        elif op == "LayerNormalization":
            ins, residual = [last, "gamma"], last
        elif op == "Add":
            ins = [last, residual]
        else:
            ins = [last]
        n = helper.make_node(op, ins, [tensor], name=name)
        scopes = ["", *(".".join(scope.split(".")[:k]) for k in range(1, len(scope.split(".")) + 1)), tensor]
        n.metadata_props.add(key="pkg.torch.onnx.name_scopes", value=repr(scopes))
        graph_nodes.append(n)
        values.append((tensor, op, name, scope))
        last = tensor
    graph_nodes.append(helper.make_node("Identity", [last], ["output_0"], name="node_output"))
    g = helper.make_graph(graph_nodes, "scale", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, WIDTH])],
                          [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, [4, WIDTH])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model, values


def make_scale_run(root, rows: int = 2000, nodes: int = 300, samples: int = 2, seed: int = 0):
    """Write the files described above under ``root`` and return ``leapp_lab.verify``'s report."""
    import onnx

    import leapp_lab
    from leapp_lab.model.build import BuildReport
    from leapp_lab.model.jsonio import save_npz
    from leapp_lab.model.tap import Manifest, TapEntry
    from leapp_lab.onnxio.manifest import IDENTITY_PREFIX

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    model, values = make_graph(nodes)
    onnx.save(model, root / "model.onnx")
    rng = np.random.default_rng(seed)
    taps = []
    for i, (tensor, op, name, scope) in enumerate(values):
        taps.append(TapEntry(name=tensor, kind="op", order=i, tensor=tensor, producer_op=op, producer_node=name,
                             reference_source="torch", scope=scope, source=f"model.py:{100 + i}",
                             dtype="float32", shape=[4, WIDTH]))
    for j in range(max(0, rows - len(values) - 1)):
        i = j * len(values) // max(1, rows - len(values) - 1)
        tensor, op, name, scope = values[i]
        taps.append(TapEntry(name=f"probe_{j:04d}", kind="manual", order=i, tensor=tensor, producer_op=op,
                             producer_node=name, reference_source="torch", scope=scope,
                             source=f"model.py:{100 + i}", dtype="float32", shape=[4, WIDTH]))
    out_entry = TapEntry(name="output_0", kind="output", order=len(values), tensor="output_0",
                         producer_op="Identity", producer_node="node_output", reference_source="torch")
    mlp = [v[0] for v in values if v[3] == "blocks.3.mlp" and v[1] == "MatMul"]
    overflow = mlp[1] if len(mlp) > 1 else None
    ref, eng = {}, {}
    for t in [*taps, out_entry]:
        r = rng.standard_normal((samples, 4, WIDTH)).astype(np.float32)
        e = r + rng.standard_normal(r.shape).astype(np.float32) * np.float32(1e-4 * 1.03 ** t.order)
        if t.tensor == overflow:               # blocks.3.mlp's second MatMul overflows, the fp16 way
            e[:, 0, :2] = np.inf
        ref[t.name], eng[t.name] = r, e
    save_npz(root / "model.reference.npz", ref)
    build = root / "model.ort"
    build.mkdir(exist_ok=True)
    save_npz(build / "sample_outputs.npz", eng)
    # the engine graph exposes every tap the way compile does: op taps as outputs of their tensor,
    # manual taps through an Identity named leapp_lab_tap/<name>
    engine = onnx.ModelProto()
    engine.CopyFrom(model)
    for t in taps:
        if t.kind == "manual":
            engine.graph.node.append(onnx.helper.make_node("Identity", [t.tensor], [t.name], name=IDENTITY_PREFIX + t.name))
        engine.graph.output.append(onnx.ValueInfoProto(name=t.name))
    onnx.save(engine, build / "engine.onnx")
    bound = [t.bind("bound", t.tensor, "direct") for t in taps]
    BuildReport(engine="ort", onnx=str(root / "model.onnx"), npz="", artifact="engine.onnx",
                inputs=["x"], outputs=["output_0", *(t.name for t in taps)], model_outputs=["output_0"],
                samples=samples, manifest=Manifest(inputs=["x"], outputs=[out_entry], taps=bound)).save(build)
    return leapp_lab.verify(root / "model.reference.npz", build, out=root / "lab")
