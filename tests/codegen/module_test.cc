#include "codegen/module.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "kernel_test_util.h"
#include "runtime/thread_pool.h"
#include "tessera/error.h"

namespace tessera::codegen {
namespace {

using namespace testing;  // NOLINT
using runtime::NDArray;

// C[i] = A[i] * factor, with a parallel outer loop.
tir::LoweredFunc scale_kernel(float factor) {
  Tensor A = ir::placeholder({4, 32}, "A"), C = ir::placeholder({4, 32}, "C");
  Var i("i"), j("j");
  Stmt body = loop(i, 4, loop(j, 32, tir::make_store(C, {i, j}, at(A, {i, j}) * factor)), ForKind::Parallel);
  return kernel({A, C}, body);
}

void call(const Module& module, NDArray& a, NDArray& c) {
  void* args[] = {a.data(), c.data()};
  EXPECT_EQ(module.function("kernel")(args), 0);
}

TEST(CodegenModule, ObjectModulesWithTheSameKernelNameCoexist) {
  runtime::set_num_threads(2);
  Module twice = Module::load_object(compile_to_object(scale_kernel(2.0f), Target::host()));
  Module thrice = Module::load_object(compile_to_object(scale_kernel(3.0f), Target::host()));
  NDArray a({4, 32}), c2({4, 32}), c3({4, 32});
  a.fill_random(1);
  call(twice, a, c2);
  call(thrice, a, c3);
  for (int64_t x = 0; x < a.size(); ++x) {
    ASSERT_FLOAT_EQ(c2[x], a[x] * 2.0f);
    ASSERT_FLOAT_EQ(c3[x], a[x] * 3.0f);
  }
  runtime::set_num_threads(0);
}

TEST(CodegenModule, MissingFunctionIsAnError) {
  Module m = Module::load_object(compile_to_object(scale_kernel(1.0f), Target::host()));
  EXPECT_THROW(m.function("no_such_kernel"), Error);
}

TEST(CodegenModule, ManyLoadsAndUnloadsKeepWorking) {
  std::string object = compile_to_object(scale_kernel(5.0f), Target::host());
  NDArray a({4, 32}), c({4, 32});
  a.fill_random(2);
  for (int round = 0; round < 50; ++round) {
    Module m = Module::load_object(object);
    call(m, a, c);
  }
  for (int64_t x = 0; x < a.size(); ++x) ASSERT_FLOAT_EQ(c[x], a[x] * 5.0f);
}

TEST(CodegenModule, SharedObjectRoundTrip) {
  std::string path = "/tmp/tessera-module-test-" + std::to_string(getpid()) + ".so";
  write_shared_object(compile_to_object(scale_kernel(4.0f), Target::host()), path);
  {
    Module m = Module::load_shared_object(path);
    NDArray a({4, 32}), c({4, 32});
    a.fill_random(3);
    runtime::set_num_threads(2);
    call(m, a, c);
    runtime::set_num_threads(0);
    for (int64_t x = 0; x < a.size(); ++x) ASSERT_FLOAT_EQ(c[x], a[x] * 4.0f);
  }
  std::remove(path.c_str());
}

// Runners measure in forked children: a child must be able to load and run
// kernels even though the parent already used the JIT and the thread pool.
TEST(CodegenModule, ForkedChildLoadsAndRunsKernels) {
  std::string object = compile_to_object(scale_kernel(6.0f), Target::host());
  runtime::set_num_threads(2);
  {
    Module warm = Module::load_object(object);
    NDArray a({4, 32}), c({4, 32});
    call(warm, a, c);
  }
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(30);
    Module m = Module::load_object(object);
    NDArray a({4, 32}), c({4, 32});
    a.fill_random(4);
    void* args[] = {a.data(), c.data()};
    m.function("kernel")(args);
    bool ok = true;
    for (int64_t x = 0; x < a.size(); ++x) ok = ok && c[x] == a[x] * 6.0f;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  runtime::set_num_threads(0);
  ASSERT_TRUE(WIFEXITED(status)) << "child died";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(CodegenModule, LinkFailureReportsTheCompilerMessage) {
  try {
    write_shared_object("this is not an object file", "/tmp/tessera-module-test-bad.so");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Module::load_shared_object("/nonexistent/kernel.so"), Error);
}

}  // namespace
}  // namespace tessera::codegen
