#include "codegen/gpu_source.h"

#include <cmath>
#include <optional>
#include <set>

#include "codegen/c_printer.h"
#include "codegen/lane_analysis.h"
#include "codegen/repeated_reads.h"
#include "codegen/tensor_core_tile.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "tessera/error.h"
#include "tir/lower.h"
#include "tir/pad_tensor_core_rows.h"
#include "tir/simplify.h"
#include "tir/stmt_functor.h"
#include "tir/verify_gpu.h"

namespace tessera::codegen {

namespace {

using ir::ExprKind;

// Index arithmetic in 32 bits when every buffer's elements fit (an index
// then does, a guarded one off the edge by a window at most): 64-bit integer
// multiplies and divisions cost GPUs several instructions each.
bool fits_32_bits(const tir::DeviceProgram& p) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  bool fits = true;
  auto check = [&](const ir::Tensor& t) { fits &= t->num_elements() < kLimit; };
  for (const auto& t : p.args) check(t);
  for (const auto& t : p.workspace) check(t);
  return fits;
}

// True when e is at least 0 wherever it is evaluated: loop variables (the
// only variables of lowered loops) and non-negative constants, combined by
// +, *, min, max, floor division and modulo by positive constants.
bool non_negative(const ir::Expr& e) {
  int64_t c = 0;
  switch (e.kind()) {
    case ExprKind::Var: return e.dtype() == ir::DType::Int64;
    case ExprKind::IntImm: return ir::is_const_int(e, &c) && c >= 0;
    case ExprKind::Add:
    case ExprKind::Mul:
    case ExprKind::Min:
    case ExprKind::Max: {
      const auto* n = e.as<ir::BinaryNode>();
      return non_negative(n->a) && non_negative(n->b);
    }
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod: {
      const auto* n = e.as<ir::BinaryNode>();
      return non_negative(n->a) && ir::is_const_int(n->b, &c) && c > 0;
    }
    default: return false;
  }
}

// Whether evaluating e could fault or read memory: a load, or a division
// by something other than a constant.
bool may_fault(const ir::Expr& e) {
  bool unsafe = false;
  ir::post_order_visit(e, [&](const ir::Expr& x) {
    switch (x.kind()) {
      case ExprKind::TensorLoad: unsafe = true; break;
      case ExprKind::Div:
      case ExprKind::Mod:
      case ExprKind::FloorDiv:
      case ExprKind::FloorMod: unsafe |= !ir::is_const_int(x.as<ir::BinaryNode>()->b); break;
      default: break;
    }
  });
  return unsafe;
}

bool is_zero(const ir::Expr& e) {
  if (const auto* f = e.as<ir::FloatImmNode>()) return f->value == 0.0;
  if (const auto* c = e.as<ir::CastNode>()) return is_zero(c->value);
  return ir::is_const_int(e, int64_t{0});
}

bool has_tensor_core_tiles(const tir::DeviceProgram& p) {
  bool found = false;
  for (const tir::DeviceKernel& k : p.kernels)
    tir::visit_stmts(k.body, [&](const tir::Stmt& s) {
      auto* f = tir::as<tir::ForNode>(s);
      found |= f && f->for_kind == tir::ForKind::TensorCore;
    });
  return found;
}

class GpuPrinter : public CSourcePrinter {
 public:
  GpuPrinter(GpuDialect dialect, bool index_32, bool tensor_cores)
      : dialect_(dialect), index_32_(index_32), tensor_cores_(tensor_cores) {}

