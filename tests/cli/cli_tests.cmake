# The command line itself: a good run says "correct", a bad flag names itself.
add_test(NAME Cli.OpChecksAgainstReference
         COMMAND tessera_cli op conv2d --input 1x8x9x9 --weight 16x8x3x3 --pad 1 --layout NCHWc --check --threads 2 --repeat 1)
set_tests_properties(Cli.OpChecksAgainstReference PROPERTIES PASS_REGULAR_EXPRESSION ": correct")
add_test(NAME Cli.BadShapeIsAOneLineErrorNamingTheFlag
         COMMAND tessera_cli op conv2d --input 1x64xfoo --weight 64x64x3x3)
set_tests_properties(Cli.BadShapeIsAOneLineErrorNamingTheFlag PROPERTIES
                     PASS_REGULAR_EXPRESSION "tessera: error: --input 1x64xfoo")
add_test(NAME Cli.ImpossibleShapeIsAnError
         COMMAND tessera_cli op conv2d --input 1x64x56x56 --weight 64x32x3x3 --check)
set_tests_properties(Cli.ImpossibleShapeIsAnError PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: .*conv2d")
# Tuning through the command line: progress lines end in " Done." and the log
# holds one record per trial plus each run's 5 re-measured leaders (a second
# run resumes instead of starting over).
add_test(NAME Cli.TuneOpPrintsProgressAndLogs
         COMMAND sh -c "rm -f cli_tune.log && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --tuner random --trials 12 --threads 1 --log cli_tune.log && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --tuner ga --trials 16 --threads 1 --log cli_tune.log && test $(wc -l < cli_tune.log) -eq 26 && test $(grep -c confirmed cli_tune.log) -eq 10 && echo log-has-16-trials-and-10-confirmations")
set_tests_properties(Cli.TuneOpPrintsProgressAndLogs PROPERTIES
                     PASS_REGULAR_EXPRESSION "resuming from cli_tune.log: 12 configs already measured.*Done\\..*log-has-16-trials-and-10-confirmations")
add_test(NAME Cli.UnknownTunerListsTheValidOnes
         COMMAND tessera_cli tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --tuner annealing)
set_tests_properties(Cli.UnknownTunerListsTheValidOnes PROPERTIES
                     PASS_REGULAR_EXPRESSION "tessera: error: .*annealing.*xgb_rank_binary_curve")
# The target as a choice: any host may compile (not run) for AVX-512; a bad
# target names itself; records carry the thread count and records --target
# keeps only the records of a matching target.
add_test(NAME Cli.OpCompilesForAnyTargetWithCompileOnly
         COMMAND tessera_cli op conv2d --input 1x16x9x9 --weight 32x16x3x3 --pad 1 --layout NCHWc --asm --compile-only
                 --target "llvm -mcpu=skylake-avx512 -threads=2")
set_tests_properties(Cli.OpCompilesForAnyTargetWithCompileOnly PROPERTIES PASS_REGULAR_EXPRESSION
                     "%zmm.*compiled for llvm -mcpu=skylake-avx512 -threads=2 \\(llvm avx512 512-bit threads=2\\); not run")
add_test(NAME Cli.BadTargetIsAnErrorNamingIt
         COMMAND tessera_cli op conv2d --input 1x8x9x9 --weight 16x8x3x3 --target "llvm -mcpu=nosuchcpu")
set_tests_properties(Cli.BadTargetIsAnErrorNamingIt PROPERTIES
                     PASS_REGULAR_EXPRESSION "tessera: error: --target: target 'llvm -mcpu=nosuchcpu': unknown CPU")
add_test(NAME Cli.RecordsCarryThreadsAndPickBestFiltersByTarget
         COMMAND sh -c "rm -f cli_threads.log && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --tuner random --trials 4 --confirm-leaders 0 --threads 1 --log cli_threads.log && test $(grep -c -e '-threads=1\"' cli_threads.log) -eq 4 && $<TARGET_FILE:tessera_cli> records pick-best cli_threads.log cli_threads_best.log --target 'llvm -threads=2' && $<TARGET_FILE:tessera_cli> records pick-best cli_threads.log cli_threads_best.log --target 'llvm -threads=1'")
set_tests_properties(Cli.RecordsCarryThreadsAndPickBestFiltersByTarget PROPERTIES
                     PASS_REGULAR_EXPRESSION "0 best records written.*1 best records written")
# The shipped logs of the machine nearest the target: a Zen 4 takes the Zen 4
# log, another Intel CPU than the Xeon's the Xeon's (records/shipped.h).
add_test(NAME Cli.RecordsShippedNamesTheNearestMachinesLog
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> records shipped --target 'llvm -mcpu=znver4 -threads=2' && $<TARGET_FILE:tessera_cli> records shipped --target 'llvm -mcpu=icelake-server -threads=1'")
set_tests_properties(Cli.RecordsShippedNamesTheNearestMachinesLog PROPERTIES PASS_REGULAR_EXPRESSION
                     "uses them \\(llvm-avx512-zen4-threads2.log, tuned on znver4\\).*uses them \\(llvm-avx512-xeon-threads1.log, tuned on rocketlake\\)")
# Hostile input through the command line (issue: harden the foundation): each
# case is one line naming the flag or file, never a signal. A crash would
# print no "tessera: error:" line, so these fail on one.
add_test(NAME Cli.HugeShapeIsAnErrorNotACrash
         COMMAND tessera_cli op relu --input 4294967296x4294967296)
set_tests_properties(Cli.HugeShapeIsAnErrorNotACrash PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: .*overflows")
add_test(NAME Cli.HugePaddingIsAnErrorNotCorrect
         COMMAND tessera_cli op conv2d --input 1x8x9x9 --weight 8x8x3x3 --pad 9223372036854775807 --check)
set_tests_properties(Cli.HugePaddingIsAnErrorNotCorrect PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: conv2d")
add_test(NAME Cli.OverflowingSplitInAScheduleIsAnError
         COMMAND sh -c "echo '[{\"step\":\"split\",\"stage\":\"T_relu\",\"iter\":\"ax0\",\"lengths\":[4294967296,4294967296]}]' > cli_split.json && $<TARGET_FILE:tessera_cli> op relu --input 4x8 --schedule cli_split.json")
set_tests_properties(Cli.OverflowingSplitInAScheduleIsAnError PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: ")
foreach(flag "--repeat 0" "--number 0" "--timeout -1" "--timeout nan" "--early-stopping -3" "--confirm-rounds -2"
             "--min-repeat-ms -5" "--layout NHWC")
  string(REPLACE " " ";" args "${flag}")
  string(REGEX REPLACE "[^a-zA-Z0-9]+" "_" name "${flag}")
  add_test(NAME Cli.TuneOpRefuses${name}
           COMMAND tessera_cli tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --trials 2 ${args})
  string(REGEX REPLACE " .*" "" flag_name "${flag}")
  set_tests_properties(Cli.TuneOpRefuses${name} PROPERTIES PASS_REGULAR_EXPRESSION "${flag_name}")
  set_tests_properties(Cli.TuneOpRefuses${name} PROPERTIES FAIL_REGULAR_EXPRESSION "Current/Best")
endforeach()
# The auto-scheduler from the command line: sketches print, a search logs
# and resumes, distill keeps one record.
add_test(NAME Cli.AutoscheduleSketchesPrintsEveryRule
         COMMAND tessera_cli autoschedule sketches conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --random 1)
set_tests_properties(Cli.AutoscheduleSketchesPrintsEveryRule PROPERTIES
                     PASS_REGULAR_EXPRESSION "Sketch 0 of 3.*cache write.*level-1 tiles.*Sketch 2 of 3.*multi-level tiling.*random 0: \\[")
add_test(NAME Cli.TuneOpSearchAutoResumesAndDistills
         COMMAND sh -c "rm -f cli_auto.log && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --search auto --trials 8 --threads 1 --log cli_auto.log && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --search auto --trials 16 --threads 1 --log cli_auto.log && test $(wc -l < cli_auto.log) -eq 26 && test $(grep -c confirmed cli_auto.log) -eq 10 && $<TARGET_FILE:tessera_cli> records distill cli_auto.log cli_auto_best.log && test $(wc -l < cli_auto_best.log) -eq 1 && echo log-has-16-trials-10-confirmations-distilled-to-1")
set_tests_properties(Cli.TuneOpSearchAutoResumesAndDistills PROPERTIES
                     PASS_REGULAR_EXPRESSION "median of 3 rounds.*resumed from cli_auto.log: 8 schedules already measured.*log-has-16-trials-10-confirmations-distilled-to-1")
# RPC from the command line: a missing key file says how to make one, a silent
# tracker is named, and --runner rpc without a device key is refused.
add_test(NAME Cli.RpcQueryNamesASilentTracker
         COMMAND sh -c "rm -f cli_rpc.key && $<TARGET_FILE:tessera_rpc> keygen cli_rpc.key && $<TARGET_FILE:tessera_cli> rpc query --port 9 --timeout 0.5 --key-file cli_rpc.key; $<TARGET_FILE:tessera_cli> rpc query --key-file cli_missing.key")
set_tests_properties(Cli.RpcQueryNamesASilentTracker PROPERTIES PASS_REGULAR_EXPRESSION
                     "wrote cli_rpc.key .*tessera: error: tracker 127.0.0.1:9: no answer within 0.5 s.*tessera: error: key file cli_missing.key: No such file.*tessera rpc keygen")
add_test(NAME Cli.TuneOpRpcRunnerNeedsADeviceKey
         COMMAND tessera_cli tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --trials 2 --runner rpc)
set_tests_properties(Cli.TuneOpRpcRunnerNeedsADeviceKey PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: --runner rpc needs --key")
if(TARGET _tessera)
  # Without PyTorch: Debian's python3 with numpy (scripts/setup).
  add_test(NAME Python.PackageCompilesRunsAndMatchesTheCli
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/python/tests/test_package.py ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
  set_tests_properties(Python.PackageCompilesRunsAndMatchesTheCli PROPERTIES
                       ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python")
endif()
add_test(NAME Cli.PickBestNeverShrinksItsInput
         COMMAND sh -c "rm -f cli_same.log && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --tuner random --trials 3 --confirm-leaders 0 --threads 1 --log cli_same.log > /dev/null && ! $<TARGET_FILE:tessera_cli> records pick-best cli_same.log cli_same.log && test $(wc -l < cli_same.log) -eq 3 && echo input-kept")
set_tests_properties(Cli.PickBestNeverShrinksItsInput PROPERTIES PASS_REGULAR_EXPRESSION "is the input log.*input-kept")
# Stopped by SIGTERM mid-tuning: a non-zero exit, and every line of the log
# whole (batches are written with the stopping signals held back).
add_test(NAME Cli.TuneOpStoppedBySigtermLeavesNoTornLine
         COMMAND sh -c "rm -f cli_term.log; $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --tuner random --trials 400 --threads 1 --log cli_term.log > /dev/null & pid=$!; i=0; while [ ! -s cli_term.log ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; kill -TERM $pid; wait $pid; echo rc=$?; $<TARGET_FILE:tessera_cli> records show cli_term.log 2>&1 | grep -c 'skipped damaged' ; echo lines=$(wc -l < cli_term.log)")
set_tests_properties(Cli.TuneOpStoppedBySigtermLeavesNoTornLine PROPERTIES PASS_REGULAR_EXPRESSION "rc=143[\r\n]+0[\r\n]+lines=[1-9]")
# Whole networks through the command line: compile a zoo model checked
# against the reference interpreter, run the artifact with the CLI and with
# the runtime-only runner, and show the fused kernels.
add_test(NAME Cli.CompileChecksAZooModelAndRunnersLoadIt
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile squeezenet_v1.1 --threads 2 --check -o cli_squeezenet.tsr && $<TARGET_FILE:tessera_cli> run cli_squeezenet.tsr --output cli_out.npy && $<TARGET_FILE:run_artifact> cli_squeezenet.tsr --number 2 --repeat 2")
set_tests_properties(Cli.CompileChecksAZooModelAndRunnersLoadIt PROPERTIES PASS_REGULAR_EXPRESSION
                     "wrote cli_squeezenet.tsr.*output 'flatten'.*correct.*output 0 .* 1x1000:.*wrote cli_out.npy.*Mean inference time \\(std dev\\): ")
add_test(NAME Example.ClassifyCompilesAndRunsAZooModel COMMAND classify squeezenet_v1.1 2)
set_tests_properties(Example.ClassifyCompilesAndRunsAZooModel PROPERTIES PASS_REGULAR_EXPRESSION
                     "squeezenet_v1.1: top-5 classes [0-9]+ .*Mean inference time")
add_test(NAME Cli.ShowListsTheFusedKernels COMMAND tessera_cli show resnet-18)
set_tests_properties(Cli.ShowListsTheFusedKernels PROPERTIES PASS_REGULAR_EXPRESSION
                     "kernels:.*layer1.0.conv2.bn \\+ layer1.0.bn2 \\+ layer1.0.add \\+ layer1.0.relu_1")
add_test(NAME Cli.UnknownModelListsTheZoo COMMAND tessera_cli compile resnet-19 -o x.tsr)
set_tests_properties(Cli.UnknownModelListsTheZoo PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: .*resnet-18.*inception_v3")
add_test(NAME Cli.DamagedArtifactIsAnErrorNamingIt COMMAND sh -c "echo junk > cli_junk.tsr; $<TARGET_FILE:tessera_cli> run cli_junk.tsr")
set_tests_properties(Cli.DamagedArtifactIsAnErrorNamingIt PROPERTIES PASS_REGULAR_EXPRESSION "tessera: error: 'cli_junk.tsr' is not a Tessera artifact")

# What a hostile user found (issue 27): no command overwrites its own input,
# and flags that would be ignored are refused.
set(NARROW_ONNX ${CMAKE_SOURCE_DIR}/tests/data/onnx/resnet18_narrow.onnx)
add_test(NAME Cli.CompileRefusesToOverwriteItsModel
         COMMAND sh -c "cp ${NARROW_ONNX} cli_self.onnx; $<TARGET_FILE:tessera_cli> compile cli_self.onnx -o ./cli_self.onnx; cmp -s cli_self.onnx ${NARROW_ONNX} && echo model-intact")
set_tests_properties(Cli.CompileRefusesToOverwriteItsModel PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: -o './cli_self.onnx' is the input model; refusing to overwrite it.*model-intact")
# --quantize int8 (issue 31): the convolutions in int8, each integer kernel
# checked against the integer reference on its compiled inputs, the distance
# from float32 reported; a GPU target is refused in one line.
add_test(NAME Cli.CompileQuantizesToInt8AndChecksAgainstTheIntegerReference
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} --quantize int8 --calibrate 3 --calibration percentile -o cli_int8.tsr --check && $<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} --quantize int8 --target opencl -o cli_int8_gpu.tsr")
set_tests_properties(Cli.CompileQuantizesToInt8AndChecksAgainstTheIntegerReference PROPERTIES PASS_REGULAR_EXPRESSION
                     "integer kernels: [1-9][0-9]* of [1-9][0-9]* values equal the integer reference exactly .*: correct.*output 'logits': .*against the float32 model.*tessera: error: --quantize int8: quantized networks run on CPU targets, not opencl")
add_test(NAME Cli.RunRefusesToOverwriteItsArtifact
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} -o cli_run_self.tsr > /dev/null && cp cli_run_self.tsr cli_run_copy.tsr && $<TARGET_FILE:tessera_cli> run cli_run_self.tsr --output cli_run_self.tsr; cmp -s cli_run_self.tsr cli_run_copy.tsr && echo artifact-intact")
set_tests_properties(Cli.RunRefusesToOverwriteItsArtifact PROPERTIES PASS_REGULAR_EXPRESSION
                     "is the input artifact; refusing to overwrite it.*artifact-intact")
# --shape fixes an ONNX input's shape (here another batch and image size); a
# range over an image axis is refused (padding would change the
# convolutions) unless --buckets lists the sizes; --dim names a symbolic
# dimension the model must have.
add_test(NAME Cli.ShapeFlagCompilesAnOnnxModelAtAnotherShape
         COMMAND tessera_cli compile ${NARROW_ONNX} --shape data=2x3x32x32 -o cli_shape.tsr --check)
set_tests_properties(Cli.ShapeFlagCompilesAnOnnxModelAtAnotherShape PROPERTIES PASS_REGULAR_EXPRESSION
                     "output 'logits': .*correct")
add_test(NAME Cli.ShapeRangeAndUnknownDimAreOneLineErrors
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} --shape data=1x3x32..64x64 -o cli_range.tsr; $<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} --dim seq=4 -o cli_range.tsr; $<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} --shape data=1x3x64..32x64 -o cli_range.tsr")
set_tests_properties(Cli.ShapeRangeAndUnknownDimAreOneLineErrors PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: node '/conv1/Conv' \\(conv2d\\) reads the varying axis at computed positions.*list the sizes to compile with --buckets.*a size is given for dimension 'seq', which no input has.*the range 64..32 must rise")
# One artifact for every sequence length: compiled over a range and checked
# against the interpreter at three lengths (one padded), run at 13 tokens
# from onnxruntime's inputs (its output is the first value printed), timed
# at a length between buckets; a model file with a range is not benched.
set(BERT_DYNAMIC ${CMAKE_SOURCE_DIR}/tests/data/onnx/bert_tiny_dynamic)
add_test(NAME Cli.VaryingSequenceIsOneArtifactThatRunsAnyLength
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${BERT_DYNAMIC}.onnx --dim sequence=1..16 --buckets 4,8 -o cli_varying.tsr --check && $<TARGET_FILE:tessera_cli> run cli_varying.tsr --input ${BERT_DYNAMIC}.s13.input0.npy ${BERT_DYNAMIC}.s13.input1.npy && $<TARGET_FILE:tessera_cli> bench cli_varying.tsr --sizes 5 --number 1 --repeat 1; $<TARGET_FILE:tessera_cli> bench ${BERT_DYNAMIC}.onnx --dim sequence=1..16")
set_tests_properties(Cli.VaryingSequenceIsOneArtifactThatRunsAnyLength PROPERTIES PASS_REGULAR_EXPRESSION
                     "sequence in 1..16 \\(buckets 4 8 16\\); 3 graphs.*sequence = 1 \\(bucket 4\\): output 'hidden': .*correct.*sequence = 5 \\(bucket 8\\): output 'hidden': .*correct.*sequence = 16 \\(bucket 16\\): output 'hidden': .*correct.*sequence = 13 \\(bucket 16\\).*output 0 'hidden' 1x13x32: 1.01[0-9]+ .*sequence = 5, bucket 8.*tessera: error: .*sequence is given a range \\(1..16\\): `tessera compile` makes one artifact for it")
add_test(NAME Cli.CompileToStandardOutputIsRefused COMMAND tessera_cli compile ${NARROW_ONNX} -o -)
set_tests_properties(Cli.CompileToStandardOutputIsRefused PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: -o -: writing to standard output is not supported")
add_test(NAME Cli.TuneRefusesALogThatIsTheModel
         COMMAND sh -c "cp ${NARROW_ONNX} cli_tune_self.onnx; $<TARGET_FILE:tessera_cli> tune cli_tune_self.onnx --log cli_tune_self.onnx --trials 1; cmp -s cli_tune_self.onnx ${NARROW_ONNX} && echo model-intact")
set_tests_properties(Cli.TuneRefusesALogThatIsTheModel PROPERTIES PASS_REGULAR_EXPRESSION
                     "--log 'cli_tune_self.onnx' is the input model.*model-intact")
add_test(NAME Cli.TuneRefusesAGraphLogThatIsItsLog
         COMMAND sh -c "printf '{}\\n' > cli_same.log; $<TARGET_FILE:tessera_cli> tune ${NARROW_ONNX} --log cli_same.log --graph-tuner dp --graph-log cli_same.log --trials 1; cat cli_same.log")
set_tests_properties(Cli.TuneRefusesAGraphLogThatIsItsLog PROPERTIES PASS_REGULAR_EXPRESSION
                     "--graph-log 'cli_same.log' is the input tuning log.*[{][}]")
add_test(NAME Cli.TuneOpRefusesToAppendToAFileThatIsNotALog
         COMMAND sh -c "cp ${NARROW_ONNX} cli_notlog.onnx; $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x9x9 --weight 8x8x3x3 --trials 2 --log cli_notlog.onnx; cmp -s cli_notlog.onnx ${NARROW_ONNX} && echo model-intact")
set_tests_properties(Cli.TuneOpRefusesToAppendToAFileThatIsNotALog PROPERTIES PASS_REGULAR_EXPRESSION
                     "is not a tuning log .*refusing to append to it.*model-intact")
add_test(NAME Cli.RecordsThatAreNotAFileAreAnError
         COMMAND tessera_cli compile ${NARROW_ONNX} --records /dev/zero -o cli_devzero.tsr)
set_tests_properties(Cli.RecordsThatAreNotAFileAreAnError PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: record log '/dev/zero' is not a regular file")
add_test(NAME Cli.BenchOfAnArtifactRefusesCompileFlags
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} -o cli_bench.tsr > /dev/null && $<TARGET_FILE:tessera_cli> bench cli_bench.tsr --records missing.log")
set_tests_properties(Cli.BenchOfAnArtifactRefusesCompileFlags PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: --records shapes a compilation, and 'cli_bench.tsr' is a compiled artifact")
add_test(NAME Cli.RunAndBenchObeyThreads
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} --threads 2 -o cli_threads.tsr > /dev/null && $<TARGET_FILE:tessera_cli> bench cli_threads.tsr --threads 1 --repeat 1 --number 1")
set_tests_properties(Cli.RunAndBenchObeyThreads PROPERTIES PASS_REGULAR_EXPRESSION "input 1x3x64x64, 1 threads")
add_test(NAME Cli.AnArtifactNamedOtherwiseIsStillAnArtifact
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${NARROW_ONNX} -o cli_named.tsr > /dev/null && cp cli_named.tsr cli_named.bin && $<TARGET_FILE:tessera_cli> bench cli_named.bin --repeat 1 --number 1 && $<TARGET_FILE:tessera_cli> compile cli_named.bin -o x.tsr")
set_tests_properties(Cli.AnArtifactNamedOtherwiseIsStillAnArtifact PROPERTIES PASS_REGULAR_EXPRESSION
                     "cli_named.bin [(]input 1x3x64x64.*'cli_named.bin' is a compiled Tessera artifact, not a model")
add_test(NAME Cli.AnInfiniteTimeBudgetIsRefused COMMAND tessera_cli tune resnet-18 --time-budget inf)
set_tests_properties(Cli.AnInfiniteTimeBudgetIsRefused PROPERTIES PASS_REGULAR_EXPRESSION
                     "must be 0 [(]no limit[)] or a positive, finite number of minutes, got inf")
# A damaged line in a resumed log is reported once, not again by the
# evaluation's builds that read the same log.
add_test(NAME Cli.TuneReportsADamagedLineOnce
         COMMAND sh -c "rm -f cli_damaged.log && $<TARGET_FILE:tessera_cli> tune-op dense --input 1x16 --weight 8x16 --tuner random --trials 2 --threads 1 --log cli_damaged.log > /dev/null && printf 'garbage\\n' >> cli_damaged.log && $<TARGET_FILE:tessera_cli> tune ${NARROW_ONNX} --log cli_damaged.log --trials 1 --eval-number 1 --eval-repeat 1 2>&1 | grep -c 'skipped damaged record'")
set_tests_properties(Cli.TuneReportsADamagedLineOnce PROPERTIES PASS_REGULAR_EXPRESSION "^1[\r\n]")
# A CPU the server may not run on, a key "file" that is a directory, and
# run_artifact --help: each says what it is.
add_test(NAME Cli.ServerCoresThisMachineLacksAreRefused
         COMMAND tessera_cli rpc server --tracker 127.0.0.1:9 --key zen --cores 0,4099)
set_tests_properties(Cli.ServerCoresThisMachineLacksAreRefused PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: --cores 0,4099: CPU 4099 is not one this machine lets the server run on")
add_test(NAME Cli.AKeyFileThatIsADirectoryIsNamedSo COMMAND tessera_cli rpc query --key-file ${CMAKE_SOURCE_DIR}/tests)
set_tests_properties(Cli.AKeyFileThatIsADirectoryIsNamedSo PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: key file .*/tests: is a directory, not a file")
add_test(NAME Cli.RunArtifactHelpPrintsUsage COMMAND run_artifact --help)
set_tests_properties(Cli.RunArtifactHelpPrintsUsage PROPERTIES PASS_REGULAR_EXPRESSION "^usage: .*run_artifact MODEL.tsr")
add_test(NAME Cli.ATrackerPortOutOfRangeIsRefused COMMAND tessera_cli rpc server --tracker 127.0.0.1:99999 --key zen)
set_tests_properties(Cli.ATrackerPortOutOfRangeIsRefused PROPERTIES PASS_REGULAR_EXPRESSION
                     "must be HOST:PORT with a port from 1 to 65535, got 127.0.0.1:99999")
# An unresolvable tracker host is named at once (libzmq retries it silently:
# it looked like a tracker that does not answer).
add_test(NAME Cli.AnUnresolvableTrackerHostIsNamed COMMAND tessera_cli rpc server --tracker no-such-host.invalid:9190 --key zen)
set_tests_properties(Cli.AnUnresolvableTrackerHostIsNamed PROPERTIES PASS_REGULAR_EXPRESSION
                     "tracker 'no-such-host.invalid:9190': cannot resolve host 'no-such-host.invalid'")
add_test(NAME Cli.AnUnknownCpuFeatureIsRefused COMMAND tessera_cli op relu --input 8 --target "llvm -mattr=+avx2,+foo")
set_tests_properties(Cli.AnUnknownCpuFeatureIsRefused PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: .*unknown CPU feature 'foo'")

# Timeouts: each command above runs in under 5 s on a 2-core Xeon, but for
# the tuning runs and the Python package (20-25 s); a hang fails in a minute.
get_property(CLI_TESTS DIRECTORY PROPERTY TESTS)
# The public C++ API's tuning example on the narrow ResNet-18: tune (2
# trials a task), pick the best, compile with it, and a jit of the model
# agrees; a second run resumes the log instead of tuning again.
add_test(NAME Examples.TuneAndRunTunesCompilesAndAgreesWithTheJit
         COMMAND sh -c "rm -f example_r18.log example_r18.log.best && $<TARGET_FILE:tune_and_run> ${CMAKE_SOURCE_DIR}/tests/data/onnx/resnet18_narrow.onnx 2 example_r18.log && $<TARGET_FILE:tune_and_run> ${CMAKE_SOURCE_DIR}/tests/data/onnx/resnet18_narrow.onnx 2 example_r18.log")
set_tests_properties(Examples.TuneAndRunTunesCompilesAndAgreesWithTheJit PROPERTIES TIMEOUT 240
                     PASS_REGULAR_EXPRESSION "12 tuned now, 0 already tuned.*differ by at most.*0 tuned now, 12 already tuned.*differ by at most")
foreach(test ${CLI_TESTS})
  if(test MATCHES "^(Cli|Example)\\.")
    set_tests_properties(${test} PROPERTIES TIMEOUT 60)
  endif()
endforeach()
set_tests_properties(Cli.TuneOpSearchAutoResumesAndDistills Cli.TuneOpPrintsProgressAndLogs Cli.TuneReportsADamagedLineOnce
                     PROPERTIES TIMEOUT 240)
if(TEST Python.PackageCompilesRunsAndMatchesTheCli)
  # 60 s alone; over 240 s once under ctest -j4 beside the tensor-core and
  # PoCL suites on two cores.
  set_tests_properties(Python.PackageCompilesRunsAndMatchesTheCli PROPERTIES TIMEOUT 480)
endif()
# Tuning over a range tunes each bucket's tasks into one log; compiling the
# range with it schedules every bucket's dense layers by their records.
add_test(NAME Cli.TuningARangeTunesEveryBucket
         COMMAND sh -c "rm -f cli_varying_tune.log && $<TARGET_FILE:tessera_cli> tune ${BERT_DYNAMIC}.onnx --dim sequence=1..16 --buckets 8 --trials 2 --early-stopping 0 --confirm-leaders 0 --threads 1 --log cli_varying_tune.log && $<TARGET_FILE:tessera_cli> compile ${BERT_DYNAMIC}.onnx --dim sequence=1..16 --buckets 8 --threads 1 --records cli_varying_tune.log -o cli_varying_tuned.tsr")
set_tests_properties(Cli.TuningARangeTunesEveryBucket PROPERTIES TIMEOUT 240 PASS_REGULAR_EXPRESSION
                     "sequence = 8 \\(of sequence in 1..16 \\(buckets 8 16\\)\\):.*Done\\..*sequence = 16 \\(of .*Done\\..*every bucket tuned into cli_varying_tune.log.*sequence = 8: [0-9]+ kernels \\([1-9][0-9]* tuned\\).*sequence = 16: [0-9]+ kernels \\([1-9][0-9]* tuned\\)")
# GPU schedules without a GPU: an operator's GPU kernels (shared memory,
# barriers) run on the OpenCL device (PoCL's CPU device here) against the
# reference; for cuda, NVRTC compiles them for the arch and each kernel's
# registers and shared memory are shown; what no GPU can run is one line.
add_test(NAME Cli.OpOnOpenClMatchesReference
         COMMAND tessera_cli op dense --input 128x72 --weight 96x72 --bias --relu --target opencl --check --repeat 1)
set_tests_properties(Cli.OpOnOpenClMatchesReference PROPERTIES
                     PASS_REGULAR_EXPRESSION "block 16 x 16 x 1, 4096 bytes shared.*: correct.*opencl device time"
                     SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 60)
add_test(NAME Cli.OpForCudaShowsEachKernelsResources
         COMMAND tessera_cli op dense --input 128x72 --weight 96x72 --bias --relu --target "cuda -arch=sm_90"
                 --compile-only --show)
set_tests_properties(Cli.OpForCudaShowsEachKernelsResources PROPERTIES
                     PASS_REGULAR_EXPRESSION "__syncthreads\\(\\);.*dense_kernel0 for sm_90: [1-9][0-9]* registers, 0 bytes spilled \\(stores\\), 0 \\(loads\\), 4096 bytes shared.*compiled for cuda -arch=sm_90"
                     SKIP_REGULAR_EXPRESSION "NVRTC cannot compile here" TIMEOUT 60)
# Without --schedule, op on a GPU runs what a build runs untuned: a half
# product on tensor cores where that pays (ResNet-18's layer1 at batch 16:
# 784 blocks), its weight rows fetched 16 bytes a lane; the CUDA-core tiles
# where it does not (layer4 at batch 1: 8 blocks of K = 4608).
add_test(NAME Cli.OpOnAGpuRunsTheUntunedBuildsSchedule
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> op conv2d_nchw_implicit_gemm --input 16x64x56x56 --weight 64x64x3x3 --pad 1 --dtype float16 --target 'cuda -arch=sm_90' --compile-only --show && $<TARGET_FILE:tessera_cli> op conv2d_nchw_implicit_gemm --input 1x512x7x7 --weight 512x512x3x3 --pad 1 --dtype float16 --target 'cuda -arch=sm_90' --compile-only --show | grep -c 'tsr_tc_mma_frags(conv_product' ; true")
set_tests_properties(Cli.OpOnAGpuRunsTheUntunedBuildsSchedule PROPERTIES
                     PASS_REGULAR_EXPRESSION "= \\*\\(const uint4\\*\\)\\(kernel_ \\+ .*tsr_tc_mma_frags\\(conv_product_local_local.*compiled for cuda -arch=sm_90[^\n]*\n0\n$"
                     SKIP_REGULAR_EXPRESSION "NVRTC cannot compile here" TIMEOUT 60)
# Half storage (--dtype float16): the kernel reads and writes halves on the
# OpenCL device and equals the reference on the same rounded inputs; CUDA C
# converts by PTX and compiles; a CPU target refuses it in one line.
add_test(NAME Cli.OpInHalfStorageOnOpenClMatchesReference
         COMMAND tessera_cli op dense --input 128x72 --weight 96x72 --bias --relu --target opencl --dtype float16
                 --check --repeat 1 --show)
set_tests_properties(Cli.OpInHalfStorageOnOpenClMatchesReference PROPERTIES
                     PASS_REGULAR_EXPRESSION "__global half\\* restrict.*vstore_half_rte\\(.*: correct.*opencl device time"
                     SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 60)
add_test(NAME Cli.OpInHalfStorageForCudaCompiles
         COMMAND tessera_cli op conv2d --input 1x16x14x14 --weight 32x16x3x3 --pad 1 --bias --relu
                 --target "cuda -arch=sm_80" --dtype float16 --compile-only --show)
set_tests_properties(Cli.OpInHalfStorageForCudaCompiles PROPERTIES
                     PASS_REGULAR_EXPRESSION "unsigned short\\* __restrict__.*tsr_f2h\\(.*compiled for cuda -arch=sm_80"
                     SKIP_REGULAR_EXPRESSION "NVRTC cannot compile here" TIMEOUT 60)
# Tuning a half-stored kernel: the measuring child passes halves, and every
# candidate is checked against the reference on the same rounded inputs.
add_test(NAME Cli.TuneOpInHalfStorageOnOpenClChecksEveryCandidate
         COMMAND sh -c "rm -f cli_half_tune.log && $<TARGET_FILE:tessera_cli> tune-op dense --input 64x32 --weight 64x32 --bias --relu --target opencl --dtype float16 --tuner random --trials 4 --confirm-leaders 0 --log cli_half_tune.log && test $(grep -c '\"error\":\"none\"' cli_half_tune.log) -eq 4 && grep -q '\"dtype\":\"float16\"' cli_half_tune.log && echo half-records-checked")
set_tests_properties(Cli.TuneOpInHalfStorageOnOpenClChecksEveryCandidate PROPERTIES
                     PASS_REGULAR_EXPRESSION "task: dense.gpu.*Done\\..*half-records-checked" TIMEOUT 240)
add_test(NAME Cli.HalfStorageIsRefusedOnACpu
         COMMAND tessera_cli op dense --input 8x16 --weight 8x16 --dtype float16)
set_tests_properties(Cli.HalfStorageIsRefusedOnACpu PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: --dtype float16: half storage runs on GPU targets \\(cuda, opencl\\); '.*' computes in float32")
add_test(NAME Cli.GpuVerifierRejectsWhatNoBlockHolds
         COMMAND tessera_cli op dense --input 128x64 --weight 128x64 --target "cuda -max_shared_memory_per_block=2048"
                 --compile-only)
set_tests_properties(Cli.GpuVerifierRejectsWhatNoBlockHolds PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: GPU kernel dense_kernel0: 4096 bytes of shared memory per block; the target allows 2048"
                     TIMEOUT 60)
# Every zoo model (and the tiny transformers) compiled for a GPU target: on
# the OpenCL device its outputs equal the interpreter's; for cuda, NVRTC
# compiles all of its kernels for Ampere and Hopper.
foreach(model resnet-18 resnet-50 mobilenet mobilenet-v2 squeezenet_v1.1 inception_v3
        ${CMAKE_SOURCE_DIR}/tests/data/onnx/bert_tiny.onnx ${CMAKE_SOURCE_DIR}/tests/data/onnx/gpt2_tiny.onnx)
  get_filename_component(short ${model} NAME_WE)
  add_test(NAME Cli.GpuZooOnOpenClMatchesInterpreter.${short}
           COMMAND tessera_cli compile ${model} --target opencl -o gpu_zoo_${short}.tsr --check)
  set_tests_properties(Cli.GpuZooOnOpenClMatchesInterpreter.${short} PROPERTIES
                       PASS_REGULAR_EXPRESSION ": correct" FAIL_REGULAR_EXPRESSION "WRONG|tessera: error"
                       SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 300)
  foreach(arch 80 90)
    add_test(NAME Cli.GpuZooCompilesWithNvrtc.${short}.sm_${arch}
             COMMAND tessera_cli compile ${model} --target "cuda -arch=sm_${arch}" -o gpu_zoo_${short}_sm${arch}.tsr)
    set_tests_properties(Cli.GpuZooCompilesWithNvrtc.${short}.sm_${arch} PROPERTIES
                         PASS_REGULAR_EXPRESSION "compiled for cuda -arch=sm_${arch}.*wrote"
                         SKIP_REGULAR_EXPRESSION "needs NVRTC" TIMEOUT 300)
  endforeach()
endforeach()
# --dtype float16 (half storage): on the OpenCL device within the half
# tolerance of the fp32 interpreter (the transformers' token ids stay
# float32); for cuda, NVRTC compiles the half kernels for Hopper.
foreach(model resnet-18 mobilenet-v2 ${CMAKE_SOURCE_DIR}/tests/data/onnx/bert_tiny.onnx
        ${CMAKE_SOURCE_DIR}/tests/data/onnx/gpt2_tiny.onnx)
  get_filename_component(short ${model} NAME_WE)
  add_test(NAME Cli.GpuZooInHalfOnOpenClWithinTheHalfTolerance.${short}
           COMMAND tessera_cli compile ${model} --target opencl --dtype float16 -o gpu_half_${short}.tsr --check)
  set_tests_properties(Cli.GpuZooInHalfOnOpenClWithinTheHalfTolerance.${short} PROPERTIES
                       PASS_REGULAR_EXPRESSION ": correct" FAIL_REGULAR_EXPRESSION "WRONG|tessera: error"
                       SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 300)
  add_test(NAME Cli.GpuZooInHalfCompilesWithNvrtc.${short}
           COMMAND tessera_cli compile ${model} --target "cuda -arch=sm_90" --dtype float16 -o gpu_half_${short}_sm90.tsr)
  set_tests_properties(Cli.GpuZooInHalfCompilesWithNvrtc.${short} PROPERTIES
                       PASS_REGULAR_EXPRESSION "compiled for cuda -arch=sm_90.*wrote"
                       SKIP_REGULAR_EXPRESSION "needs NVRTC" TIMEOUT 300)
endforeach()
# A zoo model built in NHWC on a GPU: every convolution a matrix product
# whose window rows are channels (ops/conv2d_implicit_gemm.h); on the OpenCL
# device (the hand-written tiles, the window fetched 4 channels a lane)
# equal to the interpreter in fp32 and within the half tolerance in half;
# for cuda in half (tensor cores, the window 8 channels a lane), NVRTC
# compiles it for Ampere and Hopper.
# MobileNet-v2's depthwise convolutions in NHWC: a block along the channels
# (schedule::gpu_depthwise_nhwc_schedule).
foreach(case resnet-18:float32 resnet-18:float16 mobilenet-v2:float16)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 model)
  list(GET parts 1 dtype)
  add_test(NAME Cli.GpuZooInNhwcAsProductsOnOpenClMatchesInterpreter.${model}.${dtype}
           COMMAND tessera_cli compile ${model} --layout NHWC --target opencl --convolutions implicit-gemm
                   --dtype ${dtype} --no-shipped-records -o gpu_nhwc_${model}_${dtype}.tsr --check)
  set_tests_properties(Cli.GpuZooInNhwcAsProductsOnOpenClMatchesInterpreter.${model}.${dtype} PROPERTIES
                       PASS_REGULAR_EXPRESSION ": correct" FAIL_REGULAR_EXPRESSION "WRONG|tessera: error"
                       SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 300)
endforeach()
foreach(arch 80 90)
  add_test(NAME Cli.GpuZooInNhwcInHalfCompilesWithNvrtc.sm_${arch}
           COMMAND tessera_cli compile resnet-18 --layout NHWC --target "cuda -arch=sm_${arch}" --dtype float16
                   --no-shipped-records -o gpu_nhwc_half_sm${arch}.tsr)
  set_tests_properties(Cli.GpuZooInNhwcInHalfCompilesWithNvrtc.sm_${arch} PROPERTIES
                       PASS_REGULAR_EXPRESSION "compiled for cuda -arch=sm_${arch}.*wrote"
                       SKIP_REGULAR_EXPRESSION "needs NVRTC" TIMEOUT 300)
endforeach()
add_test(NAME Cli.HalfStorageIsRefusedOnACpuTargetInOneLine
         COMMAND tessera_cli compile resnet-18 --dtype float16 -o cli_half_cpu.tsr)
set_tests_properties(Cli.HalfStorageIsRefusedOnACpuTargetInOneLine PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: --dtype float16: half storage runs on GPU targets \\(cuda, opencl\\); '.*' computes in float32"
                     TIMEOUT 60)
# The auto-scheduler tunes the half kernels; their records schedule the
# float16 build (and not the float32 one: the keys name the dtypes).
add_test(NAME Cli.AutoScheduleANetworkInHalfForOpenClThenCompileWithTheRecords
         COMMAND sh -c "rm -f cli_gpu_half_auto.log && $<TARGET_FILE:tessera_cli> tune ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --search auto --dtype float16 --trials 8 --confirm-leaders 0 --no-evaluate --log cli_gpu_half_auto.log && $<TARGET_FILE:tessera_cli> compile ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --dtype float16 --records cli_gpu_half_auto.log -o cli_gpu_half_auto.tsr --check && $<TARGET_FILE:tessera_cli> compile ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --records cli_gpu_half_auto.log -o cli_gpu_full_auto.tsr")
set_tests_properties(Cli.AutoScheduleANetworkInHalfForOpenClThenCompileWithTheRecords PROPERTIES
                     PASS_REGULAR_EXPRESSION "1 of 1 kernels scheduled by records.*: correct.*0 of 1 kernels scheduled by records"
                     FAIL_REGULAR_EXPRESSION "WRONG|tessera: error" TIMEOUT 240)
# The templates tune the half kernels too (keys of their own, as above).
add_test(NAME Cli.TuneTemplatesInHalfForOpenClThenCompileWithTheRecords
         COMMAND sh -c "rm -f cli_gpu_half_templates.log && $<TARGET_FILE:tessera_cli> tune ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --dtype float16 --trials 8 --confirm-leaders 0 --no-evaluate --log cli_gpu_half_templates.log && $<TARGET_FILE:tessera_cli> compile ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --dtype float16 --records cli_gpu_half_templates.log -o cli_gpu_half_templates.tsr --check && $<TARGET_FILE:tessera_cli> compile ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --records cli_gpu_half_templates.log -o cli_gpu_full_templates.tsr")
set_tests_properties(Cli.TuneTemplatesInHalfForOpenClThenCompileWithTheRecords PROPERTIES
                     PASS_REGULAR_EXPRESSION "conv2d_nchw.gpu.*float16 storage.*1 of 1 kernels scheduled by records.*: correct.*0 of 1 kernels scheduled by records"
                     FAIL_REGULAR_EXPRESSION "WRONG|tessera: error" TIMEOUT 240)
# Attention whose sequence equals the head's width (16): its scores have the
# output's shape, yet only the softmax reads them (the default GPU schedule
# once tried to compute them in the output's threads).
add_test(NAME Cli.GpuAttentionWithTheSequenceAsWideAsAHead
         COMMAND tessera_cli compile ${BERT_DYNAMIC}.onnx --dim sequence=16 --target opencl -o gpu_bert16.tsr --check)
set_tests_properties(Cli.GpuAttentionWithTheSequenceAsWideAsAHead PROPERTIES
                     PASS_REGULAR_EXPRESSION ": correct" FAIL_REGULAR_EXPRESSION "WRONG|tessera: error"
                     SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 120)
# A range of sizes on a GPU target: every bucket's kernels in the artifact,
# each checked on the device against the interpreter, and a length between
# buckets run padded, its keys masked.
add_test(NAME Cli.GpuRangeRunsEveryBucketOnOpenCl
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile ${BERT_DYNAMIC}.onnx --dim sequence=1..16 --buckets 4,8 --target opencl -o gpu_range.tsr --check && $<TARGET_FILE:tessera_cli> run gpu_range.tsr --input ${BERT_DYNAMIC}.s13.input0.npy ${BERT_DYNAMIC}.s13.input1.npy")
set_tests_properties(Cli.GpuRangeRunsEveryBucketOnOpenCl PROPERTIES
                     PASS_REGULAR_EXPRESSION "sequence = 5 \\(bucket 8\\): output 'hidden'.*: correct.*sequence = 13 \\(bucket 16\\)"
                     FAIL_REGULAR_EXPRESSION "WRONG|tessera: error" SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 120)
# The same in half storage: the buckets' weights stored in half (0.04 MB
# instead of 0.08), each bucket within the half tolerance.
add_test(NAME Cli.GpuRangeInHalfRunsEveryBucketOnOpenCl
         COMMAND tessera_cli compile ${BERT_DYNAMIC}.onnx --dim sequence=1..16 --buckets 4,8 --target opencl --dtype float16 -o gpu_range_half.tsr --check)
set_tests_properties(Cli.GpuRangeInHalfRunsEveryBucketOnOpenCl PROPERTIES
                     PASS_REGULAR_EXPRESSION "weights: 0.04 MB.*sequence = 1 \\(bucket 4\\): output 'hidden'.*: correct.*sequence = 5 \\(bucket 8\\): output 'hidden'.*: correct.*sequence = 16 \\(bucket 16\\): output 'hidden'.*: correct"
                     FAIL_REGULAR_EXPRESSION "WRONG|tessera: error" SKIP_REGULAR_EXPRESSION "OpenCL unavailable" TIMEOUT 120)
# Tuning on a GPU target: the dense.gpu template's candidates built in
# workers and measured in child processes on the OpenCL device, the records
# carrying the target and the GPU trace (scopes, bindings).
add_test(NAME Cli.TuneOpOnOpenClMeasuresGpuCandidates
         COMMAND sh -c "rm -f cli_gpu_tune.log && $<TARGET_FILE:tessera_cli> tune-op dense --input 64x32 --weight 64x32 --target opencl --tuner random --trials 4 --confirm-leaders 0 --check 1 --log cli_gpu_tune.log && test $(grep -c '\"target\":\"opencl\"' cli_gpu_tune.log) -eq 4 && grep -q '\"annotation\":\"threadIdx.x\"' cli_gpu_tune.log && test $(grep -c '\"error\":\"none\"' cli_gpu_tune.log) -ge 1 && echo gpu-records-logged && $<TARGET_FILE:tessera_cli> op dense --input 64x32 --weight 64x32 --target opencl --records cli_gpu_tune.log --check --repeat 1")
set_tests_properties(Cli.TuneOpOnOpenClMeasuresGpuCandidates PROPERTIES
                     PASS_REGULAR_EXPRESSION "task: dense.gpu.*Done\\..*gpu-records-logged.*record: .* GFLOPS when tuned.*: correct"
                     TIMEOUT 240)
# A network tuned for a GPU target: its convolution's task (conv2d_nchw.gpu)
# tuned on the OpenCL device, the default and tuned networks timed there,
# and the tuned artifact built from the record equals the interpreter.
add_test(NAME Cli.TuneNetworkForOpenClThenCompileWithTheRecords
         COMMAND sh -c "rm -f cli_gpu_net.log && $<TARGET_FILE:tessera_cli> tune ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --trials 3 --early-stopping 0 --confirm-leaders 0 --log cli_gpu_net.log && $<TARGET_FILE:tessera_cli> compile ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --records cli_gpu_net.log -o cli_gpu_net.tsr --check")
set_tests_properties(Cli.TuneNetworkForOpenClThenCompileWithTheRecords PROPERTIES
                     PASS_REGULAR_EXPRESSION "conv2d_nchw.gpu.*Done\\..*kernel-tuned / default: [0-9.]+ \\(minima\\).*1 of [0-9]+ kernels scheduled by records.*: correct"
                     FAIL_REGULAR_EXPRESSION "WRONG|tessera: error|no thread count" TIMEOUT 240)
add_test(NAME Cli.GraphTunerIsRefusedForAGpuTarget
         COMMAND tessera_cli tune ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl
                 --graph-tuner dp --graph-log cli_gpu_graph.log --log cli_gpu_graph_tasks.log)
set_tests_properties(Cli.GraphTunerIsRefusedForAGpuTarget PROPERTIES PASS_REGULAR_EXPRESSION
                     "tessera: error: tune_network: the graph tuner chooses CPU channel blocks; 'opencl' computes in NCHW"
                     TIMEOUT 60)
# The auto-scheduler on a GPU target (the GPU sketch rules): a network's
# convolution tuned on the OpenCL device, the tuned network timed against
# the default one, and the artifact built from its records equals the interpreter.
add_test(NAME Cli.AutoScheduleANetworkForOpenClThenCompileWithTheRecords
         COMMAND sh -c "rm -f cli_gpu_auto.log && $<TARGET_FILE:tessera_cli> tune ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --search auto --trials 8 --confirm-leaders 0 --log cli_gpu_auto.log && $<TARGET_FILE:tessera_cli> compile ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --target opencl --records cli_gpu_auto.log -o cli_gpu_auto.tsr --check")
set_tests_properties(Cli.AutoScheduleANetworkForOpenClThenCompileWithTheRecords PROPERTIES
                     PASS_REGULAR_EXPRESSION "8 trials: [0-9.]+ s choosing candidates, [0-9.]+ s building, [0-9.]+ s measuring.*auto-scheduled / default: [0-9.]+ \\(minima\\).*1 of 1 kernels scheduled by records.*: correct"
                     FAIL_REGULAR_EXPRESSION "WRONG|tessera: error|errors generated" TIMEOUT 240)
# A time budget covers the leaders' re-measurement too: one spent by the
# first round leaves every task with its search's best, none re-measured.
add_test(NAME Cli.TuneSearchAutoKeepsTheLeadersReMeasurementInsideTheTimeBudget
         COMMAND sh -c "rm -f cli_auto_budget.log && $<TARGET_FILE:tessera_cli> tune ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --search auto --trials 8 --threads 1 --time-budget 0.001 --no-evaluate --log cli_auto_budget.log && test $(grep -c confirmed cli_auto_budget.log) -eq 0 && echo no-confirmations")
set_tests_properties(Cli.TuneSearchAutoKeepsTheLeadersReMeasurementInsideTheTimeBudget PROPERTIES
                     PASS_REGULAR_EXPRESSION "time budget 0.001 min: 0.00085 for the search.*time budget spent: the leaders of 0 of [0-9]+ tasks re-measured.*no-confirmations"
                     FAIL_REGULAR_EXPRESSION "tessera: error" TIMEOUT 120)
# Cold-cache GPU measurements: the device's cache flushed before each run.
add_test(NAME Cli.TuneOpOnOpenClWithColdCaches
         COMMAND sh -c "rm -f cli_gpu_cold.log && $<TARGET_FILE:tessera_cli> tune-op dense --input 64x32 --weight 64x32 --target opencl --tuner random --trials 2 --number 2 --repeat 1 --confirm-leaders 0 --flush-cache --log cli_gpu_cold.log && test $(grep -c '\"error\":\"none\"' cli_gpu_cold.log) -ge 1 && echo cold-records-logged")
set_tests_properties(Cli.TuneOpOnOpenClWithColdCaches PROPERTIES
                     PASS_REGULAR_EXPRESSION "task: dense.gpu.*Done\\..*cold-records-logged" TIMEOUT 240)

# tessera report: a page from a fresh tuning log (with a damaged line) and a
# model compiled with its records: every section, the damage counted, and
# a model that does not load named in one line.
add_test(NAME Cli.ReportMakesOnePageOfATuningAndItsModel
         COMMAND sh -c "rm -f cli_report.log cli_report.html && $<TARGET_FILE:tessera_cli> tune-op conv2d --input 1x8x10x10 --weight 16x8x3x3 --pad 1 --tuner random --trials 4 --confirm-leaders 1 --threads 1 --log cli_report.log > /dev/null && printf 'garbage\\n' >> cli_report.log && $<TARGET_FILE:tessera_cli> report cli_report.log --model ${CMAKE_SOURCE_DIR}/tests/data/onnx/op_conv_asymmetric_pads.onnx --number 2 --repeat 1 --no-roofline -o cli_report.html && grep -c 'id=\"task-0\"' cli_report.html && grep -o '\"damaged\":[0-9]*' cli_report.html && grep -c 'id=\"kernels\"' cli_report.html && ! $<TARGET_FILE:tessera_cli> report cli_report.log --model no-such-model -o cli_report_bad.html")
set_tests_properties(Cli.ReportMakesOnePageOfATuningAndItsModel PROPERTIES TIMEOUT 120
                     PASS_REGULAR_EXPRESSION "wrote cli_report.html \\([0-9]+ KB\\)\n1\n\"damaged\":1\n1\n.*no-such-model")
# --target vta (seed 003): compiled, run on the simulator, each VTA call's
# simulated cycles, GEMM utilisation and bytes, and the whole inference's.
add_test(NAME Cli.VtaCompileAndRunPrintTheSimulatedProfile
         COMMAND sh -c "$<TARGET_FILE:tessera_cli> compile resnet-18 --target vta -o cli_vta.tsr && $<TARGET_FILE:tessera_cli> run cli_vta.tsr --profile")
set_tests_properties(Cli.VtaCompileAndRunPrintTheSimulatedProfile PROPERTIES PASS_REGULAR_EXPRESSION
                     "19 convolutions run on VTA.*tessera_vta[0-9]+_conv2d_packed.*VTA \\(100 MHz, 16x16 GEMM core\\): 19 calls, [0-9]+ cycles")
add_test(NAME Cli.RpcServerRefusesADeviceItDoesNotKnow
         COMMAND tessera_cli rpc server --key pynq --device fpga)
set_tests_properties(Cli.RpcServerRefusesADeviceItDoesNotKnow PROPERTIES PASS_REGULAR_EXPRESSION "--device")
