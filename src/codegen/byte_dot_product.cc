#include "codegen/byte_dot_product.h"

#include "codegen/lane_analysis.h"
#include "ir/functor.h"

namespace tessera::codegen {
namespace {

// s itself, or the one statement of a sequence of one.
const tir::StmtNode* only_statement(const tir::Stmt& s) {
  if (const auto* seq = tir::as<tir::SeqNode>(s)) return seq->stmts.size() == 1 ? only_statement(seq->stmts[0]) : nullptr;
  return s.get();
}

bool strides_are(const ir::TensorLoadNode& load, const ir::VarNode* lane, int64_t along_lane, const ir::VarNode* k,
                 int64_t along_k) {
  return access_stride(load.indices, load.tensor->shape, lane) == along_lane &&
         access_stride(load.indices, load.tensor->shape, k) == along_k;
}

}  // namespace

std::optional<ByteDotProduct> match_byte_dot_product(const tir::ForNode& loop) {
  if (loop.for_kind != tir::ForKind::DotProduct || loop.extent != 4) return std::nullopt;
  ByteDotProduct m;
  m.lanes = dynamic_cast<const tir::ForNode*>(only_statement(loop.body));
  if (!m.lanes || m.lanes->for_kind != tir::ForKind::Vectorized) return std::nullopt;
  m.store = dynamic_cast<const tir::StoreNode*>(only_statement(m.lanes->body));
  if (!m.store || m.store->buffer->dtype != ir::DType::Int32 || m.store->value.kind() != ir::ExprKind::Add)
    return std::nullopt;
  const ir::VarNode* lane = m.lanes->var.node();
  const ir::VarNode* k = loop.var.node();
  if (access_stride(m.store->indices, m.store->buffer->shape, lane) != 1 ||
      access_stride(m.store->indices, m.store->buffer->shape, k) != 0)
    return std::nullopt;

  // acc + u * s, in either order of either operation.
  const auto* add = m.store->value.as<ir::BinaryNode>();
  for (const auto& [accumulator, product] : {std::pair{add->a, add->b}, std::pair{add->b, add->a}}) {
    const auto* acc = accumulator.as<ir::TensorLoadNode>();
    if (!acc || acc->tensor != m.store->buffer || acc->indices.size() != m.store->indices.size()) continue;
    bool same = true;
    for (size_t i = 0; i < acc->indices.size(); ++i) same = same && ir::structural_equal(acc->indices[i], m.store->indices[i]);
    const std::optional<ir::BytesProduct> bytes = same ? ir::unsigned_times_signed(product) : std::nullopt;
    if (!bytes || !strides_are(*bytes->unsigned_bytes, lane, 0, k, 1) || !strides_are(*bytes->signed_bytes, lane, 4, k, 1))
      continue;
    m.unsigned_bytes = bytes->unsigned_bytes;
    m.signed_bytes = bytes->signed_bytes;
    m.centered = bytes->centered;
    return m;
  }
  return std::nullopt;
}

}  // namespace tessera::codegen