  // The helpers the kernels call, for this printer's index type; guarded,
  // so that the sources of several functions concatenate into one unit.
  std::string prelude() const {
    const std::string fn = cuda() ? "static __device__ __forceinline__ " : "static inline ";
    const std::string t = index_type(), x = suffix(), guard = "TESSERA_PRELUDE_" + x;
    std::string s = "#ifndef " + guard + "\n#define " + guard + "\n";
    // Floor division and modulo: C's / and % round toward zero, the loop
    // IR's indices (a padded window's first row, say) may be negative.
    s += fn + t + " tsr_floordiv_" + x + "(" + t + " a, " + t + " b) { " + t +
         " q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }\n";
    s += fn + t + " tsr_floormod_" + x + "(" + t + " a, " + t + " b) { " + t +
         " r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }\n";
    s += fn + t + " tsr_min_" + x + "(" + t + " a, " + t + " b) { return a < b ? a : b; }\n";
    s += fn + t + " tsr_max_" + x + "(" + t + " a, " + t + " b) { return a > b ? a : b; }\n";
    s += "#endif\n#ifndef TESSERA_PRELUDE_FLOAT\n#define TESSERA_PRELUDE_FLOAT\n";
    s += fn + "float tsr_sigmoid(float x) { return 1.0f / (1.0f + " + std::string(cuda() ? "expf" : "exp") +
         "(-x)); }\n";
    if (cuda()) {
      // Half storage's conversions, rounding to nearest even.
      s += fn + "float tsr_h2f(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n";
      s += fn + "unsigned short tsr_f2h(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n";
    }
    s += "#endif\n";
    if (cuda() && tensor_cores_) s += cuda_tensor_core_prelude();
    return s + "\n";
  }

  std::string kernel(const tir::DeviceKernel& k) {
    out_.str("");
    const auto& b = k.block;
    if (cuda()) {
      out_ << "extern \"C\" __global__ void __launch_bounds__(" << k.threads_per_block() << ") "
           << c_identifier(k.name) << "(";
    } else {
      out_ << "__kernel __attribute__((reqd_work_group_size(" << b[0] << ", " << b[1] << ", " << b[2] << "))) void "
           << c_identifier(k.name) << "(";
    }
    for (size_t i = 0; i < k.params.size(); ++i) {
      out_ << (i ? ", " : "") << (cuda() ? "" : "__global ") << type_name(k.params[i]->dtype)
           << (cuda() ? "* __restrict__ " : "* restrict ") << name(k.params[i]->name);
    }
    out_ << ") {\n";
    out_ << "  // grid " << k.grid[0] << " x " << k.grid[1] << " x " << k.grid[2] << ", block " << b[0] << " x "
         << b[1] << " x " << b[2] << "\n";
    // Shared buffers live as long as the block: declared once, at the top
    // (once also where an unrolled loop repeats the allocation).
    // OpenCL declares no half variable without cl_khr_fp16: a shared half
    // buffer is ushorts, read and written through a half pointer (vload_half).
    std::set<std::string> declared;
    tir::visit_stmts(k.body, [&](const tir::Stmt& s) {
      auto* a = tir::as<tir::AllocateNode>(s);
      if (!a || a->scope != tir::MemoryScope::Shared || !declared.insert(a->buffer->name).second) return;
      shared_.insert(a->buffer.get());
      const std::string buffer = name(a->buffer->name), size = std::to_string(a->buffer->num_elements());
      if (cuda())
        out_ << "  __shared__ __align__(16) " << type_name(a->buffer->dtype) << " " << buffer << "[" << size << "];\n";
      else if (a->buffer->dtype == ir::DType::Float16)
        out_ << "  __local ushort " << buffer << "_bits[" << size << "] __attribute__((aligned(16)));\n"
             << "  __local half* " << buffer << " = (__local half*)" << buffer << "_bits;\n";
      else
        out_ << "  __local " << type_name(a->buffer->dtype) << " " << buffer << "[" << size
             << "] __attribute__((aligned(16)));\n";
    });
    stmt(k.body, 1);
    out_ << "}\n";
    return out_.str();
  }

 protected:
  bool cuda() const { return dialect_ == GpuDialect::Cuda; }
  std::string suffix() const { return index_32_ ? "i32" : "i64"; }

  // Names OpenCL C or CUDA reserve ("kernel", "local", "threadIdx", ...)
  // take a trailing '_'.
  std::string name(const std::string& n) const override {
    static const std::set<std::string> reserved = {
        "kernel", "__kernel", "global", "__global", "local", "__local", "constant", "__constant", "private",
        "__private", "read_only", "write_only", "read_write", "sampler_t", "event_t", "half", "double", "float",
        "int", "long", "short", "char", "bool", "void", "signed", "unsigned", "const", "restrict", "volatile",
        "inline", "static", "extern", "register", "auto", "struct", "union", "enum", "typedef", "sizeof", "if",
        "else", "for", "while", "do", "switch", "case", "default", "break", "continue", "return", "goto",
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "uniform", "pipe"};
    const std::string id = c_identifier(n);
    return reserved.count(id) ? id + "_" : id;
  }

