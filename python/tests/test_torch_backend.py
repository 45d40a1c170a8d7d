"""torch.compile(backend="tessera") against eager PyTorch. Needs torch and
torchvision: run by python/tests/run_torch_tests.sh, which makes a virtual
environment with them; the ctest suite never needs torch."""
import sys
import time
import unittest

import numpy as np
import torch
import torchvision

import tessera
import tessera.torch_backend  # registers backend="tessera"

torch.manual_seed(0)


def rel_error(got, want):
    return float((got - want).abs().max() / want.abs().max())


class WithABreak(torch.nn.Module):
    """A CNN with torch.sin in the middle: no Tessera operator, a graph break."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv1(x)))
        x = torch.sin(x)
        x = torch.relu(self.conv2(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TransformerPieces(torch.nn.Module):
    """The activations and norms of transformers on token rows: layer_norm
    (with and without affine parameters), both gelus, silu, tanh, erf,
    hardsigmoid."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(32)
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 32)
        self.ln2 = torch.nn.LayerNorm(32, elementwise_affine=False)

    def forward(self, x):
        F = torch.nn.functional
        h = F.gelu(F.gelu(self.fc1(self.ln(x))), approximate="tanh")
        y = self.fc2(h)
        y = F.silu(y) + torch.tanh(y) + F.hardsigmoid(y)
        return self.ln2(y + torch.erf(x))


class TorchBackend(unittest.TestCase):
    def check(self, model, x, **compile_args):
        torch._dynamo.reset()
        model = model.eval()
        with torch.no_grad():
            want = model(x)
            compiled = torch.compile(model, backend="tessera", **compile_args)
            start = time.perf_counter()
            got = compiled(x)
            first = time.perf_counter() - start
            again = compiled(x)
        err = rel_error(got, want)
        print(f"  {type(model).__name__} {compile_args or ''}: rel error {err:.2e}, first call {first:.2f} s",
              file=sys.stderr)
        self.assertLessEqual(err, 1e-4)
        self.assertLessEqual(rel_error(again, want), 1e-4)

    def test_torchvision_models_equal_eager(self):
        x = torch.randn(1, 3, 224, 224)
        for name in ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1"]:
            with self.subTest(model=name):
                self.check(getattr(torchvision.models, name)(), x)

    def test_transformer_activations_and_norms_compile_whole(self):
        self.check(TransformerPieces(), torch.randn(8, 32), fullgraph=True)
        self.check(TransformerPieces(), torch.randn(2, 8, 32), fullgraph=True)  # linear over (batch, tokens, features)

    def test_modes(self):
        x = torch.randn(1, 3, 224, 224)
        self.check(torchvision.models.resnet18(), x, mode="reduce-overhead")
        self.check(WithABreak(), torch.randn(2, 3, 16, 16), options={"mode": "max-autotune", "autotune_minutes": 0.05})

    def test_a_graph_break_runs_in_eager_pytorch(self):
        model, x = WithABreak(), torch.randn(2, 3, 16, 16)
        self.check(model, x)
        explained = tessera.explain(model.eval(), x)
        print(f"  tessera.explain(WithABreak):\n{explained}", file=sys.stderr)
        self.assertEqual([why for _, why in explained.breaks], ["no Tessera operator for sin"])
        self.assertGreater(len(explained.kernels), 0)

    def test_fullgraph_turns_a_break_into_an_error_naming_the_node(self):
        torch._dynamo.reset()
        with torch.no_grad(), self.assertRaisesRegex(Exception, r"fullgraph=True, but Tessera cannot compile node '\w+' \(no Tessera operator for sin\)"):
            torch.compile(WithABreak().eval(), backend="tessera", fullgraph=True)(torch.randn(2, 3, 16, 16))

    def test_dynamic_shapes_compile_each_concrete_shape(self):
        torch._dynamo.reset()
        model = WithABreak().eval()
        compiled = torch.compile(model, backend="tessera", dynamic=True)
        with torch.no_grad():
            for batch in (2, 3, 5):
                x = torch.randn(batch, 3, 16, 16)
                self.assertLessEqual(rel_error(compiled(x), model(x)), 1e-4)

    def test_new_shapes_recompile(self):
        torch._dynamo.reset()
        model = torchvision.models.resnet18().eval()
        compiled = torch.compile(model, backend="tessera", dynamic=False)
        with torch.no_grad():
            for batch in (1, 2):
                x = torch.randn(batch, 3, 224, 224)
                self.assertLessEqual(rel_error(compiled(x), model(x)), 1e-4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
