#include "ops/tensor_layout.h"

#include <algorithm>
#include <cctype>

#include "support/checked_math.h"
#include "support/quoted.h"
#include "tessera/error.h"

namespace tessera::ops {

Layout Layout::parse(const std::string& text) {
  Layout layout;
  layout.text_ = text;
  auto bad = [&](const std::string& why) -> Error { return Error("layout " + support::quoted(text) + ": " + why); };
  if (text.empty()) throw bad("empty");
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (layout.primal_position(c) >= 0) throw bad(std::string("axis ") + c + " appears twice");
      layout.axes_.push_back({c, 0});
      ++i;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) throw bad(std::string("unexpected character '") + c + "'");
    int64_t block = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      block = support::checked_add(support::checked_mul(block, 10, "layout block"), text[i] - '0', "layout block");
      if (block > support::kMaxExtent) throw bad("block size too large");
      ++i;
    }
    if (i == text.size() || !std::islower(static_cast<unsigned char>(text[i])))
      throw bad("a block size must be followed by a lower-case axis");
    const char primal = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
    if (block < 1) throw bad("block size must be positive");
    if (layout.primal_position(primal) < 0)
      throw bad(std::string("block ") + text[i] + " comes before (or without) its axis " + primal);
    if (layout.block_of(primal) != 1) throw bad(std::string("axis ") + primal + " is split twice");
    layout.axes_.push_back({primal, block});
    ++i;
  }
  return layout;
}

int64_t Layout::primal_position(char name) const {
  for (size_t i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == name && axes_[i].block == 0) return static_cast<int64_t>(i);
  return -1;
}

int64_t Layout::block_of(char name) const {
  for (const Axis& a : axes_)
    if (a.name == name && a.block > 0) return a.block;
  return 1;
}

std::string Layout::primal_letters() const {
  std::string s;
  for (const Axis& a : axes_)
    if (a.block == 0) s += a.name;
  std::sort(s.begin(), s.end());
  return s;
}

namespace {

// Extent of every primal axis (by letter) of a tensor of `shape` in `layout`.
std::vector<std::pair<char, int64_t>> primal_extents(const Shape& shape, const Layout& layout) {
  if (shape.size() != layout.rank())
    throw Error("shape " + ops::shape_to_string(shape) + " has rank " + std::to_string(shape.size()) + ", layout " +
                layout.text() + " has " + std::to_string(layout.rank()) + " axes");
  std::vector<std::pair<char, int64_t>> extents;
  for (size_t i = 0; i < shape.size(); ++i) {
    const Layout::Axis& a = layout.axes()[i];
    if (a.block > 0) {
      if (shape[i] != a.block)
        throw Error("shape " + ops::shape_to_string(shape) + " does not fit layout " + layout.text() + ": axis " +
                    std::to_string(i) + " has extent " + std::to_string(shape[i]) + ", the block is " +
                    std::to_string(a.block));
      continue;
    }
    extents.push_back({a.name, support::checked_mul(shape[i], layout.block_of(a.name), "layout_transform")});
  }
  return extents;
}

}  // namespace

Shape layout_transform_shape(const Shape& shape, const Layout& src, const Layout& dst) {
  if (src.primal_letters() != dst.primal_letters())
    throw Error("layouts " + src.text() + " and " + dst.text() + " do not have the same axes");
  auto extents = primal_extents(shape, src);
  auto extent_of = [&](char name) {
    for (auto [n, e] : extents)
      if (n == name) return e;
    return int64_t{0};
  };
  Shape out;
  for (const Layout::Axis& a : dst.axes()) {
    if (a.block > 0) {
      out.push_back(a.block);
      continue;
    }
    const int64_t extent = extent_of(a.name), block = dst.block_of(a.name);
    if (extent % block != 0)
      throw Error("layout " + dst.text() + ": axis " + a.name + " of extent " + std::to_string(extent) +
                  " is not a multiple of its block " + std::to_string(block));
    out.push_back(extent / block);
  }
  return out;
}

void layout_transform(const float* data, const Shape& shape, const Layout& src, const Layout& dst, float* out) {
  const Shape out_shape = layout_transform_shape(shape, src, dst);
  // For every output element: its coordinates in dst -> the primal coordinate
  // of each axis -> its coordinates in src -> the source offset.
  std::vector<int64_t> primal(128, 0);  // by letter
  const int64_t total = ops::num_elements(out_shape);
  std::vector<int64_t> coord;
  for (int64_t i = 0; i < total; ++i) {
    ops::unravel(i, out_shape, coord);
    for (auto& p : primal) p = 0;
    for (size_t d = 0; d < out_shape.size(); ++d) {
      const Layout::Axis& a = dst.axes()[d];
      // primal = outer * block + inner
      if (a.block > 0)
        primal[a.name] += coord[d];
      else
        primal[a.name] += coord[d] * dst.block_of(a.name);
    }
    int64_t offset = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      const Layout::Axis& a = src.axes()[d];
      const int64_t block = src.block_of(a.name);
      const int64_t index = a.block > 0 ? primal[a.name] % block : primal[a.name] / block;
      offset = offset * shape[d] + index;
    }
    out[i] = data[offset];
  }
}

bool is_channel_blocked(const std::string& layout) {
  if (layout.size() < 6 || layout.rfind("NCHW", 0) != 0 || layout.back() != 'c') return false;
  const std::string digits = layout.substr(4, layout.size() - 5);
  return digits.find_first_not_of("0123456789") == std::string::npos && std::stoll(digits) >= 1;
}

}  // namespace tessera::ops
