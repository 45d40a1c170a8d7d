#!/usr/bin/env python3
"""Which of torchvision's models (classification by default; segmentation,
video and transformers with --family) Tessera imports and runs correctly.

Each model (random weights, eval mode; the transformers built from their
configs, nothing downloaded) is exported with torch.onnx.export at opset 17
(or --opset); onnxruntime's output for a seeded input is the reference; Tessera
compiles the .onnx file (`tessera compile`), runs it on the same input
(`tessera run`) and the largest difference relative to the largest output is
reported, or the one-line error that refused the model.

    bench/.venv/bin/python bench/onnx_reach.py [--tessera build/tessera] [--family F] [--opset N] [MODEL ...]
"""
import argparse
import os
import subprocess
import tempfile

import numpy as np
import onnxruntime as ort
import torch
import torchvision

import transformer_models

DEFAULT = ["resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "vgg11_bn", "alexnet", "squeezenet1_1",
           "densenet121", "googlenet", "inception_v3", "mobilenet_v2", "mobilenet_v3_small", "mnasnet1_0",
           "shufflenet_v2_x1_0", "efficientnet_b0", "regnet_y_400mf", "convnext_tiny"]
# torchvision.models.segmentation (their "out" map) and .video (clips of 16 frames).
SEGMENTATION = ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
VIDEO = ["r3d_18", "mc3_18", "r2plus1d_18"]
# Hugging Face transformers (bench/transformer_models.py).
TRANSFORMERS = transformer_models.NAMES


# The families --family names; "torchvision": every classification model
# torchvision lists, at its weights' evaluation size.
FAMILIES = {"classification": DEFAULT, "torchvision": None, "segmentation": SEGMENTATION, "video": VIDEO,
            "transformers": TRANSFORMERS, "all": DEFAULT + SEGMENTATION + VIDEO + TRANSFORMERS}


def family(name):
    """The models of a family, by name."""
    if name == "torchvision":
        return torchvision.models.list_models(module=torchvision.models)
    return FAMILIES[name]


class OutMap(torch.nn.Module):
    """A segmentation model's "out" map: the ONNX model's one output."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def build(name):
    """(network in eval mode, its input)."""
    g = torch.Generator().manual_seed(1)
    if name in TRANSFORMERS:
        return transformer_models.build(name, g)
    if name in SEGMENTATION:
        net = OutMap(getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None))
        return net.eval(), torch.randn(1, 3, 224, 224, generator=g)
    if name in VIDEO:
        return getattr(torchvision.models.video, name)(weights=None).eval(), torch.randn(1, 3, 16, 112, 112, generator=g)
    # The size the model's published weights were evaluated at (their metadata, nothing downloaded).
    size = torchvision.models.get_model_weights(name).DEFAULT.transforms().crop_size[0]
    kwargs = {"aux_logits": False, "init_weights": True} if name in ("inception_v3", "googlenet") else {}
    net = getattr(torchvision.models, name)(weights=None, **kwargs).eval()
    size = getattr(net, "image_size", size)  # a ViT built without its weights takes its own size (vit_h_14: 224)
    with torch.no_grad():  # a head initialised to zeros (torchvision's ViT) would make every output 0
        for p in net.parameters():
            if p.dim() > 1 and not p.any():
                p.normal_(0.0, 0.02, generator=g)
    return net, torch.randn(1, 3, size, size, generator=g)


def export(net, x, path, opset):
    """Exports at `opset`; past the exporter's newest, exports at that and
    converts with onnx's version converter (what a user upgrading a model does)."""
    from torch.onnx import _constants
    newest_exported = _constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET
    torch.onnx.export(net, x, path, opset_version=min(opset, newest_exported), input_names=["data"], dynamo=False)
    if opset > newest_exported:
        import onnx
        onnx.save(onnx.version_converter.convert_version(onnx.load(path), opset), path)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("--tessera", default=os.path.join(here, "..", "build", "tessera"))
    p.add_argument("--family", choices=list(FAMILIES), default="classification",
                   help="which family of models, when none are named (torchvision: every classification model "
                   "torchvision lists, at its weights' evaluation size)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds for each model's compile and for its run")
    p.add_argument("--opset", default="17", help="the ONNX opset to export at: a number, or 'newest' (the newest "
                   "onnx knows)")
    p.add_argument("models", nargs="*")
    args = p.parse_args()
    import onnx
    opset = onnx.defs.onnx_opset_version() if args.opset == "newest" else int(args.opset)
    print(f"opset {opset}", flush=True)
    args.models = args.models or family(args.family)
    work = tempfile.mkdtemp(prefix="tessera-reach-")
    ok = 0
    for name in args.models:
        for f in os.listdir(work):  # the previous model's files: the largest take gigabytes
            os.remove(os.path.join(work, f))
        net, x = build(name)
        onnx_path = os.path.join(work, name + ".onnx")
        try:
            export(net, x, onnx_path, opset)
            want = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"]).run(None, {"data": x.numpy()})[0]
        except Exception as e:  # the exporter or onnxruntime itself: not Tessera's to count
            print(f"{name:<22} no reference: {str(e).strip().splitlines()[-1][:200]}", flush=True)
            continue
        del net
        np.save(os.path.join(work, "in.npy"), x.numpy())
        tsr, out = os.path.join(work, name + ".tsr"), os.path.join(work, "out.npy")
        try:
            r = subprocess.run([args.tessera, "compile", onnx_path, "-o", tsr], capture_output=True, text=True,
                               timeout=args.timeout)
            if r.returncode == 0:
                r = subprocess.run([args.tessera, "run", tsr, "--input", "data=" + os.path.join(work, "in.npy"),
                                    "--output", out], capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired as e:
            print(f"{name:<22} refused: '{' '.join(e.cmd[:2])}' took more than {args.timeout:.0f} s", flush=True)
            continue
        if r.returncode != 0:
            print(f"{name:<22} refused: {(r.stderr.strip().splitlines() or ['exit ' + str(r.returncode)])[-1][:200]}",
                  flush=True)
            continue
        got = np.load(out)
        err = float(np.abs(got - want).max() / np.abs(want).max())
        ok += err <= 1e-4
        print(f"{name:<22} {'correct' if err <= 1e-4 else 'WRONG'}: max rel error {err:.1e}", flush=True)
    print(f"{ok} of {len(args.models)} models correct")


if __name__ == "__main__":
    main()
