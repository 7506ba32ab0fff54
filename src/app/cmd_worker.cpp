// `superagent worker --config worker.yaml` (issue 36): the same binary as a worker on another
// machine. It reads worker.yaml (config/worker.example.yaml documents every key), takes the join
// token from the variable join_token_env names and removes it from its own environment, decides
// the sandbox as `serve` does, and runs exec::RunRemoteWorker until SIGINT/SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "app/commands.h"
#include "app/logging.h"
#include "app/wiring.h"
#include "exec/cli_adapter.h"
#include "superagent/http.h"
#include "superagent/process.h"
#include "superagent/sandbox.h"
#include "superagent/text.h"
#include "superagent/worker.h"
#include "superagent/worker_pool.h"

namespace superagent::app {

namespace {

const char* kWorkerUsage =
    "usage: superagent worker --config FILE\n"
    "\n"
    "Runs a worker for a superagent daemon on another machine: connects out to the daemon's\n"
    "worker listener (daemon_url), joins with the join token from the variable join_token_env\n"
    "names, claims turns for the coding CLIs it offers and runs each in its own sandbox.\n"
    "`superagent worker --check --config FILE` (or `superagent doctor --worker FILE`) checks the\n"
    "file, the join token, the sandbox, each CLI, and that the daemon takes the token, then exits.\n"
    "config/worker.example.yaml documents the file. SIGINT/SIGTERM stop it; a turn it was running\n"
    "is offered again by the daemon.\n";

struct WorkerFile {
  exec::RemoteWorkerOptions options;
  std::string join_token_env = "SUPERAGENT_JOIN_TOKEN";
  bool sandbox = true;
  bool network = true;
};

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "worker";
  std::string name;
  for (char c : std::string(buf))
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '-';
  return name.empty() ? "worker" : name.substr(0, 64);
}

bool ParseJoinName(const std::string& name) {
  return exec::ParseJoin(nlohmann::json{{"worker", name}, {"join_token", "x"}}).ok();
}

// "on"/"off" (YAML's true/false too).
bool OnOff(const YAML::Node& n, bool* out, std::string* error) {
  const std::string v = n.as<std::string>();
  if (v == "on" || v == "true") *out = true;
  else if (v == "off" || v == "false") *out = false;
  else *error = "expected on or off, got \"" + v + "\"";
  return error->empty();
}

// The file, or every problem found ("file:line: key: what").
std::optional<WorkerFile> LoadWorkerFile(const std::string& path, std::vector<std::string>* problems) {
  WorkerFile f;
  f.options.name = HostName();
  f.options.work_dir = "/var/lib/superagent-worker";
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    problems->push_back(path + ": " + e.what());
    return std::nullopt;
  }
  if (!root.IsMap()) {
    problems->push_back(path + ": expected a mapping of keys");
    return std::nullopt;
  }
  static const std::set<std::string> kKeys = {"daemon_url", "join_token_env", "name",      "slots",  "work_dir",
                                              "sandbox",    "network",        "executors", "ca_file"};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    const std::string where = path + ":" + std::to_string(kv.first.Mark().line + 1) + ": " + key;
    if (kKeys.count(key) == 0) {
      problems->push_back(where + ": not a worker key (daemon_url, join_token_env, name, slots, work_dir, sandbox, network, executors, ca_file)");
      continue;
    }
    try {
      std::string error;
      if (key == "daemon_url") {
        f.options.daemon_url = v.as<std::string>();
        if (f.options.daemon_url.rfind("http://", 0) != 0 && f.options.daemon_url.rfind("https://", 0) != 0)
          error = "expected an http:// or https:// URL";
      } else if (key == "join_token_env") {
        f.join_token_env = v.as<std::string>();
        if (f.join_token_env.empty()) error = "names the variable holding the join token; it cannot be empty";
      } else if (key == "name") {
        const std::string name = v.IsNull() ? "" : v.as<std::string>();
        if (!name.empty()) f.options.name = name;  // empty: the host name
        if (!ParseJoinName(f.options.name)) error = "1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'";
      } else if (key == "slots") {
        f.options.slots = v.as<int>();
        if (f.options.slots < 1 || f.options.slots > 64) error = "1 to 64";
      } else if (key == "work_dir") {
        f.options.work_dir = v.as<std::string>();
        if (f.options.work_dir.empty() || f.options.work_dir[0] != '/') error = "an absolute directory";
      } else if (key == "ca_file") {
        f.options.ca_file = v.IsNull() ? "" : v.as<std::string>();
        std::error_code ec;
        if (!f.options.ca_file.empty() &&
            (f.options.ca_file[0] != '/' || !std::filesystem::is_regular_file(f.options.ca_file, ec)))
          error = "an absolute path to a readable PEM file, or empty";
      } else if (key == "sandbox") {
        OnOff(v, &f.sandbox, &error);
      } else if (key == "network") {
        OnOff(v, &f.network, &error);
      } else if (key == "executors") {
        if (!v.IsMap() || v.size() == 0) {
          error = "a mapping of coding CLI names (claude-code, codex, gemini-cli, qwen-code) to {binary: …}";
        } else {
          for (const auto& e : v) {
            const std::string name = e.first.as<std::string>();
            const auto& names = exec::CliExecutorNames();
            if (std::find(names.begin(), names.end(), name) == names.end()) {
              problems->push_back(where + "." + name + ": not a coding CLI (claude-code, codex, gemini-cli, qwen-code)");
              continue;
            }
            exec::RemoteWorkerOptions::Executor x;
            if (e.second.IsMap() && e.second["binary"]) x.binary = e.second["binary"].as<std::string>();
            x.binary = x.binary.empty() ? "" : FindProgram(x.binary);
            f.options.executors[name] = std::move(x);
          }
        }
      }
      if (!error.empty()) problems->push_back(where + ": " + error);
    } catch (const YAML::Exception& e) {
      problems->push_back(where + ": " + e.msg);
    }
  }
  if (f.options.daemon_url.empty()) problems->push_back(path + ": daemon_url: required (the daemon's workers.listen)");
  if (f.options.executors.empty()) problems->push_back(path + ": executors: required (the coding CLIs this worker runs)");
  if (!problems->empty()) return std::nullopt;
  return f;
}

}  // namespace

