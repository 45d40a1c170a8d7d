#pragma once
// The attributes of resize2d (ops/resize.cc): ONNX Resize and PyTorch's
// interpolate over the last two axes (N, C, H, W images: segmentation heads,
// feature pyramids, upsampling decoders).
#include <cstdint>
#include <string>

namespace tessera::ops {

struct Resize2dAttrs {
  int64_t out_h = 1, out_w = 1;
  // The scales the output coordinates are mapped back with (out / in unless
  // the model gave scales whose product is not a whole size).
  double scale_h = 1, scale_w = 1;
  std::string mode = "nearest";  // or "linear"
  // half_pixel, pytorch_half_pixel, align_corners, asymmetric
  std::string coordinates = "half_pixel";
  // nearest only: round_prefer_floor, round_prefer_ceil, floor, ceil
  std::string nearest = "round_prefer_floor";
  std::string to_string() const;
};

}  // namespace tessera::ops
