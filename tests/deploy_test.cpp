// The worker's deployment recipes (issue 36 item 5), checked as far as a machine without a
// cluster or a container runtime allows: the systemd unit passes `systemd-analyze verify`; every
// Kubernetes manifest under deploy/kubernetes/ is valid against the real API schemas, offline
// (tests/deploy/validate_manifests.js: Kubernetes' OpenAPI and KEDA's CRDs from npm, installed by
// `npm ci` in tests/), and a broken one is refused; the recipes agree with each other and with
// config/worker.example.yaml; the image installs the CLI versions the tests run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"

namespace superagent::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path kDeploySource = fs::path(SUPERAGENT_SOURCE_DIR);
const fs::path kDeployKubernetes = kDeploySource / "deploy" / "kubernetes";
const std::string kDeployWorkerCommand = "/usr/bin/superagent worker --config /etc/superagent/worker.yaml";
// worker.yaml's keys, as decided for `superagent worker` (issue 36).
const std::set<std::string> kDeployWorkerKeys = {"daemon_url", "join_token_env", "name",      "slots",  "work_dir",
                                                 "sandbox",    "network",        "executors", "ca_file"};
const std::set<std::string> kDeployClis = {"@anthropic-ai/claude-code", "@openai/codex", "@google/gemini-cli",
                                           "@qwen-code/qwen-code"};

std::string DeployReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `name` on PATH, or "".
std::string DeployFindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const fs::path candidate = fs::path(dirs.substr(start, end - start)) / name;
    if (!candidate.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

std::set<std::string> DeployKeys(const YAML::Node& map) {
  std::set<std::string> keys;
  for (const auto& kv : map) keys.insert(kv.first.as<std::string>());
  return keys;
}

// Every manifest file, sorted.
std::vector<fs::path> DeployManifests() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kDeployKubernetes))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The first document of deploy/kubernetes/`file`.
YAML::Node DeployManifest(const std::string& file) { return YAML::LoadFile((kDeployKubernetes / file).string()); }