  std::string type_name(ir::DType t) const override {
    if (t == ir::DType::Int64) return cuda() ? "long long" : "long";
    // Half storage: OpenCL's half (pointers to it need no fp16 extension,
    // only vload_half / vstore_half touch it); CUDA's bits in an unsigned
    // short, converted by PTX (no cuda_fp16.h for NVRTC to find).
    if (t == ir::DType::Float16) return cuda() ? "unsigned short" : "half";
    if (t == ir::DType::Int8 && !cuda()) return "char";  // OpenCL's char is signed
    if (t == ir::DType::UInt8 && !cuda()) return "uchar";
    return CSourcePrinter::type_name(t);
  }

  std::string load_text(const ir::TensorLoadNode& n, const std::string& index) override {
    check_not_fragment(n.tensor);
    if (n.tensor->dtype != ir::DType::Float16) return CSourcePrinter::load_text(n, index);
    const std::string buffer = name(n.tensor->name);
    return cuda() ? "tsr_h2f(" + buffer + "[" + index + "])" : "vload_half(" + index + ", " + buffer + ")";
  }

  // A value that reads memory more than once (relu's, clip's, hard-swish's
  // x) reads it once, into a variable of a block around the store
  // (codegen/repeated_reads.h).
  void store(const tir::StoreNode* n, int depth) override {
    check_not_fragment(n->buffer);
    const BoundReads reads = bind_repeated_reads(n->value, "tsr_x");
    if (reads.bindings.empty()) return store_value(*n, n->value, depth);
    out_ << indent(depth) << "{\n";
    for (const auto& [variable, read] : reads.bindings)
      out_ << indent(depth + 1) << "const " << type_name(variable.dtype()) << " " << name(variable.name()) << " = "
           << expr(read) << ";\n";
    store_value(*n, reads.value, depth + 1);
    out_ << indent(depth) << "}\n";
  }
  void store_value(const tir::StoreNode& n, const ir::Expr& value, int depth) {
    const std::string buffer = name(n.buffer->name), index = flat_index(n.indices, n.buffer->shape);
    if (n.buffer->dtype != ir::DType::Float16)
      out_ << indent(depth) << buffer << "[" << index << "] = " << expr(value) << ";\n";
    else if (const std::optional<std::string> bits = cuda() ? half_bits(value) : std::nullopt)
      out_ << indent(depth) << buffer << "[" << index << "] = " << *bits << ";\n";
    else if (cuda())
      out_ << indent(depth) << buffer << "[" << index << "] = tsr_f2h(" << expr(value) << ");\n";
    else
      out_ << indent(depth) << "vstore_half_rte(" << expr(value) << ", " << index << ", " << buffer << ");\n";
  }
  // A half value copied as it is, as CUDA's bits: a half read, or zero, or
  // a select of such (a padded read). Nothing for anything computed, which
  // goes through float. (The conversions there and back cost a padded
  // fetch two instructions an element, as many as its load and store.)
  std::optional<std::string> half_bits(const ir::Expr& v) {
    if (const auto* load = v.as<ir::TensorLoadNode>(); load && load->tensor->dtype == ir::DType::Float16) {
      check_not_fragment(load->tensor);
      return name(load->tensor->name) + "[" + flat_index(load->indices, load->tensor->shape) + "]";
    }
    if (const auto* zero = v.as<ir::FloatImmNode>(); zero && zero->value == 0.0 && !std::signbit(zero->value))
      return std::string("(unsigned short)0");
    const auto* select = v.as<ir::SelectNode>();
    if (!select) return std::nullopt;
    const std::optional<std::string> t = half_bits(select->true_value), f = half_bits(select->false_value);
    if (!t || !f) return std::nullopt;
    return expr(select->cond, kOr) + " ? " + *t + " : " + *f;
  }

  std::string index_type() const override { return index_32_ ? "int" : cuda() ? "long long" : "long"; }

  std::string function_name(const std::string& name) const override {
    if (name == "sigmoid") return "tsr_sigmoid";
    if (name == "round") return cuda() ? "rintf" : "rint";  // halves to even
    return cuda() ? name + "f" : name;  // expf / exp, erff / erf, ...
  }

