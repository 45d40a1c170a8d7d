// Loop IR -> LLVM IR, one kernel at a time: the schedule, not LLVM, decides
// the shape of the code. Unrolled loops are unrolled here, Vectorized loops
// become explicit LLVM vector types (masked where a tail needs it), Parallel
// loops are outlined into a body the runtime's thread pool calls, scratch
// buffers go on the stack or through the runtime's workspace.
#include "codegen/kernel_emitter.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "codegen/byte_dot_product.h"
#include "codegen/lane_analysis.h"
#include "ir/functor.h"
#include "runtime/kernel_globals.h"
#include "tir/stmt_functor.h"
#include "tessera/error.h"

namespace tessera::codegen {
namespace {

using ir::DType;
using ir::Expr;
using ir::ExprKind;
using tir::Stmt;
using tir::StmtKind;

constexpr int64_t kMaxStackAllocationBytes = 64 * 1024;
constexpr int64_t kMaxVectorLanes = 64;  // wider loops stay serial
constexpr int64_t kMaxUnrollExtent = 1024;  // beyond this an "unrolled" loop stays a loop
// Copies of a body that nested unrolled loops may make together: beyond this
// the inner loops stay loops, so no schedule can make the compile explode.
constexpr int64_t kMaxUnrolledCopies = 4096;
using runtime::kParallelForGlobal;
using runtime::kWorkspaceAllocGlobal;
using runtime::kWorkspaceFreeGlobal;

// --- The emitter -----------------------------------------------------------

class KernelEmitter {
 public:
  KernelEmitter(llvm::Module& module, const Target& target)
      : module_(module), ctx_(module.getContext()), b_(ctx_), target_(target) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);  // a*b+c may become one FMA
    b_.setFastMathFlags(fmf);
  }

