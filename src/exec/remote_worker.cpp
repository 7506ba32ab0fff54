// `superagent worker` (issue 36): a worker on another machine. It joins the daemon with the join
// token, claims turns for the executors it offers, and runs each as a local slot would: the
// Ticket's repository from the bundle the lease carries, the coding CLI in this host's sandbox with
// the prompt the daemon made, the model reached only through the daemon (the turn's pass is the
// CLI's key), the transcript streamed back as it comes, heartbeats that keep the lease, and the
// commits handed back as a bundle. It decides nothing: the daemon verifies what it returns.
#include <spdlog/spdlog.h>

#include <filesystem>
#include <mutex>
#include <thread>

#include "exec/cli_adapter.h"
#include "superagent/assign_or_return.h"
#include "superagent/http.h"
#include "superagent/json_read.h"
#include "superagent/text.h"
#include "superagent/worker_pool.h"

namespace superagent::exec {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr TimeMs kWorkerPollMs = 50;
constexpr TimeMs kWorkerEventsEveryMs = 1'000;  // transcript events go in batches at most this old
constexpr TimeMs kWorkerRetryMs = 2'000;        // after a failed call to the daemon

// A report as ParseReport reads it back (the daemon parses what the worker returns).
json WorkerReportJson(const WorkerReport& r) {
  json j = {{"stage", StageName(r.stage)}, {"summary", r.summary}};
  if (r.question) j["question"] = *r.question;
  if (r.pr) j["pr"] = {{"title", r.pr->title}, {"body", r.pr->body}};
  // Why a turn failed, in the CLI's own words: for the daemon's log and the panel's card, as a
  // local turn's failure goes there (never into the discussion).
  if (!r.failure.empty()) j["failure"] = r.failure;
  return j;
}

class RemoteWorker {
 public:
  RemoteWorker(RemoteWorkerOptions options, HttpClient* http, ProcessRunner* runner, Clock* clock, Sleeper sleeper,
         const std::atomic<bool>* stop)
      : o_(std::move(options)), http_(http), runner_(runner), clock_(clock), sleeper_(std::move(sleeper)), stop_(stop) {}

  Status Run() {
    for (const auto& [name, e] : o_.executors) {
      if (MakeCliAdapter(name) == nullptr) return Status::InvalidArgument("executors: no coding CLI named \"" + name + "\"");
      executors_.push_back(name);
    }
    if (executors_.empty()) return Status::InvalidArgument("executors: the worker offers none");
    std::error_code ec;
    fs::create_directories(fs::path(o_.work_dir) / "turns", ec);
    if (ec) return Status::IoError("cannot make " + o_.work_dir + "/turns: " + ec.message());
    std::vector<std::thread> slots;
    for (int i = 0; i < o_.slots; ++i) slots.emplace_back([this, i] { Slot(i); });
    for (std::thread& t : slots) t.join();
    return Status::Ok();
  }

 private:
  bool Stopping() const { return stop_ != nullptr && stop_->load(); }

  // POST `path` with `body`; the answer's JSON (an object), or why not. A 401 drops the credential
  // (the next call joins again).
  Result<json> Call(const std::string& path, const json& body, long timeout_ms, int* status = nullptr) {
    HttpRequest req;
    req.method = "POST";
    req.url = o_.daemon_url + path;
    req.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    req.timeout_ms = timeout_ms;
    req.cancel = stop_;
    req.headers.emplace_back("Content-Type", "application/json");
    if (path != "/workers/v1/join") {
      ASSIGN_OR_RETURN(std::string credential, Credential());
      req.headers.emplace_back("Authorization", "Bearer " + credential);
    }
    HttpResponse res = http_->Send(req);
    if (status != nullptr) *status = res.status;
    if (!res.error.empty()) return Status::Unavailable("the daemon could not be reached: " + res.error);
    if (res.status == 401 && path != "/workers/v1/join") {
      std::lock_guard<std::mutex> lock(mu_);
      credential_.clear();
    }
    json j = json::parse(res.body, nullptr, false);
    if (res.status < 200 || res.status >= 300)
      return Status::Unavailable("the daemon answered " + std::to_string(res.status) + ": " +
                                 text::Cut(j.is_object() ? j.value("error", "") : text::Repair(res.body), 300));
    if (!j.is_object()) return Status::Unavailable("the daemon's answer is not a JSON object");
    return j;
  }