  std::string binary_call(ExprKind kind, ir::DType t, const std::string& a, const std::string& b) const override {
    if (t == ir::DType::Float32 && (kind == ExprKind::Min || kind == ExprKind::Max))
      return std::string(kind == ExprKind::Min ? "fmin" : "fmax") + (cuda() ? "f(" : "(") + a + ", " + b + ")";
    return "tsr_" + std::string(ir::call_style_name(kind)) + "_" + suffix() + "(" + a + ", " + b + ")";
  }

  // Floor division and modulo of a value that cannot be negative by a
  // positive constant are C's / and % (what index arithmetic over loop
  // variables mostly is); the helpers' sign checks cost a GPU several
  // instructions per index.
  std::string expr_of_binary(const ir::BinaryNode& n, int* precedence) override {
    int64_t divisor = 0;
    if ((n.kind == ExprKind::FloorDiv || n.kind == ExprKind::FloorMod) && ir::is_const_int(n.b, &divisor) &&
        divisor > 0 && non_negative(n.a)) {
      *precedence = kMultiplicative;
      return expr(n.a, kMultiplicative) + (n.kind == ExprKind::FloorDiv ? " / " : " % ") + std::to_string(divisor);
    }
    // A conjunction of index bounds (padding's, a partial tile's) is
    // written & rather than &&: C's && evaluates its right side only when
    // the left holds, and for the padded fetch into shared memory of an
    // implicit GEMM's im2col operand, 16 elements a thread, ptxas (CUDA 13,
    // sm_90) kept that control flow, a branch per element with its load
    // awaited inside (744 SASS instructions, 35 branches); with & the
    // condition is one predicate, the loads predicated and all in flight
    // at once (688, 3). Only where neither side can fault or reads memory,
    // so evaluating both is what the program means. (In such a subtree
    // every && and || is converted, so & and | in the places of && and ||
    // parse as intended beside the comparisons, which bind tighter.)
    if ((n.kind == ExprKind::And || n.kind == ExprKind::Or) && !may_fault(n.a) && !may_fault(n.b)) {
      const bool conjunction = n.kind == ExprKind::And;
      *precedence = conjunction ? kAnd : kOr;
      return expr(n.a, *precedence) + (conjunction ? " & " : " | ") + expr(n.b, *precedence + 1);
    }
    return CSourcePrinter::expr_of_binary(n, precedence);
  }

  void loop(const tir::ForNode* n, int depth) override {
    const std::string v = name(n->var.name());
    if (tir::is_block_axis(n->for_kind) || tir::is_thread_axis(n->for_kind)) {
      out_ << indent(depth) << "{\n";
      out_ << indent(depth + 1) << "const " << index_type() << " " << v << " = " << index_of(n->for_kind) << ";  // "
           << tir::to_string(n->for_kind) << ", " << n->extent << "\n";
      stmt(n->body, depth + 1);
      out_ << indent(depth) << "}\n";
      return;
    }
    if (n->for_kind == tir::ForKind::TensorCore) return tensor_core_tile(*n, depth);
    if (n->for_kind == tir::ForKind::Vectorized && vector_copy(n, depth)) return;
    // Virtual threads, other vector lanes and unrolled loops the unroll pass
    // left: loops the device compiler unrolls.
    if (n->for_kind != tir::ForKind::Serial) out_ << indent(depth) << "#pragma unroll\n";
    CSourcePrinter::loop(n, depth);
  }

