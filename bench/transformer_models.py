"""Hugging Face transformers built from their default (base) configs, nothing
downloaded, random weights: what bench/onnx_reach.py and
bench/network_vs_frameworks.py export and time. Text models read 128 token
ids, vision models a 224x224 image; the model's output is its last hidden
state."""
import torch

NAMES = ["bert-base", "distilbert", "gpt2", "vit-b-16", "swin-t"]


class LastHiddenState(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)[0]


def build(name, generator):
    """(network in eval mode, its input) for one of NAMES."""
    import transformers
    make = {
        "bert-base": lambda: transformers.BertModel(transformers.BertConfig(), add_pooling_layer=False),
        "distilbert": lambda: transformers.DistilBertModel(transformers.DistilBertConfig()),
        "gpt2": lambda: transformers.GPT2Model(transformers.GPT2Config()),
        "vit-b-16": lambda: transformers.ViTModel(transformers.ViTConfig(), add_pooling_layer=False),
        "swin-t": lambda: transformers.SwinModel(transformers.SwinConfig()),
    }
    net = LastHiddenState(make[name]()).eval()
    if name in ("vit-b-16", "swin-t"):
        return net, torch.randn(1, 3, 224, 224, generator=generator)
    return net, torch.randint(0, 30000, (1, 128), generator=generator)
