#pragma once
// XGBoost's C API behind two small owners: the one place that includes it,
// shared by the cost models of both searches (autotvm's and the
// auto-scheduler's). Every failure throws tessera::Error with XGBoost's message.
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tessera::features {

// A training or prediction matrix: `rows` x `cols` floats, row-major.
class XgbMatrix {
 public:
  XgbMatrix(const std::vector<float>& data, size_t rows, size_t cols);
  ~XgbMatrix();
  XgbMatrix(const XgbMatrix&) = delete;
  XgbMatrix& operator=(const XgbMatrix&) = delete;
  void set_floats(const char* field, const std::vector<float>& v);    // "label", "weight"
  void set_uints(const char* field, const std::vector<unsigned>& v);  // "group"
  void* handle() const { return handle_; }
  size_t rows() const { return rows_; }

 private:
  void* handle_ = nullptr;
  size_t rows_ = 0;
};

using XgbParams = std::vector<std::pair<std::string, std::string>>;

class XgbBooster {
 public:
  XgbBooster(const XgbMatrix& train, const XgbParams& params);
  ~XgbBooster();
  XgbBooster(const XgbBooster&) = delete;
  XgbBooster& operator=(const XgbBooster&) = delete;

  // One boosting round with the objective of the params.
  void update(int iteration, const XgbMatrix& train);
  // One boosting round with gradients the caller computed (a custom loss).
  void boost(const XgbMatrix& train, std::vector<float>& grad, std::vector<float>& hess);
  // One value per row; `margin`: the raw sum of the trees.
  std::vector<float> predict(const XgbMatrix& m, bool margin = false) const;

 private:
  void* handle_ = nullptr;
};

// Row-major copy of feature vectors in the given row order; throws when they differ in length.
std::vector<float> flatten_rows(const std::vector<std::vector<float>>& rows, const std::vector<size_t>& order,
                                size_t* cols);

}  // namespace tessera::features
