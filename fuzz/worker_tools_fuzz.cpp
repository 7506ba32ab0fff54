// A worker's tool call (src/exec/worker_tools.cpp): the name and the arguments a model wrote.
// The first input line is the tool's name, the rest its arguments. Any call must come back as
// text for the model (a result or "error: …") or a report — never a crash. Files are real, in a
// Ticket directory of their own; tools that run commands or push (shell, commit_and_push,
// open_pull_request) are left out: they parse their arguments the same way, and a fuzzer must
// not run what it writes.
#include <filesystem>

#include "exec/worker_tools.h"
#include "fuzz_support.h"
#include "superagent/jobs.h"
#include "superagent/process.h"

namespace {

struct World {
  superagent::fuzz::EngineHarness harness;
  std::unique_ptr<superagent::exec::ProcessRunner> runner = superagent::exec::MakePosixProcessRunner();
  std::unique_ptr<superagent::exec::Jobs> jobs;
  superagent::exec::WorkerServices services{harness.engine(), nullptr};
  superagent::exec::BuiltinExecutorOptions options;
  superagent::exec::WorkerTask task;
  std::unique_ptr<superagent::exec::WorkerTools> tools;
  std::uint64_t calls = 0;
  std::filesystem::path dir;
  // write_file makes whatever it is told: unswept, a ten-minute run left 4.4 GB of files (and an
  // exit that spent minutes removing them). The Ticket directory starts over now and then.
  void Sweep() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir / "docs", ec);
  }
  World() {
    dir = harness.dir() / "ticket-1";
    std::filesystem::create_directories(dir / "docs");
    std::filesystem::create_directories(harness.dir() / "jobs");
    jobs = std::make_unique<superagent::exec::Jobs>(runner.get(), harness.clock(), [](superagent::TimeMs) {},
                                              (harness.dir() / "jobs").string());
    task.ticket = 1;
    task.thread = "github:issue:1";
    task.workspace.dir = dir.string();
    task.workspace.branch = "superagent/ticket-1";
    task.workspace.base = "origin/main";
    task.jobs = jobs.get();
    tools = std::make_unique<superagent::exec::WorkerTools>(task, harness.engine(), &services, options);
  }
};

bool RunsOrPushes(const std::string& name) {
  return name == "shell" || name == "commit_and_push" || name == "open_pull_request";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace superagent;
  static World* world = new World();
  auto [name, arguments] = fuzz::SplitFirstLine(fuzz::Bytes(data, size));
  if (RunsOrPushes(name)) return 0;
  if (++world->calls % 4096 == 0) world->Sweep();
  exec::ToolOutcome out = world->tools->Call({"call-1", name, arguments});
  if (out.text.empty()) std::abort();  // the model is always told something
  return 0;
}