// A fresh directory, removed with the object.
struct DeployTempDir {
  fs::path path = fs::temp_directory_path() / ("superagent-deploy-" + std::to_string(::getpid()));
  DeployTempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~DeployTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// node with the validator's packages, or a failure saying what to install.
class DeployTest : public ::testing::Test {
 protected:
  RunResult Validate(const std::vector<fs::path>& files) {
    const std::string node = DeployFindOnPath("node");
    const fs::path modules = kDeploySource / "tests" / "node_modules";
    EXPECT_FALSE(node.empty()) << "node is not installed: `cmake/dev.sh test` installs nodejs and npm";
    for (const char* pkg : {"kubernetes-models", "@kubernetes-models/keda", "yaml"})
      EXPECT_TRUE(fs::exists(modules / pkg)) << pkg << " is missing: run `npm ci` in tests/ (`cmake/dev.sh test` does)";
    if (node.empty()) return {};
    std::vector<std::string> args = {(kDeploySource / "tests" / "deploy" / "validate_manifests.js").string()};
    for (const fs::path& f : files) args.push_back(f.string());
    RunOptions options;
    options.timeout_ms = 50'000;
    return RunProgram(node, args, options);
  }
};

TEST_F(DeployTest, TheWorkerUnitPassesSystemdAnalyzeVerify) {
  // verify checks that ExecStart's program exists: the binary under test stands for /usr/bin's.
  DeployTempDir dir;
  std::string unit = DeployReadFile(kDeploySource / "config" / "superagent-worker.service");
  const std::string exec = "ExecStart=" + kDeployWorkerCommand + "\n";
  ASSERT_NE(unit.find(exec), std::string::npos) << "the unit runs the worker command";
  unit.replace(unit.find(exec), exec.size(),
               "ExecStart=" + std::string(SUPERAGENT_BINARY) + " worker --config /etc/superagent/worker.yaml\n");
  std::ofstream(dir.path / "superagent-worker.service") << unit;
  std::string analyze;
  for (const char* p : {"/usr/bin/systemd-analyze", "/bin/systemd-analyze"})
    if (analyze.empty() && fs::exists(p)) analyze = p;
  ASSERT_FALSE(analyze.empty()) << "systemd-analyze is missing: apt-get install systemd (cmake/dev.sh deps)";
  RunResult r = RunProgram(analyze, {"verify", (dir.path / "superagent-worker.service").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "") << "systemd warns about the unit";
  // What the worker needs from it: restarted whatever ends it, a state directory for work_dir,
  // the namespaces bubblewrap makes, the join token from a root-only file.
  EXPECT_THAT(unit, HasSubstr("\nRestart=always\n"));
  EXPECT_THAT(unit, HasSubstr("\nStateDirectory=superagent-worker\n"));
  EXPECT_THAT(unit, HasSubstr("\nRestrictNamespaces=user mnt pid net ipc uts\n"));
  EXPECT_THAT(unit, HasSubstr("\nEnvironmentFile=/etc/superagent/worker.env\n"));
}

TEST_F(DeployTest, EveryKubernetesManifestIsValidAgainstTheApiSchemas) {
  const std::vector<fs::path> files = DeployManifests();
  ASSERT_EQ(files.size(), 4u) << "deploy/kubernetes/ holds the Secret, ConfigMap, Deployment and ScaledObject";
  RunResult r = Validate(files);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const fs::path& f : files) EXPECT_THAT(r.out, HasSubstr(f.string() + " document 1 ")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("4 valid, 0 invalid")) << r.out;
}

// The check can fail: a wrong type, a misspelt field (which plain JSON-schema validation of
// Kubernetes' OpenAPI lets through, and kubectl refuses) and an unknown kind are each refused.
TEST_F(DeployTest, ABrokenManifestIsRefused) {
  DeployTempDir dir;
  const std::string deployment = DeployReadFile(kDeployKubernetes / "worker-deployment.yaml");
  auto broken = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string text = deployment;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    std::ofstream(dir.path / name) << text;
    return dir.path / name;
  };
  const fs::path wrong_type = broken("replicas.yaml", "\n  replicas: 1\n", "\n  replicas: \"two\"\n");
  const fs::path misspelt = broken("field.yaml", " procMount: Unmasked\n", " procMonut: Unmasked\n");
  const fs::path unknown_kind = broken("kind.yaml", "\nkind: Deployment\n", "\nkind: Deploymnet\n");
  for (const fs::path& f : {wrong_type, misspelt, unknown_kind}) {
    RunResult r = Validate({f});
    EXPECT_EQ(r.exit_code, 1) << f << "\n" << r.out << r.err;
    EXPECT_THAT(r.out, HasSubstr("0 valid, 1 invalid")) << r.out;
  }
  EXPECT_THAT(Validate({wrong_type}).out, HasSubstr("/spec/replicas: must be integer"));
  EXPECT_THAT(Validate({misspelt}).out, HasSubstr("securityContext/procMonut: unknown field"));
  EXPECT_THAT(Validate({unknown_kind}).out, HasSubstr("no schema for apiVersion apps/v1 kind Deploymnet"));
}

TEST_F(DeployTest, TheWorkerExampleNamesEveryKey) {
  const YAML::Node example = YAML::LoadFile((kDeploySource / "config" / "worker.example.yaml").string());
  ASSERT_TRUE(example.IsMap());
  EXPECT_EQ(DeployKeys(example), kDeployWorkerKeys);
  EXPECT_EQ(example["join_token_env"].as<std::string>(), "SUPERAGENT_JOIN_TOKEN");
  EXPECT_EQ(example["slots"].as<int>(), 1);
  EXPECT_EQ(example["work_dir"].as<std::string>(), "/var/lib/superagent-worker");
  EXPECT_EQ(example["sandbox"].as<std::string>(), "on");
  EXPECT_EQ(example["network"].as<std::string>(), "on");
  const std::set<std::string> executors = {"claude-code", "codex", "gemini-cli", "qwen-code"};
  EXPECT_EQ(DeployKeys(example["executors"]), executors);
  for (const auto& kv : example["executors"])
    EXPECT_EQ(DeployKeys(kv.second), std::set<std::string>{"binary"}) << kv.first.as<std::string>();
  // Every key is explained: a comment line stands right above each top-level key.
  std::istringstream in(DeployReadFile(kDeploySource / "config" / "worker.example.yaml"));
  std::string line, previous;
  std::set<std::string> commented;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (!line.empty() && line[0] != '#' && line[0] != ' ' && colon != std::string::npos &&
        previous.rfind("# ", 0) == 0)
      commented.insert(line.substr(0, colon));
    previous = line;
  }
  EXPECT_EQ(commented, kDeployWorkerKeys);
  // And the worker itself reads the file as it stands: its check says the file is fine (the
  // join token, the CLIs and the daemon are this host's business, not the file's).
  RunResult checked = RunBinary({"worker", "--check", "--config", (kDeploySource / "config" / "worker.example.yaml").string()});
  EXPECT_THAT(checked.out, HasSubstr("worker config          ok")) << checked.out << checked.err;
  // A key it does not know is refused with the file's line.
  const fs::path typo = fs::temp_directory_path() / ("superagent-deploy-typo-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(typo) << "daemon_url: http://127.0.0.1:1\nslot: 2\nexecutors:\n  codex: {binary: codex}\n";
  RunResult refused = RunBinary({"worker", "--config", typo.string()});
  fs::remove(typo);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr(":2: slot: not a worker key")) << refused.err;
}

