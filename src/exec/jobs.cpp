// Shell commands with a foreground budget; past it they live on as background jobs.
#include "superagent/jobs.h"

#include <algorithm>

#include "superagent/text.h"

#include <filesystem>

namespace superagent::exec {

Jobs::Jobs(ProcessRunner* runner, Clock* clock, Sleeper sleeper, std::string output_dir,
           std::optional<WorkerScope> scope)
    : runner_(runner), clock_(clock), sleeper_(std::move(sleeper)), output_dir_(std::move(output_dir)),
      scope_(std::move(scope)) {}

Jobs::~Jobs() { KillAll(); }

WorkerScope Jobs::ScopeFor(const std::string& cwd) {
  std::lock_guard<std::mutex> lock(mu_);
  return scope_ ? *scope_ : WorkerScope{std::filesystem::path(cwd).filename().string(), {cwd}, {}};
}

void Jobs::ShowAlso(const std::vector<std::string>& dirs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!scope_) return;
  for (const std::string& dir : dirs)
    if (std::find(scope_->readable.begin(), scope_->readable.end(), dir) == scope_->readable.end())
      scope_->readable.push_back(dir);
}

Result<std::unique_ptr<Process>> Jobs::Spawn(ProcessSpec spec, const std::vector<std::string>& readable) {
  spec.output_dir = output_dir_;
  spec.worker = ScopeFor(spec.cwd);
  for (const std::string& dir : readable) spec.worker->readable.push_back(dir);
  return runner_->Spawn(spec);
}

Result<ShellResult> Jobs::Run(const std::string& command, const std::string& cwd, const std::string& stdin_text,
                              TimeMs foreground_ms, const std::atomic<bool>* cancel) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", command};
  spec.cwd = cwd;
  spec.stdin_text = stdin_text;
  spec.output_dir = output_dir_;
  spec.env = {{"GIT_TERMINAL_PROMPT", "0"}};
  // A worker chose this command: the runner builds its environment and sandboxes it.
  spec.worker = ScopeFor(cwd);
  auto p = runner_->Spawn(spec);
  if (!p.ok()) return p.status();
  std::unique_ptr<Process> proc = std::move(*p);
  const TimeMs start = clock_->NowMs();
  ShellResult r;
  while (true) {
    if (auto code = proc->Poll()) {
      proc->KillGroup();  // what the command left behind in its group goes with it
      r.exit_code = *code;
      // Output is text from outside (binary files, other encodings, a cut sequence): it leaves
      // here as valid UTF-8, so the transcript and the model can take it.
      r.out = text::Repair(proc->Stdout());
      r.err = text::Repair(proc->Stderr());
      return r;
    }
    if (cancel != nullptr && cancel->load()) {
      proc->KillGroup();
      r.exit_code = proc->Poll().value_or(-1);
      r.out = text::Repair(proc->Stdout());
      r.err = text::Repair(proc->Stderr());
      return r;
    }
    if (clock_->NowMs() - start >= foreground_ms) break;
    sleeper_(20);
  }
  std::lock_guard<std::mutex> lock(mu_);
  Job job;
  job.info.id = ++next_id_;
  job.info.command = command;
  job.info.running = true;
  job.info.started_at = start;
  r.background = true;
  r.job = job.info.id;
  r.out = text::Repair(proc->Stdout());
  r.err = text::Repair(proc->Stderr());
  job.process = std::move(proc);
  jobs_.emplace(job.info.id, std::move(job));
  return r;
}

void Jobs::Refresh(Job& job) {
  if (!job.info.running) return;
  if (auto code = job.process->Poll()) {
    job.process->KillGroup();
    job.info.running = false;
    job.info.exit_code = *code;
  }
}

std::vector<JobInfo> Jobs::List() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<JobInfo> out;
  for (auto& [id, job] : jobs_) {
    Refresh(job);
    out.push_back(job.info);
  }
  return out;
}

Result<std::string> Jobs::Output(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound("no background job " + std::to_string(id));
  Refresh(it->second);
  return text::Repair(it->second.process->Stdout() + it->second.process->Stderr());
}

Status Jobs::Kill(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Status::NotFound("no background job " + std::to_string(id));
  Refresh(it->second);
  if (it->second.info.running) {
    it->second.process->KillGroup();
    it->second.info.running = false;
    it->second.info.exit_code = it->second.process->Poll();
  }
  return Status::Ok();
}

std::vector<JobInfo> Jobs::KillAll() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<JobInfo> killed;
  for (auto& [id, job] : jobs_) {
    Refresh(job);
    if (!job.info.running) continue;
    killed.push_back(job.info);
    job.process->KillGroup();
    job.info.running = false;
    job.info.exit_code = job.process->Poll();
  }
  return killed;
}

int Jobs::RunningCount() {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (auto& [id, job] : jobs_) {
    Refresh(job);
    n += job.info.running ? 1 : 0;
  }
  return n;
}

}  // namespace superagent::exec
