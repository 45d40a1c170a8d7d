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


class TinyAttention(torch.nn.Module):
    """Multi-head self-attention as transformer code writes it: linears over
    tokens, view and transpose into heads, q @ k^T, softmax, @ v, back, and
    scaled_dot_product_attention beside it; a residual and a layer norm."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.q, self.k, self.v, self.out = (torch.nn.Linear(d, d) for _ in range(4))
        self.ln = torch.nn.LayerNorm(d)
        self.heads = heads

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = (f(x).view(b, s, h, d // h).transpose(1, 2) for f in (self.q, self.k, self.v))
        att = torch.softmax((q @ k.transpose(-2, -1)) * (d // h) ** -0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        y2 = torch.nn.functional.scaled_dot_product_attention(q, k, v).permute(0, 2, 1, 3).contiguous().view(b, s, d)
        return self.ln(x + self.out(y) - 0.5 * y2)


class SizedAttention(TinyAttention):
    """scaled_dot_product_attention given its scale as a module's float, as
    transformers' BERT passes it: under dynamic=True Dynamo makes it an input
    of the graph, not a constant."""

    def __init__(self):
        super().__init__()
        self.scaling = (32 // self.heads) ** -0.5

    def forward(self, x):
        b, s, d = x.shape
        h = self.heads
        q, k, v = (f(x).view(b, s, h, d // h).transpose(1, 2) for f in (self.q, self.k, self.v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=self.scaling)
        return self.ln(x + self.out(y.transpose(1, 2).reshape(b, s, d)))


class TinyDecoder(torch.nn.Module):
    """A decoder on int64 token ids: an embedding, a split, causal attention,
    an attention with an additive float mask, one written with einsum, and
    indexing (the last token, a stride over the features, a new axis)."""

    def __init__(self, vocab=50, d=32, heads=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.heads = heads
        self.register_buffer("mask", torch.randn(1, 1, 7, 7))

    def forward(self, ids):
        x = self.embed(ids)
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in self.qkv(x).split(d, dim=-1))
        F = torch.nn.functional
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y + F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)
        y = y + torch.softmax(torch.einsum("bhid,bhjd->bhij", q, k), dim=-1) @ v * 0.5
        y = y.transpose(1, 2).reshape(b, s, d)
        return y[:, -1, ::2][:, None] + y[..., 1:3, :16]


class Clips(torch.nn.Module):
    """A video stem and a decoder's upsampling: conv3d, a frame picked by
    indexing, nearest and bilinear interpolation (corners aligned or not)."""

    def __init__(self):
        super().__init__()
        self.conv3d = torch.nn.Conv3d(3, 8, (3, 3, 3), stride=(1, 2, 2), padding=1)
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        F = torch.nn.functional
        frame = torch.relu(self.conv3d(x))[:, :, 1]
        y = self.conv(F.interpolate(frame, scale_factor=2, mode="nearest"))
        y = y + F.interpolate(frame, size=(10, 12), mode="bilinear", align_corners=False).mean(dim=(2, 3), keepdim=True)
        y = y - y.sum(-1, keepdim=True) * 0.1 + torch.amax(y, dim=1)[:, None]
        return F.interpolate(y, size=(7, 9), mode="bilinear", align_corners=True) + F.interpolate(frame, size=(7, 9))


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

    def test_attention_compiles_whole(self):
        self.check(TinyAttention(), torch.randn(2, 6, 32), fullgraph=True)

    def test_embeddings_masks_and_indexing_compile_whole(self):
        self.check(TinyDecoder(), torch.randint(0, 50, (2, 7)), fullgraph=True)

    def test_conv3d_interpolation_and_reductions_compile_whole(self):
        self.check(Clips(), torch.randn(1, 3, 4, 10, 12), fullgraph=True)
        breaks = tessera.torch_backend.explain(Clips(), torch.randn(1, 3, 4, 10, 12)).breaks
        names = " ".join(why for _, why in breaks)
        self.assertEqual(breaks, [])  # every node converted: conv3d, interpolate, getitem, the reductions

    def test_a_node_that_fails_to_convert_runs_in_pytorch(self):
        class Unbatched(torch.nn.Module):  # a 3-D (C, H, W) input: Tessera's global pool takes 4-D
            def forward(self, x):
                return torch.nn.functional.adaptive_avg_pool2d(torch.relu(x), 1) + 1.0

        self.check(Unbatched(), torch.randn(3, 8, 8))
        breaks = tessera.torch_backend.explain(Unbatched(), torch.randn(3, 8, 8)).breaks
        self.assertTrue(any("adaptive_avg_pool2d" in why for _, why in breaks), breaks)

    def test_the_backend_is_found_by_its_entry_point_without_an_import(self):
        import os
        import subprocess
        import tempfile
        import tomllib
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "..", "pyproject.toml"), "rb") as f:
            entry = tomllib.load(f)["project"]["entry-points"]["torch_dynamo_backends"]
        with tempfile.TemporaryDirectory() as site:  # what `pip install` writes: the package's metadata
            info = os.path.join(site, "tessera-0.1.0.dist-info")
            os.makedirs(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write("Metadata-Version: 2.1\nName: tessera\nVersion: 0.1.0\n")
            with open(os.path.join(info, "entry_points.txt"), "w") as f:
                f.write("[torch_dynamo_backends]\n" + "".join(f"{k} = {v}\n" for k, v in entry.items()))
            code = ("import torch\nm = torch.nn.Linear(4, 3).eval()\nx = torch.randn(2, 4)\n"
                    "with torch.no_grad():\n    print(float((torch.compile(m, backend='tessera')(x) - m(x)).abs().max()))\n")
            env = dict(os.environ, PYTHONPATH=site + os.pathsep + os.environ.get("PYTHONPATH", ""))
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr[-2000:])
            self.assertLess(float(out.stdout.split()[-1]), 1e-5)

    def test_modes(self):
        x = torch.randn(1, 3, 224, 224)
        self.check(torchvision.models.resnet18(), x, mode="reduce-overhead")
        self.check(WithABreak(), torch.randn(2, 3, 16, 16), options={"mode": "max-autotune", "autotune_minutes": 0.05})

    def test_quantize_int8_option_runs_the_convolutions_in_int8(self):
        # A CNN whose calibration (8 seeded uniform samples) covers its input:
        # within a few percent of eager, and not equal to it (it did quantize).
        model = torchvision.models.resnet18().eval()
        x = torch.rand(1, 3, 64, 64) * 2 - 1
        with torch.no_grad():
            want = model(x)
            torch._dynamo.reset()
            got = torch.compile(model, backend="tessera", options={"quantize": "int8", "calibrate": 8})(x)
        err = rel_error(got, want)
        print(f"  resnet18 int8: rel error {err:.2e} against eager float32", file=sys.stderr)
        self.assertLess(err, 0.05)
        self.assertGreater(err, 1e-4)
        torch._dynamo.reset()

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

    def test_dynamic_batch_through_a_graph_break_matches_eager(self):
        torch._dynamo.reset()
        model = WithABreak().eval()
        compiled = torch.compile(model, backend="tessera", dynamic=True)
        with torch.no_grad():
            for batch in (2, 3, 5):
                x = torch.randn(batch, 3, 16, 16)
                self.assertLessEqual(rel_error(compiled(x), model(x)), 1e-4)

    def test_dynamic_sequence_compiles_one_range_then_runs_every_length(self):
        """dynamic=True on attention over tokens: after two lengths each part
        holds one artifact of buckets for 1..8, lengths within it run without
        compiling, and a longer one widens the range; every length matches eager.
        (Length 1 is another Dynamo graph: Dynamo specialises sizes 0 and 1.)"""
        torch._dynamo.reset()
        model = TinyAttention().eval()
        made = []

        def backend(gm, example_inputs):
            made.append(tessera.torch_backend.tessera_backend(gm, example_inputs))
            return made[-1]

        compiled = torch.compile(model, backend=backend, dynamic=True)

        def compilations():
            return [part.run.compilations for part in made[-1].parts]

        with torch.no_grad():
            for length, expected in ((8, 1), (5, 2), (7, 2), (3, 2), (2, 2), (11, 3)):
                x = torch.randn(1, length, 32)
                self.assertLessEqual(rel_error(compiled(x), model(x)), 1e-4, f"{length} tokens")
                self.assertTrue(made[-1].parts, "no Tessera part")
                self.assertEqual(set(compilations()), {expected}, f"after {length} tokens")
        self.assertEqual(len(made), 1, "Dynamo traced once")

        # A scale the graph takes as an input is a constant of the part, not a break.
        torch._dynamo.reset()
        sized, made = SizedAttention().eval(), []
        compiled = torch.compile(sized, backend=backend, dynamic=True)
        with torch.no_grad():
            for length in (8, 5):
                x = torch.randn(1, length, 32)
                self.assertLessEqual(rel_error(compiled(x), sized(x)), 1e-4, f"{length} tokens")
        self.assertEqual(len(made[-1].parts), 1, "one Tessera part")

    def test_new_shapes_recompile(self):
        torch._dynamo.reset()
        model = torchvision.models.resnet18().eval()
        compiled = torch.compile(model, backend="tessera", dynamic=False)
        with torch.no_grad():
            for batch in (1, 2):
                x = torch.randn(batch, 3, 224, 224)
                self.assertLessEqual(rel_error(compiled(x), model(x)), 1e-4)


@unittest.skipUnless(torch.cuda.is_available(), "no CUDA device (the device machine's check runs these)")
class TorchBackendOnCuda(unittest.TestCase):
    """A model on the GPU stays there: its parts compiled for cuda, the tensors
    crossing through DLPack, the outputs CUDA tensors equal to eager's."""

    def test_a_gpu_module_takes_cuda_tensors_and_fills_the_ones_given_as_out(self):
        import os
        narrow = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "onnx", "resnet18_narrow.onnx")
        model = tessera.load_model(narrow)
        gpu = tessera.compile(model, target="cuda")
        self.assertIsInstance(gpu, tessera.GpuModule)
        x = torch.rand(1, 3, 64, 64, device="cuda")
        out = torch.full(tuple(gpu.outputs[0][1]), float("nan"), device="cuda")
        self.assertIs(gpu(x, out=out), out)
        want = tessera.compile(model, threads=1)(x.cpu().numpy())
        self.assertLessEqual(rel_error(out.cpu(), torch.from_numpy(want)), 1e-4)
        self.assertTrue(np.array_equal(gpu(x.cpu().numpy()), out.cpu().numpy()))  # the host path gives the same
        with self.assertRaisesRegex(TypeError, "not float32"):
            gpu(x.double())

    def test_resnet18_on_the_gpu_equals_eager_and_stays_on_the_device(self):
        torch._dynamo.reset()
        model = torchvision.models.resnet18().eval().cuda()
        x = torch.randn(2, 3, 224, 224, device="cuda")
        # cuDNN convolves in TF32 by default (a 10-bit mantissa, errors near
        # 1e-3); the reference must be fp32 as ours is.
        tf32 = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            with torch.no_grad():
                want = model(x)
                got = torch.compile(model, backend="tessera")(x)
        finally:
            torch.backends.cudnn.allow_tf32 = tf32
        self.assertTrue(got.is_cuda)
        self.assertLessEqual(rel_error(got, want), 1e-4)

    def test_token_ids_on_the_gpu_run_as_floats_there(self):
        torch._dynamo.reset()
        model = TinyDecoder().eval().cuda()
        ids = torch.randint(0, 50, (2, 7), device="cuda")
        with torch.no_grad():
            want = model(ids)
            got = torch.compile(model, backend="tessera", fullgraph=True)(ids)
        self.assertTrue(got.is_cuda)
        self.assertLessEqual(rel_error(got, want), 1e-4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
