#!/usr/bin/env python3
"""Regenerates tests/data/onnx: small ONNX models with an input and the
output onnxruntime computes for it, which the C++ tests compare Tessera's
import (interpreted and compiled) against.

Needs torch, torchvision, onnx and onnxruntime: run it with the benchmark's
environment, `bench/.venv/bin/python scripts/make_onnx_test_models.py`
(bench/network_vs_frameworks.py creates it). The test suite itself only reads
the committed files.

- tiny_resnet, tiny_mobilenet_v2, tiny_squeezenet: torchvision's building
  blocks (BasicBlock, InvertedResidual, Fire) at a few channels and 32x32
  inputs, exported by torch.onnx.export at opset 17 in eval mode.
- op_*: one small model per importer operator, written with onnx.helper, at
  the opsets where the operator's definition changed.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx")
rng = np.random.default_rng(7)


def save(name, model_bytes, inputs):
    path = os.path.join(OUT, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model_bytes)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    expected = session.run(None, feed)[0]
    for k, x in enumerate(inputs):
        np.save(os.path.join(OUT, f"{name}.input{k}.npy"), x.astype(np.float32))
    np.save(os.path.join(OUT, name + ".expected.npy"), expected.astype(np.float32))
    print(f"{name}: {os.path.getsize(path)} bytes, output {expected.shape}")


def randomize_batch_norms(net):
    """Non-trivial statistics, so that folding batch norm is really tested."""
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def export_torch(name, net, shape=(1, 3, 32, 32)):
    torch.manual_seed(0)
    randomize_batch_norms(net)
    net.eval()
    x = torch.randn(*shape)
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(net, x, path, opset_version=17, input_names=["data"], output_names=["logits"], dynamo=False)
    with open(path, "rb") as f:
        save(name, f.read(), [x.numpy()])


def tiny_resnet():
    from torchvision.models.resnet import BasicBlock
    down = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1, 2, bias=False), torch.nn.BatchNorm2d(16))
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, 1), BasicBlock(8, 8), BasicBlock(8, 16, 2, down),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10))


def tiny_mobilenet_v2():
    from torchvision.models.mobilenetv2 import InvertedResidual
    from torchvision.ops.misc import Conv2dNormActivation
    return torch.nn.Sequential(
        Conv2dNormActivation(3, 8, stride=2, activation_layer=torch.nn.ReLU6),
        InvertedResidual(8, 8, 1, 1), InvertedResidual(8, 16, 2, 6), InvertedResidual(16, 16, 1, 6),
        Conv2dNormActivation(16, 32, kernel_size=1, activation_layer=torch.nn.ReLU6),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Dropout(0.2), torch.nn.Linear(32, 10))


def tiny_squeezenet():
    from torchvision.models.squeezenet import Fire
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 2), torch.nn.ReLU(), torch.nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(16, 4, 8, 8), Fire(16, 4, 8, 8), torch.nn.MaxPool2d(3, 2, ceil_mode=True), Fire(16, 8, 16, 16),
        torch.nn.Dropout(0.5), torch.nn.Conv2d(32, 10, 1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten())


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def op_model(name, opset, nodes, inputs, initializers=()):
    """inputs: [(name, shape)], all float32; the first node output of the last node is the output."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    save(name, model.SerializeToString(), [rng.standard_normal(s).astype(np.float32) for _, s in inputs])


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32) * 0.5


def operator_models():
    x4 = [("x", [1, 4, 7, 7])]
    op_model("op_conv_same_groups_dilation", 13, [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], auto_pad="SAME_UPPER", group=2, strides=[2, 1]),
        helper.make_node("Conv", ["c", "w2"], ["y"], dilations=[2, 2], pads=[2, 2, 2, 2])],
        x4, [const("w", f32(6, 2, 3, 3)), const("b", f32(6)), const("w2", f32(3, 6, 3, 3))])
    op_model("op_conv_asymmetric_pads", 11, [
        helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 0, 2, 1], kernel_shape=[3, 2])], x4, [const("w", f32(5, 4, 3, 2))])
    op_model("op_gemm_trans_alpha_beta", 13, [
        helper.make_node("Gemm", ["x", "w", "c"], ["y"], alpha=0.5, beta=2.0, transB=0)],
        [("x", [3, 6])], [const("w", f32(6, 5)), const("c", f32(5))])
    op_model("op_matmul", 13, [helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [2, 6])], [const("w", f32(6, 4))])
    op_model("op_batchnorm_clip_opset11", 11, [
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("Clip", ["n", "lo", "hi"], ["y"])], x4,
        [const("s", f32(4) + 1), const("b", f32(4)), const("m", f32(4)), const("v", np.abs(f32(4)) + 0.5),
         const("lo", np.float32(0.0)), const("hi", np.float32(0.6))])
    op_model("op_pools", 13, [
        helper.make_node("MaxPool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["a"], ["b"], kernel_shape=[2, 2], pads=[1, 1, 0, 0], count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["b"], ["y"])], x4)
    op_model("op_sigmoid_sub_div_mul_add", 13, [
        helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Sub", ["s", "c"], ["d"]),
        helper.make_node("Div", ["d", "c2"], ["e"]), helper.make_node("Mul", ["e", "x"], ["f"]),
        helper.make_node("Add", ["f", "x"], ["y"])], x4, [const("c", f32(4, 1, 1)), const("c2", np.float32(2.0))])
    op_model("op_shape_chain_reshape", 13, [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"])], x4,
        [const("zero", np.int64(0)), const("axes", np.array([0], np.int64)), const("minus_one", np.array([-1], np.int64))])
    op_model("op_flatten_transpose_softmax_opset11", 11, [
        helper.make_node("Flatten", ["x"], ["f"], axis=2), helper.make_node("Transpose", ["f"], ["t"], perm=[1, 0]),
        helper.make_node("Softmax", ["t"], ["y"], axis=1)], x4)
    op_model("op_concat_pad_softmax", 18, [
        helper.make_node("Concat", ["x", "x2"], ["c"], axis=1),
        helper.make_node("Pad", ["c", "pads", "value"], ["p"], mode="constant"),
        helper.make_node("Softmax", ["p"], ["y"], axis=-1)], x4 + [("x2", [1, 2, 7, 7])],
        [const("pads", np.array([0, 0, 1, 2, 0, 0, 0, 1], np.int64)), const("value", np.float32(0.25))])
    op_model("op_squeeze_unsqueeze_opset11", 11, [
        helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0]), helper.make_node("Squeeze", ["u"], ["s"], axes=[0]),
        helper.make_node("Relu", ["s"], ["y"])], x4)
    op_model("op_reduce_mean_opset18", 18, [
        helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=0),
        helper.make_node("Identity", ["m"], ["i"]), helper.make_node("Dropout", ["i"], ["y"])], x4,
        [const("axes", np.array([2, 3], np.int64))])
    op_model("op_constant_node", 13, [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(f32(4, 1, 1), "k")),
        helper.make_node("Mul", ["x", "k"], ["y"])], x4)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    export_torch("tiny_resnet", tiny_resnet())
    export_torch("tiny_mobilenet_v2", tiny_mobilenet_v2())
    export_torch("tiny_squeezenet", tiny_squeezenet())
    operator_models()


if __name__ == "__main__":
    main()
