#!/usr/bin/env python3
"""Regenerates tests/data/onnx: small ONNX models with an input and the
output onnxruntime computes for it, which the C++ tests compare Tessera's
import (interpreted and compiled) against.

Needs torch, torchvision, onnx and onnxruntime: run it with the benchmark's
environment, `bench/.venv/bin/python scripts/make_onnx_test_models.py`
(bench/network_vs_frameworks.py creates it). The test suite itself only reads
the committed files.

- resnet18_narrow, mobilenet_v2_narrow, squeezenet1_1_narrow: the whole
  topologies of torchvision's resnet18 (BasicBlock, [2, 2, 2, 2]), mobilenet_v2
  (torchvision's own class at width 0.25) and squeezenet1_1 (its Fire layout),
  with few channels and 10 classes, exported by torch.onnx.export at opset 17
  in eval mode, on 1x3x64x64 inputs.
- op_*: one small model per importer operator, written with onnx.helper, at
  the opsets where the operator's definition changed.
- bert_tiny, gpt2_tiny, vit_tiny: Hugging Face transformers' BertModel,
  GPT2Model and ViTModel built from small configs (2 layers, 2 heads, width
  32; nothing downloaded), their last hidden state exported at opset 17 on
  8 token ids or a 1x3x32x32 image.
- bert_tiny_dynamic, gpt2_tiny_dynamic, resnet18_narrow_dynamic: models whose
  sequence (BERT with its attention mask, GPT-2) or batch (the narrow
  ResNet-18) is a symbolic dimension, each with onnxruntime's outputs at three
  sizes (NAME.sN.input*.npy, NAME.sN.expected.npy): what one artifact
  compiled for a range of sizes is checked against.
"""
import os
import sys

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
    for k, x in enumerate(inputs):  # integers (token ids, masks) stay int64, as a user saves them
        np.save(os.path.join(OUT, f"{name}.input{k}.npy"), x if x.dtype == np.int64 else x.astype(np.float32))
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


def export_torch(name, net, shape=(1, 3, 64, 64)):
    torch.manual_seed(0)
    randomize_batch_norms(net)
    net.eval()
    x = torch.randn(*shape)
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(net, x, path, opset_version=17, input_names=["data"], output_names=["logits"], dynamo=False)
    with open(path, "rb") as f:
        save(name, f.read(), [x.numpy()])