  // A vectorized loop of 2 or 4 lanes copying contiguous floats, or 2, 4
  // or 8 copying contiguous halves, between offsets that the lanes' count
  // divides (the buffers themselves start aligned: device allocations,
  // aligned shared arrays): one load and one store of 4 to 16 bytes instead
  // of a few of each (CUDA: float2 / float4, a half's bits as unsigned,
  // uint2, uint4; OpenCL: vloadN / vstoreN, vload_halfN / vstore_halfN).
  // The cooperative fetches into shared memory are such loops.
  // Guards that hold for all lanes or none (a fetch's bound: lane_uniform)
  // may enclose the copy; it then runs under the first lane's. So may a
  // select of the value and zero (a padded window's check).
  bool vector_copy(const tir::ForNode* n, int depth) {
    const int64_t lanes = n->extent;
    tir::Stmt body = n->body;
    std::vector<ir::Expr> guards;
    while (body->kind == tir::StmtKind::IfThenElse) {
      const auto* guard = tir::as<tir::IfThenElseNode>(body);
      if (guard->else_case || !lane_uniform(guard->cond, n->var, lanes)) return false;
      guards.push_back(at_first_lane(guard->cond, n->var));
      body = guard->then_case;
    }
    if (body->kind != tir::StmtKind::Store) return false;
    const auto* store = tir::as<tir::StoreNode>(body);
    // The value loaded, or loaded where a condition holds for all lanes or
    // none and zero elsewhere (the padding of an NHWC window, whose 8
    // channels of a pixel are all inside or all outside it).
    const auto* load = store->value.as<ir::TensorLoadNode>();
    ir::Expr inside;
    if (const auto* select = store->value.as<ir::SelectNode>();
        select && is_zero(select->false_value) && lane_uniform(select->cond, n->var, lanes)) {
      load = select->true_value.as<ir::TensorLoadNode>();
      inside = at_first_lane(select->cond, n->var);
    }
    if (!load || store->buffer->dtype != load->tensor->dtype) return false;
    const bool halves = store->buffer->dtype == ir::DType::Float16;
    if (!halves && store->buffer->dtype != ir::DType::Float32) return false;
    if (lanes != 2 && lanes != 4 && !(halves && lanes == 8)) return false;
    if (lane_access_stride(store->indices, store->buffer->shape, n->var, lanes) != 1 ||
        lane_access_stride(load->indices, load->tensor->shape, n->var, lanes) != 1)
      return false;
    auto first_lane = [&](const std::vector<ir::Expr>& indices) {
      std::vector<ir::Expr> r;
      for (const ir::Expr& i : indices) r.push_back(at_first_lane(i, n->var));
      return r;
    };
    const std::vector<ir::Expr> to = first_lane(store->indices), from = first_lane(load->indices);
    if (offset_alignment(to, store->buffer->shape) % lanes != 0 ||
        offset_alignment(from, load->tensor->shape) % lanes != 0)
      return false;
    const std::string n_lanes = std::to_string(lanes);
    const std::string dst = name(store->buffer->name) + " + " + flat_index(to, store->buffer->shape);
    const std::string src = name(load->tensor->name) + " + " + flat_index(from, load->tensor->shape);
    if (!guards.empty()) {
      ir::Expr all = guards[0];
      for (size_t i = 1; i < guards.size(); ++i) all = all && guards[i];
      out_ << indent(depth++) << "if (" << expr(all) << ")\n";
    }
    const std::string when = inside ? expr(inside) + " ? " : "";
    if (cuda()) {
      const std::string type =
          !halves ? "float" + n_lanes : lanes == 2 ? "unsigned" : "uint" + std::to_string(lanes / 2);
      out_ << indent(depth) << "*(" << type << "*)(" << dst << ") = " << when << "*(const " << type << "*)(" << src
           << ")" << (inside ? " : " + type + "{}" : "") << ";\n";
    } else {
      const std::string kind = halves ? "_half" : "";
      out_ << indent(depth) << "vstore" << kind << n_lanes << "(" << when << "vload" << kind << n_lanes << "(0, " << src
           << ")" << (inside ? " : (float" + n_lanes + ")(0.0f)" : "") << ", 0, " << dst << ");\n";
    }
    return true;
  }