  // The per-worker credential, joining with the join token when there is none.
  Result<std::string> Credential() {
    std::lock_guard<std::mutex> join_lock(join_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!credential_.empty()) return credential_;
    }
    ASSIGN_OR_RETURN(json j, Call("/workers/v1/join", {{"worker", o_.name}, {"join_token", o_.join_token}}, 30'000));
    const std::string credential = json_read::StringOr(j, "credential");
    if (credential.empty()) return Status::Unavailable("the daemon's join answer has no credential");
    const std::int64_t lease_ms = j.value("lease_ms", std::int64_t{30'000});
    const std::int64_t wait_ms = j.value("claim_wait_ms", std::int64_t{10'000});
    std::lock_guard<std::mutex> lock(mu_);
    credential_ = credential;
    heartbeat_ms_ = std::clamp<TimeMs>(lease_ms / 3, 100, 10'000);
    claim_wait_ms_ = std::clamp<TimeMs>(wait_ms, 0, 120'000);
    spdlog::info("worker joined the daemon worker={} daemon={} lease_ms={}", o_.name, o_.daemon_url, lease_ms);
    return credential_;
  }

  void Slot(int slot) {
    TimeMs failing_since = -1, last_said = -1;  // an outage is said once a minute, not every retry
    while (!Stopping()) {
      json announcement = AnnouncementToJson(Announcement{o_.name, executors_, o_.slots});
      TimeMs wait;
      {
        std::lock_guard<std::mutex> lock(mu_);
        wait = claim_wait_ms_;
      }
      auto got = Call("/workers/v1/claim", announcement, wait + 30'000);
      if (!got.ok()) {
        const TimeMs now = clock_->NowMs();
        if (failing_since < 0) failing_since = now;
        if (!Stopping() && (last_said < 0 || now - last_said >= 60'000)) {
          spdlog::warn("worker cannot claim slot={} failing_s={} error=\"{}\"", slot, (now - failing_since) / 1000,
                       got.status().message());
          last_said = now;
        }
        sleeper_(kWorkerRetryMs);
        continue;
      }
      if (failing_since >= 0) {
        spdlog::info("worker reaches the daemon again slot={} after_s={}", slot, (clock_->NowMs() - failing_since) / 1000);
        failing_since = last_said = -1;
      }
      const json* lease_json = json_read::Find(*got, "lease");
      if (lease_json == nullptr || lease_json->is_null()) continue;
      auto lease = ParseLease(*lease_json);
      if (!lease.ok()) {
        spdlog::error("worker got a lease it cannot read error=\"{}\"", lease.status().message());
        continue;
      }
      RunLease(*lease);
    }
  }

  // Runs `script` with sh in the turn's sandbox (its directory `dir` writable), `stdin_text` on
  // its standard input; waits for it.
  Result<RunResult> InTurnSandbox(const std::string& dir, const std::string& scope, const std::string& script,
                                  const std::vector<std::string>& args, const std::string& stdin_text = "",
                                  bool binary_stdout = false, const std::string& cwd = "") {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script, "superagent-git"};
    for (const std::string& a : args) spec.argv.push_back(a);
    spec.cwd = cwd.empty() ? dir : cwd;
    spec.stdin_text = stdin_text;
    spec.output_dir = OutputDir(scope);
    spec.binary_stdout = binary_stdout;
    spec.env = GitEnv();
    spec.worker = WorkerScope{scope, {dir}, {}};
    return RunToCompletion(*runner_, spec, clock_, sleeper_, 10 * 60'000);
  }

  // Where a turn's processes' output files go: outside the turn's directory, which the sandbox
  // writes and git commits.
  std::string OutputDir(const std::string& scope) const {
    const std::string out = (fs::path(o_.work_dir) / "output" / scope).string();
    std::error_code ec;
    fs::create_directories(out, ec);
    return out;
  }

  static std::vector<std::pair<std::string, std::string>> GitEnv() {
    return {{"GIT_TERMINAL_PROMPT", "0"},         {"GIT_AUTHOR_NAME", "superagent"},
            {"GIT_AUTHOR_EMAIL", "superagent@localhost"}, {"GIT_COMMITTER_NAME", "superagent"},
            {"GIT_COMMITTER_EMAIL", "superagent@localhost"}, {"GIT_CONFIG_NOSYSTEM", "1"}};
  }

  void RunLease(const Lease& lease) {
    const std::string scope = "turn-" + std::to_string(lease.offer) + "-" + std::to_string(lease.attempt);
    const std::string dir = (fs::path(o_.work_dir) / "turns" / scope).string();
    spdlog::info("worker turn started ticket={} offer={} attempt={} executor={}", lease.turn.ticket, lease.offer,
                 lease.attempt, lease.turn.executor);
    TurnReturn result;
    bool keep = true;  // false: the lease was lost or withdrawn; return nothing
    Status s = Work(lease, dir, scope, &result, &keep);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::remove_all(OutputDir(scope), ec);
    if (!keep) {
      spdlog::info("worker turn abandoned ticket={} offer={}: the daemon took it back", lease.turn.ticket, lease.offer);
      return;
    }
    if (!s.ok()) {
      // The cause names this host's paths: it stays in this log; the daemon hears the fact.
      spdlog::error("worker turn could not run ticket={} offer={} error=\"{}\"", lease.turn.ticket, lease.offer,
                    s.message());
      WorkerReport blocked;
      blocked.stage = Stage::kBlocked;
      blocked.summary = "The remote worker " + o_.name + " could not run this turn (its log says why).";
      result.report = WorkerReportJson(blocked);
      result.bundle.clear();
    }
    for (int attempt = 0; attempt < 5 && !Stopping(); ++attempt) {
      int status = 0;
      auto r = Call("/workers/v1/return", TurnReturnToJson(LeaseRef{o_.name, lease.id}, result), 120'000, &status);
      if (r.ok() || status == 409 || status == 400) {
        spdlog::info("worker turn returned ticket={} offer={} accepted={} bundle_bytes={}{}", lease.turn.ticket,
                     lease.offer, r.ok(), result.bundle.size(), r.ok() ? "" : " why=\"" + r.status().message() + "\"");
        return;
      }
      sleeper_(kWorkerRetryMs);
    }
  }

  // Renews the lease (with any events): false when the daemon took it back.
  bool Renew(const Lease& lease, std::vector<TurnEvent>* events) {
    auto r = events->empty() ? Call("/workers/v1/heartbeat", {{"worker", o_.name}, {"lease", lease.id}}, 15'000)
                             : Call("/workers/v1/events", ProgressToJson(LeaseRef{o_.name, lease.id}, *events), 15'000);
    if (!r.ok()) {
      // Unreachable for a moment: keep working; the lease ends on the daemon's side if it lasts.
      spdlog::warn("worker heartbeat failed ticket={} error=\"{}\"", lease.turn.ticket, r.status().message());
      return true;
    }
    events->clear();
    const std::string state = json_read::StringOr(*r, "state");
    return state == "held";
  }

  Status Work(const Lease& lease, const std::string& dir, const std::string& scope, TurnReturn* out, bool* keep) {
    const json& task = lease.turn.task;
    auto exe = o_.executors.find(lease.turn.executor);
    if (exe == o_.executors.end()) return Status::InvalidArgument("this worker does not run " + lease.turn.executor);
    std::unique_ptr<CliAdapter> adapter = MakeCliAdapter(lease.turn.executor);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Status::IoError("cannot make " + dir + ": " + ec.message());

    // The repository, from the lease's bundle: its HEAD as the Ticket's branch, and its base.
    const std::string branch = json_read::StringOr(task, "branch", "superagent/work");
    auto made = InTurnSandbox(dir, scope,
                              "set -e\n"
                              "f=\"${TMPDIR:-/tmp}/superagent-code.bundle\"\n"
                              "cat > \"$f\"\n"
                              "git init -q repo\n"
                              "cd repo\n"
                              "git fetch -q --no-tags --no-write-fetch-head \"$f\" \"+HEAD:refs/heads/$1\" "
                              "'+refs/remotes/*:refs/remotes/*' >&2\n"
                              "rm -f \"$f\"\n"
                              "git checkout -q \"$1\"\n"
                              "git rev-parse HEAD\n",
                              {branch}, lease.turn.code);
    if (!made.ok()) return made.status();
    if (made->exit_code != 0) return Status::Unavailable("the turn's code could not be checked out: " + text::TailLines(made->err, 3, 300));
    const std::string start = text::Trim(made->out);
    const std::string repo = dir + "/repo";

    CliExecutorOptions options;
    options.cli = lease.turn.executor;
    options.binary = exe->second.binary.empty() ? adapter->default_binary() : exe->second.binary;
    options.readable = exe->second.readable;
    const json* cli = json_read::Find(task, "cli");
    if (cli != nullptr && cli->is_object()) {
      options.model = json_read::StringOr(*cli, "model");
      for (const char* key : {"allowed_commands", "args"}) {
        const json* list = json_read::Find(*cli, key);
        if (list == nullptr || !list->is_array()) continue;
        for (const json& a : *list)
          if (a.is_string()) (std::string(key) == "args" ? options.args : options.allowed_commands).push_back(a.get<std::string>());
      }
      options.turn_ms = std::clamp<std::int64_t>(cli->value("turn_ms", std::int64_t{30 * 60'000}), 1'000, 24 * 3600'000);
    }
    const json* model = json_read::Find(task, "model");
    if (model != nullptr && model->is_object()) {
      options.api_key = json_read::StringOr(*model, "pass");
      options.base_url = o_.daemon_url + "/workers/v1/model" + json_read::StringOr(*model, "path");
    }
    CliTurn turn;
    turn.prompt = json_read::StringOr(task, "prompt");
    turn.worktree = repo;
    if (turn.prompt.empty()) return Status::InvalidArgument("the lease carries no prompt");
    CliInvocation inv = adapter->Invocation(options, turn);
    if (!inv.unsupported.empty()) return Status::InvalidArgument(inv.unsupported);
    for (const std::string& a : options.args) inv.argv.push_back(a);
    ProcessSpec spec;
    spec.cwd = repo;
    spec.stdin_text = "";
    spec.output_dir = OutputDir(scope);
    spec.env = inv.env;
    spec.env.emplace_back("GIT_TERMINAL_PROMPT", "0");
    std::vector<std::string> readable = options.readable;
    if (!o_.ca_file.empty()) {
      spec.env.emplace_back("NODE_EXTRA_CA_CERTS", o_.ca_file);
      readable.push_back(o_.ca_file);
    }
    spec.argv = CliArgv(inv, std::nullopt, &spec.env);
    spec.worker = WorkerScope{scope, {dir}, readable};
    auto proc = runner_->Spawn(spec);
    if (!proc.ok()) return Status::Unavailable(lease.turn.executor + " could not start: " + proc.status().message());

    CliProgress progress;
    std::vector<TurnEvent> pending;
    std::size_t consumed = 0;
    const TimeMs started = clock_->NowMs();
    TimeMs last_renew = started;
    TimeMs heartbeat_ms;
    {
      std::lock_guard<std::mutex> lock(mu_);
      heartbeat_ms = heartbeat_ms_;
    }
    std::optional<int> exit_code;
    bool timed_out = false;
    while (true) {
      exit_code = (*proc)->Poll();
      consumed = FeedCliLines(*adapter, (*proc)->Stdout(), consumed, exit_code.has_value(), &progress);
      for (auto& e : progress.events) pending.push_back(std::move(e));
      progress.events.clear();
      progress.usage.clear();  // the daemon's gateway counted every call
      if (exit_code) break;
      const TimeMs now = clock_->NowMs();
      if (Stopping()) {
        *keep = false;  // the worker stops: the lease ends and the turn is offered again
        break;
      }
      if (now - started >= options.turn_ms) {
        timed_out = true;
        break;
      }
      if (now - last_renew >= std::min(heartbeat_ms, kWorkerEventsEveryMs) && (!pending.empty() || now - last_renew >= heartbeat_ms)) {
        while (pending.size() > kMaxEventsPerProgress) {
          std::vector<TurnEvent> batch(pending.begin(), pending.begin() + kMaxEventsPerProgress);
          pending.erase(pending.begin(), pending.begin() + kMaxEventsPerProgress);
          if (!Renew(lease, &batch)) *keep = false;
        }
        if (!Renew(lease, &pending)) *keep = false;
        last_renew = now;
        if (!*keep) break;
      }
      sleeper_(kWorkerPollMs);
    }
    (*proc)->KillGroup();
    if (!exit_code) exit_code = (*proc)->Poll();
    if (!*keep) return Status::Ok();
    const int code = exit_code.value_or(-1);
    const std::string err_tail = text::TailLines(text::Repair((*proc)->Stderr()), 10, 1500);
    if (!timed_out) adapter->OnExit(code, &progress);
    for (auto& e : progress.events) pending.push_back(std::move(e));
    pending.push_back({"command", {{"command", lease.turn.executor}, {"exit_code", code}, {"stderr_tail", text::Cut(err_tail, 4000)},
                                   {"timed_out", timed_out}, {"cancelled", false}, {"worker", o_.name}}});
    while (!pending.empty()) {
      std::vector<TurnEvent> batch(pending.begin(), pending.begin() + std::min(pending.size(), kMaxEventsPerProgress));
      pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(batch.size()));
      if (!Renew(lease, &batch)) {
        *keep = false;
        return Status::Ok();
      }
    }

    auto status = InTurnSandbox(dir, scope, "git status --porcelain; git rev-parse HEAD", {}, "", false, repo);
    const bool changed = status.ok() && status->exit_code == 0 &&
                         text::Trim(status->out) != start;  // anything listed, or HEAD moved
    std::optional<json> block;
    WorkerReport report = JudgeCliTurn(lease.turn.executor, options.turn_ms, code, timed_out, progress, err_tail,
                                       json_read::StringOr(task, "scope"), [&] { return changed; }, &block);
    if (!report.failure.empty()) spdlog::warn("worker turn failed ticket={} cause=\"{}\"", lease.turn.ticket, report.failure);
    out->report = block ? *block : WorkerReportJson(report);

    // Whatever the CLI left uncommitted becomes a commit, then every commit over what the daemon
    // sent goes back as a bundle ("" when there is none).
    const std::string message = report.pr ? report.pr->title : json_read::StringOr(task, "scope", "superagent turn");
    auto bundled = InTurnSandbox(dir, scope,
                                 "set -e\n"
                                 "git add -A >&2\n"
                                 "git diff --cached --quiet || git commit -q -m \"$1\" >&2\n"
                                 "if [ \"$(git rev-parse HEAD)\" = \"$2\" ]; then exit 0; fi\n"
                                 "exec git bundle create -q - HEAD \"^$2\"\n",
                                 {message.empty() ? "superagent turn" : message, start}, "", true, repo);
    if (!bundled.ok()) return bundled.status();
    if (bundled->exit_code != 0) return Status::Unavailable("the turn's commits could not be bundled: " + text::TailLines(bundled->err, 3, 300));
    out->bundle = bundled->out;
    spdlog::info("worker turn ended ticket={} exit_code={} stage={} seconds={}", lease.turn.ticket, code,
                 StageName(report.stage), (clock_->NowMs() - started) / 1000);
    return Status::Ok();
  }

  const RemoteWorkerOptions o_;
  HttpClient* const http_;
  ProcessRunner* const runner_;
  Clock* const clock_;
  Sleeper sleeper_;
  const std::atomic<bool>* stop_;
  std::vector<std::string> executors_;
  std::mutex join_mu_;  // one join at a time
  std::mutex mu_;
  std::string credential_;
  TimeMs heartbeat_ms_ = 10'000;
  TimeMs claim_wait_ms_ = 10'000;
};

}  // namespace

Status RunRemoteWorker(RemoteWorkerOptions options, HttpClient* http, ProcessRunner* runner, Clock* clock,
                       Sleeper sleeper, const std::atomic<bool>* stop) {
  while (!options.daemon_url.empty() && options.daemon_url.back() == '/') options.daemon_url.pop_back();
  RemoteWorker worker(std::move(options), http, runner, clock, std::move(sleeper), stop);
  return worker.Run();
}

}  // namespace superagent::exec
