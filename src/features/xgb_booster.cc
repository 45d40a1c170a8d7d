// The only file that includes XGBoost's C API.
#include "features/xgb_booster.h"

#include <xgboost/c_api.h>

#include <limits>

#include "tessera/error.h"

namespace tessera::features {
namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw Error(std::string("xgboost: ") + what + " failed: " + XGBGetLastError());
}

}  // namespace

XgbMatrix::XgbMatrix(const std::vector<float>& data, size_t rows, size_t cols) : rows_(rows) {
  DMatrixHandle h = nullptr;
  check(XGDMatrixCreateFromMat(data.data(), rows, cols, std::numeric_limits<float>::quiet_NaN(), &h),
        "XGDMatrixCreateFromMat");
  handle_ = h;
}

XgbMatrix::~XgbMatrix() {
  if (handle_) XGDMatrixFree(handle_);
}

void XgbMatrix::set_floats(const char* field, const std::vector<float>& v) {
  check(XGDMatrixSetFloatInfo(handle_, field, v.data(), v.size()), field);
}

void XgbMatrix::set_uints(const char* field, const std::vector<unsigned>& v) {
  check(XGDMatrixSetUIntInfo(handle_, field, v.data(), v.size()), field);
}

XgbBooster::XgbBooster(const XgbMatrix& train, const XgbParams& params) {
  DMatrixHandle cache[] = {train.handle()};
  BoosterHandle h = nullptr;
  check(XGBoosterCreate(cache, 1, &h), "XGBoosterCreate");
  handle_ = h;
  for (const auto& [name, value] : params) check(XGBoosterSetParam(handle_, name.c_str(), value.c_str()), name.c_str());
}

XgbBooster::~XgbBooster() {
  if (handle_) XGBoosterFree(handle_);
}

void XgbBooster::update(int iteration, const XgbMatrix& train) {
  check(XGBoosterUpdateOneIter(handle_, iteration, train.handle()), "XGBoosterUpdateOneIter");
}

void XgbBooster::boost(const XgbMatrix& train, std::vector<float>& grad, std::vector<float>& hess) {
  if (grad.size() != train.rows() || hess.size() != train.rows())
    throw Error("xgboost: one gradient and one hessian per training row");
  check(XGBoosterBoostOneIter(handle_, train.handle(), grad.data(), hess.data(), grad.size()), "XGBoosterBoostOneIter");
}

std::vector<float> XgbBooster::predict(const XgbMatrix& m, bool margin) const {
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(handle_, m.handle(), margin ? 1 : 0, 0, 0, &len, &out), "XGBoosterPredict");
  if (len != m.rows()) throw Error("xgboost: prediction has the wrong length");
  return std::vector<float>(out, out + len);
}

std::vector<float> flatten_rows(const std::vector<std::vector<float>>& rows, const std::vector<size_t>& order,
                                size_t* cols) {
  *cols = rows.empty() || order.empty() ? 0 : rows[order.front()].size();
  std::vector<float> out;
  out.reserve(order.size() * *cols);
  for (size_t r : order) {
    if (rows[r].size() != *cols)
      throw Error("xgb cost model: feature vectors of different lengths (" + std::to_string(rows[r].size()) + " and " +
                  std::to_string(*cols) + ")");
    out.insert(out.end(), rows[r].begin(), rows[r].end());
  }
  return out;
}

}  // namespace tessera::features
