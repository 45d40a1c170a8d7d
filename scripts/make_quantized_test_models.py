#!/usr/bin/env python3
"""Regenerates tests/data/quantized: a small CNN trained here on the
handwritten digits that ship with scikit-learn (8x8 images; nothing is
downloaded), its float ONNX export, and the same model quantized by
onnxruntime's quantize_static (QDQ and QOperator formats, per-channel int8
weights, uint8 activations; QDQ with int8 activations, its default) and
quantize_dynamic, with the test images,
their labels, and every model's outputs as onnxruntime computes them; and
one transformer encoder layer with seeded weights, quantized to QDQ (its
attention's products of two activations in int8), with an input and
onnxruntime's output. The C++
tests check Tessera's own int8 quantization of the float model (top-1 within
1 point of float32) and its import of onnxruntime's quantized models.
Files already present are kept (`--force` makes them all again).

Needs torch, onnx, onnxruntime and scikit-learn: run it with the benchmark's
environment, `bench/.venv/bin/python scripts/make_quantized_test_models.py`.
The test suite itself only reads the committed files.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
from sklearn.datasets import load_digits

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "quantized")


class DigitsCnn(torch.nn.Module):
    """Three 3x3 convolutions with ReLU (a max pool after the second), a
    global average pool and a linear classifier: the shapes Tessera's
    quantize pass handles, small enough to train in seconds."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.conv3(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TinyEncoder(torch.nn.Module):
    """One transformer encoder layer (2 heads of 16 over 32 features, a
    feed-forward of 64), written out as BERT computes it: attention's two
    products of run-time tensors (Q.K^T and P.V) are what onnxruntime's
    quantize_static quantizes into int8 MatMuls of two activations."""

    def __init__(self, d=32, heads=2, ff=64):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.ff1, self.ff2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads

        def heads(y):
            return y.view(b, t, self.heads, hd).transpose(1, 2)

        q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
        p = torch.softmax((q @ k.transpose(-1, -2)) * hd ** -0.5, dim=-1)
        c = (p @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.o(c))
        return self.ln2(x + self.ff2(torch.relu(self.ff1(x))))


def tiny_encoder(force):
    """The encoder with seeded weights, exported, quantized by quantize_static
    (QDQ, per-channel int8 weights, uint8 activations, 8 seeded calibration
    inputs), with a test input and onnxruntime's output for it."""
    float_path = os.path.join(OUT, "tiny_encoder.onnx")
    qdq_path = os.path.join(OUT, "tiny_encoder_qdq.onnx")
    rng = np.random.default_rng(1)
    samples = [rng.standard_normal((1, 16, 32)).astype(np.float32) for _ in range(9)]
    if force or not os.path.exists(float_path):
        torch.manual_seed(1)
        net = TinyEncoder().eval()
        torch.onnx.export(net, torch.from_numpy(samples[0]), float_path, opset_version=17, input_names=["x"],
                          output_names=["y"], dynamo=False)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"x": s} for s in samples[:8]])

        def get_next(self):
            return next(self.items, None)

    if force or not os.path.exists(qdq_path):
        quantize_static(float_path, qdq_path, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    x = samples[8]
    np.save(os.path.join(OUT, "tiny_encoder_input.npy"), x)
    for name, path in (("tiny_encoder", float_path), ("tiny_encoder_qdq", qdq_path)):
        expected = os.path.join(OUT, name + ".expected.npy")
        y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        if force or not os.path.exists(expected):
            np.save(expected, y.astype(np.float32))
        print(f"{name}: {os.path.getsize(path)} bytes")


def train_and_export(images, labels, train, test, float_path):
    """Trains DigitsCnn on the training images and exports it to `float_path`."""
    torch.manual_seed(0)
    net = DigitsCnn()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    x_train, y_train = torch.from_numpy(images[train]), torch.from_numpy(labels[train])
    for epoch in range(40):
        for batch in torch.split(torch.randperm(len(train)), 64):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x_train[batch]), y_train[batch])
            loss.backward()
            opt.step()
    net.eval()
    torch.onnx.export(net, torch.from_numpy(images[test]), float_path, opset_version=17, input_names=["data"],
                      output_names=["logits"], dynamo=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    force = "--force" in sys.argv  # else files already here stay (their expected outputs with them)
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # N x 1 x 8 x 8 in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(images))
    train, test = order[:1437], order[1437:]  # 360 test images, as sklearn's examples split 80/20
    x_test = images[test]

    float_path = os.path.join(OUT, "digits_cnn.onnx")
    if force or not os.path.exists(float_path):
        train_and_export(images, labels, train, test, float_path)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{"data": images[train[:360]]}])

        def get_next(self):
            return next(self.batches, None)

    # quantize_static in both of its formats (per-channel int8 weights, uint8
    # activations), and quantize_dynamic (ConvInteger, MatMulInteger and
    # DynamicQuantizeLinear: activations' scales computed at run time).
    models = {"digits_cnn": float_path}
    for name, fmt, activations in (("digits_cnn_qdq", QuantFormat.QDQ, QuantType.QUInt8),
                                   ("digits_cnn_qoperator", QuantFormat.QOperator, QuantType.QUInt8),
                                   ("digits_cnn_qdq_s8s8", QuantFormat.QDQ, QuantType.QInt8)):
        models[name] = os.path.join(OUT, name + ".onnx")
        if force or not os.path.exists(models[name]):
            quantize_static(float_path, models[name], Reader(), quant_format=fmt, per_channel=True,
                            activation_type=activations, weight_type=QuantType.QInt8)
    models["digits_cnn_dynamic"] = os.path.join(OUT, "digits_cnn_dynamic.onnx")
    if force or not os.path.exists(models["digits_cnn_dynamic"]):
        quantize_dynamic(float_path, models["digits_cnn_dynamic"], weight_type=QuantType.QInt8,
                         op_types_to_quantize=["Conv", "MatMul", "Gemm"])

    np.save(os.path.join(OUT, "digits_test_images.npy"), x_test)
    np.save(os.path.join(OUT, "digits_test_labels.npy"), labels[test].astype(np.float32))
    np.save(os.path.join(OUT, "digits_calibration_images.npy"), images[train[:360]])  # one batch of the input's shape
    for name, path in models.items():
        expected = os.path.join(OUT, name + ".expected.npy")
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        logits = session.run(None, {"data": x_test})[0]
        if force or not os.path.exists(expected):
            np.save(expected, logits.astype(np.float32))
        accuracy = float((logits.argmax(1) == labels[test]).mean())
        print(f"{name}: {os.path.getsize(path)} bytes, onnxruntime top-1 {accuracy:.4f}")
    tiny_encoder(force)


if __name__ == "__main__":
    main()