class NarrowResNet18(torch.nn.Module):
    """torchvision's resnet18 (stem, four stages of two BasicBlocks, pooled
    linear head, forward as ResNet._forward_impl) at widths 8..32."""

    def __init__(self, widths=(8, 16, 24, 32), classes=10):
        super().__init__()
        from torchvision.models.resnet import BasicBlock
        self.conv1 = torch.nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(widths[0])
        self.relu = torch.nn.ReLU(inplace=True)
        self.maxpool = torch.nn.MaxPool2d(3, 2, 1)
        stages, inplanes = [], widths[0]
        for i, planes in enumerate(widths):
            stride = 1 if i == 0 else 2
            down = None
            if stride != 1 or inplanes != planes:
                down = torch.nn.Sequential(torch.nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                           torch.nn.BatchNorm2d(planes))
            stages.append(torch.nn.Sequential(BasicBlock(inplanes, planes, stride, down), BasicBlock(planes, planes)))
            inplanes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.fc = torch.nn.Linear(widths[-1], classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def narrow_mobilenet_v2():
    """torchvision's MobileNetV2 itself at width 0.25; its 1280-channel last
    convolution (fixed by torchvision below width 1) cut to 64."""
    from torchvision.ops.misc import Conv2dNormActivation
    net = torchvision.models.mobilenet_v2(weights=None, width_mult=0.25, num_classes=10)
    net.features[-1] = Conv2dNormActivation(net.features[-1][0].in_channels, 64, kernel_size=1,
                                            activation_layer=torch.nn.ReLU6)
    net.classifier[1] = torch.nn.Linear(64, 10)
    return net


def narrow_squeezenet1_1():
    """torchvision's SqueezeNet 1.1 (its class and forward) with every Fire
    module at a quarter of its width."""
    from torchvision.models.squeezenet import Fire
    net = torchvision.models.squeezenet1_1(weights=None, num_classes=10)
    net.features = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 2), torch.nn.ReLU(inplace=True), torch.nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(16, 4, 16, 16), Fire(32, 4, 16, 16), torch.nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(32, 8, 32, 32), Fire(64, 8, 32, 32), torch.nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(64, 12, 48, 48), Fire(96, 12, 48, 48), Fire(96, 16, 64, 64), Fire(128, 16, 64, 64))
    net.classifier[1] = torch.nn.Conv2d(128, 10, 1)
    return net


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def op_model(name, opset, nodes, inputs, initializers=()):
    """inputs: [(name, shape)] of float32, or (name, shape, upper bound) of
    int64 ids in [0, bound); the first node output of the last node is the output."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(i[0], TensorProto.FLOAT if len(i) == 2 else TensorProto.INT64,
                                                    i[1]) for i in inputs],
        [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    values = [rng.standard_normal(i[1]).astype(np.float32) if len(i) == 2 else rng.integers(0, i[2], i[1])
              for i in inputs]
    save(name, model.SerializeToString(), values)


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
    # Squeeze/Unsqueeze axes became inputs at opset 13.
    op_model("op_squeeze_unsqueeze_opset13", 13, [
        helper.make_node("Unsqueeze", ["x", "outer"], ["u"]), helper.make_node("Squeeze", ["u", "first"], ["s"]),
        helper.make_node("Squeeze", ["s", "last"], ["q"]), helper.make_node("Relu", ["q"], ["y"])], x4,
        [const("outer", np.array([0, -1], np.int64)), const("first", np.array([0], np.int64)),
         const("last", np.array([-1], np.int64))])
    # Clip with only a min, then only a max (an empty input name skips one).
    op_model("op_clip_one_bound_opset13", 13, [
        helper.make_node("Clip", ["x", "lo"], ["c"]), helper.make_node("Clip", ["c", "", "hi"], ["y"])], x4,
        [const("lo", np.float32(-0.3)), const("hi", np.float32(0.4))])
    # ReduceMean's axes: an attribute up to opset 17.
    op_model("op_reduce_mean_opset13", 13, [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1, -2], keepdims=1),
        helper.make_node("Flatten", ["m"], ["y"])], x4)
    op_model("op_pad_opset11", 11, [
        helper.make_node("Pad", ["x", "pads"], ["y"])], x4, [const("pads", np.array([0, 1, 2, 0, 0, 0, 1, 3], np.int64))])
    # Pad's axes input (opset 18): pads of the listed axes only.
    op_model("op_pad_axes_opset18", 18, [
        helper.make_node("Pad", ["x", "pads", "value", "axes"], ["y"])], x4,
        [const("pads", np.array([1, 2, 0, 1], np.int64)), const("value", np.float32(-1.5)),
         const("axes", np.array([-1, 2], np.int64))])
    # Initializers in the typed fields (float_data, int64_data) rather than raw_data.
    op_model("op_float_data_initializers", 17, [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c", "shape"], ["y"])], x4,
        [helper.make_tensor("w", TensorProto.FLOAT, [3, 4, 3, 3], f32(3, 4, 3, 3).flatten().tolist()),
         helper.make_tensor("b", TensorProto.FLOAT, [3], f32(3).tolist()),
         helper.make_tensor("shape", TensorProto.INT64, [3], [1, 3, -1])])
    op_model("op_gemm_transA_matrix_c_opset11", 11, [
        helper.make_node("Gemm", ["x", "w", "c"], ["y"], transA=1, transB=1, beta=0.5)],
        [("x", [6, 3])], [const("w", f32(5, 6)), const("c", f32(3, 5))])
    # Softmax over a middle axis: one axis at opset 13, the flattened rest before.
    op_model("op_softmax_axis1_opset13", 13, [helper.make_node("Softmax", ["x"], ["y"], axis=1)], x4)
    op_model("op_softmax_axis1_opset11", 11, [helper.make_node("Softmax", ["x"], ["y"], axis=1)], x4)
    op_model("op_conv_pool_auto_pad", 17, [
        helper.make_node("Conv", ["x", "w"], ["a"], auto_pad="SAME_LOWER", strides=[2, 2]),
        helper.make_node("MaxPool", ["a"], ["p"], auto_pad="SAME_UPPER", kernel_shape=[2, 2]),
        helper.make_node("Conv", ["p", "w2"], ["y"], auto_pad="VALID")], [("x", [1, 4, 9, 9])],
        [const("w", f32(6, 4, 4, 4)), const("w2", f32(2, 6, 2, 2))])
    op_model("op_add_mul_broadcast", 14, [
        helper.make_node("Add", ["x", "x2"], ["a"]), helper.make_node("Mul", ["a", "x2"], ["m"]),
        helper.make_node("Relu", ["m"], ["y"])], x4 + [("x2", [1, 4, 1, 7])])
    op_model("op_matmul_activations", 13, [
        helper.make_node("MatMul", ["x", "x2"], ["m"]), helper.make_node("MatMul", ["m", "w"], ["y"])],
        [("x", [2, 3, 4]), ("x2", [2, 4, 5])], [const("w", f32(5, 6))])
    op_model("op_matmul_2d_activations", 13, [helper.make_node("MatMul", ["x", "x2"], ["y"])],
             [("x", [3, 4]), ("x2", [4, 5])])
    # A channel shuffle as torchvision's shufflenet exports it: the group
    # width computed from the shape (Shape, Gather, Div, Concat), then
    # Reshape, Transpose and Reshape back.
    op_model("op_channel_shuffle_shape_arithmetic", 13, [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["c"], axis=0),
        helper.make_node("Div", ["c", "two"], ["per_group"]),
        helper.make_node("Unsqueeze", ["per_group", "axes"], ["pg"]),
        helper.make_node("Concat", ["lead", "pg", "hw"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "back"], ["y"])], x4,
        [const("one", np.int64(1)), const("two", np.int64(2)), const("axes", np.array([0], np.int64)),
         const("lead", np.array([1, 2], np.int64)), const("hw", np.array([7, 7], np.int64)),
         const("back", np.array([1, -1, 7, 7], np.int64))])


def math_operator_models():
    """Issue 28's operators, from their own seed: regenerating them leaves the
    other models' files as they are (add new models at the end)."""
    global rng
    rng = np.random.default_rng(28)
    x4 = [("x", [1, 4, 7, 7])]
    # Issue 28's math operators. The activations, chained so each one's output
    # feeds another: Erf, Tanh, Exp, Reciprocal, Neg, Abs, Sqrt, Log,
    # HardSigmoid, and Max of three, Min of two.
    op_model("op_unary_math_opset13", 13, [
        helper.make_node("Erf", ["x"], ["e"]), helper.make_node("Tanh", ["e"], ["t"]),
        helper.make_node("Exp", ["t"], ["ex"]), helper.make_node("Reciprocal", ["ex"], ["r"]),
        helper.make_node("Neg", ["r"], ["n"]), helper.make_node("Abs", ["x"], ["a"]),
        helper.make_node("Sqrt", ["a"], ["s"]), helper.make_node("Log", ["s"], ["l"]),
        helper.make_node("HardSigmoid", ["x"], ["h"], alpha=0.3, beta=0.6),
        helper.make_node("Max", ["n", "l", "h"], ["m"]), helper.make_node("Min", ["m", "s"], ["y"])], x4)
    # Sub, Div and Pow of two tensors, broadcast; Pow by the constants
    # exporters write (2, 3, 0.5) and by another (1.7).
    op_model("op_binary_tensors_opset13", 13, [
        helper.make_node("Sub", ["x", "x2"], ["d"]), helper.make_node("Abs", ["x2"], ["ab"]),
        helper.make_node("Add", ["ab", "one"], ["a"]), helper.make_node("Div", ["d", "a"], ["q"]),
        helper.make_node("Pow", ["a", "x"], ["p"]), helper.make_node("Max", ["q", "p"], ["y"])],
        x4 + [("x2", [4, 1, 7])], [const("one", np.float32(1.0))])
    op_model("op_pow_constant_exponents_opset13", 13, [
        helper.make_node("Pow", ["x", "two"], ["sq"]), helper.make_node("Pow", ["x", "three"], ["cu"]),
        helper.make_node("Pow", ["sq", "half"], ["rt"]), helper.make_node("Pow", ["rt", "other"], ["o"]),
        helper.make_node("Add", ["sq", "cu"], ["s1"]), helper.make_node("Add", ["s1", "o"], ["y"])], x4,
        [const("two", np.float32(2.0)), const("three", np.float32(3.0)), const("half", np.float32(0.5)),
         const("other", np.float32(1.7))])
    # LayerNormalization (opset 17): over the last axis with a bias, and over
    # the last two without one.
    op_model("op_layer_norm_opset17", 17, [
        helper.make_node("LayerNormalization", ["x", "s", "b"], ["n"], axis=-1, epsilon=1e-5),
        helper.make_node("LayerNormalization", ["n", "s2"], ["y"], axis=-2, epsilon=1e-3)],
        [("x", [2, 5, 16])], [const("s", f32(16) + 1), const("b", f32(16)), const("s2", f32(5, 16) + 1)])
    # GELU as torch.onnx exports F.gelu at opset 17 (Div, Erf, Add, Mul, Mul)
    # after a Linear, and the Gelu operator of opset 20 in both forms.
    op_model("op_gelu_erf_pattern_opset17", 17, [
        helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["h"]),
        helper.make_node("Div", ["h", "root2"], ["hd"]), helper.make_node("Erf", ["hd"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["he"]),
        helper.make_node("Mul", ["he", "half"], ["y"])], [("x", [4, 16])],
        [const("w", f32(16, 24)), const("b", f32(24)), const("root2", np.float32(np.sqrt(2.0))),
         const("one", np.float32(1.0)), const("half", np.float32(0.5))])
    # Reductions over any axes, the axes an input (ReduceSum from opset 13,
    # the others from 18) or an attribute, summed back to x's shape.
    x = [("x", [2, 3, 4, 5])]
    op_model("op_reductions_opset18", 18, [
        helper.make_node("ReduceSum", ["x", "a13"], ["s"]), helper.make_node("ReduceMax", ["x", "last"], ["mx"]),
        helper.make_node("ReduceMin", ["x", "first"], ["mn"]), helper.make_node("ReduceL2", ["x", "a2"], ["l2"]),
        helper.make_node("ReduceMean", ["x", "a123"], ["me"]), helper.make_node("Add", ["s", "mx"], ["t1"]),
        helper.make_node("Add", ["t1", "mn"], ["t2"]), helper.make_node("Add", ["t2", "l2"], ["t3"]),
        helper.make_node("Add", ["t3", "me"], ["y"])], x,
        [const("a13", np.array([1, 3], np.int64)), const("last", np.array([-1], np.int64)),
         const("first", np.array([0], np.int64)), const("a2", np.array([2], np.int64)),
         const("a123", np.array([1, 2, 3], np.int64))])
    op_model("op_reductions_opset13", 13, [
        helper.make_node("ReduceSum", ["x", "last"], ["s"], keepdims=0),
        helper.make_node("ReduceMax", ["s"], ["mx"], axes=[0], keepdims=0),
        helper.make_node("ReduceMean", ["x"], ["me"], axes=[0, -1], keepdims=0),
        helper.make_node("Add", ["mx", "me"], ["y"])], x, [const("last", np.array([-1], np.int64))])
    # A layer norm written out as torch.onnx exported nn.LayerNorm before
    # opset 17: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add.
    op_model("op_layer_norm_decomposed_opset13", 13, [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]), helper.make_node("Sub", ["x", "m"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["sq"]), helper.make_node("ReduceMean", ["sq"], ["v"], axes=[-1]),
        helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]), helper.make_node("Mul", ["n", "g"], ["ng"]),
        helper.make_node("Add", ["ng", "b"], ["y"])], [("x", [2, 5, 16])],
        [const("two", np.float32(2.0)), const("eps", np.float32(1e-5)), const("g", f32(16) + 1),
         const("b", f32(16))])
    # MatMul of rank 4 (attention's heads: scores = q k^T, softmax, times v),
    # and a rank-4 A times a 2-D B computed at run time.
    op_model("op_matmul_attention_opset13", 13, [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Mul", ["s", "scale"], ["ss"]), helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"])],
        [("q", [1, 2, 5, 8]), ("k", [1, 2, 5, 8]), ("v", [1, 2, 5, 8])], [const("scale", np.float32(8 ** -0.5))])
    op_model("op_matmul_4d_by_2d_opset13", 13, [
        helper.make_node("Relu", ["w"], ["wr"]), helper.make_node("MatMul", ["x", "wr"], ["y"])],
        [("x", [2, 3, 4, 5]), ("w", [5, 6])])
    # Slice (negative steps, ends past the axis, axes listed) and Split.
    op_model("op_slice_split_opset13", 13, [
        helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1),
        helper.make_node("Slice", ["b", "s1", "e1", "ax1", "st1"], ["r"]),
        helper.make_node("Slice", ["a", "s2", "e2", "ax2", "st2"], ["c"]),
        helper.make_node("Add", ["r", "c"], ["y"])], [("x", [1, 4, 6, 8])],
        [const("sizes", np.array([1, 3], np.int64)),
         const("s1", np.array([-1, 0], np.int64)), const("e1", np.array([-100, 8], np.int64)),
         const("ax1", np.array([2, 3], np.int64)), const("st1", np.array([-2, 3], np.int64)),
         const("s2", np.array([1, 0], np.int64)), const("e2", np.array([4, 2 ** 62], np.int64)),
         const("ax2", np.array([-2, -1], np.int64)), const("st2", np.array([1, 3], np.int64))])
    # Gather on a float tensor (a class token, two rows), Expand, Where with a
    # mask known now.
    op_model("op_gather_expand_where_opset13", 13, [
        helper.make_node("Gather", ["x", "zero"], ["g"], axis=1),
        helper.make_node("Gather", ["x", "rows"], ["g2"], axis=-2),
        helper.make_node("Unsqueeze", ["g", "one"], ["u"]), helper.make_node("Expand", ["u", "shape"], ["e"]),
        helper.make_node("Add", ["e", "g2"], ["s"]), helper.make_node("Where", ["mask", "s", "minus"], ["y"])],
        [("x", [2, 5, 8])],
        [const("zero", np.int64(0)), const("rows", np.array([4, -4], np.int64)), const("one", np.array([1], np.int64)),
         const("shape", np.array([1, 2, 1], np.int64)), const("mask", np.ones((2, 1, 1), bool)),
         const("minus", np.float32(-1e4))])
    # A shape subgraph as transformer exports write them: the sequence length
    # from Shape, positions from Range, ConstantOfShape, Equal/Not/Where and
    # Cast on known integers, a Reshape target assembled by Concat.
    op_model("op_shape_subgraph_opset13", 13, [
        helper.make_node("Shape", ["x"], ["sh"]), helper.make_node("Gather", ["sh", "one"], ["seq"], axis=0),
        helper.make_node("Range", ["zero", "seq", "one"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["posf", "ax1"], ["pos2"]),
        helper.make_node("Unsqueeze", ["seq", "ax0"], ["seq1"]),
        helper.make_node("Concat", ["seq1", "width"], ["ms"], axis=0),
        helper.make_node("ConstantOfShape", ["ms"], ["half"], value=numpy_helper.from_array(np.array([0.5], np.float32))),
        helper.make_node("Mul", ["pos2", "half"], ["m"]),
        helper.make_node("Equal", ["seq", "six"], ["eq"]), helper.make_node("Not", ["eq"], ["ne"]),
        helper.make_node("Where", ["ne", "seq", "minus_one"], ["last"]),
        helper.make_node("Unsqueeze", ["last", "ax0"], ["last1"]),
        helper.make_node("Concat", ["batch", "seq1", "last1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"]), helper.make_node("Add", ["r", "m"], ["y"])],
        [("x", [1, 6, 16])],
        [const("one", np.int64(1)), const("zero", np.int64(0)), const("six", np.int64(6)),
         const("minus_one", np.int64(-1)), const("ax0", np.array([0], np.int64)), const("ax1", np.array([1], np.int64)),
         const("width", np.array([16], np.int64)), const("batch", np.array([1], np.int64))])
    # Resize of H and W: bilinear as torch exports F.interpolate(scale_factor=2,
    # align_corners=False); bilinear with align_corners to an odd size;
    # nearest as torch exports it (asymmetric, floor) by 2 and 3; nearest
    # half_pixel down to a smaller size.
    empty = const("roi", np.array([], np.float32))
    op_model("op_resize_linear_opset13", 13, [
        helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel")], x4,
        [empty, const("scales", np.array([1, 1, 2, 2], np.float32))])
    op_model("op_resize_linear_align_corners_opset13", 13, [
        helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="linear",
                         coordinate_transformation_mode="align_corners")], x4,
        [empty, const("sizes", np.array([1, 4, 9, 11], np.int64))])
    op_model("op_resize_nearest_opset13", 13, [
        helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")], x4,
        [empty, const("scales", np.array([1, 1, 2, 3], np.float32))])
    op_model("op_resize_nearest_down_opset13", 13, [
        helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], mode="nearest")], x4,
        [empty, const("sizes", np.array([1, 4, 3, 5], np.int64))])
    op_model("op_gelu_opset20", 20, [
        helper.make_node("Gelu", ["x"], ["g"]), helper.make_node("Gelu", ["x"], ["t"], approximate="tanh"),
        helper.make_node("Add", ["g", "t"], ["y"])], x4)

    # Conv with 5-D weights (strides, pads, dilation, groups, a bias), ReLU,
    # and a GlobalAveragePool over (D, H, W) subtracted: a video network's pieces.
    x5 = [("x", [1, 4, 5, 9, 8])]
    op_model("op_conv3d_opset13", 13, [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[1, 2, 1], pads=[1, 1, 0, 1, 0, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["c2"], group=2, dilations=[2, 1, 1], kernel_shape=[2, 1, 3]),
        helper.make_node("GlobalAveragePool", ["c2"], ["g"]), helper.make_node("Sub", ["c2", "g"], ["y"])], x5,
        [const("w", f32(6, 4, 3, 3, 2)), const("b", f32(6)), const("w2", f32(4, 3, 2, 1, 3))])

    # DepthToSpace in both modes, SpaceToDepth back, Tile.
    x8 = [("x", [1, 8, 3, 4])]
    op_model("op_depth_space_tile_opset13", 13, [
        helper.make_node("DepthToSpace", ["x"], ["d"], blocksize=2, mode="DCR"),
        helper.make_node("SpaceToDepth", ["d"], ["s"], blocksize=2),
        helper.make_node("DepthToSpace", ["s"], ["c"], blocksize=2, mode="CRD"),
        helper.make_node("Tile", ["c", "reps"], ["y"])], x8, [const("reps", np.array([1, 2, 1, 3], np.int64))])