TEST_F(DeployTest, TheKubernetesRecipesAgreeWithEachOther) {
  // The ConfigMap's worker.yaml: the same keys as the example, the executors the image installs.
  const YAML::Node configmap = DeployManifest("worker-configmap.yaml");
  const YAML::Node worker = YAML::Load(configmap["data"]["worker.yaml"].as<std::string>());
  ASSERT_TRUE(worker.IsMap());
  const YAML::Node example = YAML::LoadFile((kDeploySource / "config" / "worker.example.yaml").string());
  EXPECT_EQ(DeployKeys(worker), DeployKeys(example));
  EXPECT_EQ(DeployKeys(worker["executors"]), DeployKeys(example["executors"]));
  const std::string token_env = worker["join_token_env"].as<std::string>();

  // The Secret holds the join token and nothing else.
  const YAML::Node secret = DeployManifest("worker-secret.example.yaml");
  EXPECT_FALSE(secret["data"]) << "the example Secret holds only an example value, in stringData";
  ASSERT_TRUE(secret["stringData"].IsMap());
  EXPECT_EQ(DeployKeys(secret["stringData"]), std::set<std::string>{token_env});

  // The Deployment: that one variable from that Secret, worker.yaml where the image reads it,
  // work_dir on an emptyDir, no Service beside it.
  const YAML::Node deployment = DeployManifest("worker-deployment.yaml");
  const YAML::Node pod = deployment["spec"]["template"]["spec"];
  ASSERT_EQ(pod["containers"].size(), 1u);
  const YAML::Node container = pod["containers"][0];
  ASSERT_EQ(container["env"].size(), 1u) << "the join token is the worker's only variable";
  EXPECT_EQ(container["env"][0]["name"].as<std::string>(), token_env);
  EXPECT_EQ(container["env"][0]["valueFrom"]["secretKeyRef"]["name"].as<std::string>(),
            secret["metadata"]["name"].as<std::string>());
  EXPECT_EQ(container["env"][0]["valueFrom"]["secretKeyRef"]["key"].as<std::string>(), token_env);
  std::map<std::string, std::string> mounts;
  for (const auto& m : container["volumeMounts"]) mounts[m["name"].as<std::string>()] = m["mountPath"].as<std::string>();
  std::map<std::string, YAML::Node> volumes;
  for (const auto& v : pod["volumes"]) volumes.emplace(v["name"].as<std::string>(), YAML::Node(v));
  bool config_mounted = false, work_dir_mounted = false;
  for (const auto& [name, at] : mounts) {
    ASSERT_TRUE(volumes.count(name)) << name;
    const YAML::Node& v = volumes[name];
    if (v["configMap"] && v["configMap"]["name"].as<std::string>() == configmap["metadata"]["name"].as<std::string>())
      config_mounted = at == "/etc/superagent";
    if (v["emptyDir"] && at == worker["work_dir"].as<std::string>()) work_dir_mounted = true;
  }
  EXPECT_TRUE(config_mounted) << "the ConfigMap is mounted at /etc/superagent (worker.yaml)";
  EXPECT_TRUE(work_dir_mounted) << "work_dir is an emptyDir";
  EXPECT_FALSE(pod["hostUsers"].as<bool>()) << "bubblewrap needs the pod's own user namespace";
  EXPECT_EQ(container["securityContext"]["procMount"].as<std::string>(), "Unmasked");
  EXPECT_FALSE(container["securityContext"]["allowPrivilegeEscalation"].as<bool>());
  for (const fs::path& f : DeployManifests())
    EXPECT_NE(YAML::LoadFile(f.string())["kind"].as<std::string>(), "Service") << "a worker only connects out";

  // KEDA scales that Deployment on the daemon's queued remote turns.
  const YAML::Node scaled = DeployManifest("keda-scaledobject.yaml");
  EXPECT_EQ(scaled["spec"]["scaleTargetRef"]["name"].as<std::string>(), deployment["metadata"]["name"].as<std::string>());
  ASSERT_EQ(scaled["spec"]["triggers"].size(), 1u);
  EXPECT_EQ(scaled["spec"]["triggers"][0]["type"].as<std::string>(), "prometheus");
  EXPECT_THAT(scaled["spec"]["triggers"][0]["metadata"]["query"].as<std::string>(),
              HasSubstr("sum(superagent_worker_turns_queued"));
  EXPECT_EQ(scaled["spec"]["minReplicaCount"].as<int>(), 1);
  // Every metric the query names is one the daemon exports (a renamed family would leave KEDA
  // reading nothing, which it takes as zero work).
  const std::string query = scaled["spec"]["triggers"][0]["metadata"]["query"].as<std::string>();
  const std::string exported = DeployReadFile(kDeploySource / "src" / "core" / "metrics.cpp");
  std::smatch m;
  int named = 0;
  for (auto it = query.cbegin(); std::regex_search(it, query.cend(), m, std::regex("superagent_[a-z_]+")); it = m[0].second) {
    ++named;
    EXPECT_NE(exported.find("\"" + m.str() + "\""), std::string::npos) << m.str() << " is not a family src/core/metrics.cpp writes";
  }
  EXPECT_GE(named, 2);
}