  void emit(const tir::LoweredFunc& f) {
    kernel_name_ = f.name;
    llvm::Function* impl = emit_function(f.name + ".body", f.args, {}, 0, [&](auto&) { stmt(f.body); });

    // The exported entry unpacks the argument array and calls the body, whose
    // parameters carry noalias (kept as alias scopes when it is inlined).
    auto* entry_type = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getPtrTy()}, false);
    auto* entry = llvm::Function::Create(entry_type, llvm::Function::ExternalLinkage, f.name, module_);
    add_attributes(entry);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", entry));
    std::vector<llvm::Value*> call_args;
    for (size_t i = 0; i < f.args.size(); ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), entry->getArg(0), i);
      call_args.push_back(b_.CreateLoad(b_.getPtrTy(), slot, f.args[i]->name));
    }
    b_.CreateCall(impl, call_args);
    b_.CreateRet(b_.getInt32(0));
    emit_signature(f);
  }

  // "NAME.signature": the argument count, then each argument's element count,
  // exported beside the kernel. The runtime checks every call of a graph
  // against it on load: a damaged or edited graph cannot make a kernel read
  // or write past a buffer (runtime::KernelLibrary::signature).
  void emit_signature(const tir::LoweredFunc& f) {
    std::vector<uint64_t> words{f.args.size()};
    for (const ir::Tensor& t : f.args) {
      int64_t elements = 1;
      for (int64_t d : t->shape) elements *= d;
      words.push_back(static_cast<uint64_t>(elements));
    }
    llvm::Constant* value = llvm::ConstantDataArray::get(ctx_, llvm::ArrayRef<uint64_t>(words));
    new llvm::GlobalVariable(module_, value->getType(), /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage, value,
                             f.name + ".signature");
  }

 private:
  // Per-function state, saved and restored around outlined functions.
  struct FunctionState {
    llvm::Function* function = nullptr;
    bool inside_parallel = false;
    std::unordered_map<const ir::TensorNode*, llvm::Value*> buffers;
    std::unordered_map<const ir::VarNode*, llvm::Value*> vars;
  };

  // Creates an internal function void(ptr noalias buffers..., i64 vars..., i64 extra...)
  // and fills it by calling body(extra parameters) with the parameters bound.
  llvm::Function* emit_function(const std::string& name, const std::vector<ir::Tensor>& buffers,
                                const std::vector<const ir::VarNode*>& vars, int extra_i64,
                                const std::function<void(std::vector<llvm::Value*>&)>& body) {
    std::vector<llvm::Type*> params(buffers.size(), b_.getPtrTy());
    params.insert(params.end(), vars.size() + extra_i64, b_.getInt64Ty());
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), params, false);
    auto* fn = llvm::Function::Create(type, llvm::Function::InternalLinkage, name, module_);
    add_attributes(fn);

    FunctionState saved = std::move(state_);
    llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
    state_ = FunctionState{};
    state_.function = fn;
    state_.inside_parallel = saved.inside_parallel;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));

    unsigned p = 0;
    for (const ir::Tensor& t : buffers) {
      fn->addParamAttr(p, llvm::Attribute::NoAlias);
      fn->getArg(p)->setName(t->name);
      state_.buffers[t.get()] = fn->getArg(p++);
    }
    for (const ir::VarNode* v : vars) {
      fn->getArg(p)->setName(v->name);
      state_.vars[v] = fn->getArg(p++);
    }
    std::vector<llvm::Value*> extra;
    while (p < fn->arg_size()) extra.push_back(fn->getArg(p++));
    body(extra);
    b_.CreateRetVoid();

    state_ = std::move(saved);
    b_.restoreIP(saved_ip);
    return fn;
  }

  void add_attributes(llvm::Function* fn) {
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    if (!target_.cpu.empty()) fn->addFnAttr("target-cpu", target_.cpu);
    if (!target_.features.empty()) fn->addFnAttr("target-features", target_.features);
    if (target_.vector_bits > 0) {
      // Wide explicit vectors map onto the widest registers instead of being split.
      fn->addFnAttr("prefer-vector-width", std::to_string(target_.vector_bits));
      fn->addFnAttr("min-legal-vector-width", std::to_string(target_.vector_bits));
    }
  }

  // --- statements ---

  void stmt(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::For: loop(tir::as<tir::ForNode>(s)); break;
      case StmtKind::Store: store(tir::as<tir::StoreNode>(s)); break;
      case StmtKind::Allocate: allocate(tir::as<tir::AllocateNode>(s)); break;
      case StmtKind::IfThenElse: if_then_else(tir::as<tir::IfThenElseNode>(s)); break;
      case StmtKind::Seq:
        for (const Stmt& x : tir::as<tir::SeqNode>(s)->stmts) stmt(x);
        break;
      case StmtKind::Barrier: break;  // one thread per iteration here: nothing to wait for
    }
  }

  void loop(const tir::ForNode* n) {
    if (n->extent <= 0) return;
    switch (n->for_kind) {
      case tir::ForKind::Unrolled:
        if (n->extent <= kMaxUnrollExtent && unrolled_copies_ * n->extent <= kMaxUnrolledCopies)
          return unrolled_loop(n);
        break;
      case tir::ForKind::Vectorized:
        if (lanes_ == 1 && n->extent == 1) return unrolled_loop(n);
        if (lanes_ == 1 && n->extent <= kMaxVectorLanes && lanes_are_independent(*n)) return vector_loop(n);
        break;
      case tir::ForKind::Parallel:
        if (!state_.inside_parallel && lanes_ == 1) return parallel_loop(n);
        break;
      case tir::ForKind::DotProduct:
        if (lanes_ == 1 && byte_dot_product_loop(n)) return;
        break;  // not the pattern: the serial loop it means
      case tir::ForKind::Serial:
      case tir::ForKind::Pipelined:  // serial in meaning; only GPU code loads ahead
      case tir::ForKind::TensorCore: break;  // a warp's tile, serial in meaning (tir/stmt.h)
      default:
        throw Error("loop '" + n->var.name() + "' is bound to " + tir::to_string(n->for_kind) +
                    ": a GPU schedule, which compiles for a cuda or opencl target, not " + target_.str());
    }
    serial_loop(n->var, b_.getInt64(0), b_.getInt64(n->extent), n->body);
  }

  void serial_loop(const ir::Var& var, llvm::Value* begin, llvm::Value* end, const Stmt& body) {
    llvm::Function* fn = state_.function;
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(ctx_, var.name() + ".header", fn);
    auto* body_block = llvm::BasicBlock::Create(ctx_, var.name() + ".body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, var.name() + ".exit", fn);
    b_.CreateBr(header);

    b_.SetInsertPoint(header);
    llvm::PHINode* index = b_.CreatePHI(b_.getInt64Ty(), 2, var.name());
    index->addIncoming(begin, preheader);
    b_.CreateCondBr(b_.CreateICmpSLT(index, end), body_block, exit);

    b_.SetInsertPoint(body_block);
    bind_var(var.node(), index, [&] { stmt(body); });
    index->addIncoming(b_.CreateAdd(index, b_.getInt64(1), "", true, true), b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
  }

  void unrolled_loop(const tir::ForNode* n) {
    unrolled_copies_ *= n->extent;
    for (int64_t i = 0; i < n->extent; ++i) bind_var(n->var.node(), b_.getInt64(i), [&] { stmt(n->body); });
    unrolled_copies_ /= n->extent;
  }

  // The body on vectors of `extent` lanes; the loop variable is <0, 1, ...,
  // extent-1>. An extent that is no power of two runs as pieces that are (24
  // lanes: 16, then 8), the lanes being independent: LLVM legalises a
  // <24 x float> element by element (a RegNet block of 24 channels ran at 2.6
  // GFLOPS that way). A last piece of one lane is scalar code.
  void vector_loop(const tir::ForNode* n) {
    for (int64_t first = 0; first < n->extent;) {
      int64_t width = 1;
      while (width * 2 <= n->extent - first) width *= 2;
      if (width == 1) {
        bind_var(n->var.node(), b_.getInt64(first), [&] { stmt(n->body); });
      } else {
        std::vector<llvm::Constant*> lane_ids;
        for (int64_t i = 0; i < width; ++i) lane_ids.push_back(b_.getInt64(first + i));
        lanes_ = static_cast<unsigned>(width);
        vector_var_ = n->var.node();
        vector_first_ = first;
        bind_var(vector_var_, llvm::ConstantVector::get(lane_ids), [&] { stmt(n->body); });
        lanes_ = 1;
        vector_var_ = nullptr;
        vector_first_ = 0;
      }
      first += width;
    }
  }

  // A DotProduct loop (codegen/byte_dot_product.h), its lanes in pieces of
  // the target's dot-product vector (then halves, down to one lane): per
  // piece, the accumulators, the 4 unsigned bytes in every lane, the lanes'
  // signed bytes side by side, one dot-product step.
  bool byte_dot_product_loop(const tir::ForNode* n) {
    const std::optional<ByteDotProduct> m = match_byte_dot_product(*n);
    if (!m) return false;
    const tir::StoreNode& store = *m->store;
    const ir::TensorLoadNode& u = *m->unsigned_bytes;
    const ir::TensorLoadNode& s = *m->signed_bytes;
    llvm::Type* i32 = b_.getInt32Ty();
    llvm::Type* i8 = b_.getInt8Ty();
    const int64_t widest = std::max(1, target_.byte_dot_bits / 32);
    bind_var(n->var.node(), b_.getInt64(0), [&] {
      for (int64_t first = 0; first < m->lanes->extent;) {
        int64_t width = widest;
        while (width > m->lanes->extent - first) width /= 2;
        bind_var(m->lanes->var.node(), b_.getInt64(first), [&] {
          auto* lanes = llvm::FixedVectorType::get(i32, static_cast<unsigned>(width));
          llvm::Value* acc_ptr =
              b_.CreateInBoundsGEP(i32, buffer(store.buffer), flat_offset(store.indices, store.buffer->shape));
          llvm::Value* acc = b_.CreateAlignedLoad(lanes, acc_ptr, llvm::Align(4));
          llvm::Value* u_ptr = b_.CreateInBoundsGEP(i8, buffer(u.tensor), flat_offset(u.indices, u.tensor->shape));
          llvm::Value* u4 = b_.CreateVectorSplat(static_cast<unsigned>(width), b_.CreateAlignedLoad(i32, u_ptr, llvm::Align(1)));
          llvm::Value* s_ptr = b_.CreateInBoundsGEP(i8, buffer(s.tensor), flat_offset(s.indices, s.tensor->shape));
          llvm::Value* s4 = b_.CreateAlignedLoad(lanes, s_ptr, llvm::Align(1));
          b_.CreateAlignedStore(dot_bytes(acc, u4, s4, m->centered), acc_ptr, llvm::Align(4));
        });
        first += width;
      }
    });
    return true;
  }

  // acc + the sums of 4 products of u's unsigned bytes and s's signed bytes
  // in each 32-bit lane (acc, u, s: <W x i32>), by the target's instruction
  // where W fills one of its vectors. Centered (codegen/byte_dot_product.h):
  // of (u - 128) and max(s, -127), which the instruction takes as
  // |u - 128| (unsigned) times s negated where u - 128 is: the same products,
  // within +-128 * 127, so pmaddubsw's pairs do not saturate.
  llvm::Value* dot_bytes(llvm::Value* acc, llvm::Value* u, llvm::Value* s, bool centered) {
    const unsigned width = lanes_of(acc);
    const unsigned bits = width * 32;
    const bool fits = bits <= static_cast<unsigned>(target_.byte_dot_bits) && bits >= 128;
    auto* bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), width * 4);
    llvm::Value* ub = b_.CreateBitCast(u, bytes);
    llvm::Value* sb = b_.CreateBitCast(s, bytes);
    llvm::Value* centered_u = nullptr;  // u - 128, signed
    if (centered) {
      centered_u = b_.CreateXor(ub, llvm::ConstantInt::get(bytes, 0x80));
      sb = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, sb, llvm::ConstantInt::getSigned(bytes, -127));
      if (fits && !target_.byte_dot.empty()) {
        ub = b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, centered_u, b_.getFalse());
        sb = negated_where_negative(sb, centered_u);
      }
    }
    if (target_.byte_dot == "vnni" && fits) {
      const llvm::Intrinsic::ID id = bits == 512   ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                                     : bits == 256 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                                   : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
      return b_.CreateIntrinsic(id, {}, {acc, b_.CreateBitCast(ub, u->getType()), b_.CreateBitCast(sb, s->getType())});
    }
    if (target_.byte_dot == "pmaddubsw" && fits) {
      const llvm::Intrinsic::ID pairs = bits == 512   ? llvm::Intrinsic::x86_avx512_pmaddubs_w_512
                                        : bits == 256 ? llvm::Intrinsic::x86_avx2_pmadd_ub_sw
                                                      : llvm::Intrinsic::x86_ssse3_pmadd_ub_sw_128;
      const llvm::Intrinsic::ID quads = bits == 512   ? llvm::Intrinsic::x86_avx512_pmaddw_d_512
                                        : bits == 256 ? llvm::Intrinsic::x86_avx2_pmadd_wd
                                                      : llvm::Intrinsic::x86_sse2_pmadd_wd;
      auto* shorts = llvm::FixedVectorType::get(b_.getInt16Ty(), width * 2);
      llvm::Value* p = b_.CreateIntrinsic(pairs, {}, {ub, sb});
      llvm::Value* q = b_.CreateIntrinsic(quads, {}, {p, llvm::ConstantInt::get(shorts, 1)});
      return b_.CreateAdd(acc, q);
    }
    // Widened: the 4 W products in 32 bits, then the sum of each lane's four.
    auto* words = llvm::FixedVectorType::get(b_.getInt32Ty(), width * 4);
    llvm::Value* products =
        b_.CreateMul(centered ? b_.CreateSExt(centered_u, words) : b_.CreateZExt(ub, words), b_.CreateSExt(sb, words));
    llvm::Value* sum = acc;
    for (unsigned k = 0; k < 4; ++k) {
      std::vector<int> picks;
      for (unsigned lane = 0; lane < width; ++lane) picks.push_back(static_cast<int>(lane * 4 + k));
      sum = b_.CreateAdd(sum, b_.CreateShuffleVector(products, picks));
    }
    return sum;
  }

  // The bytes of s negated where those of `sign` are negative (and, by
  // psignb, zeroed where they are zero, which the product with |sign| is
  // anyway): psignb up to 256 bits; AVX-512 has none, a compare and select.
  llvm::Value* negated_where_negative(llvm::Value* s, llvm::Value* sign) {
    const unsigned bits = lanes_of(s) * 8;
    if (bits <= 256)
      return b_.CreateIntrinsic(
          bits == 256 ? llvm::Intrinsic::x86_avx2_psign_b : llvm::Intrinsic::x86_ssse3_psign_b_128, {}, {s, sign});
    return b_.CreateSelect(b_.CreateICmpSLT(sign, llvm::Constant::getNullValue(sign->getType())), b_.CreateNeg(s), s);
  }

  // The body becomes void body(closure, begin, end); the values it needs from
  // here (buffers, enclosing loop variables) travel in a struct on the stack.
  void parallel_loop(const tir::ForNode* n) {
    std::vector<ir::Tensor> buffers;
    std::vector<const ir::VarNode*> vars;
    collect_free_values(n->body, &buffers, &vars);

    std::string name = kernel_name_ + ".parallel" + std::to_string(parallel_count_++);
    state_.inside_parallel = true;
    llvm::Function* impl = emit_function(name + ".body", buffers, vars, 2, [&](auto& range) {
      serial_loop(n->var, range[0], range[1], n->body);
    });
    state_.inside_parallel = false;

    std::vector<llvm::Type*> fields(buffers.size(), b_.getPtrTy());
    fields.insert(fields.end(), vars.size(), b_.getInt64Ty());
    auto* closure_type = llvm::StructType::get(ctx_, fields);

    // void name(ptr closure, i64 begin, i64 end): unpack and call the body.
    auto* trampoline_type =
        llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty()}, false);
    auto* trampoline = llvm::Function::Create(trampoline_type, llvm::Function::InternalLinkage, name, module_);
    add_attributes(trampoline);
    {
      llvm::IRBuilder<> tb(llvm::BasicBlock::Create(ctx_, "entry", trampoline));
      std::vector<llvm::Value*> args;
      for (unsigned i = 0; i < fields.size(); ++i) {
        args.push_back(tb.CreateLoad(fields[i], tb.CreateStructGEP(closure_type, trampoline->getArg(0), i)));
      }
      args.push_back(trampoline->getArg(1));
      args.push_back(trampoline->getArg(2));
      tb.CreateCall(impl, args);
      tb.CreateRetVoid();
    }

    llvm::Value* closure = entry_alloca(closure_type, "closure");
    for (unsigned i = 0; i < fields.size(); ++i) {
      llvm::Value* value = i < buffers.size() ? state_.buffers.at(buffers[i].get())
                                              : state_.vars.at(vars[i - buffers.size()]);
      b_.CreateStore(value, b_.CreateStructGEP(closure_type, closure, i));
    }
    llvm::Value* parallel_for = b_.CreateLoad(b_.getPtrTy(), parallel_for_global());
    auto* parallel_for_type = llvm::FunctionType::get(
        b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy(), b_.getInt64Ty()}, false);
    b_.CreateCall(parallel_for_type, parallel_for, {trampoline, closure, b_.getInt64(n->extent)});
  }

  // Buffers and variables bound here and used in s, in first-use order.
  void collect_free_values(const Stmt& s, std::vector<ir::Tensor>* buffers,
                           std::vector<const ir::VarNode*>* vars) {
    std::unordered_set<const void*> seen;
    auto add_buffer = [&](const ir::Tensor& t) {
      if (state_.buffers.count(t.get()) && seen.insert(t.get()).second) buffers->push_back(t);
    };
    auto visit_stmt = [&](const Stmt& x) {
      if (const auto* store = tir::as<tir::StoreNode>(x)) add_buffer(store->buffer);
    };
    auto visit_expr = [&](const Expr& root) {
      ir::post_order_visit(root, [&](const Expr& e) {
        if (const auto* load = e.as<ir::TensorLoadNode>()) add_buffer(load->tensor);
        if (const auto* var = e.as<ir::VarNode>()) {
          if (state_.vars.count(var) && seen.insert(var).second) vars->push_back(var);
        }
      });
    };
    tir::visit_stmts(s, visit_stmt, visit_expr);
  }

  llvm::GlobalVariable* parallel_for_global() { return pointer_global(kParallelForGlobal); }

  llvm::GlobalVariable* pointer_global(const char* name) {
    if (auto* g = module_.getNamedGlobal(name)) return g;
    // Default visibility: the loader finds it by name (dlsym or the JIT's lookup).
    // Weak: the kernels of a whole model, linked into one shared object, share it.
    return new llvm::GlobalVariable(module_, b_.getPtrTy(), false, llvm::GlobalValue::WeakAnyLinkage,
                                    llvm::ConstantPointerNull::get(b_.getPtrTy()), name);
  }

  // Allocas live in the entry block, where SROA and mem2reg look for them.
  llvm::AllocaInst* entry_alloca(llvm::Type* type, const std::string& name) {
    llvm::BasicBlock& entry = state_.function->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
    llvm::AllocaInst* a = eb.CreateAlloca(type, nullptr, name);
    a->setAlignment(llvm::Align(64));
    return a;
  }

  void allocate(const tir::AllocateNode* n) {
    const ir::Tensor& t = n->buffer;
    llvm::Type* elem = storage_type(t->dtype);
    int64_t count = std::max<int64_t>(t->num_elements(), 1);
    int64_t bytes = count * static_cast<int64_t>(module_.getDataLayout().getTypeAllocSize(elem));
    if (bytes <= kMaxStackAllocationBytes) {
      llvm::Value* ptr = entry_alloca(llvm::ArrayType::get(elem, count), t->name);
      bind_buffer(t, ptr, [&] { stmt(n->body); });
      return;
    }
    // From the runtime's workspace (reused between calls) when the loader set
    // its globals, else malloc. Bodies have no early exits, so freeing after
    // the body covers every path.
    auto* alloc_type = llvm::FunctionType::get(b_.getPtrTy(), {b_.getInt64Ty()}, false);
    auto* free_type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy()}, false);
    llvm::Value* alloc_fn = runtime_or(kWorkspaceAllocGlobal, module_.getOrInsertFunction("malloc", alloc_type));
    llvm::Value* ptr = b_.CreateCall(alloc_type, alloc_fn, {b_.getInt64(bytes)}, t->name);
    bind_buffer(t, ptr, [&] { stmt(n->body); });
    llvm::Value* free_fn = runtime_or(kWorkspaceFreeGlobal, module_.getOrInsertFunction("free", free_type));
    b_.CreateCall(free_type, free_fn, {ptr});
  }

  // The function the module global `name` points at, or `fallback` while it
  // is null.
  llvm::Value* runtime_or(const char* name, llvm::FunctionCallee fallback) {
    llvm::Value* pointer = b_.CreateLoad(b_.getPtrTy(), pointer_global(name));
    llvm::Value* unset = b_.CreateICmpEQ(pointer, llvm::ConstantPointerNull::get(b_.getPtrTy()));
    return b_.CreateSelect(unset, fallback.getCallee(), pointer);
  }

  void if_then_else(const tir::IfThenElseNode* n) {
    llvm::Value* cond = convert(expr(n->cond), b_.getInt1Ty());
    if (lanes_ > 1) {
      // Inside a vector loop a guard becomes a lane mask on loads and stores.
      cond = widen(cond, lanes_);
      llvm::Value* outer = mask_;
      mask_ = outer ? b_.CreateAnd(outer, cond) : cond;
      stmt(n->then_case);
      if (n->else_case) {
        llvm::Value* inverse = b_.CreateNot(cond);
        mask_ = outer ? b_.CreateAnd(outer, inverse) : inverse;
        stmt(n->else_case);
      }
      mask_ = outer;
      return;
    }
    llvm::Function* fn = state_.function;
    auto* then_block = llvm::BasicBlock::Create(ctx_, "then", fn);
    auto* else_block = n->else_case ? llvm::BasicBlock::Create(ctx_, "else", fn) : nullptr;
    auto* merge = llvm::BasicBlock::Create(ctx_, "endif", fn);
    b_.CreateCondBr(cond, then_block, else_block ? else_block : merge);
    b_.SetInsertPoint(then_block);
    stmt(n->then_case);
    b_.CreateBr(merge);
    if (else_block) {
      b_.SetInsertPoint(else_block);
      stmt(n->else_case);
      b_.CreateBr(merge);
    }
    b_.SetInsertPoint(merge);
  }

  void store(const tir::StoreNode* n) {
    llvm::Type* elem = storage_type(n->buffer->dtype);
    llvm::Value* value = convert(expr(n->value), elem);
    llvm::Value* base = buffer(n->buffer);
    if (lanes_ == 1) {
      b_.CreateStore(value, b_.CreateInBoundsGEP(elem, base, flat_offset(n->indices, n->buffer->shape)));
      return;
    }
    value = widen(value, lanes_);
    llvm::Value* mask = mask_ ? mask_ : all_lanes();
    if (access_stride(n->indices, n->buffer->shape, vector_var_) == 1) {
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base, offset_of_lane0(n->indices, n->buffer->shape));
      if (mask_) b_.CreateMaskedStore(value, ptr, element_align(elem), mask);
      else b_.CreateAlignedStore(value, ptr, element_align(elem));
      return;
    }
    llvm::Value* ptrs = b_.CreateInBoundsGEP(elem, base, widen(flat_offset(n->indices, n->buffer->shape), lanes_));
    b_.CreateMaskedScatter(value, ptrs, element_align(elem), mask);
  }

  // --- expressions ---

  llvm::Value* expr(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm: return b_.getInt64(e.as<ir::IntImmNode>()->value);
      case ExprKind::FloatImm:
        return llvm::ConstantFP::get(b_.getFloatTy(), e.as<ir::FloatImmNode>()->value);
      case ExprKind::Var: {
        auto it = state_.vars.find(e.as<ir::VarNode>());
        if (it == state_.vars.end()) throw Error("codegen: unbound variable '" + e.as<ir::VarNode>()->name + "'");
        return it->second;
      }
      case ExprKind::Not: return b_.CreateNot(convert(expr(e.as<ir::NotNode>()->a), b_.getInt1Ty()));
      case ExprKind::Select: return select(e.as<ir::SelectNode>());
      case ExprKind::Cast: return convert(expr(e.as<ir::CastNode>()->value), scalar_type(e.dtype()));
      case ExprKind::Call: return call(e.as<ir::CallNode>());
      case ExprKind::TensorLoad: return load(e.as<ir::TensorLoadNode>());
      case ExprKind::Reduce:
        throw Error("codegen: a reduction reached code generation (lowering should have removed it)");
      default: return binary(e.as<ir::BinaryNode>());
    }
  }

  llvm::Value* binary(const ir::BinaryNode* n) {
    if (n->kind == ExprKind::Add) {
      if (llvm::Value* fused = multiply_add(n->a, n->b)) return fused;
      if (llvm::Value* fused = multiply_add(n->b, n->a)) return fused;
    }
    llvm::Value* a = expr(n->a);
    llvm::Value* b = expr(n->b);
    if (n->kind == ExprKind::And || n->kind == ExprKind::Or) {
      a = convert(a, b_.getInt1Ty());
      b = convert(b, b_.getInt1Ty());
    }
    unify(a, b);
    bool is_float = a->getType()->isFPOrFPVectorTy();
    switch (n->kind) {
      case ExprKind::Add: return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, true);
      case ExprKind::Sub: return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, true);
      case ExprKind::Mul: return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, true);
      case ExprKind::Div: return is_float ? b_.CreateFDiv(a, b) : b_.CreateSDiv(a, b);
      case ExprKind::Mod: return is_float ? b_.CreateFRem(a, b) : b_.CreateSRem(a, b);
      case ExprKind::FloorDiv: return is_float ? floor(b_.CreateFDiv(a, b)) : floor_div(a, b);
      case ExprKind::FloorMod:
        return is_float ? b_.CreateFSub(a, b_.CreateFMul(floor(b_.CreateFDiv(a, b)), b)) : floor_mod(a, b);
      case ExprKind::Min:
        return b_.CreateSelect(is_float ? b_.CreateFCmpOLT(a, b) : b_.CreateICmpSLT(a, b), a, b);
      case ExprKind::Max:
        return b_.CreateSelect(is_float ? b_.CreateFCmpOGT(a, b) : b_.CreateICmpSGT(a, b), a, b);
      case ExprKind::EQ: return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
      case ExprKind::NE: return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
      case ExprKind::LT: return is_float ? b_.CreateFCmpOLT(a, b) : b_.CreateICmpSLT(a, b);
      case ExprKind::LE: return is_float ? b_.CreateFCmpOLE(a, b) : b_.CreateICmpSLE(a, b);
      case ExprKind::GT: return is_float ? b_.CreateFCmpOGT(a, b) : b_.CreateICmpSGT(a, b);
      case ExprKind::GE: return is_float ? b_.CreateFCmpOGE(a, b) : b_.CreateICmpSGE(a, b);
      case ExprKind::And: return b_.CreateAnd(a, b);
      case ExprKind::Or: return b_.CreateOr(a, b);
      default: throw Error("codegen: unsupported expression kind " + ir::kind_name(n->kind));
    }
  }

  // product + addend as llvm.fmuladd when product is a float multiplication.
  llvm::Value* multiply_add(const Expr& product, const Expr& addend) {
    if (product.kind() != ExprKind::Mul || product.dtype() != DType::Float32) return nullptr;
    const auto* mul = product.as<ir::BinaryNode>();
    llvm::Value* x = convert(expr(mul->a), b_.getFloatTy());
    llvm::Value* y = convert(expr(mul->b), b_.getFloatTy());
    llvm::Value* z = convert(expr(addend), b_.getFloatTy());
    unsigned lanes = std::max({lanes_of(x), lanes_of(y), lanes_of(z)});
    x = widen(x, lanes), y = widen(y, lanes), z = widen(z, lanes);
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, z});
  }

  // Integer division rounding towards negative infinity, from the truncating one.
  llvm::Value* floor_div(llvm::Value* a, llvm::Value* b) {
    llvm::Value* q = b_.CreateSDiv(a, b);
    return b_.CreateSub(q, b_.CreateZExt(needs_floor_adjust(a, b), q->getType()));
  }
  llvm::Value* floor_mod(llvm::Value* a, llvm::Value* b) {
    llvm::Value* r = b_.CreateSRem(a, b);
    return b_.CreateSelect(needs_floor_adjust(a, b), b_.CreateAdd(r, b), r);
  }
  // Truncation and flooring differ when the remainder is non-zero and its sign
  // differs from the divisor's.
  llvm::Value* needs_floor_adjust(llvm::Value* a, llvm::Value* b) {
    llvm::Value* r = b_.CreateSRem(a, b);
    llvm::Value* zero = llvm::Constant::getNullValue(r->getType());
    llvm::Value* signs_differ = b_.CreateXor(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero));
    return b_.CreateAnd(b_.CreateICmpNE(r, zero), signs_differ);
  }

  llvm::Value* floor(llvm::Value* x) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); }

  llvm::Value* select(const ir::SelectNode* n) {
    llvm::Value* cond = convert(expr(n->cond), b_.getInt1Ty());
    bool arms_load = ir::contains_load(n->true_value) || ir::contains_load(n->false_value);
    if (!arms_load) {
      llvm::Value* t = expr(n->true_value);
      llvm::Value* f = expr(n->false_value);
      unify(t, f);
      if (lanes_of(cond) > lanes_of(t)) t = widen(t, lanes_of(cond)), f = widen(f, lanes_of(cond));
      if (lanes_of(t) > lanes_of(cond) && lanes_of(cond) > 1) cond = widen(cond, lanes_of(t));
      return b_.CreateSelect(cond, t, f);
    }
    // An arm may read out of bounds where it is not selected (e.g. padding):
    // evaluate each arm only where it is chosen.
    if (lanes_of(cond) > 1) {
      llvm::Value* outer = mask_;
      mask_ = outer ? b_.CreateAnd(outer, cond) : cond;
      llvm::Value* t = expr(n->true_value);
      llvm::Value* inverse = b_.CreateNot(cond);
      mask_ = outer ? b_.CreateAnd(outer, inverse) : inverse;
      llvm::Value* f = expr(n->false_value);
      mask_ = outer;
      unify(t, f);
      return b_.CreateSelect(cond, widen(t, lanes_of(cond)), widen(f, lanes_of(cond)));
    }
    llvm::Function* fn = state_.function;
    auto* then_block = llvm::BasicBlock::Create(ctx_, "select.true", fn);
    auto* else_block = llvm::BasicBlock::Create(ctx_, "select.false", fn);
    auto* merge = llvm::BasicBlock::Create(ctx_, "select.end", fn);
    b_.CreateCondBr(cond, then_block, else_block);
    b_.SetInsertPoint(then_block);
    llvm::Value* t = widen(expr(n->true_value), lanes_);
    llvm::BasicBlock* t_end = b_.GetInsertBlock();
    b_.SetInsertPoint(else_block);
    llvm::Value* f = widen(expr(n->false_value), lanes_);
    llvm::BasicBlock* f_end = b_.GetInsertBlock();
    // Both arms must agree on a type; convert at the end of each arm.
    llvm::Type* common = common_scalar_type(t, f);
    b_.SetInsertPoint(t_end);
    t = convert(t, common);
    b_.CreateBr(merge);
    b_.SetInsertPoint(f_end);
    f = convert(f, common);
    b_.CreateBr(merge);
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
    phi->addIncoming(t, t_end);
    phi->addIncoming(f, f_end);
    return phi;
  }

  // exp in vector registers: llvm.exp of a vector becomes one libm call per
  // lane. exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2
  // (ln 2 in two parts, so r is exact), |r| <= ln 2 / 2, e^r by a degree-7
  // polynomial (Cephes' expf coefficients: relative error ~1e-7), 2^n made
  // in the exponent bits. Below -87.33 the result is 0 (libm gives
  // denormals), above 88.72 +inf, NaN stays NaN.
  llvm::Value* fast_exp(llvm::Value* x) {
    llvm::Type* ft = x->getType();
    llvm::Type* it = ft->getWithNewType(b_.getInt32Ty());
    auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
    auto fma = [&](llvm::Value* a, llvm::Value* m, llvm::Value* add) {
      return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {a, m, add});
    };
    const double lo = -87.33654, hi = 88.72283;
    llvm::Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, c(lo));
    xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, xc, c(hi));
    llvm::Value* n = b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(xc, c(1.44269504088896341)));
    n = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, n, c(127.0));  // 2^128 is no float
    llvm::Value* r = fma(n, c(-0.693359375), xc);
    r = fma(n, c(2.12194440e-4), r);
    llvm::Value* p = c(1.9875691500e-4);
    for (double k : {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1})
      p = fma(p, r, c(k));
    llvm::Value* er = fma(p, b_.CreateFMul(r, r), b_.CreateFAdd(r, c(1.0)));
    llvm::Value* bits = b_.CreateShl(b_.CreateAdd(b_.CreateFPToSI(n, it), llvm::ConstantInt::get(it, 127)), 23);
    llvm::Value* e = b_.CreateFMul(er, b_.CreateBitCast(bits, ft));
    e = b_.CreateSelect(b_.CreateFCmpOLT(x, c(lo)), c(0.0), e);
    e = b_.CreateSelect(b_.CreateFCmpOGT(x, c(hi)), c(std::numeric_limits<float>::infinity()), e);
    return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, e);
  }

  // x P(x^2) / Q(x^2), x first clamped to [-bound, bound] and the result to
  // [-1, 1]: erf and tanh in vector registers (libm's erff and tanhf are one
  // call per lane), odd functions that are +-1 to float precision beyond
  // `bound`. p and q from the lowest power; the fits and their float32
  // errors come from scripts/fit_odd_rational.py. The clamps are compares
  // and selects, not minnum / maxnum, so NaN passes through (and stays
  // NaN); +-inf clamp to +-bound and give +-1.
  llvm::Value* odd_rational(llvm::Value* x, double bound, std::initializer_list<double> p,
                            std::initializer_list<double> q) {
    llvm::Type* ft = x->getType();
    auto c = [&](double v) { return llvm::ConstantFP::get(ft, v); };
    auto clamp = [&](llvm::Value* v, double limit) {
      v = b_.CreateSelect(b_.CreateFCmpOGT(v, c(limit)), c(limit), v);
      return b_.CreateSelect(b_.CreateFCmpOLT(v, c(-limit)), c(-limit), v);
    };
    auto horner = [&](llvm::Value* t, std::initializer_list<double> coefficients) {
      auto k = std::rbegin(coefficients);
      llvm::Value* sum = c(*k);
      for (++k; k != std::rend(coefficients); ++k)
        sum = b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ft}, {sum, t, c(*k)});
      return sum;
    };
    llvm::Value* xc = clamp(x, bound);
    llvm::Value* t = b_.CreateFMul(xc, xc);
    llvm::Value* y = b_.CreateFDiv(b_.CreateFMul(xc, horner(t, p)), horner(t, q));
    return clamp(y, 1.0);
  }

  // Degrees 4/4 to |x| <= 9: |error| <= 3.4e-7 in float32, relative error
  // <= 1.7e-7 near 0. The exp-based 1 - 2 / (e^2|x| + 1) it replaces took
  // 34 instructions a vector to these 20 (the loop of `tessera op tanh`),
  // and lost small arguments' relative precision (3 % off at x = 2.7e-6,
  // 0 for 1e-30).
  llvm::Value* fast_tanh(llvm::Value* x) {
    return odd_rational(x, 9.0,
                        {1.0, 0.13381008803844452, 0.003495568409562111, 2.060875885945279e-05, 1.3354225281148047e-08},
                        {1.0, 0.4671432375907898, 0.025876907631754875, 0.0003285602724645287, 7.776376946821983e-07});
  }

  // Degrees 6/4 to |x| <= 3.92: |error| <= 3.6e-7 in float32, relative
  // error <= 1.9e-7 near 0. Abramowitz and Stegun's 7.1.26 times an exp,
  // which it replaces, took 44 instructions a vector to these 22, and as
  // 1 - (a value near 1) was 15 % off at x = 1e-5 and 0 for 1e-30. A GELU
  // over 3136x384 on 2 Zen 4 cores ran 0.45-0.55 ms with it, 0.24-0.30 now.
  llvm::Value* fast_erf(llvm::Value* x) {
    return odd_rational(x, 3.92,
                        {1.1283791065216064, 0.19992303848266602, 0.05057310685515404, 0.0037015252746641636,
                         0.00014184691826812923, -1.9577901184675284e-06, 1.9923740879335128e-08},
                        {1.0, 0.5105088353157043, 0.11499777436256409, 0.014353054575622082, 0.0009560135076753795});
  }

  llvm::Value* call(const ir::CallNode* n) {
    const std::string& f = n->name;
    if (f == "pow") {
      if (n->args.size() != 2) throw Error("codegen: call to 'pow' expects two arguments");
      llvm::Value* x = convert(expr(n->args[0]), b_.getFloatTy());
      llvm::Value* y = convert(expr(n->args[1]), b_.getFloatTy());
      if (lanes_of(x) != lanes_of(y)) x = widen(x, lanes_), y = widen(y, lanes_);
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);  // libm's powf, lane by lane
    }
    if (n->args.size() != 1) throw Error("codegen: call to '" + n->name + "' expects one argument");
    llvm::Value* x = convert(expr(n->args[0]), b_.getFloatTy());
    if (f == "exp") return fast_exp(x);
    if (f == "log") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::log, x);
    if (f == "sqrt") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    if (f == "fabs") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    if (f == "round") return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
    if (f == "sigmoid") {
      llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
      llvm::Value* e = fast_exp(b_.CreateFNeg(x));
      return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
    }
    if (f == "tanh") return fast_tanh(x);
    if (f == "erf") return fast_erf(x);
    throw Error("codegen: unknown function '" + f + "'");
  }

  llvm::Value* load(const ir::TensorLoadNode* n) {
    llvm::Type* elem = storage_type(n->tensor->dtype);
    llvm::Value* base = buffer(n->tensor);
    llvm::Value* result;
    if (lanes_ == 1) {
      result = b_.CreateLoad(elem, b_.CreateInBoundsGEP(elem, base, flat_offset(n->indices, n->tensor->shape)));
      return widen_loaded(result, n->tensor->dtype);
    }
    auto stride = access_stride(n->indices, n->tensor->shape, vector_var_);
    auto* vector_type = llvm::FixedVectorType::get(elem, lanes_);
    if (stride == 0 && !mask_) {
      // The same element for every lane: one scalar load, broadcast on use.
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base, offset_of_lane0(n->indices, n->tensor->shape));
      result = b_.CreateLoad(elem, ptr);
    } else if (stride == 1) {
      llvm::Value* ptr = b_.CreateInBoundsGEP(elem, base, offset_of_lane0(n->indices, n->tensor->shape));
      if (mask_) {
        result = b_.CreateMaskedLoad(vector_type, ptr, element_align(elem), mask_, llvm::Constant::getNullValue(vector_type));
      } else {
        result = b_.CreateAlignedLoad(vector_type, ptr, element_align(elem));
      }
    } else {
      llvm::Value* offsets = widen(flat_offset(n->indices, n->tensor->shape), lanes_);
      llvm::Value* ptrs = b_.CreateInBoundsGEP(elem, base, offsets);
      result = b_.CreateMaskedGather(vector_type, ptrs, element_align(elem), mask_ ? mask_ : all_lanes(),
                                     llvm::Constant::getNullValue(vector_type));
    }
    return widen_loaded(result, n->tensor->dtype);
  }

  // Row-major offset of indices into shape (a vector when an index varies by lane).
  // The constant parts of the indices (`ow.0*3 + 2` after unrolling) are
  // added last, as one constant: alias analysis then sees the elements of an
  // unrolled tile as one base plus distinct constants, which lets LLVM keep
  // accumulators that live in a stack buffer in registers across a loop.
  //
  // Two neighbouring indices floordiv(e, c), floormod(e, c) over an inner
  // extent c address element e of the two dimensions merged: a 1x1
  // convolution over flattened positions reads its 5-D input so. They are
  // emitted as e, without the divisions.
  llvm::Value* flat_offset(std::vector<Expr> indices, std::vector<int64_t> shape) {
    if (indices.size() != shape.size()) throw Error("codegen: index count does not match the buffer's rank");
    for (size_t d = 0; d + 1 < indices.size(); ++d) {
      const auto* div = indices[d].as<ir::BinaryNode>();
      const auto* mod = indices[d + 1].as<ir::BinaryNode>();
      int64_t c = 0;
      if (indices[d].kind() != ExprKind::FloorDiv || indices[d + 1].kind() != ExprKind::FloorMod ||
          !ir::is_const_int(div->b, &c) || c != shape[d + 1] || !ir::is_const_int(mod->b, c) ||
          !ir::structural_equal(div->a, mod->a))
        continue;
      const Expr merged = div->a;
      indices.erase(indices.begin() + d, indices.begin() + d + 2);
      indices.insert(indices.begin() + d, merged);
      shape[d] *= shape[d + 1];
      shape.erase(shape.begin() + d + 1);
    }
    llvm::Value* offset = b_.getInt64(0);
    int64_t constant = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      constant *= shape[d];
      llvm::Value* extent = b_.getInt64(shape[d]);
      unify(offset, extent);
      llvm::Value* scaled = b_.CreateMul(offset, extent, "", false, true);
      Expr variable = indices[d];
      int64_t c = 0;
      if (ir::is_const_int(variable, &c)) {
        constant += c;
        offset = scaled;
        continue;
      }
      if (variable.kind() == ExprKind::Add) {
        const auto* add = variable.as<ir::BinaryNode>();
        if (ir::is_const_int(add->b, &c)) {
          constant += c;
          variable = add->a;
        }
      }
      llvm::Value* index = convert(expr(variable), b_.getInt64Ty());
      unify(scaled, index);
      offset = b_.CreateAdd(scaled, index, "", false, true);
    }
    if (constant == 0) return offset;
    llvm::Value* c = b_.getInt64(constant);
    unify(offset, c);
    return b_.CreateAdd(offset, c, "", false, true);
  }

  // The offset of the first lane, a scalar (the vector loop variable taken as
  // the piece's first value: 0, or 16 for the second piece of 24 lanes).
  llvm::Value* offset_of_lane0(const std::vector<Expr>& indices, const std::vector<int64_t>& shape) {
    llvm::Value* vector_value = state_.vars[vector_var_];
    unsigned lanes = lanes_;
    state_.vars[vector_var_] = b_.getInt64(vector_first_);
    lanes_ = 1;
    llvm::Value* offset = flat_offset(indices, shape);
    lanes_ = lanes;
    state_.vars[vector_var_] = vector_value;
    return offset;
  }

  // --- values and types ---

  llvm::Type* scalar_type(DType t) {
    switch (t) {
      case DType::Float32: return b_.getFloatTy();
      case DType::Int64: return b_.getInt64Ty();
      case DType::Bool: return b_.getInt1Ty();
      case DType::Float16: return b_.getFloatTy();  // storage types: arithmetic in fp32 / int32
      case DType::Int8: return b_.getInt32Ty();
      case DType::UInt8: return b_.getInt32Ty();
      case DType::Int32: return b_.getInt32Ty();
    }
    return b_.getFloatTy();
  }
  // How an element sits in memory (Bool, Int8 and UInt8 as a byte, Float16 as a half).
  llvm::Type* storage_type(DType t) {
    if (t == DType::Bool || t == DType::Int8 || t == DType::UInt8) return b_.getInt8Ty();
    if (t == DType::Float16) return b_.getHalfTy();
    return scalar_type(t);
  }
  // A loaded element (scalar or vector) in its compute type: an unsigned byte
  // zero-extended, every other integer sign-extended.
  llvm::Value* widen_loaded(llvm::Value* v, DType t) {
    if (t != DType::UInt8) return convert(v, scalar_type(t));
    llvm::Type* i32 = b_.getInt32Ty();
    return b_.CreateZExt(v, lanes_of(v) > 1 ? llvm::FixedVectorType::get(i32, lanes_of(v)) : i32);
  }

  // The alignment vector accesses may assume: an element's (half, byte), at most 4.
  static llvm::Align element_align(llvm::Type* elem) {
    return llvm::Align(std::min<uint64_t>(4, std::max<uint64_t>(1, elem->getPrimitiveSizeInBits() / 8)));
  }

  static unsigned lanes_of(llvm::Value* v) {
    auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
    return vt ? vt->getNumElements() : 1;
  }
  llvm::Value* widen(llvm::Value* v, unsigned lanes) {
    return lanes > 1 && lanes_of(v) == 1 ? b_.CreateVectorSplat(lanes, v) : v;
  }
  llvm::Value* all_lanes() { return llvm::ConstantInt::getTrue(llvm::FixedVectorType::get(b_.getInt1Ty(), lanes_)); }

  // float beats i64 beats i1 (mixed operands come from literals like x * 2).
  llvm::Type* common_scalar_type(llvm::Value* a, llvm::Value* b) {
    llvm::Type* ta = a->getType()->getScalarType();
    llvm::Type* tb = b->getType()->getScalarType();
    if (ta->isFloatTy() || tb->isFloatTy()) return b_.getFloatTy();
    return ta->getIntegerBitWidth() >= tb->getIntegerBitWidth() ? ta : tb;
  }
  // Brings both operands to one element type and one lane count.
  void unify(llvm::Value*& a, llvm::Value*& b) {
    llvm::Type* common = common_scalar_type(a, b);
    a = convert(a, common), b = convert(b, common);
    unsigned lanes = std::max(lanes_of(a), lanes_of(b));
    a = widen(a, lanes), b = widen(b, lanes);
  }

  // Converts the elements of v (scalar or vector) to `to`.
  llvm::Value* convert(llvm::Value* v, llvm::Type* to) {
    llvm::Type* from = v->getType()->getScalarType();
    if (from == to) return v;
    llvm::Type* target = lanes_of(v) > 1 ? llvm::FixedVectorType::get(to, lanes_of(v)) : to;
    if (from->isFloatingPointTy() && to->isFloatingPointTy())  // half storage: widened on load, rounded on store
      return from->getPrimitiveSizeInBits() < to->getPrimitiveSizeInBits() ? b_.CreateFPExt(v, target)
                                                                            : b_.CreateFPTrunc(v, target);
    if (from->isFloatTy()) {
      if (to->isIntegerTy(1)) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
      return b_.CreateFPToSI(v, target);
    }
    if (to->isFloatTy()) return from->isIntegerTy(1) ? b_.CreateUIToFP(v, target) : b_.CreateSIToFP(v, target);
    if (to->isIntegerTy(1)) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    if (from->isIntegerTy(1)) return b_.CreateZExt(v, target);
    return b_.CreateSExtOrTrunc(v, target);
  }

  llvm::Value* buffer(const ir::Tensor& t) {
    auto it = state_.buffers.find(t.get());
    if (it == state_.buffers.end()) throw Error("codegen: buffer '" + t->name + "' is neither an argument nor allocated");
    return it->second;
  }

  template <class F> void bind_var(const ir::VarNode* var, llvm::Value* value, const F& body) {
    auto previous = state_.vars.find(var);
    llvm::Value* shadowed = previous == state_.vars.end() ? nullptr : previous->second;
    state_.vars[var] = value;
    body();
    if (shadowed) state_.vars[var] = shadowed;
    else state_.vars.erase(var);
  }
  template <class F> void bind_buffer(const ir::Tensor& t, llvm::Value* ptr, const F& body) {
    state_.buffers[t.get()] = ptr;
    body();
    state_.buffers.erase(t.get());
  }

  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  Target target_;
  std::string kernel_name_;
  int parallel_count_ = 0;
  FunctionState state_;
  // Inside a vector loop: its width, its variable, and the active lanes (null: all).
  unsigned lanes_ = 1;
  const ir::VarNode* vector_var_ = nullptr;
  int64_t vector_first_ = 0;  // the value of vector_var_'s first lane
  int64_t unrolled_copies_ = 1;  // product of the extents of the unrolled loops around
  llvm::Value* mask_ = nullptr;
};

}  // namespace

void emit_kernel(llvm::Module& module, const Target& target, const tir::LoweredFunc& f) {
  KernelEmitter(module, target).emit(f);
}

}  // namespace tessera::codegen
