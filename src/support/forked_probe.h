#pragma once
// Asking a device runtime a question from a forked child that exits. CUDA
// does not survive fork (a child of a process that initialised it gets
// CUDA_ERROR_NOT_INITIALIZED), and an OpenCL driver's worker threads do not
// either (PoCL's children hang). A tuner forks one measurement child per
// candidate on the device, so whatever it asks before tuning (is there a
// device? which arch?) it asks this way, and initialises the runtime itself
// only when it runs on the device.
#include <functional>
#include <string>

namespace tessera::support {

struct ProbeAnswer {
  bool answered = false;  // false: `text` says why not (the child died, hung, or could not start)
  std::string text;       // what `ask` returned in the child
};

// Runs `ask` in a forked child and returns its text; `what` names the question
// in the failure line. A child that has not answered within `timeout_ms` is
// killed. `ask` must not throw (the child then answers nothing).
ProbeAnswer ask_in_forked_child(const std::function<std::string()>& ask, const std::string& what,
                                int timeout_ms = 60000);

}  // namespace tessera::support