int WorkerDoctor(const std::string& config_path) {
  std::vector<std::string> problems;
  auto file = LoadWorkerFile(config_path, &problems);
  if (!file) {
    std::printf("%-22s FAILED  %zu problem(s) in %s\n", "worker config", problems.size(), config_path.c_str());
    for (const std::string& p : problems) std::printf("    %s\n", p.c_str());
    return 2;
  }
  std::printf("%-22s ok      %s (worker %s, %d slot(s))\n", "worker config", config_path.c_str(),
              file->options.name.c_str(), file->options.slots);
  int failed = 0;
  auto line = [&](const std::string& name, bool ok, const std::string& detail, const std::string& fix = "") {
    std::printf("%-22s %-7s %s\n", name.c_str(), ok ? "ok" : "FAILED", detail.c_str());
    if (!ok && !fix.empty()) std::printf("    fix: %s\n", fix.c_str());
    if (!ok) ++failed;
  };
  const char* token = std::getenv(file->join_token_env.c_str());
  line("join token", token != nullptr && *token != '\0', "from $" + file->join_token_env,
       "set " + file->join_token_env + " to the daemon's join token (the value of its workers.join_token_env)");
  exec::SandboxPolicy policy;
  policy.network = file->network;
  const exec::SandboxSupport support = exec::ProbeSandbox(policy);
  line("sandbox", !file->sandbox || support.supported, file->sandbox ? support.detail : "off (sandbox: off)",
       "install bubblewrap and allow user namespaces, or set sandbox: off");
  for (const auto& [name, e] : file->options.executors) {
    const std::string binary = e.binary.empty() ? FindProgram(exec::MakeCliAdapter(name)->default_binary()) : e.binary;
    line("executor " + name, !binary.empty() && ::access(binary.c_str(), X_OK) == 0, binary.empty() ? "not found" : binary,
         "install it (npm install -g …) or set executors." + name + ".binary");
  }
  if (!file->options.ca_file.empty()) ::setenv("SSL_CERT_FILE", file->options.ca_file.c_str(), 1);
  if (token != nullptr && *token != '\0') {
    // A join under a name of its own, so a running worker's credential is left alone.
    auto http = MakeHttpClient("superagent-worker-doctor/" SUPERAGENT_VERSION, HttpProxiesFromEnvironment());
    HttpRequest req;
    req.method = "POST";
    req.url = file->options.daemon_url;
    while (!req.url.empty() && req.url.back() == '/') req.url.pop_back();
    req.url += "/workers/v1/join";
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = nlohmann::json{{"worker", file->options.name.substr(0, 57) + ".doctor"}, {"join_token", token}}.dump();
    req.timeout_ms = 15'000;
    HttpResponse res = http->Send(req);
    if (!res.error.empty())
      line("daemon", false, "cannot reach " + file->options.daemon_url + ": " + res.error,
           "check daemon_url and that the daemon's workers.listen is reachable from this host");
    else if (res.status == 401)
      line("daemon", false, "reached, but the join token is not the daemon's",
           "give " + file->join_token_env + " the value of the daemon's workers.join_token_env");
    else
      line("daemon", res.ok(), "joined " + file->options.daemon_url + " (HTTP " + std::to_string(res.status) + ")",
           "the daemon answered " + std::to_string(res.status) + ": " + text::Cut(text::Repair(res.body), 200));
  }
  return failed == 0 ? 0 : 1;
}

