"""The device check's PyTorch side, in plain torch (the device image may lack
torchvision and transformers, and nothing can be downloaded there): ResNet-18,
ResNet-50 and MobileNet-v2 as torchvision defines them (the topologies of
Tessera's zoo), and BERT-base (hidden 768, 12 layers, 12 heads, FFN 3072) as
Hugging Face's BertModel computes it without its pooler. Random weights:
these time the networks, they classify nothing."""
import math

import torch
from torch import nn


def conv_bn(cin, cout, k, stride=1, groups=1, relu=True, relu6=False):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU6(inplace=True) if relu6 else nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class Basic(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, width, 3, stride), conv_bn(width, width, 3, relu=False))
        self.short = None if stride == 1 and cin == width else conv_bn(cin, width, 1, stride, relu=False)

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.short is None else self.short(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        out = width * 4
        self.body = nn.Sequential(conv_bn(cin, width, 1), conv_bn(width, width, 3, stride),
                                  conv_bn(width, out, 1, relu=False))
        self.short = None if stride == 1 and cin == out else conv_bn(cin, out, 1, stride, relu=False)

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, block, counts):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for i, n in enumerate(counts):
            width = 64 * 2**i
            for j in range(n):
                layers.append(block(cin, width, 2 if j == 0 and i > 0 else 1))
                cin = width * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [conv_bn(cin, hidden, 1, relu6=True)]
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden, relu6=True), conv_bn(hidden, cout, 1, relu=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(self):
        super().__init__()
        settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                    (6, 320, 1, 1)]
        layers, cin = [conv_bn(3, 32, 3, 2, relu6=True)], 32
        for t, c, n, s in settings:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, relu6=True))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, 1000)

    def forward(self, x):
        return self.classifier(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


class BertLayer(nn.Module):
    def __init__(self, hidden=768, heads=12, ffn=3072):
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = (lin(x).view(b, s, self.heads, d).transpose(1, 2) for lin in self.qkv)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = self.norm1(x + self.out(ctx))
        return self.norm2(x + self.down(nn.functional.gelu(self.up(x))))


class BertBase(nn.Module):
    def __init__(self, vocab=30522, positions=512, hidden=768, layers=12):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.types = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden) for _ in range(layers))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.norm(self.words(ids) + self.positions(pos) + self.types(torch.zeros_like(ids)))
        for layer in self.layers:
            x = layer(x)
        return x


def build(name):
    """(module in eval mode, a function making its input for a batch) for a model name."""
    make = {
        "resnet-18": lambda: ResNet(Basic, [2, 2, 2, 2]),
        "resnet-50": lambda: ResNet(Bottleneck, [3, 4, 6, 3]),
        "mobilenet-v2": MobileNetV2,
        "bert-base": BertBase,
    }[name]
    torch.manual_seed(0)
    net = make().eval()
    if name == "bert-base":
        return net, lambda batch, device: torch.randint(0, 30522, (batch, 128), device=device)
    return net, lambda batch, device: torch.randn(batch, 3, 224, 224, device=device)


def export_bert_onnx(path):
    """BERT-base as ONNX (token ids (batch, 128), batch symbolic) through the
    TorchScript exporter, which needs no onnx package."""
    net, make_input = build("bert-base")
    ids = make_input(1, "cpu")
    torch.onnx.export(net, (ids,), path, input_names=["input_ids"], output_names=["hidden"],
                      dynamic_axes={"input_ids": {0: "batch"}}, opset_version=17, dynamo=False)