def transformer_models():
    """Issue 28's lookups, masks and tiny transformers, from their own seed."""
    global rng
    rng = np.random.default_rng(29)
    # An embedding of int64 ids, masked by an int64 mask and by a comparison
    # of the ids; Not and Cast to bool; Trilu and GatherElements on floats;
    # Mod on integers known now (a window size).
    ids = [("ids", [2, 5], 10), ("mask", [2, 5], 2)]
    op_model("op_lookup_and_masks_opset14", 14, [
        helper.make_node("Gather", ["table", "ids"], ["e"]),
        helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "two"], ["mu"]), helper.make_node("Mul", ["e", "mu"], ["em"]),
        helper.make_node("Equal", ["ids", "three"], ["eq"]), helper.make_node("Unsqueeze", ["eq", "two"], ["equ"]),
        helper.make_node("Where", ["equ", "negone", "em"], ["w"]),
        helper.make_node("Cast", ["mask"], ["mb"], to=TensorProto.BOOL), helper.make_node("Not", ["mb"], ["nm"]),
        helper.make_node("Unsqueeze", ["nm", "two"], ["nmu"]), helper.make_node("Where", ["nmu", "half", "w"], ["w2"]),
        helper.make_node("Trilu", ["w2", "one"], ["t"], upper=0),
        helper.make_node("Mod", ["seven", "five"], ["k"]),  # 2
        helper.make_node("Add", ["t", "kf"], ["tk"]),
        helper.make_node("GatherElements", ["tk", "picks"], ["y"], axis=2)], ids,
        [const("table", f32(10, 6)), const("two", np.array([2], np.int64)), const("three", np.array(3, np.int64)),
         const("negone", np.float32(-1.0)), const("half", np.float32(0.5)), const("one", np.array(1, np.int64)),
         const("seven", np.array([7], np.int64)), const("five", np.array([5], np.int64)),
         const("kf", np.float32(2.0)), const("picks", rng.integers(-6, 6, (2, 5, 3)).astype(np.int64))])

    import transformers
    torch.manual_seed(0)
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    bert = transformers.BertModel(transformers.BertConfig(vocab_size=100, max_position_embeddings=16, **small),
                                  add_pooling_layer=False)
    gpt2 = transformers.GPT2Model(transformers.GPT2Config(vocab_size=100, n_positions=16, n_embd=32, n_layer=2,
                                                          n_head=2, bos_token_id=0,
                                                          eos_token_id=0))
    vit = transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=8, **small), add_pooling_layer=False)
    export_hidden_state("bert_tiny", bert, torch.randint(0, 100, (1, 8)))
    export_hidden_state("gpt2_tiny", gpt2, torch.randint(0, 100, (1, 8)))
    export_hidden_state("vit_tiny", vit, torch.randn(1, 3, 32, 32))