  // A warp's tiles, read off the loops (codegen/tensor_core_tile.h): on
  // CUDA as mma.sync's operation sequences, a fragment an array of
  // tsr_tile16; in OpenCL as what they mean, every thread computing its
  // warp's whole tile, a fragment 256 floats per tile, so that the tiles'
  // origins and strides run on the OpenCL device as they would on CUDA.
  void tensor_core_tile(const tir::ForNode& n, int depth) {
    const TensorCoreTile t = recognise_tensor_core_tile(n);
    if (!fragments_.count(t.fragment.get()))
      throw Error("tensor-core loop '" + n.var.name() + "': '" + t.fragment->name + "' is not a fragment buffer");
    const std::string tile_index = flat_index(t.tile, fragment_tile_grid(t.fragment));
    if (cuda()) {
      const std::string tile = name(t.fragment->name) + "[" + tile_index + "]";
      auto at = [&](const TileOperand& o) {
        return name(o.buffer->name) + " + " + flat_index(o.origin, o.buffer->shape) + ", " +
               std::to_string(o.row_stride) + ", " + std::to_string(o.col_stride);
      };
      out_ << indent(depth);
      switch (t.op) {
        case TensorCoreTile::Op::Fill: out_ << "tsr_tc_fill(" << tile << ", " << float_literal(t.fill_value) << ");\n"; break;
        case TensorCoreTile::Op::MultiplyAdd:
          if (t.a.buffer->dtype == ir::DType::Float16 && t.b.buffer->dtype == ir::DType::Float16)
            out_ << "tsr_tc_mma_frags(" << tile << ", " << fragment_load(t.a, 'a') << ", " << fragment_load(t.b, 'b')
                 << ");\n";
          else
            out_ << "tsr_tc_mma(" << tile << ", " << at(t.a) << ", " << at(t.b) << ");\n";
          break;
        case TensorCoreTile::Op::Store: out_ << "tsr_tc_store(" << at(t.destination) << ", " << tile << ");\n"; break;
      }
      return;
    }
    // Element (r, c) of a tile; of an operand at its origin plus the strides.
    const std::string element = name(t.fragment->name) + "[(" + tile_index + ")*256 + tsr_r*16 + tsr_c]";
    auto at = [&](const TileOperand& o, const std::string& row, const std::string& col) {
      return flat_index(o.origin, o.buffer->shape) + " + " + row + "*" + std::to_string(o.row_stride) + " + " + col +
             "*" + std::to_string(o.col_stride);
    };
    auto read = [&](const TileOperand& o, const std::string& index) {
      return o.buffer->dtype == ir::DType::Float16 ? "vload_half(" + index + ", " + name(o.buffer->name) + ")"
                                                   : name(o.buffer->name) + "[" + index + "]";
    };
    out_ << indent(depth) << "for (int tsr_r = 0; tsr_r < 16; ++tsr_r)\n"
         << indent(depth + 1) << "for (int tsr_c = 0; tsr_c < 16; ++tsr_c) {\n";
    const std::string in = indent(depth + 2);
    switch (t.op) {
      case TensorCoreTile::Op::Fill: out_ << in << element << " = " << float_literal(t.fill_value) << ";\n"; break;
      case TensorCoreTile::Op::MultiplyAdd:
        out_ << in << "for (int tsr_k = 0; tsr_k < 16; ++tsr_k)\n"
             << in << "  " << element << " += " << read(t.a, at(t.a, "tsr_r", "tsr_k")) << " * "
             << read(t.b, at(t.b, "tsr_k", "tsr_c")) << ";\n";
        break;
      case TensorCoreTile::Op::Store: {
        const TileOperand& d = t.destination;
        const std::string index = at(d, "tsr_r", "tsr_c");
        if (d.buffer->dtype == ir::DType::Float16)
          out_ << in << "vstore_half_rte(" << element << ", " << index << ", " << name(d.buffer->name) << ");\n";
        else
          out_ << in << name(d.buffer->name) << "[" << index << "] = " << element << ";\n";
        break;
      }
    }
    out_ << indent(depth + 1) << "}\n";
  }

  // How a half operand tile of a product reaches mma.sync's registers
  // (codegen/tensor_core_tile.h): by ldmatrix, four 8 x 8 matrices in one
  // instruction, where it lies in shared memory with its steps (or, then
  // transposed, its rows or columns) contiguous, the other stride and its
  // origin multiples of 8 halves (16-byte rows); else gathered element by
  // element. `side` 'a': rows x steps; 'b': steps x columns.
  std::string fragment_load(const TileOperand& o, char side) {
    const std::string at = name(o.buffer->name) + " + " + flat_index(o.origin, o.buffer->shape);
    const int64_t steps = side == 'a' ? o.col_stride : o.row_stride;
    const int64_t across = side == 'a' ? o.row_stride : o.col_stride;
    if (shared_.count(o.buffer.get()) && offset_alignment(o.origin, o.buffer->shape) % 8 == 0) {
      const std::string load = std::string("tsr_ldmatrix_") + side;
      if (steps == 1 && across % 8 == 0) return load + "<false>(" + at + ", " + std::to_string(across) + ")";
      if (across == 1 && steps % 8 == 0) return load + "<true>(" + at + ", " + std::to_string(steps) + ")";
    }
    return std::string("tsr_gather_") + side + "(" + at + ", " + std::to_string(o.row_stride) + ", " +
           std::to_string(o.col_stride) + ")";
  }

