"""The Python package without PyTorch: compile a zoo model and an ONNX file,
run them on numpy, and compare with what the C++ side computes (the `tessera`
command line on the same inputs). Run by ctest with the build's package on
PYTHONPATH: python3 python/tests/test_package.py BUILD_DIR SOURCE_DIR."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import tessera

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
SOURCE = sys.argv[2] if len(sys.argv) > 2 else "."
NARROW = os.path.join(SOURCE, "tests", "data", "onnx", "resnet18_narrow.onnx")
CLI = os.path.join(BUILD, "tessera")


def cli_output(artifact, x, workdir):
    """The first output of `tessera run ARTIFACT --input X.npy --output Y.npy`."""
    np.save(os.path.join(workdir, "x.npy"), x)
    y = os.path.join(workdir, "y.npy")
    subprocess.run([CLI, "run", artifact, "--input", os.path.join(workdir, "x.npy"), "--output", y],
                   check=True, capture_output=True)
    return np.load(y)


def close(got, want):
    """Within 1e-4 of the largest reference magnitude (Tessera's definition of correct)."""
    return float(np.max(np.abs(got - want))) <= 1e-4 * float(np.max(np.abs(want)))


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name

    def test_quantize_int8_keeps_the_digits_classes_and_refuses_a_bad_method(self):
        data = os.path.join(SOURCE, "tests", "data", "quantized")
        model = tessera.load_model(os.path.join(data, "digits_cnn.onnx"))
        images = np.load(os.path.join(data, "digits_test_images.npy"))
        labels = np.load(os.path.join(data, "digits_test_labels.npy"))
        float32 = tessera.compile(model, threads=2)(images)
        int8 = tessera.compile(model, threads=2, quantize="int8",
                               calibrate=os.path.join(data, "digits_calibration_images.npy"))(images)
        self.assertFalse(np.array_equal(int8, float32))  # it did quantize
        top1 = lambda logits: float(np.mean(logits.argmax(1) == labels))
        self.assertGreaterEqual(top1(int8), top1(float32) - 0.01)
        with self.assertRaisesRegex(tessera.Error, "min-max, percentile or kl-entropy"):
            tessera.compile(model, quantize="int8", calibration="entropy")

    def test_tune_quantize_int8_tunes_the_int8_network_compile_builds(self):
        data = os.path.join(SOURCE, "tests", "data", "quantized")
        model = tessera.load_model(os.path.join(data, "digits_cnn.onnx"))
        calibration = os.path.join(data, "digits_calibration_images.npy")
        log = os.path.join(self.dir, "digits_int8.log")
        done = tessera.tune(model, log=log, trials=2, tuner="random", threads=2, quantize="int8", calibrate=calibration)
        # Its two int8 convolutions, the first one (kept float32) and the classifier.
        self.assertEqual(done["tasks_tuned"], 4)
        with open(log) as f:
            self.assertIn("qlinear_conv2d", f.read())
        images = np.load(os.path.join(data, "digits_test_images.npy"))
        untuned = tessera.compile(model, threads=2, quantize="int8", calibrate=calibration)(images)
        tuned = tessera.compile(model, threads=2, quantize="int8", calibrate=calibration, records=log)(images)
        np.testing.assert_array_equal(tuned, untuned)  # the int8 kernels are exact whatever their schedule

    def test_report_draws_a_tuning_and_the_model_it_compiles(self):
        path = os.path.join(SOURCE, "tests", "data", "quantized", "digits_cnn.onnx")
        log = os.path.join(self.dir, "digits_report.log")
        done = tessera.tune(tessera.load_model(path), log=log, trials=2, tuner="random", threads=1)
        page = os.path.join(self.dir, "digits.html")
        self.assertEqual(tessera.report([log], page, model=path, threads=1), page)
        with open(page) as f:
            html = f.read()
        data = json.loads(html.split('id="tessera-report">')[1].split("</script>")[0])
        self.assertEqual(len(data["tuning"]["tasks"]), done["tasks_tuned"])
        self.assertEqual(data["model"]["threads"], 1)
        self.assertGreater(data["model"]["tuned_kernels"], 0)
        with self.assertRaisesRegex(tessera.Error, "no-such.log"):
            tessera.report([os.path.join(self.dir, "no-such.log")], page)

    def test_onnx_file_compiles_runs_and_equals_the_cli(self):
        model = tessera.load_model(NARROW)
        self.assertEqual(model.inputs[0][1], [1, 3, 64, 64])
        module = tessera.compile(model, threads=2)
        x = np.random.default_rng(1).random((1, 3, 64, 64), dtype=np.float32)
        y = module(x)
        self.assertEqual(y.dtype, np.float32)
        artifact = os.path.join(self.dir, "narrow.tsr")
        module.save(artifact)
        self.assertTrue(close(y, cli_output(artifact, x, self.dir)))
        # The saved artifact loads back and gives the same answer.
        self.assertTrue(np.array_equal(tessera.load(artifact)(x), y))

    def test_an_onnx_input_takes_another_shape(self):
        model = tessera.load_model(NARROW, shapes={"data": [2, 3, 32, 32]})
        self.assertEqual(model.inputs[0][1], [2, 3, 32, 32])
        with self.assertRaisesRegex(tessera.Error, "which no input has"):
            tessera.load_model(NARROW, dims={"sequence": 8})

    def test_one_module_runs_every_sequence_length_in_its_range(self):
        bert = os.path.join(SOURCE, "tests", "data", "onnx", "bert_tiny_dynamic")
        model = tessera.load_model(bert + ".onnx", dims={"sequence": (1, 16)}, buckets=[4, 8])
        self.assertEqual(model.inputs[0][1], [1, 16])
        module = tessera.compile(model, threads=1)
        self.assertIsInstance(module, tessera.VaryingModule)
        self.assertEqual(module.dimension["buckets"], [4, 8, 16])
        for n, bucket in ((3, 4), (13, 16)):
            inputs = [np.load(f"{bert}.s{n}.input{k}.npy") for k in range(2)]  # int64 ids and mask
            y = module(*inputs)
            self.assertEqual(y.shape, (1, n, 32))
            self.assertEqual(module.last_run, {"size": n, "bucket": bucket})
            self.assertTrue(close(y, np.load(f"{bert}.s{n}.expected.npy")))
        artifact = os.path.join(self.dir, "bert_varying.tsr")
        module.save(artifact)
        again = tessera.load(artifact)
        self.assertIsInstance(again, tessera.VaryingModule)
        self.assertTrue(np.array_equal(again(*inputs), y))
        with self.assertRaisesRegex(tessera.Error, "sequence = 17 is out of the range"):
            module(np.zeros((1, 17), np.int64), np.ones((1, 17), np.int64))

    def test_zoo_model_compiles_and_runs_on_numpy(self):
        model = tessera.load_model("squeezenet_v1.1")
        module = tessera.compile(model, threads=2)
        x = np.random.default_rng(2).random((1, 3, 224, 224), dtype=np.float32)
        y = module(x)
        self.assertEqual(y.shape, (1, 1000))
        artifact = os.path.join(self.dir, "squeezenet.tsr")
        module.save(artifact)
        self.assertTrue(close(y, cli_output(artifact, x, self.dir)))
        # A non-contiguous input of the same values is read through a copy: same answer.
        wide = np.zeros((1, 3, 224, 448), dtype=np.float32)
        wide[..., ::2] = x
        self.assertTrue(np.array_equal(module(wide[..., ::2]), y))

    def test_bad_inputs_are_errors_naming_them(self):
        module = tessera.compile(tessera.load_model(NARROW), threads=1)
        with self.assertRaisesRegex(TypeError, "dtype float64.*float32"):
            module(np.zeros((1, 3, 64, 64)))
        with self.assertRaisesRegex(ValueError, r"has shape \(1, 3, 64, 64\), got \(1, 3, 32, 32\)"):
            module(np.zeros((1, 3, 32, 32), dtype=np.float32))
        with self.assertRaisesRegex(tessera.Error, "resnet-19"):
            tessera.load_model("resnet-19")

    def test_jit_compiles_on_first_call_and_a_second_one_hits_the_disk_cache(self):
        cache = os.path.join(self.dir, "jit")
        model = tessera.load_model(NARROW)
        x = np.random.default_rng(3).random((1, 3, 64, 64), dtype=np.float32)
        f = tessera.jit(model, threads=2, cache_dir=cache)
        self.assertEqual(f.compilations, 0)
        y = f(x)
        self.assertTrue(f.last_call["compiled"])
        self.assertFalse(f.last_call["from_disk"])
        f(x)
        self.assertFalse(f.last_call["compiled"])
        g = tessera.jit(model, threads=2, cache_dir=cache)
        self.assertTrue(np.array_equal(g(x), y))
        self.assertTrue(g.last_call["from_disk"])
        self.assertTrue(close(y, tessera.compile(model, threads=2)(x)))

    def test_dynamic_jit_runs_every_batch_of_a_range_after_two_sizes(self):
        any_batch = os.path.join(SOURCE, "tests", "data", "onnx", "resnet18_narrow_dynamic.onnx")
        f = tessera.jit(tessera.load_model(any_batch), dynamic=True, threads=1, disk_cache=False)
        rng = np.random.default_rng(5)
        for batch, compiles in ((1, True), (3, True), (2, False), (4, False)):
            x = rng.random((batch, 3, 32, 32), dtype=np.float32)
            y = f(x)
            self.assertEqual(f.last_call["compiled"], compiles, batch)
            want = tessera.compile(tessera.load_model(any_batch, batch=batch), threads=1)(x)
            self.assertTrue(close(y, want), batch)
        self.assertEqual(f.compilations, 2)

    def test_dynamic_jit_varies_an_onnx_sequence_axis(self):
        """An ONNX model's inputs take whole shapes in the jit: BERT's token
        axis, seen at 8 then 3 tokens, becomes one artifact for 1..8 in which
        both then run without compiling; 13 widens it. Each against onnxruntime."""
        bert = os.path.join(SOURCE, "tests", "data", "onnx", "bert_tiny_dynamic")
        f = tessera.jit(tessera.load_model(bert + ".onnx", dims={"sequence": 8}), dynamic=True, threads=1,
                        disk_cache=False)
        for n, compiles in ((8, True), (3, True), (8, False), (13, True), (3, False)):
            inputs = [np.load(f"{bert}.s{n}.input{k}.npy") for k in range(2)]
            y = f(*inputs)
            self.assertEqual(f.last_call["compiled"], compiles, n)
            self.assertTrue(close(y, np.load(f"{bert}.s{n}.expected.npy")), n)
        self.assertEqual(f.compilations, 3)

    def test_reduce_overhead_returns_views_the_next_call_overwrites(self):
        model = tessera.load_model(NARROW)
        f = tessera.jit(model, mode="reduce-overhead", threads=2, cache_dir=os.path.join(self.dir, "jit2"))
        rng = np.random.default_rng(4)
        x1 = rng.random((1, 3, 64, 64), dtype=np.float32)
        x2 = rng.random((1, 3, 64, 64), dtype=np.float32)
        y1 = f(x1)
        kept = y1.copy()
        y2 = f(x2)
        self.assertFalse(y1.flags.owndata)
        self.assertTrue(np.shares_memory(y1, y2))  # the same buffer, overwritten
        want = tessera.compile(model, threads=2)
        self.assertTrue(close(kept, want(x1)))
        self.assertTrue(close(y2, want(x2)))
        with self.assertRaisesRegex(tessera.Error, "mode 'fast'"):
            tessera.jit(model, mode="fast")

    def test_an_output_that_is_an_input_or_a_view_of_one_holds_its_values(self):
        # gelu-free version of the hostile case: outputs that no kernel writes
        # (the input itself, a flatten of it) next to one a kernel writes.
        b = tessera.GraphBuilder()
        x = b.input("x", [2, 3, 4, 5])
        flat = b.flatten(x, 1, name="flat")
        doubled = b.add(x, x, name="doubled")
        model = b.finish([x, flat, doubled], name="views")
        data = np.random.default_rng(5).standard_normal((2, 3, 4, 5)).astype(np.float32)
        for f in (tessera.compile(model, threads=1), tessera.jit(model, threads=1, disk_cache=False)):
            same, flattened, twice = f(data)
            np.testing.assert_array_equal(same, data)
            np.testing.assert_array_equal(flattened, data.reshape(2, 60))
            np.testing.assert_allclose(twice, 2 * data, rtol=1e-6)
            # A second call with other values is not answered from the first one's.
            other = -data
            same, flattened, _ = f(other)
            np.testing.assert_array_equal(same, other)
            np.testing.assert_array_equal(flattened, other.reshape(2, 60))

    def test_an_operator_added_by_name_compiles_and_matches_its_formula(self):
        # hard_swish has no builder method of its own: add_node names it.
        b = tessera.GraphBuilder()
        x = b.input("x", [2, 8, 5, 5])
        y = b.add_node("hard_swish", "act", [x])
        model = b.finish([y], name="hard_swish")
        data = np.linspace(-5, 5, 400, dtype=np.float32).reshape(2, 8, 5, 5)
        want = data * np.clip(data + 3, 0, 6) / 6  # torch.nn.Hardswish's definition
        np.testing.assert_allclose(tessera.compile(model, threads=1)(data), want, rtol=1e-5, atol=1e-6)
        with self.assertRaisesRegex(tessera.Error, "unknown operator 'hard_swishh'"):
            b.add_node("hard_swishh", "typo", [x])

    def test_tune_and_compile_check_their_numbers_as_the_cli_does(self):
        model = tessera.load_model(NARROW)
        log = os.path.join(self.dir, "never.log")
        with self.assertRaisesRegex(tessera.Error, "trials must be at least 1, got 0"):
            tessera.tune(model, log=log, trials=0)
        with self.assertRaisesRegex(tessera.Error, "time_budget_min must be finite"):
            tessera.tune(model, log=log, time_budget_min=float("nan"))
        with self.assertRaisesRegex(tessera.Error, "threads must be 0"):
            tessera.compile(model, threads=-1)
        self.assertFalse(os.path.exists(log))

    def test_pick_best_keeps_one_record_per_task_and_never_shrinks_its_input(self):
        log, best = os.path.join(self.dir, "dense.log"), os.path.join(self.dir, "dense.best.log")
        subprocess.run([CLI, "tune-op", "dense", "--input", "1x32", "--weight", "16x32", "--tuner", "random",
                        "--trials", "6", "--threads", "1", "--log", log], check=True, capture_output=True)
        with open(log) as f:
            measured = len(f.readlines())
        self.assertEqual(tessera.pick_best(log, best), 1)  # one task
        with open(best) as f:
            self.assertEqual(len(f.readlines()), 1)
        with self.assertRaisesRegex(tessera.Error, "input"):
            tessera.pick_best(log, log)
        with open(log) as f:
            self.assertEqual(len(f.readlines()), measured)

    def test_one_module_called_from_four_threads_gives_each_its_own_answer(self):
        import threading
        model = tessera.load_model(NARROW)
        rng = np.random.default_rng(6)
        xs = [rng.random((1, 3, 64, 64), dtype=np.float32) for _ in range(4)]
        for f in (tessera.compile(model, threads=1), tessera.jit(model, threads=1, disk_cache=False)):
            want = [f(x).copy() for x in xs]
            wrong = []

            def calls(k):
                for _ in range(15):
                    if not np.array_equal(f(xs[k]), want[k]):
                        wrong.append(k)

            threads = [threading.Thread(target=calls, args=(k,)) for k in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(wrong, [])


class FakeCudaTensor:
    """What the DLPack protocol shows of a CUDA tensor (torch's, CuPy's), over
    host memory: enough to see where a module sends device tensors, without a
    GPU."""

    def __init__(self, array):
        self.array = np.ascontiguousarray(array)

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None):
        self.stream = stream
        return self.array.__dlpack__()


class GpuModules(unittest.TestCase):
    """A model compiled for a GPU target runs on its device (PoCL's OpenCL CPU
    device here; CUDA on the device machine's check)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = tessera.load_model(NARROW)
        cls.x = np.random.default_rng(5).random((1, 3, 64, 64), dtype=np.float32)
        try:
            cls.module = tessera.compile(cls.model, target="opencl")
        except tessera.Error as e:
            if "OpenCL unavailable" in str(e):
                raise unittest.SkipTest(str(e))
            raise

    def test_an_opencl_module_equals_the_cpu_module_and_saves_as_a_gpu_artifact(self):
        self.assertIsInstance(self.module, tessera.GpuModule)
        self.assertEqual(self.module.target, "opencl")
        self.assertTrue(self.module.device)
        y = self.module(self.x)
        want = tessera.compile(self.model, threads=1)(self.x)
        self.assertEqual(y.shape, want.shape)
        self.assertTrue(close(y, want))
        artifact = os.path.join(self.tmp.name, "narrow_opencl.tsr")
        self.module.save(artifact)
        again = tessera.load(artifact)
        self.assertIsInstance(again, tessera.GpuModule)
        self.assertTrue(np.array_equal(again(self.x), y))
        self.assertEqual(self.module.inputs, [("data", [1, 3, 64, 64])])
        timing = self.module.benchmark(number=1, repeat=2)
        self.assertGreater(timing["min_ms"], 0.0)

    def test_dtype_float16_stores_half_and_stays_near_the_fp32_module(self):
        half = tessera.compile(self.model, target="opencl", dtype="float16")
        y, want = half(self.x), self.module(self.x)
        scale = np.abs(want).max()
        err = np.abs(y - want).max() / scale
        self.assertLess(err, 5e-3)  # measure::kHalfNetworkTolerance
        self.assertGreater(err, 1e-6)  # rounded to half: not the fp32 module's answer
        with self.assertRaisesRegex(tessera.Error, "half storage runs on GPU targets"):
            tessera.compile(self.model, dtype="float16")

    def test_convolutions_choose_matrix_products_or_direct_loops(self):
        products = tessera.compile(self.model, target="opencl", convolutions="implicit-gemm")
        self.assertTrue(any("implicit_gemm" in k for k in products.kernels), products.kernels)
        self.assertFalse(any("implicit_gemm" in k for k in self.module.kernels), self.module.kernels)
        self.assertTrue(close(products(self.x), self.module(self.x)))
        with self.assertRaisesRegex(tessera.Error, "--convolutions fft: auto, direct, implicit-gemm or winograd"):
            tessera.compile(self.model, target="opencl", convolutions="fft")
        with self.assertRaisesRegex(tessera.Error, "matrix products are for GPU targets"):
            tessera.compile(self.model, convolutions="implicit-gemm")

    def test_both_searches_tune_a_network_in_half_for_the_device(self):
        conv = tessera.load_model(os.path.join(SOURCE, "tests", "data", "onnx", "op_conv_asymmetric_pads.onnx"))
        cpu = tessera.compile(conv, threads=1)
        x = np.random.default_rng(2).random(cpu.inputs[0][1], dtype=np.float32)
        want = cpu(x)
        for search in ("auto", "templates"):
            log = os.path.join(self.tmp.name, "half-%s.log" % search)
            done = tessera.tune(conv, log=log, trials=4, target="opencl", search=search, dtype="float16")
            self.assertEqual(done["trials"], 4)
            module = tessera.compile(conv, target="opencl", records=log, dtype="float16")
            self.assertLess(np.abs(module(x) - want).max(), 5e-3 * np.abs(want).max())

    def test_device_tensors_are_refused_in_one_line_where_no_cuda_device_takes_them(self):
        cuda_x = FakeCudaTensor(self.x)
        cpu = tessera.compile(self.model, threads=1)
        with self.assertRaisesRegex(TypeError, r"input 0 is a tensor in CUDA device 0 memory; this module takes host "
                                               r"arrays \(a model compiled for target='cuda' at fixed shapes"):
            cpu(cuda_x)
        # The OpenCL device's buffers are no CUDA pointers: said, nothing run.
        with self.assertRaisesRegex(tessera.Error, "only through host memory"):
            self.module(cuda_x)
        self.assertEqual(cuda_x.stream, 1)  # the producer was asked to order its work before the legacy stream
        with self.assertRaisesRegex(TypeError, r"the CUDA tensor is not float32 \(convert it with .float\(\)\)"):
            self.module(FakeCudaTensor(self.x.astype(np.float64)))
        on_device_1 = FakeCudaTensor(self.x)
        on_device_1.__dlpack_device__ = lambda: (2, 1)
        with self.assertRaisesRegex(TypeError, "input 0 \\('data'\\) is on CUDA device 1; Tessera runs on device 0"):
            self.module(on_device_1)
        with self.assertRaisesRegex(ValueError, r"input 0 \('data'\) has shape \(1, 3, 32, 32\), the model takes "
                                                r"\(1, 3, 64, 64\)"):
            self.module(FakeCudaTensor(np.zeros((1, 3, 32, 32), np.float32)))
        out_shape = tuple(self.module.outputs[0][1])
        with self.assertRaisesRegex(TypeError, r"out\[0\] is not a CUDA tensor \(its memory is host's\)"):
            self.module(self.x, out=np.zeros(out_shape, np.float32))
        with self.assertRaisesRegex(ValueError, "out= holds 2 tensors; the model has 1 outputs"):
            self.module(self.x, out=[FakeCudaTensor(np.zeros(out_shape, np.float32))] * 2)
        # And the module still runs after each refusal.
        self.assertTrue(close(self.module(self.x), cpu(self.x)))

    def test_a_range_of_sequence_lengths_runs_its_buckets_on_the_device(self):
        bert = os.path.join(SOURCE, "tests", "data", "onnx", "bert_tiny_dynamic")
        model = tessera.load_model(bert + ".onnx", dims={"sequence": (1, 16)}, buckets=[4, 8])
        module = tessera.compile(model, target="opencl")
        self.assertIsInstance(module, tessera.VaryingModule)
        for n, bucket in ((13, 16), (3, 4)):
            inputs = [np.load(f"{bert}.s{n}.input{k}.npy") for k in range(2)]
            self.assertTrue(close(module(*inputs), np.load(f"{bert}.s{n}.expected.npy")))
            self.assertEqual(module.last_run, {"size": n, "bucket": bucket})
        with self.assertRaisesRegex(TypeError, "this module takes host arrays"):
            module(FakeCudaTensor(inputs[0]), inputs[1])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