def einsum_models():
    """Einsum's forms, from their own seed: attention's products, an
    ellipsis, a transpose, a letter only one operand has (summed), an
    elementwise product (no contracted letter)."""
    global rng
    rng = np.random.default_rng(31)
    op_model("op_einsum_opset12", 12, [
        helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhid,bhjd->bhij"),
        helper.make_node("Einsum", ["s", "v"], ["o"], equation="bhij, bhjd -> bhid"),
        helper.make_node("Einsum", ["o", "w"], ["p"], equation="...id,de->...ie"),
        helper.make_node("Einsum", ["p"], ["t"], equation="bhie->beih"),
        helper.make_node("Einsum", ["t", "g"], ["r"], equation="beih,xh->bei"),
        helper.make_node("Einsum", ["r", "m"], ["y"], equation="bei,ie->bie")],
        [("q", [2, 3, 4, 5]), ("k", [2, 3, 6, 5]), ("v", [2, 3, 6, 5])],
        [const("w", f32(5, 7)), const("g", f32(9, 3)), const("m", f32(4, 7))])


def known_tensor_models():
    """Tensors a model builds from its shapes, as Swin's shifted-window mask:
    ScatterND into zeros (index tuples concatenated along their last axis,
    updates expanded from a constant), and an empty slice of a shape
    concatenated into another shape; from their own seed."""
    global rng
    rng = np.random.default_rng(37)
    op_model("op_scatter_nd_known_opset13", 13, [
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("ConstantOfShape", ["xs"], ["zeros"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
        helper.make_node("Unsqueeze", ["rows", "last"], ["ru"]), helper.make_node("Unsqueeze", ["cols", "last"], ["cu"]),
        helper.make_node("Concat", ["ru", "cu"], ["idx"], axis=-1),
        helper.make_node("Expand", ["three", "count"], ["upd"]),
        helper.make_node("ScatterND", ["zeros", "idx", "upd"], ["mask"]),
        helper.make_node("Slice", ["xs", "two", "big", "zero"], ["none"]),  # xs[2:] of a 2-D shape: empty
        helper.make_node("Concat", ["xs", "none"], ["same"], axis=0),
        helper.make_node("Reshape", ["mask", "same"], ["m2"]),
        helper.make_node("Add", ["x", "m2"], ["y"])], [("x", [4, 5])],
        [const("rows", np.array([[0, 1], [3, 3]], np.int64)), const("cols", np.array([[4, 0], [2, 3]], np.int64)),
         const("last", np.array([-1], np.int64)), const("three", np.array([3.0], np.float32)),
         const("count", np.array([2, 2], np.int64)), const("two", np.array([2], np.int64)),
         const("big", np.array([2 ** 62], np.int64)), const("zero", np.array([0], np.int64))])


def export_hidden_state(name, net, x):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
    from transformer_models import LastHiddenState
    path = os.path.join(OUT, name + ".onnx")
    torch.onnx.export(LastHiddenState(net).eval(), x, path, opset_version=17, input_names=["data"],
                      output_names=["hidden"], dynamo=False)
    with open(path, "rb") as f:
        save(name, f.read(), [x.numpy()])


class HiddenStateWithMask(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, ids, mask):
        return self.net(input_ids=ids, attention_mask=mask)[0]


def save_sizes(name, path, make_inputs, sizes):
    """onnxruntime's output of the model at `path` for the inputs of each size."""
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for n in sizes:
        inputs = make_inputs(n)
        feed = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
        expected = session.run(None, feed)[0]
        for k, x in enumerate(inputs):
            np.save(os.path.join(OUT, f"{name}.s{n}.input{k}.npy"), x)
        np.save(os.path.join(OUT, f"{name}.s{n}.expected.npy"), expected.astype(np.float32))
    print(f"{name}: {os.path.getsize(path)} bytes, sizes {sizes}")


def varying_models():
    """Models with a symbolic sequence or batch dimension (from their own seed)."""
    import transformers
    torch.manual_seed(3)
    gen = np.random.default_rng(41)
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
    bert = transformers.BertModel(transformers.BertConfig(vocab_size=100, max_position_embeddings=16, **small),
                                  add_pooling_layer=False).eval()
    path = os.path.join(OUT, "bert_tiny_dynamic.onnx")
    ids, mask = torch.randint(0, 100, (1, 8)), torch.ones(1, 8, dtype=torch.int64)
    torch.onnx.export(HiddenStateWithMask(bert), (ids, mask), path, opset_version=17, input_names=["ids", "mask"],
                      output_names=["hidden"], dynamic_axes={"ids": {1: "sequence"}, "mask": {1: "sequence"},
                                                             "hidden": {1: "sequence"}}, dynamo=False)

    def bert_inputs(n):  # the last token masked out, as a padded batch has it
        m = np.ones((1, n), np.int64)
        m[0, -1] = 0
        return [gen.integers(0, 100, (1, n)).astype(np.int64), m]
    save_sizes("bert_tiny_dynamic", path, bert_inputs, [3, 8, 13])

    gpt2 = transformers.GPT2Model(transformers.GPT2Config(vocab_size=100, n_positions=16, n_embd=32, n_layer=2,
                                                          n_head=2, bos_token_id=0, eos_token_id=0)).eval()
    path = os.path.join(OUT, "gpt2_tiny_dynamic.onnx")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
    from transformer_models import LastHiddenState
    torch.onnx.export(LastHiddenState(gpt2), torch.randint(0, 100, (1, 8)), path, opset_version=17,
                      input_names=["ids"], output_names=["hidden"],
                      dynamic_axes={"ids": {1: "sequence"}, "hidden": {1: "sequence"}}, dynamo=False)
    save_sizes("gpt2_tiny_dynamic", path, lambda n: [gen.integers(0, 100, (1, n)).astype(np.int64)], [3, 8, 13])

    net = NarrowResNet18()
    randomize_batch_norms(net)
    net.eval()
    path = os.path.join(OUT, "resnet18_narrow_dynamic.onnx")
    torch.onnx.export(net, torch.randn(1, 3, 32, 32), path, opset_version=17, input_names=["data"],
                      output_names=["logits"], dynamic_axes={"data": {0: "batch"}, "logits": {0: "batch"}},
                      dynamo=False)
    save_sizes("resnet18_narrow_dynamic", path,
               lambda n: [gen.standard_normal((n, 3, 32, 32)).astype(np.float32)], [1, 3, 4])


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    export_torch("resnet18_narrow", NarrowResNet18())
    export_torch("mobilenet_v2_narrow", narrow_mobilenet_v2())
    export_torch("squeezenet1_1_narrow", narrow_squeezenet1_1())
    operator_models()
    math_operator_models()
    transformer_models()
    einsum_models()
    known_tensor_models()
    varying_models()


if __name__ == "__main__":
    main()