  void check_not_fragment(const ir::Tensor& buffer) const {
    if (fragments_.count(buffer.get()))
      throw Error("fragment '" + buffer->name + "' is read or written outside a tensor-core loop (its elements are spread over a warp)");
  }

  void allocate(const tir::AllocateNode* n, int depth) override {
    if (n->scope == tir::MemoryScope::Fragment) {
      fragments_.insert(n->buffer.get());
      int64_t tiles = 1;
      for (int64_t e : fragment_tile_grid(n->buffer)) tiles *= e;
      if (cuda())
        out_ << indent(depth) << "tsr_tile16 " << name(n->buffer->name) << "[" << tiles << "];\n";
      else
        out_ << indent(depth) << "float " << name(n->buffer->name) << "[" << tiles * 256 << "];  // " << tiles
             << " tiles of 16 x 16\n";
      stmt(n->body, depth);
      return;
    }
    if (n->scope != tir::MemoryScope::Local) return stmt(n->body, depth);
    // In a block of its own: an unrolled loop repeats the allocation.
    // Aligned as shared buffers are, for the 16-byte moves of a staged
    // vector fetch (tir/stage_fetches.h).
    const std::string buffer = name(n->buffer->name), size = std::to_string(n->buffer->num_elements());
    const std::string aligned = cuda() ? "" : " __attribute__((aligned(16)))";
    out_ << indent(depth) << "{\n";
    if (n->buffer->dtype == ir::DType::Float16 && !cuda())
      // As shared halves: ushorts, read and written through a half pointer.
      out_ << indent(depth + 1) << "ushort " << buffer << "_bits[" << size << "]" << aligned << ";\n"
           << indent(depth + 1) << "half* " << buffer << " = (half*)" << buffer << "_bits;\n";
    else
      out_ << indent(depth + 1) << (cuda() ? "__align__(16) " : "") << type_name(n->buffer->dtype) << " " << buffer
           << "[" << size << "]" << aligned << ";\n";
    stmt(n->body, depth + 1);
    out_ << indent(depth) << "}\n";
  }

  void barrier(int depth) override {
    out_ << indent(depth) << (cuda() ? "__syncthreads();\n" : "barrier(CLK_LOCAL_MEM_FENCE);\n");
  }

 private:
  std::string index_of(tir::ForKind k) const {
    const int d = tir::grid_dimension(k);
    if (cuda()) return std::string(tir::is_block_axis(k) ? "blockIdx." : "threadIdx.") + "xyz"[d];
    const std::string call = tir::is_block_axis(k) ? "get_group_id(" : "get_local_id(";
    return "(" + index_type() + ")" + call + std::to_string(d) + ")";
  }

  GpuDialect dialect_;
  bool index_32_;
  bool tensor_cores_;
  std::set<const ir::TensorNode*> fragments_;
  std::set<const ir::TensorNode*> shared_;  // the kernel's shared buffers
};

}  // namespace

GpuSource emit_gpu_source(const tir::LoweredFunc& f, const target::GpuLimits& limits, GpuDialect dialect) {
  GpuSource out;
  out.program = tir::split_device_kernels(tir::prepare_for_gpu_codegen(f));
  for (tir::DeviceKernel& k : out.program.kernels) tir::pad_tensor_core_rows(k, limits.max_shared_memory_per_block);
  tir::verify_gpu(out.program, limits);
  GpuPrinter printer(dialect, fits_32_bits(out.program), has_tensor_core_tiles(out.program));
  out.code = std::string(dialect == GpuDialect::Cuda ? "// CUDA C" : "// OpenCL C") + " written by Tessera: " + f.name +
             "\n" + printer.prelude();
  for (const tir::DeviceKernel& k : out.program.kernels) out.code += printer.kernel(k) + "\n";
  return out;
}

}  // namespace tessera::codegen