TEST_F(DeployTest, TheImageInstallsTheCliVersionsTheTestsRun) {
  const nlohmann::json package = nlohmann::json::parse(DeployReadFile(kDeploySource / "tests" / "package.json"));
  std::string dockerfile = DeployReadFile(kDeploySource / "deploy" / "worker" / "Dockerfile");
  ASSERT_FALSE(dockerfile.empty());
  // Instructions with their continuation lines joined; comments dropped.
  std::vector<std::string> instructions;
  {
    std::istringstream in(dockerfile);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line.rfind('#', 0) == 0 && current.empty()) continue;
      if (!line.empty() && line.back() == '\\') {
        current += line.substr(0, line.size() - 1) + " ";
        continue;
      }
      current += line;
      if (!current.empty()) instructions.push_back(current);
      current.clear();
    }
  }
  std::map<std::string, std::string> installed;  // package -> version, from `npm install -g`
  const std::regex spec(R"((@[a-z0-9._-]+/[a-z0-9._-]+|[a-z0-9._-]+)@([0-9][^\s]*))");
  bool entrypoint = false;
  for (const std::string& ins : instructions) {
    if (ins.rfind("ENTRYPOINT ", 0) == 0)
      entrypoint = ins == R"(ENTRYPOINT ["/usr/bin/superagent", "worker", "--config", "/etc/superagent/worker.yaml"])";
    const std::size_t npm = ins.find("npm install -g");
    if (ins.rfind("RUN ", 0) != 0 || npm == std::string::npos) continue;
    const std::string args = ins.substr(npm);
    for (std::sregex_iterator it(args.begin(), args.end(), spec), end; it != end; ++it)
      installed[(*it)[1].str()] = (*it)[2].str();
  }
  EXPECT_TRUE(entrypoint) << "the image's ENTRYPOINT is `" << kDeployWorkerCommand << "`";
  std::set<std::string> names;
  for (const auto& [name, version] : installed) names.insert(name);
  EXPECT_EQ(names, kDeployClis) << "the image installs exactly the four coding CLIs";
  for (const std::string& cli : kDeployClis) {
    ASSERT_TRUE(package["devDependencies"].contains(cli)) << cli;
    EXPECT_EQ(installed[cli], package["devDependencies"][cli].get<std::string>()) << cli;
  }
  // Runs as an unprivileged user, and no secret is baked in.
  bool user = false;
  for (const std::string& ins : instructions) {
    if (ins.rfind("USER ", 0) == 0) user = ins != "USER root" && ins != "USER 0" && ins.rfind("USER 0:", 0) != 0;
    if (ins.rfind("ENV ", 0) == 0 || ins.rfind("ARG ", 0) == 0) {
      EXPECT_EQ(ins.find("TOKEN"), std::string::npos) << "a secret in the image: " << ins;
    }
  }
  EXPECT_TRUE(user) << "the image's last USER is not root";
}

}  // namespace
}  // namespace superagent::testing