int CmdWorker(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--check" && std::string_view(argv[2]) == "--config")
    return WorkerDoctor(argv[3]);
  std::string config_path;
  if (auto done = ParseConfigOnly(argc, argv, "worker", kWorkerUsage, &config_path)) return *done;
  if (config_path.empty()) return UsageError("worker", "--config FILE is required", kWorkerUsage);
  std::vector<std::string> problems;
  auto file = LoadWorkerFile(config_path, &problems);
  if (!file) {
    for (const std::string& p : problems) std::fprintf(stderr, "%s\n", p.c_str());
    return 2;
  }
  SetupLogging("info");
  if (!file->network) {
    // The CLI reaches its model through the daemon, over this host's network: a sandbox without
    // one would need a bridge out of it that workers do not have yet.
    std::fprintf(stderr, "worker: network: off is not supported on workers yet (the CLI reaches its model through the daemon); use on\n");
    return 2;
  }
  const char* token = std::getenv(file->join_token_env.c_str());
  if (token == nullptr || *token == '\0') {
    std::fprintf(stderr, "worker: the variable %s (join_token_env) holds no join token\n", file->join_token_env.c_str());
    return 2;
  }
  file->options.join_token = token;
  // The worker's own client trusts the daemon's CA: OpenSSL reads SSL_CERT_FILE when a client
  // loads its default roots. (Its CLIs get it as NODE_EXTRA_CA_CERTS, RunRemoteWorker.)
  if (!file->options.ca_file.empty()) ::setenv("SSL_CERT_FILE", file->options.ca_file.c_str(), 1);
  // Nothing this process starts inherits it (workers' environments are built, never copied,
  // but a helper's might not be).
  ::unsetenv(file->join_token_env.c_str());

  // Stop signals are taken by a thread of their own, so every other thread runs undisturbed.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  exec::SandboxPolicy policy;
  policy.network = file->network;
  policy.state_dir = (std::filesystem::path(file->options.work_dir) / "state").string();
  auto decided = exec::DecideSandbox(file->sandbox ? "on" : "off", exec::ProbeSandbox(policy));
  if (!decided.ok()) {
    std::fprintf(stderr, "worker: sandbox: %s\n", decided.status().message().c_str());
    return 2;
  }
  policy.enabled = decided->enabled;
  // A CLI this host does not have is not offered: the daemon would lease it turns that can only fail.
  for (auto it = file->options.executors.begin(); it != file->options.executors.end();) {
    auto& [name, e] = *it;
    if (e.binary.empty()) e.binary = FindProgram(exec::MakeCliAdapter(name)->default_binary());
    if (e.binary.empty() || ::access(e.binary.c_str(), X_OK) != 0) {
      std::fprintf(stderr, "worker: executors.%s: its program is not found here; not offered\n", name.c_str());
      it = file->options.executors.erase(it);
      continue;
    }
    e.readable = CliInstallDirs(e.binary);
    ++it;
  }
  if (file->options.executors.empty()) {
    std::fprintf(stderr, "worker: none of the executors' programs is installed here (npm install -g …, or executors.<cli>.binary)\n");
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(policy.state_dir, ec);
  exec::PosixRunnerOptions ro;
  ro.cgroup_parent = "off";
  ro.sandbox = policy;
  auto runner = exec::MakePosixProcessRunner(ro);
  auto http = MakeHttpClient("superagent-worker/" SUPERAGENT_VERSION, HttpProxiesFromEnvironment());

  std::atomic<bool> stop{false};
  std::thread signals([&] {
    int sig = 0;
    sigwait(&set, &sig);
    spdlog::info("worker stopping signal={}", sig == SIGINT ? "SIGINT" : "SIGTERM");
    stop = true;
  });
  std::string offered;
  for (const auto& [name, e] : file->options.executors) offered += (offered.empty() ? "" : ",") + name + "=" + e.binary;
  spdlog::info("worker starting worker={} daemon={} slots={} sandbox={} executors={}", file->options.name,
               file->options.daemon_url, file->options.slots, decided->detail, offered);
  Status s = exec::RunRemoteWorker(file->options, http.get(), runner.get(), SystemClock(), exec::RealSleeper(), &stop);
  if (!stop) {
    stop = true;
    ::kill(::getpid(), SIGTERM);  // wakes the signal thread
  }
  signals.join();
  if (!s.ok()) {
    std::fprintf(stderr, "worker: %s\n", s.message().c_str());
    return 1;
  }
  spdlog::info("worker stopped worker={}", file->options.name);
  return 0;
}

}  // namespace superagent::app
