#pragma once
// compile, run and bench for a model whose one dimension varies (--dim
// NAME=MIN..MAX, a --shape range): one artifact of buckets
// (graph/varying_dimension.h), run by runtime::VaryingExecutor.
#include "driver/compile.h"
#include "graph/model_source.h"
#include "model_command.h"
#include "runtime/artifact.h"
#include "target/target.h"

namespace tessera::cli {

int run_compile_varying(const ModelCommandOptions& o, const graph::ModelOptions& model,
                        const driver::CompileOptions& options, const target::Target& target);
int run_varying_model(const ModelCommandOptions& o, runtime::Artifact artifact);
int run_varying_bench(const ModelCommandOptions& o, runtime::Artifact artifact);

}  // namespace tessera::cli
